// `sesa-train export`: writes a model, or a LoRA adapter of it, in another format: GGUF (for llama.cpp) or, for
// adapters, PEFT (for Hugging Face PEFT and vLLM).
import type { Argv, CommandModule } from 'yargs';
import { exportGguf, type GgufExportDtype } from '../checkpoint/export-gguf.js';
import { exportGgufLora } from '../checkpoint/export-gguf-lora.js';
import { loadPeftAdapter, readPeftConfig, savePeftAdapter } from '../checkpoint/peft.js';
import { loadModelConfig } from '../model/config.js';
import { resolveModelName } from '../checkpoint/model-name.js';
import { emit, startBackend, withCommonOptions, type CommonArgs } from './common.js';

export const EXPORT_FORMATS = ['gguf', 'peft'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

interface ExportArgs extends CommonArgs {
  model: string;
  format: ExportFormat;
  out: string;
  dtype: GgufExportDtype;
  adapter?: string;
}

export const command: CommandModule<object, ExportArgs> = {
  command: 'export',
  describe: 'Export a model to another format (gguf: a file llama.cpp loads)',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('model', { type: 'string', demandOption: true, describe: 'model folder (config.json + safetensors + tokenizer.json) or a known name in the HF cache' })
      .option('format', { choices: EXPORT_FORMATS, demandOption: true, describe: 'output format' })
      .option('out', { type: 'string', demandOption: true, describe: 'output file' })
      .option('adapter', { type: 'string', describe: 'export this LoRA adapter folder (PEFT) instead of the base model' })
      .option('dtype', { choices: ['f32', 'f16', 'q8_0'] as const, default: 'f32' as GgufExportDtype, describe: 'weight type of the matrices (norms and biases stay f32); q8_0: llama.cpp\'s 8-bit blocks' })
      .example('$0 export --model ./tiny --format gguf --out tiny.gguf', 'write an f32 GGUF')
      .example('$0 export --model ./tiny --adapter run/checkpoints/step-10/solver --format gguf --out solver.gguf', 'a GGUF LoRA adapter for llama.cpp')
      .check((a) => {
        if (a.format === 'peft' && a.adapter === undefined) throw new Error('--format peft exports an adapter: give --adapter DIR');
        return true;
      }) as unknown as Argv<ExportArgs>,
  handler: async (args) => {
    // Export reads and writes files only: no tensor backend is started.
    const resolved = await resolveModelName(args.model, { log: (line) => process.stderr.write(`${line}\n`) });
    const { dir } = resolved;
    if (args.adapter !== undefined) {
      const modelConfig = loadModelConfig(dir);
      if (args.format === 'gguf') {
        const res = exportGgufLora(args.adapter, modelConfig, args.out);
        emit(args, { format: 'gguf-lora', model: dir, adapter: args.adapter, ...res }, `wrote ${res.path}: GGUF LoRA adapter for ${modelConfig.architecture}, ${res.tensorCount} tensors, ${(res.bytes / 2 ** 20).toFixed(2)} MiB`);
      } else {
        // Re-written through our loader, so the output is validated against the model and in canonical PEFT form.
        await startBackend(args);
        const adapter = loadPeftAdapter(args.adapter, 'export', modelConfig);
        await savePeftAdapter(adapter, args.out, { baseModel: resolved.repoId ?? readPeftConfig(args.adapter).baseModel ?? dir });
        adapter.dispose();
        emit(args, { format: 'peft', model: dir, adapter: args.adapter, out: args.out }, `wrote ${args.out}: PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors)`);
      }
      return;
    }
    const res = await exportGguf(dir, args.out, { dtype: args.dtype });
    const mb = (res.bytes / 2 ** 20).toFixed(1);
    const notes = [res.paddedTokens > 0 ? `${res.paddedTokens} [PAD] tokens added to fill the embedding` : '', res.skipped.length > 0 ? `skipped ${res.skipped.join(', ')}` : ''].filter(Boolean);
    emit(args, { format: args.format, model: dir, ...res }, `wrote ${res.path}: ${res.architecture}, ${res.dtype}, ${res.tensorCount} tensors, ${mb} MiB, vocab ${res.vocabSize} (${res.tokenizer} tokenizer)${notes.length ? `; ${notes.join('; ')}` : ''}`);
  },
};
