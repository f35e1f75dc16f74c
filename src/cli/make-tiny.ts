// `sesa-train make-tiny`: writes a deterministic random checkpoint in the Hugging Face layout (for tests,
// benchmarks and demos). It only writes files, so no tensor backend is started.
import type { Argv, CommandModule } from 'yargs';
import { makeTinyCheckpoint, MIN_TINY_VOCAB, TINY_DEFAULTS, type MakeTinyOptions, type TinyDtype } from '../checkpoint/make-tiny.js';
import type { Architecture } from '../model/config.js';
import { emit, withCommonOptions, type CommonArgs } from './common.js';

const ARCHS = ['qwen3', 'qwen2', 'llama'] as const;
const DTYPES = ['f32', 'bf16', 'f16'] as const;

interface MakeTinyArgs extends CommonArgs {
  out: string;
  arch: Architecture;
  layers?: string;
  hidden?: string;
  heads?: string;
  kvHeads?: string;
  headDim?: string;
  intermediate?: string;
  vocab: string;
  tie: boolean;
  seed?: string;
  dtype: TinyDtype;
  ropeTheta?: string;
  ropeScalingFactor?: string;
  ropeLowFreqFactor?: string;
  ropeHighFreqFactor?: string;
  ropeOriginalMaxPositions?: string;
  attentionBias?: boolean;
  maxPositions?: string;
  rmsNormEps?: string;
}

// Numbers are taken as strings and parsed here, so a bad value gets an error naming its flag (yargs
// would turn "abc" into NaN silently).
function intFlag(flag: string, v: string | undefined, min = 1): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer >= ${min}, got '${v}'`);
  return n;
}

function numFlag(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error(`--${flag} must be a positive number, got '${v}'`);
  return n;
}

/** Turns parsed flags into makeTinyCheckpoint options (exported for tests). */
export function makeTinyOptionsFromArgs(args: MakeTinyArgs): MakeTinyOptions {
  let vocab: 'full' | number;
  if (args.vocab === 'full') vocab = 'full';
  else {
    const n = Number(args.vocab);
    if (args.vocab.trim() === '' || !Number.isInteger(n) || n < MIN_TINY_VOCAB) {
      throw new Error(`--vocab must be 'full' or an integer >= ${MIN_TINY_VOCAB}, got '${args.vocab}'`);
    }
    vocab = n;
  }
  const factor = numFlag('rope-scaling-factor', args.ropeScalingFactor);
  const scalingDetail = [args.ropeLowFreqFactor, args.ropeHighFreqFactor, args.ropeOriginalMaxPositions].some((x) => x !== undefined);
  if (factor === undefined && scalingDetail) {
    throw new Error('--rope-low-freq-factor, --rope-high-freq-factor and --rope-original-max-positions need --rope-scaling-factor');
  }
  const seed = intFlag('seed', args.seed, 0);
  if (seed !== undefined && seed > 0xffffffff) throw new Error(`--seed must be below 2^32, got '${args.seed}'`);
  return {
    out: args.out,
    arch: args.arch,
    layers: intFlag('layers', args.layers),
    hidden: intFlag('hidden', args.hidden),
    heads: intFlag('heads', args.heads),
    kvHeads: intFlag('kv-heads', args.kvHeads),
    headDim: intFlag('head-dim', args.headDim),
    intermediate: intFlag('intermediate', args.intermediate),
    vocab,
    tie: args.tie,
    seed,
    dtype: args.dtype,
    ropeTheta: numFlag('rope-theta', args.ropeTheta),
    ropeScaling:
      factor === undefined
        ? undefined
        : {
            factor,
            lowFreqFactor: numFlag('rope-low-freq-factor', args.ropeLowFreqFactor),
            highFreqFactor: numFlag('rope-high-freq-factor', args.ropeHighFreqFactor),
            originalMaxPositionEmbeddings: intFlag('rope-original-max-positions', args.ropeOriginalMaxPositions),
          },
    attentionBias: args.attentionBias,
    maxPositions: intFlag('max-positions', args.maxPositions),
    rmsNormEps: numFlag('rms-norm-eps', args.rmsNormEps),
  };
}

// Typed loosely so it fits main.ts's `CommandModule` list; the handler recovers the parsed shape.
export const command: CommandModule = {
  command: 'make-tiny',
  describe: 'Write a deterministic random model folder (config.json, model.safetensors, tokenizer) for tests',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('out', { type: 'string', demandOption: true, requiresArg: true, describe: 'output folder' })
      .option('arch', { choices: ARCHS, default: TINY_DEFAULTS.arch, describe: 'architecture (qwen2 has q/k/v biases, qwen3 per-head q/k norms)' })
      .option('layers', { type: 'string', requiresArg: true, describe: `decoder layers [default: ${TINY_DEFAULTS.layers}]` })
      .option('hidden', { type: 'string', requiresArg: true, describe: `hidden size [default: ${TINY_DEFAULTS.hidden}]` })
      .option('heads', { type: 'string', requiresArg: true, describe: `attention heads [default: ${TINY_DEFAULTS.heads}]` })
      .option('kv-heads', { type: 'string', requiresArg: true, describe: `key/value heads, must divide --heads [default: ${TINY_DEFAULTS.kvHeads}]` })
      .option('head-dim', { type: 'string', requiresArg: true, describe: 'per-head dimension [default: hidden / heads]' })
      .option('intermediate', { type: 'string', requiresArg: true, describe: `MLP size [default: ${TINY_DEFAULTS.intermediate}]` })
      .option('vocab', { type: 'string', default: String(TINY_DEFAULTS.vocab), requiresArg: true, describe: "'full' (the real Qwen3 tokenizer, 151,936 rows) or N >= 300 (a byte-level BPE of N ids)" })
      .option('tie', { type: 'boolean', default: TINY_DEFAULTS.tie, describe: 'tie lm_head to the embedding (--no-tie for a separate lm_head)' })
      .option('seed', { type: 'string', requiresArg: true, describe: `random seed [default: ${TINY_DEFAULTS.seed}]` })
      .option('dtype', { choices: DTYPES, default: TINY_DEFAULTS.dtype, describe: 'tensor dtype in model.safetensors' })
      .option('rope-theta', { type: 'string', requiresArg: true, describe: 'RoPE base [default: 1e6 for qwen, 5e5 for llama]' })
      .option('rope-scaling-factor', { type: 'string', requiresArg: true, describe: 'Llama 3 rope scaling factor (llama only)' })
      .option('rope-low-freq-factor', { type: 'string', requiresArg: true, describe: 'Llama 3 rope scaling low_freq_factor [default: 1]' })
      .option('rope-high-freq-factor', { type: 'string', requiresArg: true, describe: 'Llama 3 rope scaling high_freq_factor [default: 4]' })
      .option('rope-original-max-positions', { type: 'string', requiresArg: true, describe: 'Llama 3 rope scaling original_max_position_embeddings [default: 8192]' })
      .option('attention-bias', { type: 'boolean', describe: 'q/k/v/o biases (qwen3, llama; qwen2 always has q/k/v biases)' })
      .option('max-positions', { type: 'string', requiresArg: true, describe: `max_position_embeddings [default: ${TINY_DEFAULTS.maxPositions}]` })
      .option('rms-norm-eps', { type: 'string', requiresArg: true, describe: 'RMSNorm epsilon [default: 1e-6 for qwen, 1e-5 for llama]' })
      .example('$0 make-tiny --out /tmp/tiny --vocab 512', 'a 2-layer Qwen3 with a 512-id tokenizer')
      .example('$0 make-tiny --out /tmp/tiny-llama --arch llama --rope-scaling-factor 8 --no-tie', 'a Llama 3-style model'),
  handler: (argv) => {
    const args = argv as unknown as MakeTinyArgs;
    const res = makeTinyCheckpoint(makeTinyOptionsFromArgs(args));
    const c = res.config;
    const summary = {
      dir: res.dir,
      architecture: c.architecture,
      layers: c.numLayers,
      hidden: c.hiddenSize,
      heads: c.numHeads,
      kvHeads: c.numKvHeads,
      headDim: c.headDim,
      intermediate: c.intermediateSize,
      vocabSize: c.vocabSize,
      tie: c.tieWordEmbeddings,
      dtype: args.dtype,
      tensors: res.tensors,
      parameters: res.parameters,
      files: res.files,
    };
    const lines = [
      `wrote ${res.dir}: ${c.architecture}, ${c.numLayers} layers, hidden ${c.hiddenSize}, ${c.numHeads}/${c.numKvHeads} heads of ${c.headDim}, MLP ${c.intermediateSize}, vocab ${c.vocabSize}, ${c.tieWordEmbeddings ? 'tied' : 'untied'}, ${args.dtype}, ${res.parameters.toLocaleString('en-US')} parameters`,
      ...res.files.map((f) => `  ${f.name.padEnd(24)} ${f.bytes.toLocaleString('en-US')} bytes`),
    ];
    emit(args, summary, lines.join('\n'));
  },
};
