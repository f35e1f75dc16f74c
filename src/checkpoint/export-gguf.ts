// Hugging Face folder (config.json + safetensors + tokenizer.json) → a GGUF that llama.cpp loads.
// Facts taken from llama.cpp's convert_hf_to_gguf.py, src/llama-model.cpp and src/llama-vocab.cpp:
// - qwen2/qwen3 use NEOX (rotate-half) RoPE like HF, so q/k are written unchanged; the `llama` GGUF arch
//   uses NORM (interleaved pairs) RoPE, so HF q_proj/k_proj rows (and biases) are permuted per head so that
//   pair (i, i + hd/2) of HF becomes the adjacent pair (2i, 2i + 1).
// - Llama 3 `rope_scaling` becomes a `rope_freqs.weight` tensor of per-frequency divisors; no rope keys.
// - Tied embeddings: no `output.weight` (llama.cpp then reuses `token_embd.weight`).
// - 1-D tensors (norms, biases, rope factors) stay F32 in an f16 export.
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { expectedTensors, loadModelConfig, type ModelConfig } from '../model/config.js';
import { SafetensorsCheckpoint } from '../formats/safetensors.js';
import { gv, writeGguf, type GgufTensorToWrite, type GgufValue } from '../formats/gguf.js';

/** The matrices' type (norms and biases stay f32): q8_0 is llama.cpp's 8-bit blocks (src/formats/gguf.ts). */
export type GgufExportDtype = 'f32' | 'f16' | 'q8_0';

export interface ExportGgufOptions {
  dtype?: GgufExportDtype;
  /** `general.name`; defaults to config `_name_or_path` or the folder name. */
  name?: string;
}

export interface ExportGgufResult {
  path: string;
  architecture: ModelConfig['architecture'];
  dtype: GgufExportDtype;
  tensorCount: number;
  bytes: number;
  vocabSize: number;
  /** `tokenizer.ggml.model` written. */
  tokenizer: 'gpt2' | 'llama';
  /** Tokens added as `[PAD{i}]` because the embedding has more rows than the tokenizer has ids. */
  paddedTokens: number;
  /** Checkpoint tensors not exported (e.g. `rotary_emb.inv_freq`). */
  skipped: string[];
}

/** ggml token types (gguf-py `TokenType`). */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

// ---------------------------------------------------------------------------------------------------------
// Q/K row permutation for NORM RoPE.

/**
 * HF (rotate-half) → llama.cpp NORM RoPE row order, per head of `headDim` rows: row `h·hd + 2i + j` of the
 * result is HF row `h·hd + j·hd/2 + i` (j ∈ {0,1}). `rows × cols` row-major; a bias is `cols = 1`.
 */
export function permuteQkForNormRope(data: Float32Array, rows: number, cols: number, headDim: number): Float32Array {
  return permuteRows(data, rows, cols, headDim, false);
}

/** The inverse of {@link permuteQkForNormRope}. */
export function unpermuteQkForNormRope(data: Float32Array, rows: number, cols: number, headDim: number): Float32Array {
  return permuteRows(data, rows, cols, headDim, true);
}

function permuteRows(data: Float32Array, rows: number, cols: number, headDim: number, inverse: boolean): Float32Array {
  if (data.length !== rows * cols) throw new Error(`q/k permutation: ${data.length} values for ${rows}×${cols}`);
  if (headDim % 2 !== 0 || rows % headDim !== 0) throw new Error(`q/k permutation: ${rows} rows do not split into heads of even size ${headDim}`);
  const out = new Float32Array(data.length);
  const half = headDim / 2;
  for (let h = 0; h < rows / headDim; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const ggufRow = h * headDim + 2 * i + j;
        const hfRow = h * headDim + j * half + i;
        const [dst, src] = inverse ? [hfRow, ggufRow] : [ggufRow, hfRow];
        out.set(data.subarray(src * cols, (src + 1) * cols), dst * cols);
      }
    }
  }
  return out;
}

/**
 * Llama 3 RoPE frequency divisors (llama.cpp divides θ_i by them): 1 for short wavelengths, `factor` for
 * long ones, a smooth blend between, as in convert_hf_to_gguf.py `LlamaModel.generate_extra_tensors`.
 */
export function llama3RopeFactors(cfg: ModelConfig): Float32Array {
  const s = cfg.ropeScaling;
  if (!s) throw new Error('llama3RopeFactors: the config has no llama3 rope_scaling');
  const half = cfg.headDim / 2;
  const out = new Float32Array(half);
  const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  for (let i = 0; i < half; i++) {
    const freq = 1 / cfg.ropeTheta ** ((2 * i) / cfg.headDim);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = s.factor;
    else {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Vocabulary.

type Json = Record<string, unknown>;

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

function readJson(path: string): Json {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${path}: not a JSON object`);
  return raw as Json;
}

function readJsonIfExists(path: string): Json | undefined {
  return existsSync(path) ? readJson(path) : undefined;
}

/** Looks like a control token although not flagged special (convert_hf_to_gguf `does_token_look_special`). */
function looksSpecial(t: string): boolean {
  return (t.startsWith('<|') && t.endsWith('|>')) || (t.startsWith('<｜') && t.endsWith('｜>')) || ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(t) || (t.startsWith('<unused') && t.endsWith('>'));
}

/** GGUF `tokenizer.ggml.pre` from the tokenizer.json pre-tokenizer regex (llama.cpp implements each by name). */
function detectPre(tok: Json, cfg: ModelConfig): string {
  const text = JSON.stringify(tok.pre_tokenizer ?? null);
  if (text.includes('\\\\p{N}{1,3}')) return 'llama-bpe';
  if (text.includes('[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}|')) return 'qwen2';
  return cfg.architecture === 'llama' ? 'default' : 'qwen2';
}

/** Special token ids the way gguf-py `SpecialVocab` finds them: tokenizer_config content first, then config.json ids. */
function specialTokenIds(added: AddedToken[], tokCfg: Json | undefined, rawCfg: Json, nVocab: number): Map<string, number> {
  const ids = new Map<string, number>();
  for (const typ of ['bos', 'eos', 'unk', 'sep', 'pad', 'mask']) {
    const entry = tokCfg?.[`${typ}_token`];
    const content = typeof entry === 'string' ? entry : typeof entry === 'object' && entry !== null && typeof (entry as Json).content === 'string' ? ((entry as Json).content as string) : undefined;
    if (content !== undefined) {
      const hit = added.find((a) => a.content === content);
      if (hit && hit.id < nVocab) ids.set(typ, hit.id);
    }
    const fromCfg = rawCfg[`${typ}_token_id`];
    if (!ids.has(typ) && typeof fromCfg === 'number' && Number.isInteger(fromCfg) && fromCfg >= 0 && fromCfg < nVocab) ids.set(typ, fromCfg);
  }
  return ids;
}

const SPECIAL_KEYS: Record<string, string> = {
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  sep: 'tokenizer.ggml.seperator_token_id', // sic: llama.cpp's key spelling
  pad: 'tokenizer.ggml.padding_token_id',
  mask: 'tokenizer.ggml.mask_token_id',
};

function chatTemplate(dir: string, tokCfg: Json | undefined): string | undefined {
  const t = tokCfg?.chat_template;
  if (typeof t === 'string') return t;
  const jinja = join(dir, 'chat_template.jinja');
  return existsSync(jinja) ? readFileSync(jinja, 'utf8') : undefined;
}

/**
 * What a SentencePiece vocabulary has and tokenizer.json cannot: per-piece scores, in `tokenizer_scores.json`.
 * src/checkpoint/llama2c.ts writes it as `{ model, tokens, scores, token_type, bos_token_id, eos_token_id,
 * unk_token_id, add_bos_token, add_eos_token }`; a bare array of scores is accepted too.
 */
interface SpmSidecar {
  scores?: number[];
  tokenTypes?: number[];
  ids: Map<string, number>;
  addBos?: boolean;
  addEos?: boolean;
}

function readSpmSidecar(dir: string, n: number): SpmSidecar {
  const path = join(dir, 'tokenizer_scores.json');
  const out: SpmSidecar = { ids: new Map() };
  if (!existsSync(path)) return out;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
  }
  const obj = Array.isArray(raw) ? { scores: raw } : typeof raw === 'object' && raw !== null ? (raw as Json) : undefined;
  if (!obj) throw new Error(`${path}: must be an array of scores or an object with 'scores'`);
  const numbers = (field: string): number[] | undefined => {
    const v = obj[field];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'number')) throw new Error(`${path}: '${field}' must be an array of numbers`);
    if (v.length > n) throw new Error(`${path}: '${field}' has ${v.length} entries, but config.json vocab_size is ${n}`);
    return v as number[];
  };
  out.scores = numbers('scores');
  out.tokenTypes = numbers('token_type');
  for (const [typ, field] of [['bos', 'bos_token_id'], ['eos', 'eos_token_id'], ['unk', 'unk_token_id']] as const) {
    const v = obj[field];
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < n) out.ids.set(typ, v);
  }
  if (typeof obj.add_bos_token === 'boolean') out.addBos = obj.add_bos_token;
  if (typeof obj.add_eos_token === 'boolean') out.addEos = obj.add_eos_token;
  return out;
}

/**
 * Fills ids the tokenizer leaves undefined (the embedding has more rows than the vocabulary defines) with
 * `[PAD{id}]` tokens of type unused, as convert_hf_to_gguf.py does; returns how many it added.
 */
function padUnusedIds(tokens: Array<string | undefined>, types: Int32Array, n: number): number {
  let padded = 0;
  for (let id = 0; id < n; id++) {
    if (tokens[id] === undefined) {
      tokens[id] = `[PAD${id}]`;
      types[id] = TOKEN_TYPE.unused;
      padded++;
    }
  }
  return padded;
}

export interface VocabMetadata {
  entries: Array<[string, GgufValue]>;
  model: 'gpt2' | 'llama';
  paddedTokens: number;
}

/** The `tokenizer.*` GGUF metadata for the folder's tokenizer.json, padded to `cfg.vocabSize` tokens. */
export function buildVocabMetadata(dir: string, cfg: ModelConfig): VocabMetadata {
  const tokPath = join(dir, 'tokenizer.json');
  if (!existsSync(tokPath)) throw new Error(`${tokPath}: not found (the GGUF export needs the folder's tokenizer.json)`);
  const tok = readJson(tokPath);
  const tokCfg = readJsonIfExists(join(dir, 'tokenizer_config.json'));
  const rawCfg = readJson(join(dir, 'config.json'));
  const model = tok.model as Json | undefined;
  if (!model || model.type !== 'BPE' || typeof model.vocab !== 'object' || model.vocab === null) {
    throw new Error(`${tokPath}: model.type must be 'BPE' with a 'vocab' object (got ${JSON.stringify(model?.type)})`);
  }
  const n = cfg.vocabSize;
  const tokens: Array<string | undefined> = new Array(n);
  const types = new Int32Array(n);
  for (const [piece, id] of Object.entries(model.vocab as Record<string, number>)) {
    if (!Number.isInteger(id) || id < 0) throw new Error(`${tokPath}: token ${JSON.stringify(piece)} has bad id ${id}`);
    if (id >= n) throw new Error(`${tokPath}: token ${JSON.stringify(piece)} has id ${id}, but config.json vocab_size is ${n}`);
    tokens[id] = piece;
    types[id] = TOKEN_TYPE.normal;
  }
  const added: AddedToken[] = [];
  for (const a of (tok.added_tokens as Json[] | undefined) ?? []) {
    const id = a.id as number;
    const content = a.content as string;
    if (!Number.isInteger(id) || typeof content !== 'string') throw new Error(`${tokPath}: bad added_tokens entry ${JSON.stringify(a)}`);
    if (id >= n) throw new Error(`${tokPath}: added token ${JSON.stringify(content)} has id ${id}, but config.json vocab_size is ${n}`);
    added.push({ id, content, special: a.special === true });
  }
  const byteFallback = model.byte_fallback === true;
  const entries: Array<[string, GgufValue]> = [];
  const specials = specialTokenIds(added, tokCfg, rawCfg, n);
  const addBosCfg = tokCfg?.add_bos_token;
  const addEosCfg = tokCfg?.add_eos_token;

  if (byteFallback) {
    // SentencePiece-style (Llama 1/2, llama2.c): llama.cpp's SPM tokenizer with scores and byte tokens.
    const unk = typeof model.unk_token === 'string' ? (model.vocab as Record<string, number>)[model.unk_token] : undefined;
    for (let id = 0; id < n; id++) {
      const t = tokens[id];
      if (t === undefined) continue;
      if (/^<0x[0-9A-Fa-f]{2}>$/.test(t)) types[id] = TOKEN_TYPE.byte;
      else if (id === unk || t === '<unk>') types[id] = TOKEN_TYPE.unknown;
      else if (t === '<s>' || t === '</s>') types[id] = TOKEN_TYPE.control;
    }
    for (const a of added) {
      if (tokens[a.id] === undefined || tokens[a.id] === a.content) {
        tokens[a.id] = a.content;
        if (types[a.id] === 0 || types[a.id] === TOKEN_TYPE.normal) types[a.id] = a.content === '<unk>' ? TOKEN_TYPE.unknown : a.special ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined;
      }
    }
    const side = readSpmSidecar(dir, n);
    side.tokenTypes?.forEach((t, id) => {
      if (tokens[id] !== undefined) types[id] = t;
    });
    const padded = padUnusedIds(tokens, types, n);
    // Without recorded scores, SentencePiece BPE priorities follow the id order (earlier pieces win).
    const scores = Float32Array.from({ length: n }, (_, id) => side.scores?.[id] ?? -id);
    for (let id = 0; id < n; id++) if (types[id] === TOKEN_TYPE.unused) scores[id] = -1000;
    const norm = JSON.stringify(tok.normalizer ?? null);
    const pre = tok.pre_tokenizer as Json | null | undefined;
    // SentencePiece's dummy prefix: HF writes it as a Prepend("▁") normalizer (legacy) or a Metaspace pre-tokenizer.
    let addSpacePrefix = true;
    if (norm !== 'null' && !norm.includes('Prepend')) addSpacePrefix = false;
    if (pre && pre.type === 'Metaspace') addSpacePrefix = pre.prepend_scheme !== 'never' && pre.add_prefix_space !== false;
    entries.push(['tokenizer.ggml.model', gv.string('llama')]);
    entries.push(['tokenizer.ggml.pre', gv.string('default')]);
    entries.push(['tokenizer.ggml.tokens', gv.strings(tokens as string[])]);
    entries.push(['tokenizer.ggml.scores', gv.f32s(scores)]);
    entries.push(['tokenizer.ggml.token_type', gv.i32s(types)]);
    const pick = (typ: string, fallback: number): number => specials.get(typ) ?? side.ids.get(typ) ?? fallback;
    const ids = new Map<string, number>([['bos', pick('bos', 1)], ['eos', pick('eos', 2)], ['unk', pick('unk', unk ?? 0)]]);
    for (const typ of ['sep', 'pad', 'mask']) if (specials.has(typ)) ids.set(typ, specials.get(typ) as number);
    for (const [typ, id] of ids) entries.push([SPECIAL_KEYS[typ] as string, gv.u32(id)]);
    entries.push(['tokenizer.ggml.add_bos_token', gv.bool(typeof addBosCfg === 'boolean' ? addBosCfg : side.addBos ?? true)]);
    entries.push(['tokenizer.ggml.add_eos_token', gv.bool(typeof addEosCfg === 'boolean' ? addEosCfg : side.addEos ?? false)]);
    entries.push(['tokenizer.ggml.add_space_prefix', gv.bool(addSpacePrefix)]);
    const tmpl = chatTemplate(dir, tokCfg);
    if (tmpl !== undefined) entries.push(['tokenizer.chat_template', gv.string(tmpl)]);
    return { entries, model: 'llama', paddedTokens: padded };
  }

  // Byte-level BPE (GPT-2 / Qwen / Llama 3): tokens are the byte-to-unicode strings of tokenizer.json.
  for (const a of added) {
    let content = a.content;
    if (a.special || looksSpecial(content)) types[a.id] = TOKEN_TYPE.control;
    else {
      // llama.cpp expects user-defined tokens pre-normalized (convert_hf_to_gguf.py does the same).
      content = content.replaceAll('\u2581', ' ');
      types[a.id] = TOKEN_TYPE.userDefined;
    }
    tokens[a.id] = content;
  }
  const padded = padUnusedIds(tokens, types, n);
  const rawMerges = model.merges;
  if (!Array.isArray(rawMerges) || rawMerges.length === 0) throw new Error(`${tokPath}: model.merges is missing or empty (llama.cpp's BPE tokenizer needs it)`);
  const merges = rawMerges.map((m, i) => {
    if (typeof m === 'string') return m;
    if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string') {
      // Pair form (transformers ≥ 4.45): a literal space inside a part is written as U+0120, like convert does.
      return `${m[0].replaceAll(' ', '\u0120')} ${m[1].replaceAll(' ', '\u0120')}`;
    }
    throw new Error(`${tokPath}: model.merges[${i}] is neither "a b" nor ["a", "b"]`);
  });
  const pre = detectPre(tok, cfg);
  entries.push(['tokenizer.ggml.model', gv.string('gpt2')]);
  entries.push(['tokenizer.ggml.pre', gv.string(pre)]);
  entries.push(['tokenizer.ggml.tokens', gv.strings(tokens as string[])]);
  entries.push(['tokenizer.ggml.token_type', gv.i32s(types)]);
  entries.push(['tokenizer.ggml.merges', gv.strings(merges)]);
  for (const [typ, id] of specials) entries.push([SPECIAL_KEYS[typ] as string, gv.u32(id)]);
  // Qwen adds no BOS; a Llama 3 style template that starts with the BOS token does.
  let addBos = typeof addBosCfg === 'boolean' ? addBosCfg : false;
  if (typeof addBosCfg !== 'boolean' && cfg.architecture === 'llama') {
    const bosId = specials.get('bos');
    const bosContent = added.find((a) => a.id === bosId)?.content;
    const single = JSON.stringify((tok.post_processor as Json | undefined) ?? null);
    addBos = bosContent !== undefined && single.includes(`"SpecialToken":{"id":${JSON.stringify(bosContent)}`);
  }
  entries.push(['tokenizer.ggml.add_bos_token', gv.bool(addBos)]);
  if (typeof addEosCfg === 'boolean') entries.push(['tokenizer.ggml.add_eos_token', gv.bool(addEosCfg)]);
  const tmpl = chatTemplate(dir, tokCfg);
  if (tmpl !== undefined) entries.push(['tokenizer.chat_template', gv.string(tmpl)]);
  return { entries, model: 'gpt2', paddedTokens: padded };
}

// ---------------------------------------------------------------------------------------------------------
// Export.

function checkSupported(cfg: ModelConfig, dir: string): void {
  const file = join(dir, 'config.json');
  if (cfg.architecture === 'qwen2' && cfg.numHeads * cfg.headDim !== cfg.hiddenSize) {
    throw new Error(`${file}: llama.cpp's qwen2 needs num_attention_heads × head_dim = hidden_size (${cfg.numHeads} × ${cfg.headDim} ≠ ${cfg.hiddenSize})`);
  }
  if (cfg.architecture === 'qwen2' && cfg.oBias) throw new Error(`${file}: llama.cpp's qwen2 has no attn_output.bias`);
  if (cfg.architecture === 'qwen3' && cfg.oBias) throw new Error(`${file}: llama.cpp's qwen3 has no attn_output.bias (attention_bias: true)`);
  if (cfg.ropeScaling && cfg.architecture !== 'llama') throw new Error(`${file}: llama3 rope_scaling is only exported for the llama architecture`);
}

/** HF tensor name → GGUF tensor name. */
function ggufName(hf: string): string | undefined {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hf);
  if (!m) return undefined;
  const part: Record<string, string> = {
    input_layernorm: 'attn_norm',
    'self_attn.q_proj': 'attn_q',
    'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output',
    'self_attn.q_norm': 'attn_q_norm',
    'self_attn.k_norm': 'attn_k_norm',
    post_attention_layernorm: 'ffn_norm',
    'mlp.gate_proj': 'ffn_gate',
    'mlp.up_proj': 'ffn_up',
    'mlp.down_proj': 'ffn_down',
  };
  const g = part[m[2] as string];
  return g ? `blk.${m[1]}.${g}.${m[3]}` : undefined;
}

/** The architecture metadata llama.cpp reads for qwen3 / qwen2 / llama (src/llama-model.cpp `load_hparams`). */
function archMetadata(cfg: ModelConfig): Array<[string, GgufValue]> {
  const a = cfg.architecture;
  const e: Array<[string, GgufValue]> = [
    [`${a}.context_length`, gv.u32(cfg.maxPositionEmbeddings)],
    [`${a}.embedding_length`, gv.u32(cfg.hiddenSize)],
    [`${a}.block_count`, gv.u32(cfg.numLayers)],
    [`${a}.feed_forward_length`, gv.u32(cfg.intermediateSize)],
    [`${a}.attention.head_count`, gv.u32(cfg.numHeads)],
    [`${a}.attention.head_count_kv`, gv.u32(cfg.numKvHeads)],
    // Explicit: llama.cpp's default hidden/heads is wrong for Qwen3 (head_dim 128 ≠ 1024/16).
    [`${a}.attention.key_length`, gv.u32(cfg.headDim)],
    [`${a}.attention.value_length`, gv.u32(cfg.headDim)],
    [`${a}.rope.dimension_count`, gv.u32(cfg.headDim)],
    [`${a}.rope.freq_base`, gv.f32(cfg.ropeTheta)],
    [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(cfg.rmsNormEps)],
  ];
  if (a === 'llama') e.push([`${a}.vocab_size`, gv.u32(cfg.vocabSize)]);
  return e;
}

/**
 * Exports a Hugging Face model folder (qwen3, qwen2 or llama) to a GGUF file at `outPath`, written
 * atomically. Tensors are read one at a time while writing, so memory stays near one tensor.
 */
export async function exportGguf(modelDir: string, outPath: string, options: ExportGgufOptions = {}): Promise<ExportGgufResult> {
  const dtype = options.dtype ?? 'f32';
  if (dtype !== 'f32' && dtype !== 'f16' && dtype !== 'q8_0') throw new Error(`GGUF export: dtype must be 'f32', 'f16' or 'q8_0', got ${JSON.stringify(dtype)}`);
  const dir = resolve(modelDir);
  const cfg = loadModelConfig(dir);
  checkSupported(cfg, dir);
  const rawCfg = readJson(join(dir, 'config.json'));
  const ckpt = new SafetensorsCheckpoint(dir);
  const expected = expectedTensors(cfg);
  for (const [name, shape] of expected) {
    if (!ckpt.has(name)) throw new Error(`${dir}: tensor '${name}' is missing from the checkpoint (needed for ${cfg.architecture} with this config.json)`);
    const got = ckpt.entry(name).shape;
    if (got.length !== shape.length || got.some((d, i) => d !== shape[i])) {
      throw new Error(`${ckpt.fileOf(name)}: tensor '${name}' has shape ${JSON.stringify(got)}, expected ${JSON.stringify(shape)} from config.json`);
    }
  }
  const skipped = ckpt.names().filter((n) => !expected.has(n));

  const vocab = buildVocabMetadata(dir, cfg);
  const name = options.name ?? (typeof rawCfg._name_or_path === 'string' && rawCfg._name_or_path ? rawCfg._name_or_path : basename(dir));
  const metadata: Array<[string, GgufValue]> = [
    ['general.architecture', gv.string(cfg.architecture)],
    ['general.type', gv.string('model')],
    ['general.name', gv.string(name)],
    ['general.file_type', gv.u32({ f32: 0, f16: 1, q8_0: 7 }[dtype])], // LlamaFileType ALL_F32 / MOSTLY_F16 / MOSTLY_Q8_0
    ['general.alignment', gv.u32(32)],
    ...archMetadata(cfg),
    ...vocab.entries,
  ];

  const tensors: GgufTensorToWrite[] = [];
  const permute = cfg.architecture === 'llama';
  for (const [hf, shape] of expected) {
    if (hf === 'lm_head.weight' && cfg.tieWordEmbeddings) continue;
    const gg = ggufName(hf);
    if (!gg) throw new Error(`${ckpt.fileOf(hf)}: no GGUF name for tensor '${hf}'`);
    const rows = shape[0] as number;
    const cols = shape.length === 2 ? (shape[1] as number) : 1;
    const isQk = /\.self_attn\.[qk]_proj\.(weight|bias)$/.test(hf);
    tensors.push({
      name: gg,
      type: shape.length === 2 && dtype !== 'f32' ? (dtype === 'f16' ? 'F16' : 'Q8_0') : 'F32',
      dims: [...shape].reverse(),
      data: () => {
        const v = ckpt.readFloat32(hf, shape);
        return permute && isQk ? permuteQkForNormRope(v, rows, cols, cfg.headDim) : v;
      },
    });
  }
  if (cfg.ropeScaling?.type === 'llama3') {
    tensors.push({ name: 'rope_freqs.weight', type: 'F32', dims: [cfg.headDim / 2], data: llama3RopeFactors(cfg) });
  }

  const bytes = writeGguf(outPath, metadata, tensors, { alignment: 32 });
  return {
    path: resolve(outPath),
    architecture: cfg.architecture,
    dtype,
    tensorCount: tensors.length,
    bytes,
    vocabSize: cfg.vocabSize,
    tokenizer: vocab.model,
    paddedTokens: vocab.paddedTokens,
    skipped,
  };
}
