// `sesa-train generate`: sample a continuation of a prompt (text, chat, or token ids).
import type { Argv, CommandModule } from 'yargs';
import { contextLength, contextProblem } from '../model/context.js';
import { generate } from '../model/generate.js';
import { type CommonArgs, emit, parseIdList, startBackend, withCommonOptions } from './common.js';
import { loadModelFromArgs, type ModelArgs, requireTokenizer, withModelOptions } from './model-args.js';
import { backendLabel } from '../tensor/backend.js';

interface GenerateArgs extends CommonArgs, ModelArgs {
  prompt?: string;
  'prompt-ids'?: string;
  chat: boolean;
  system?: string;
  thinking: boolean;
  'max-new-tokens': number;
  temperature: number;
  'top-k': number;
  'top-p': number;
  seed: number;
  stop: string[];
  'stop-ids'?: string;
}

export const command: CommandModule<object, GenerateArgs> = {
  command: 'generate',
  describe: 'generate a continuation of a prompt',
  builder: (y: Argv) =>
    withModelOptions(withCommonOptions(y))
      .option('prompt', { type: 'string', describe: 'prompt text' })
      .option('prompt-ids', { type: 'string', describe: 'prompt as comma-separated token ids' })
      .option('chat', { type: 'boolean', default: false, describe: "render --prompt as a user turn with the model's chat template" })
      .option('system', { type: 'string', describe: 'system message (with --chat)' })
      .option('thinking', { type: 'boolean', default: false, describe: 'enable_thinking in the Qwen3 chat template (with --chat)' })
      .option('max-new-tokens', { type: 'number', default: 64 })
      .option('temperature', { type: 'number', default: 0, describe: '0 = greedy' })
      .option('top-k', { type: 'number', default: 0, describe: '0 = off' })
      .option('top-p', { type: 'number', default: 1, describe: '1 = off' })
      .option('seed', { type: 'number', default: 0 })
      .option('stop', { type: 'string', array: true, default: [] as string[], describe: 'stop strings, e.g. --stop "</search>"' })
      .option('stop-ids', { type: 'string', describe: "comma-separated stop token ids (default: the model's EOS ids)" })
      .conflicts('prompt', 'prompt-ids')
      .check((a) => {
        if (a.prompt === undefined && a['prompt-ids'] === undefined) throw new Error('give --prompt TEXT or --prompt-ids 1,2,3');
        if (a.chat && a.prompt === undefined) throw new Error('--chat renders --prompt; it cannot be used with --prompt-ids');
        return true;
      }) as unknown as Argv<GenerateArgs>,
  handler: async (args) => {
    const backend = await startBackend(args);
    const loaded = await loadModelFromArgs(args);
    const { model, tokenizer } = loaded;
    let promptIds: number[];
    let promptText: string | undefined;
    if (args['prompt-ids'] !== undefined) {
      promptIds = parseIdList('prompt-ids', args['prompt-ids']);
    } else {
      const tok = requireTokenizer(loaded, '--prompt');
      promptText = args.chat
        ? tok.applyChatTemplate(
            [...(args.system ? [{ role: 'system' as const, content: args.system }] : []), { role: 'user' as const, content: args.prompt as string }],
            { addGenerationPrompt: true, enableThinking: args.thinking },
          )
        : (args.prompt as string);
      // A plain prompt gets the tokenizer's own specials (Llama's BOS); a chat render already has them.
      promptIds = tok.encode(promptText, { addSpecialTokens: !args.chat });
    }
    // The prompt and every token asked for must fit the context (src/model/context.ts).
    const promptFlag = args['prompt-ids'] !== undefined ? '--prompt-ids' : '--prompt';
    const tooLong = contextProblem(`${promptFlag} (${promptIds.length} tokens) with --max-new-tokens ${args['max-new-tokens']}`, promptIds.length + args['max-new-tokens'], model.config, loaded.resolved.dir);
    if (tooLong !== undefined) {
      const room = contextLength(model.config) - promptIds.length;
      throw new Error(`${tooLong}${room > 0 ? `; give --max-new-tokens ${room} or fewer` : `; the prompt alone does not fit`}`);
    }
    const stopTokenIds = args['stop-ids'] !== undefined ? parseIdList('stop-ids', args['stop-ids']) : [...new Set([...model.config.eosTokenIds, ...(tokenizer?.eosTokenIds ?? [])])];
    const started = performance.now();
    const [result] = await generate(model, [promptIds], {
      maxNewTokens: args['max-new-tokens'],
      temperature: args.temperature,
      topK: args['top-k'],
      topP: args['top-p'],
      seed: args.seed,
      stopTokenIds,
      stopStrings: args.stop,
      ...(loaded.adapter ? { adapter: loaded.adapter } : {}),
      ...(tokenizer ? { tokenizer, padTokenId: tokenizer.padTokenId } : {}),
    });
    const seconds = (performance.now() - started) / 1000;
    if (!result) throw new Error('generation returned nothing');
    emit(
      args,
      {
        model: loaded.resolved.dir,
        backend: backendLabel(backend),
        promptIds,
        ...(promptText !== undefined ? { prompt: promptText } : {}),
        ids: result.ids,
        text: result.text ?? null,
        logprobs: result.logprobs,
        finishReason: result.finishReason,
        ...(result.stopString !== undefined ? { stopString: result.stopString } : {}),
        seconds,
        tokensPerSecond: result.ids.length / seconds,
      },
      [
        result.text !== undefined ? result.text : `ids: ${result.ids.join(',')}`,
        '',
        `[${result.ids.length} tokens, ${result.finishReason}${result.stopString ? ` at ${JSON.stringify(result.stopString)}` : ''}, ${(result.ids.length / seconds).toFixed(1)} tok/s on ${backendLabel(backend)}]`,
      ].join('\n'),
    );
    loaded.adapter?.dispose();
    model.dispose();
  },
};
