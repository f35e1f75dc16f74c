// `sesa-train export`: writes a model in another format. GGUF (for llama.cpp) now; PEFT comes later.
import type { Argv, CommandModule } from 'yargs';
import { exportGguf, type GgufExportDtype } from '../checkpoint/export-gguf.js';
import { resolveModel } from '../model/resolve.js';
import { emit, withCommonOptions, type CommonArgs } from './common.js';

export const EXPORT_FORMATS = ['gguf'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

interface ExportArgs extends CommonArgs {
  model: string;
  format: ExportFormat;
  out: string;
  dtype: GgufExportDtype;
}

export const command: CommandModule<object, ExportArgs> = {
  command: 'export',
  describe: 'Export a model to another format (gguf: a file llama.cpp loads)',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('model', { type: 'string', demandOption: true, describe: 'model folder (config.json + safetensors + tokenizer.json) or a known name in the HF cache' })
      .option('format', { choices: EXPORT_FORMATS, demandOption: true, describe: 'output format' })
      .option('out', { type: 'string', demandOption: true, describe: 'output file' })
      .option('dtype', { choices: ['f32', 'f16'] as const, default: 'f32' as GgufExportDtype, describe: 'weight type of the matrices (norms and biases stay f32)' })
      .example('$0 export --model ./tiny --format gguf --out tiny.gguf', 'write an f32 GGUF') as unknown as Argv<ExportArgs>,
  handler: async (args) => {
    // Export reads and writes files only: no tensor backend is started.
    const { dir } = await resolveModel(args.model);
    const res = await exportGguf(dir, args.out, { dtype: args.dtype });
    const mb = (res.bytes / 2 ** 20).toFixed(1);
    const notes = [res.paddedTokens > 0 ? `${res.paddedTokens} [PAD] tokens added to fill the embedding` : '', res.skipped.length > 0 ? `skipped ${res.skipped.join(', ')}` : ''].filter(Boolean);
    emit(args, { format: args.format, model: dir, ...res }, `wrote ${res.path}: ${res.architecture}, ${res.dtype}, ${res.tensorCount} tensors, ${mb} MiB, vocab ${res.vocabSize} (${res.tokenizer} tokenizer)${notes.length ? `; ${notes.join('; ')}` : ''}`);
  },
};
