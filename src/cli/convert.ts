// `sesa-train convert`: turns a checkpoint of another format into a Hugging Face model folder. llama2.c
// legacy checkpoints now (e.g. stories260K.bin with tok512.bin). It only writes files: no tensor backend.
import { existsSync, statSync } from 'node:fs';
import type { Argv, CommandModule } from 'yargs';
import { convertLlama2c } from '../checkpoint/llama2c.js';
import { emit, withCommonOptions, type CommonArgs } from './common.js';

const FORMATS = ['llama2c'] as const;
const DTYPES = ['f32', 'bf16', 'f16'] as const;

interface ConvertArgs extends CommonArgs {
  file: string;
  from: (typeof FORMATS)[number];
  tokenizer?: string;
  out: string;
  dtype: (typeof DTYPES)[number];
}

function requireFile(flag: string, path: string): void {
  if (!existsSync(path)) throw new Error(`${flag} ${path}: file not found`);
  if (!statSync(path).isFile()) throw new Error(`${flag} ${path}: not a file`);
}

// Typed loosely so it fits main.ts's `CommandModule` list; the handler recovers the parsed shape.
export const command: CommandModule = {
  command: 'convert <file>',
  describe: 'Convert a checkpoint of another format (llama2.c) into a Hugging Face model folder',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .positional('file', { type: 'string', demandOption: true, describe: 'the checkpoint to convert (llama2c: a legacy .bin such as stories260K.bin)' })
      .option('from', { choices: FORMATS, demandOption: true, describe: 'format of FILE' })
      .option('tokenizer', { type: 'string', requiresArg: true, describe: 'llama2.c tokenizer.bin (e.g. tok512.bin); without it no tokenizer files are written' })
      .option('out', { type: 'string', demandOption: true, requiresArg: true, describe: 'output folder' })
      .option('dtype', { choices: DTYPES, default: 'f32' as const, describe: 'tensor dtype in model.safetensors' })
      .example('$0 convert --from llama2c stories260K.bin --tokenizer tok512.bin --out ./stories260K', 'a Hugging Face Llama folder'),
  handler: (argv) => {
    const args = argv as unknown as ConvertArgs;
    requireFile('FILE', args.file);
    if (args.tokenizer !== undefined) requireFile('--tokenizer', args.tokenizer);
    if (existsSync(args.out) && !statSync(args.out).isDirectory()) throw new Error(`--out ${args.out}: exists and is not a folder`);
    const res = convertLlama2c(args.file, args.tokenizer, args.out, { dtype: args.dtype });
    const h = res.header;
    const summary = { from: args.from, source: args.file, tokenizerSource: args.tokenizer ?? null, ...res, config: undefined };
    const lines = [
      `wrote ${res.dir}: llama, ${h.nLayers} layers, dim ${h.dim}, ${h.nHeads}/${h.nKvHeads} heads, MLP ${h.hiddenDim}, vocab ${h.vocabSize}, seq ${h.seqLen}, ${h.sharedClassifier ? 'tied' : 'untied'} classifier, ${args.dtype}, ${res.parameters.toLocaleString('en-US')} parameters`,
      ...res.files.map((f) => `  ${f.name.padEnd(24)} ${f.bytes.toLocaleString('en-US')} bytes`),
    ];
    if (!res.tokenizer) lines.push('  (no --tokenizer given: the folder has no tokenizer files)');
    emit(args, summary, lines.join('\n'));
  },
};
