// `sesa-train` with no command: the embedded default. Until the trainer lands it shows what the project can
// do on a fresh machine: it makes a tiny random Qwen3 (real tokenizer, random weights) on first use and
// generates from it with the chat template, on the CPU.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { makeTinyCheckpoint } from '../checkpoint/make-tiny.js';
import { generate } from '../model/generate.js';
import { CausalLM } from '../model/qwen3.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { type CommonArgs, emit, startBackend, withCommonOptions } from './common.js';

interface DemoArgs extends CommonArgs {
  prompt: string;
  'max-new-tokens': number;
  seed: number;
}

/** Where the embedded default model lives: $SESA_HOME, else $XDG_CACHE_HOME/sesa, else ~/.cache/sesa. */
export function sesaHome(): string {
  if (process.env.SESA_HOME) return process.env.SESA_HOME;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sesa');
}

/** The tiny default model, made on first use (deterministic: seed 0). */
export function ensureTinyDefaultModel(log: (line: string) => void): string {
  const dir = join(sesaHome(), 'models', 'tiny-qwen3');
  if (!existsSync(join(dir, 'model.safetensors'))) {
    log(`making the tiny default model in ${dir} (random weights, real Qwen3 tokenizer) ...`);
    makeTinyCheckpoint({ out: dir, arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, vocab: 'full', tie: true, seed: 0 });
  }
  return dir;
}

export const command: CommandModule<object, DemoArgs> = {
  command: '$0',
  describe: 'the embedded default: make a tiny random Qwen3 and generate from it (CPU)',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('prompt', { type: 'string', default: 'Who wrote the novel that the town of Brackenford is named after?' })
      .option('max-new-tokens', { type: 'number', default: 24 })
      .option('seed', { type: 'number', default: 0 }) as unknown as Argv<DemoArgs>,
  handler: async (args) => {
    const log = (line: string): void => {
      if (!args.json) process.stderr.write(`${line}\n`);
    };
    const backend = await startBackend(args);
    const dir = ensureTinyDefaultModel(log);
    const model = await CausalLM.load(dir);
    const tokenizer = await loadTokenizer(dir);
    const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: args.prompt }], { addGenerationPrompt: true, enableThinking: false });
    const promptIds = tokenizer.encode(prompt);
    const started = performance.now();
    const [out] = await generate(model, [promptIds], {
      maxNewTokens: args['max-new-tokens'],
      temperature: 1,
      seed: args.seed,
      stopTokenIds: tokenizer.eosTokenIds,
      tokenizer,
      padTokenId: tokenizer.padTokenId,
    });
    const seconds = (performance.now() - started) / 1000;
    model.dispose();
    if (!out) throw new Error('generation returned nothing');
    emit(
      args,
      { model: dir, backend: backend.name, prompt, ids: out.ids, text: out.text, finishReason: out.finishReason, tokensPerSecond: out.ids.length / seconds },
      [
        `prompt (chat template, thinking off):\n${prompt}`,
        `generated (${out.ids.length} tokens, ${(out.ids.length / seconds).toFixed(1)} tok/s on ${backend.name}):\n${out.text ?? ''}`,
        '',
        'This tiny model has random weights, so its text is noise: it shows the pipeline (checkpoint, tokenizer,',
        'chat template, KV-cache sampling) end to end. Point it at a real model with',
        '  npx sesa-train generate --model qwen3-0.6b --prompt "..." --chat',
      ].join('\n'),
    );
  },
};
