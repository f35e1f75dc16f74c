// `--model NAME|DIR` and `--download`, shared by the commands that load a model, plus loading it with its
// tokenizer (when the folder has one).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv } from 'yargs';
import { loadPeftAdapter } from '../checkpoint/peft.js';
import type { LoraAdapter } from '../model/lora.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModelName } from '../checkpoint/model-name.js';
import type { ResolvedModel } from '../model/resolve.js';
import { loadTokenizer, type Tokenizer } from '../model/tokenizer.js';

export interface ModelArgs {
  model: string;
  download: boolean;
  adapter?: string;
}

export function withModelOptions<T>(y: Argv<T>): Argv<T & ModelArgs> {
  return y
    .option('model', {
      type: 'string',
      demandOption: true,
      describe: "a model folder (Hugging Face layout), a name such as qwen3-4b found in the Hugging Face cache, 'demo' (the demo world's warm start) or 'tiny' (a tiny random Qwen3)",
    })
    .option('download', { type: 'boolean', default: false, describe: 'fetch the model into the Hugging Face cache when it is missing' })
    .option('adapter', { type: 'string', describe: 'a LoRA adapter folder (PEFT format) to run with' }) as Argv<T & ModelArgs>;
}

export interface LoadedModel {
  resolved: ResolvedModel;
  model: CausalLM;
  tokenizer?: Tokenizer;
  adapter?: LoraAdapter;
}

export async function loadModelFromArgs(args: ModelArgs): Promise<LoadedModel> {
  const resolved = await resolveModelName(args.model, { download: args.download, log: (line) => process.stderr.write(`${line}\n`) });
  const model = await CausalLM.load(resolved.dir);
  const tokenizer = existsSync(join(resolved.dir, 'tokenizer.json')) ? await loadTokenizer(resolved.dir) : undefined;
  const adapter = args.adapter !== undefined ? loadPeftAdapter(args.adapter, 'adapter', model.config) : undefined;
  return { resolved, model, ...(tokenizer ? { tokenizer } : {}), ...(adapter ? { adapter } : {}) };
}

export function requireTokenizer(loaded: LoadedModel, flag: string): Tokenizer {
  if (!loaded.tokenizer) {
    throw new Error(`${flag} needs a tokenizer, but ${join(loaded.resolved.dir, 'tokenizer.json')} does not exist; pass token ids instead`);
  }
  return loaded.tokenizer;
}
