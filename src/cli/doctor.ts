// `sesa-train doctor`: checks what a run needs (Node, tensor backends and CUDA, llama.cpp, the model folder
// and its memory need, the E5 folder, the retriever, disk) and prints one line per check with a fix. Exit 0
// only when the run as given would start.
import type { CommandModule } from 'yargs';
import { runDoctor } from '../doctor/run.js';
import { checkpointSteps } from '../checkpoint/disk-need.js';
import { formatReport } from '../doctor/run.js';
import { TINY_DEFAULTS, TRAIN_DEFAULTS } from '../settings/train.js';
import { WORLD_DEFAULTS } from '../world/defaults.js';
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { BACKEND_CHOICES, type BackendChoice } from '../tensor/backend.js';

interface DoctorArgs {
  model?: string;
  backend: BackendChoice;
  'retriever-url'?: string;
  embedder?: 'e5' | 'lexical';
  'e5-model'?: string;
  'rollout-engine': 'native' | 'llama.cpp';
  out?: string;
  'lora-r': number;
  gpus: number;
  threads?: number;
  json: boolean;
}

export const command: CommandModule<object, DoctorArgs> = {
  command: 'doctor',
  describe: 'Check that a run would start here (Node, backends, CUDA and GPUs, llama.cpp, model and its memory need, E5, retriever, disk)',
  builder: (y) =>
    y
      .option('model', { type: 'string', describe: `model folder or registry name of the run (default: ${TRAIN_DEFAULTS.model}, the demo world's model)` })
      .option('backend', { choices: BACKEND_CHOICES, default: 'auto' as BackendChoice, describe: 'tensor backend of the run' })
      .option('retriever-url', { type: 'string', describe: 'Search-R1 retrieval server to query once' })
      .option('embedder', { choices: ['e5', 'lexical'] as const, describe: 'skill embedder of the run (default as in train: lexical with --model demo or tiny, else e5)' })
      .option('e5-model', { type: 'string', describe: `E5 model folder or name (with --embedder e5; default ${TRAIN_DEFAULTS.e5Model})` })
      .option('rollout-engine', { choices: ['native', 'llama.cpp'] as const, default: 'native' as const, describe: 'rollout engine of the run' })
      .option('out', { type: 'string', describe: `run folder (its disk gets the checkpoints; default as in train: ${WORLD_DEFAULTS.out} with --model demo, ${TINY_DEFAULTS.out} with --model tiny, else ${TRAIN_DEFAULTS.out})` })
      .option('lora-r', { type: 'number', default: 16, describe: 'LoRA rank (checkpoint size estimate)' })
      .option('gpus', { type: 'number', default: 1, describe: 'worker processes of the run, one per GPU (as train --gpus): checks the GPU backend and that many visible GPUs' })
      .option('threads', { type: 'number', describe: 'wasm compute threads of the run (as train --threads; default: all cores): checks that the backend starts with that many' })
      .check((a) => {
        const th = a.threads as number | undefined;
        if (th !== undefined && (!Number.isInteger(th) || th < 1)) throw new Error(`--threads must be a positive integer, got ${th}`);
        const g = a.gpus as number;
        if (!Number.isInteger(g) || g < 1) throw new Error(`--gpus must be a positive integer, got ${g}`);
        return true;
      })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON object for scripts' }) as never,
  handler: async (args) => {
    const model = args.model ?? TRAIN_DEFAULTS.model;
    const defaults = { ...TRAIN_DEFAULTS, ...(model === TINY_DEFAULT_NAME ? TINY_DEFAULTS : model === WORLD_DEFAULTS.model ? WORLD_DEFAULTS : {}) };
    const embedder = args.embedder ?? defaults.embedder;
    const report = await runDoctor({
      model,
      backend: args.backend,
      ...(args['retriever-url'] !== undefined ? { retrieverUrl: args['retriever-url'] } : {}),
      embedder,
      ...(embedder === 'e5' ? { e5Model: args['e5-model'] ?? defaults.e5Model } : {}),
      rolloutEngine: args['rollout-engine'],
      out: args.out ?? defaults.out,
      loraR: args['lora-r'],
      checkpoints: checkpointSteps(1, defaults.steps, defaults.saveEvery).length,
      gpus: args.gpus,
      ...(args.threads !== undefined ? { threads: args.threads } : {}),
    });
    process.stdout.write(args.json ? `${JSON.stringify(report)}\n` : `${formatReport(report)}\n`);
    process.exitCode = report.ready ? 0 : 1;
  },
};
