// The model configuration: Hugging Face `config.json` of Qwen3ForCausalLM, Qwen2ForCausalLM or
// LlamaForCausalLM, parsed and validated into one typed record that the forward reads.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Architecture = 'qwen3' | 'qwen2' | 'llama';

export const HF_ARCHITECTURES: Record<string, Architecture> = {
  Qwen3ForCausalLM: 'qwen3',
  Qwen2ForCausalLM: 'qwen2',
  LlamaForCausalLM: 'llama',
};

export interface Llama3RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

export interface ModelConfig {
  architecture: Architecture;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  /** Per-head dimension; may differ from hiddenSize / numHeads (Qwen3). */
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling?: Llama3RopeScaling;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v projections (Qwen2 always; Qwen3/Llama when `attention_bias`). */
  qkvBias: boolean;
  /** Bias on the output projection (Qwen3/Llama when `attention_bias`; never Qwen2). */
  oBias: boolean;
  /** Per-head RMSNorm of queries and keys before RoPE (Qwen3). */
  qkNorm: boolean;
  bosTokenId?: number;
  eosTokenIds: number[];
}

export class ConfigError extends Error {
  constructor(file: string, field: string, message: string) {
    super(`${file}: field '${field}' ${message}`);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

function positiveInt(raw: Json, file: string, field: string, fallback?: number): number {
  const v = raw[field] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ConfigError(file, field, v === undefined ? 'is missing' : `must be a positive integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

function positiveNumber(raw: Json, file: string, field: string, fallback?: number): number {
  const v = raw[field] ?? fallback;
  if (typeof v !== 'number' || !(v > 0)) {
    throw new ConfigError(file, field, v === undefined ? 'is missing' : `must be a positive number, got ${JSON.stringify(v)}`);
  }
  return v;
}

function bool(raw: Json, file: string, field: string, fallback: boolean): boolean {
  const v = raw[field] ?? fallback;
  if (typeof v !== 'boolean') throw new ConfigError(file, field, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

/** Parses an already-loaded config.json object; `file` is used in error messages. */
export function parseModelConfig(raw: Json, file = 'config.json'): ModelConfig {
  const archs = raw.architectures;
  let architecture: Architecture | undefined;
  if (Array.isArray(archs) && archs.length > 0) {
    architecture = HF_ARCHITECTURES[String(archs[0])];
    if (!architecture) {
      throw new ConfigError(file, 'architectures', `names ${JSON.stringify(archs[0])}, which is not supported (supported: ${Object.keys(HF_ARCHITECTURES).join(', ')})`);
    }
  } else if (typeof raw.model_type === 'string' && ['qwen3', 'qwen2', 'llama'].includes(raw.model_type)) {
    architecture = raw.model_type as Architecture;
  } else {
    throw new ConfigError(file, 'architectures', 'is missing (and model_type is not qwen3, qwen2 or llama)');
  }

  const hiddenSize = positiveInt(raw, file, 'hidden_size');
  const numHeads = positiveInt(raw, file, 'num_attention_heads');
  const numKvHeads = positiveInt(raw, file, 'num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(file, 'num_key_value_heads', `(${numKvHeads}) must divide num_attention_heads (${numHeads})`);
  }
  const headDimDefault = hiddenSize % numHeads === 0 ? hiddenSize / numHeads : undefined;
  const headDim = positiveInt(raw, file, 'head_dim', headDimDefault);
  if (headDim % 2 !== 0) throw new ConfigError(file, 'head_dim', `must be even for rotary embeddings, got ${headDim}`);

  let ropeScaling: Llama3RopeScaling | undefined;
  const rs = raw.rope_scaling;
  if (rs !== undefined && rs !== null) {
    if (typeof rs !== 'object') throw new ConfigError(file, 'rope_scaling', 'must be an object or null');
    const r = rs as Json;
    const type = r.rope_type ?? r.type;
    if (type === 'default') {
      ropeScaling = undefined;
    } else if (type === 'llama3') {
      ropeScaling = {
        type: 'llama3',
        factor: positiveNumber(r, file, 'factor'),
        lowFreqFactor: positiveNumber(r, file, 'low_freq_factor'),
        highFreqFactor: positiveNumber(r, file, 'high_freq_factor'),
        originalMaxPositionEmbeddings: positiveInt(r, file, 'original_max_position_embeddings'),
      };
    } else {
      throw new ConfigError(file, 'rope_scaling', `has type ${JSON.stringify(type)}; only 'llama3' (or none) is supported`);
    }
  }

  const attentionBias = bool(raw, file, 'attention_bias', false);
  const eos = raw.eos_token_id;
  const eosTokenIds = eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos.map(Number) : [Number(eos)];
  if (eosTokenIds.some((x) => !Number.isInteger(x))) throw new ConfigError(file, 'eos_token_id', `must be an integer or a list of integers, got ${JSON.stringify(eos)}`);
  const bos = raw.bos_token_id;

  return {
    architecture,
    vocabSize: positiveInt(raw, file, 'vocab_size'),
    hiddenSize,
    intermediateSize: positiveInt(raw, file, 'intermediate_size'),
    numLayers: positiveInt(raw, file, 'num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positiveNumber(raw, file, 'rms_norm_eps', 1e-6),
    ropeTheta: positiveNumber(raw, file, 'rope_theta', 10000),
    ropeScaling,
    maxPositionEmbeddings: positiveInt(raw, file, 'max_position_embeddings', 2048),
    tieWordEmbeddings: bool(raw, file, 'tie_word_embeddings', false),
    qkvBias: architecture === 'qwen2' ? true : attentionBias,
    oBias: architecture === 'qwen2' ? false : attentionBias,
    qkNorm: architecture === 'qwen3',
    bosTokenId: typeof bos === 'number' ? bos : undefined,
    eosTokenIds,
  };
}

export function loadModelConfig(dir: string): ModelConfig {
  const file = join(dir, 'config.json');
  if (!existsSync(file)) throw new Error(`${file}: not found (a Hugging Face model folder needs config.json)`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${file}: not a JSON object`);
  return parseModelConfig(raw as Json, file);
}

/** The Hugging Face tensor names and shapes ([out, in] for projections) a checkpoint of `cfg` must hold. */
export function expectedTensors(cfg: ModelConfig): Map<string, number[]> {
  const m = new Map<string, number[]>();
  const d = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  m.set('model.embed_tokens.weight', [cfg.vocabSize, d]);
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    m.set(`${p}input_layernorm.weight`, [d]);
    m.set(`${p}self_attn.q_proj.weight`, [q, d]);
    m.set(`${p}self_attn.k_proj.weight`, [kv, d]);
    m.set(`${p}self_attn.v_proj.weight`, [kv, d]);
    m.set(`${p}self_attn.o_proj.weight`, [d, q]);
    if (cfg.qkvBias) {
      m.set(`${p}self_attn.q_proj.bias`, [q]);
      m.set(`${p}self_attn.k_proj.bias`, [kv]);
      m.set(`${p}self_attn.v_proj.bias`, [kv]);
    }
    if (cfg.oBias) m.set(`${p}self_attn.o_proj.bias`, [d]);
    if (cfg.qkNorm) {
      m.set(`${p}self_attn.q_norm.weight`, [cfg.headDim]);
      m.set(`${p}self_attn.k_norm.weight`, [cfg.headDim]);
    }
    m.set(`${p}post_attention_layernorm.weight`, [d]);
    m.set(`${p}mlp.gate_proj.weight`, [cfg.intermediateSize, d]);
    m.set(`${p}mlp.up_proj.weight`, [cfg.intermediateSize, d]);
    m.set(`${p}mlp.down_proj.weight`, [d, cfg.intermediateSize]);
  }
  m.set('model.norm.weight', [d]);
  if (!cfg.tieWordEmbeddings) m.set('lm_head.weight', [cfg.vocabSize, d]);
  return m;
}
