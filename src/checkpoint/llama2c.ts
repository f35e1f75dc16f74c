// Converts a llama2.c legacy checkpoint (karpathy/llama2.c `run.c` format, e.g. stories260K.bin) and its
// tokenizer.bin (e.g. tok512.bin) into a Hugging Face Llama folder that our loader, transformers and the
// GGUF exporter read.
//
// Files written to the output folder:
//   config.json, generation_config.json, model.safetensors             always
//   tokenizer.json, tokenizer_config.json, tokenizer_scores.json       when a tokenizer.bin is given
//   tokenizer.model                                                    when a SentencePiece `.model` sits
//                                                                      next to the tokenizer.bin (copied)
//
// tokenizer_scores.json keeps what a SentencePiece vocabulary has and tokenizer.json cannot: the per-piece
// scores. The GGUF exporter writes `tokenizer.ggml.model = "llama"` from it:
//   { "model": "llama",            // GGUF tokenizer.ggml.model
//     "tokens": string[],          // pieces by id, with "▁" for spaces (tokenizer.ggml.tokens)
//     "scores": number[],          // tokenizer.ggml.scores
//     "token_type": number[],      // tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 6 byte
//     "bos_token_id", "eos_token_id", "unk_token_id": number, "add_bos_token": true, "add_eos_token": false }
//
// RoPE: llama2.c rotates interleaved pairs (2i, 2i+1) of each head, Hugging Face Llama rotates halves
// (i, i + head_dim/2). As in HF's own converter, the rows of wq and wk are permuted per head so that the
// HF forward computes exactly what run.c computes.
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, join } from 'node:path';
import { writeFileAtomic } from '../util/atomic.js';
import { encodeSafetensors, type SafetensorsDtype, type TensorToWrite } from '../formats/safetensors.js';
import { expectedTensors, parseModelConfig, type ModelConfig } from '../model/config.js';

export interface Llama2cHeader {
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  vocabSize: number;
  /** A positive vocab_size in the header means the classifier shares the embedding table. */
  sharedClassifier: boolean;
  seqLen: number;
}

export interface Llama2cTokenizer {
  maxTokenLength: number;
  /** Pieces by id, in SentencePiece form ("▁" for spaces; BOS/EOS as `<s>` / `</s>`). */
  pieces: string[];
  scores: number[];
  /** GGUF token types: 1 normal, 2 unknown, 3 control, 6 byte. */
  types: number[];
}

export interface ConvertOptions {
  /** Output tensor dtype (llama2.c weights are f32). */
  dtype?: 'f32' | 'bf16' | 'f16';
}

export interface ConvertResult {
  dir: string;
  header: Llama2cHeader;
  config: ModelConfig;
  files: Array<{ name: string; bytes: number }>;
  tensors: number;
  parameters: number;
  tokenizer: boolean;
}

export class Llama2cError extends Error {
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'Llama2cError';
  }
}

const HEADER_BYTES = 7 * 4;
const TOKEN_NORMAL = 1;
const TOKEN_UNKNOWN = 2;
const TOKEN_CONTROL = 3;
const TOKEN_BYTE = 6;
const BYTE_PIECE = /^<0x[0-9A-F]{2}>$/;

function readHeaderInts(path: string): { ints: Int32Array; size: number } {
  if (!existsSync(path)) throw new Llama2cError(path, 'file not found');
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size < HEADER_BYTES) throw new Llama2cError(path, `truncated: ${size} bytes, shorter than the 28-byte llama2.c header`);
    const buf = new Uint8Array(HEADER_BYTES);
    readSync(fd, buf, 0, HEADER_BYTES, 0);
    return { ints: new Int32Array(buf.buffer), size };
  } finally {
    closeSync(fd);
  }
}

/** Float counts of each weight block, in file order. */
function layout(h: Llama2cHeader): Array<{ key: string; count: number }> {
  const headSize = h.dim / h.nHeads;
  const kvDim = headSize * h.nKvHeads;
  const L = h.nLayers;
  const blocks = [
    { key: 'tok_embeddings', count: h.vocabSize * h.dim },
    { key: 'rms_att', count: L * h.dim },
    { key: 'wq', count: L * h.dim * h.dim },
    { key: 'wk', count: L * kvDim * h.dim },
    { key: 'wv', count: L * kvDim * h.dim },
    { key: 'wo', count: L * h.dim * h.dim },
    { key: 'rms_ffn', count: L * h.dim },
    { key: 'w1', count: L * h.hiddenDim * h.dim },
    { key: 'w2', count: L * h.dim * h.hiddenDim },
    { key: 'w3', count: L * h.hiddenDim * h.dim },
    { key: 'rms_final', count: h.dim },
    { key: 'freq_cis_real', count: (h.seqLen * headSize) / 2 },
    { key: 'freq_cis_imag', count: (h.seqLen * headSize) / 2 },
  ];
  if (!h.sharedClassifier) blocks.push({ key: 'wcls', count: h.vocabSize * h.dim });
  return blocks;
}

/** Reads and validates the 7-int header (and that the file size matches it exactly). */
export function readLlama2cHeader(path: string): Llama2cHeader {
  const { ints, size } = readHeaderInts(path);
  // The newer export formats (version 1/2) start with the magic "ak42" and are not the legacy layout.
  if ((ints[0] as number) === 0x616b3432) {
    throw new Llama2cError(path, "is a llama2.c version-1/2 export (magic 'ak42'); only the legacy format (export.py --version 0) is supported");
  }
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];
  for (let i = 0; i < 7; i++) {
    const v = ints[i] as number;
    if (i === 5 ? v === 0 : v <= 0) throw new Llama2cError(path, `header field '${names[i]}' is ${v}; not a llama2.c legacy checkpoint`);
  }
  const rawVocab = ints[5] as number;
  const h: Llama2cHeader = {
    dim: ints[0] as number,
    hiddenDim: ints[1] as number,
    nLayers: ints[2] as number,
    nHeads: ints[3] as number,
    nKvHeads: ints[4] as number,
    vocabSize: Math.abs(rawVocab),
    sharedClassifier: rawVocab > 0,
    seqLen: ints[6] as number,
  };
  if (h.dim % h.nHeads !== 0) throw new Llama2cError(path, `header field 'n_heads' (${h.nHeads}) does not divide 'dim' (${h.dim})`);
  if (h.nHeads % h.nKvHeads !== 0) throw new Llama2cError(path, `header field 'n_kv_heads' (${h.nKvHeads}) does not divide 'n_heads' (${h.nHeads})`);
  if ((h.dim / h.nHeads) % 2 !== 0) throw new Llama2cError(path, `head size dim/n_heads = ${h.dim / h.nHeads} is odd; RoPE needs it even`);
  const floats = layout(h).reduce((a, b) => a + b.count, 0);
  const expected = HEADER_BYTES + 4 * floats;
  if (size !== expected) {
    throw new Llama2cError(path, `${size < expected ? 'truncated' : 'too long'}: ${size} bytes, but the header (${JSON.stringify(ints.slice())}) implies ${expected} (${floats} fp32 weights)`);
  }
  return h;
}

/**
 * interleaved → rotate-half for one [nHeads·headDim, inDim] matrix: row h·hd + 2i + j moves to
 * h·hd + j·hd/2 + i (HF's `w.view(n_heads, hd/2, 2, in).transpose(1, 2)`).
 */
export function permuteRotary(w: Float32Array, nHeads: number, headDim: number, inDim: number): Float32Array {
  const out = new Float32Array(w.length);
  const half = headDim / 2;
  for (let h = 0; h < nHeads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * headDim + 2 * i + j) * inDim;
        const dst = (h * headDim + j * half + i) * inDim;
        out.set(w.subarray(src, src + inDim), dst);
      }
    }
  }
  return out;
}

/** Reads a llama2.c tokenizer.bin: int32 max_token_length, then per token f32 score, int32 length, bytes. */
export function readLlama2cTokenizer(path: string, vocabSize: number): Llama2cTokenizer {
  if (!existsSync(path)) throw new Llama2cError(path, 'file not found');
  const buf = readFileSync(path);
  if (buf.length < 4) throw new Llama2cError(path, 'truncated: no max_token_length');
  const maxTokenLength = buf.readInt32LE(0);
  const pieces: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  let off = 4;
  for (let id = 0; id < vocabSize; id++) {
    if (off + 8 > buf.length) throw new Llama2cError(path, `truncated: token ${id} of ${vocabSize} is missing (the checkpoint's vocab_size)`);
    const score = buf.readFloatLE(off);
    const len = buf.readInt32LE(off + 4);
    off += 8;
    if (len < 0 || off + len > buf.length) throw new Llama2cError(path, `token ${id}: bad length ${len} (is this a llama2.c tokenizer.bin?)`);
    let piece = buf.toString('utf8', off, off + len);
    off += len;
    // llama2.c's export wrote BOS/EOS as "\n<s>\n" / "\n</s>\n" and "▁" as " "; undo both.
    const trimmed = piece.trim();
    if (trimmed === '<s>' || trimmed === '</s>') piece = trimmed;
    else piece = piece.replaceAll(' ', '\u2581');
    let type = TOKEN_NORMAL;
    if (piece === '<unk>') type = TOKEN_UNKNOWN;
    else if (piece === '<s>' || piece === '</s>') type = TOKEN_CONTROL;
    else if (BYTE_PIECE.test(piece)) type = TOKEN_BYTE;
    pieces.push(piece);
    scores.push(score);
    types.push(type);
  }
  if (off !== buf.length) {
    throw new Llama2cError(path, `has ${buf.length - off} bytes after token ${vocabSize - 1}: it holds more tokens than the checkpoint's vocab_size ${vocabSize}`);
  }
  const seen = new Map<string, number>();
  pieces.forEach((p, id) => {
    const prev = seen.get(p);
    if (prev !== undefined) throw new Llama2cError(path, `tokens ${prev} and ${id} are both ${JSON.stringify(p)}`);
    seen.set(p, id);
  });
  for (const [name, piece] of [['unk', '<unk>'], ['bos', '<s>'], ['eos', '</s>']] as const) {
    if (!seen.has(piece)) throw new Llama2cError(path, `has no ${name} token ${piece}`);
  }
  return { maxTokenLength, pieces, scores, types };
}

/**
 * The merges a BPE model needs to reproduce SentencePiece BPE: every split of every normal piece into two
 * normal pieces, ranked by the merged piece's score (highest first), as HF's SentencePieceExtractor does.
 */
export function sentencePieceMerges(tok: Llama2cTokenizer): Array<[string, string]> {
  const ids = new Map<string, number>();
  tok.pieces.forEach((p, i) => {
    if (tok.types[i] === TOKEN_NORMAL) ids.set(p, i);
  });
  const found: Array<{ l: string; r: string; score: number; id: number; lid: number; rid: number }> = [];
  tok.pieces.forEach((piece, id) => {
    if (tok.types[id] !== TOKEN_NORMAL) return;
    const chars = Array.from(piece);
    for (let k = 1; k < chars.length; k++) {
      const l = chars.slice(0, k).join('');
      const r = chars.slice(k).join('');
      const lid = ids.get(l);
      const rid = ids.get(r);
      if (lid !== undefined && rid !== undefined) found.push({ l, r, score: tok.scores[id] as number, id, lid, rid });
    }
  });
  found.sort((a, b) => b.score - a.score || a.id - b.id || a.lid - b.lid || a.rid - b.rid);
  return found.map((m) => [m.l, m.r]);
}

function addedToken(id: number, content: string): Record<string, unknown> {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/** tokenizer.json (HF's Llama/SentencePiece BPE layout), tokenizer_config.json and tokenizer_scores.json. */
export function sentencePieceTokenizerFiles(tok: Llama2cTokenizer, modelMaxLength: number): Record<string, Record<string, unknown>> {
  const idOf = (p: string): number => tok.pieces.indexOf(p);
  const unk = idOf('<unk>');
  const bos = idOf('<s>');
  const eos = idOf('</s>');
  const specials = tok.pieces.map((p, i) => ({ p, i })).filter(({ i }) => tok.types[i] === TOKEN_CONTROL || tok.types[i] === TOKEN_UNKNOWN);
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map(({ p, i }) => addedToken(i, p)),
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '\u2581' },
        { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
      ],
    },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<s>': { id: '<s>', ids: [bos], tokens: ['<s>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab: Object.fromEntries(tok.pieces.map((p, i) => [p, i])),
      merges: sentencePieceMerges(tok),
    },
  };
  const addedDecoder: Record<string, unknown> = {};
  for (const { p, i } of specials) {
    const { id: _id, ...rest } = addedToken(i, p);
    addedDecoder[String(i)] = rest;
  }
  const tokenizerConfig = {
    add_bos_token: true,
    add_eos_token: false,
    added_tokens_decoder: addedDecoder,
    bos_token: '<s>',
    clean_up_tokenization_spaces: false,
    eos_token: '</s>',
    legacy: true,
    model_max_length: modelMaxLength,
    pad_token: null,
    sp_model_kwargs: {},
    spaces_between_special_tokens: false,
    tokenizer_class: 'LlamaTokenizer',
    unk_token: '<unk>',
    use_default_system_prompt: false,
  };
  const scores = {
    model: 'llama',
    tokens: tok.pieces,
    scores: tok.scores,
    token_type: tok.types,
    bos_token_id: bos,
    eos_token_id: eos,
    unk_token_id: unk,
    add_bos_token: true,
    add_eos_token: false,
  };
  return { 'tokenizer.json': tokenizer, 'tokenizer_config.json': tokenizerConfig, 'tokenizer_scores.json': scores };
}

/** The HF config.json of a converted llama2.c model. */
export function llama2cConfigJson(h: Llama2cHeader, dtype: 'f32' | 'bf16' | 'f16' = 'f32'): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: 1,
    eos_token_id: 2,
    head_dim: h.dim / h.nHeads,
    hidden_act: 'silu',
    hidden_size: h.dim,
    initializer_range: 0.02,
    intermediate_size: h.hiddenDim,
    max_position_embeddings: h.seqLen,
    mlp_bias: false,
    model_type: 'llama',
    num_attention_heads: h.nHeads,
    num_hidden_layers: h.nLayers,
    num_key_value_heads: h.nKvHeads,
    pretraining_tp: 1,
    rms_norm_eps: 1e-5,
    rope_scaling: null,
    rope_theta: 10000.0,
    tie_word_embeddings: h.sharedClassifier,
    torch_dtype: { f32: 'float32', bf16: 'bfloat16', f16: 'float16' }[dtype],
    transformers_version: '4.51.0',
    use_cache: true,
    vocab_size: h.vocabSize,
  };
}

/** Converts `binPath` (and `tokenizerBinPath` when given) into a Hugging Face Llama folder at `outDir`. */
export function convertLlama2c(binPath: string, tokenizerBinPath: string | undefined, outDir: string, opts: ConvertOptions = {}): ConvertResult {
  const h = readLlama2cHeader(binPath);
  const dtype = opts.dtype ?? 'f32';
  const stDtype: SafetensorsDtype = { f32: 'F32', bf16: 'BF16', f16: 'F16' }[dtype] as SafetensorsDtype;
  const configJson = llama2cConfigJson(h, dtype);
  const config = parseModelConfig(configJson, join(outDir, 'config.json'));
  // Read the tokenizer first: a mismatch should fail before anything is written.
  const tok = tokenizerBinPath === undefined ? undefined : readLlama2cTokenizer(tokenizerBinPath, h.vocabSize);

  // Read all weights into one aligned buffer (readFileSync's Buffer may be unaligned for Float32Array).
  const floats = layout(h).reduce((a, b) => a + b.count, 0);
  const data = new Float32Array(floats);
  const fd = openSync(binPath, 'r');
  try {
    const bytes = new Uint8Array(data.buffer);
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(fd, bytes, got, bytes.length - got, HEADER_BYTES + got);
      if (n === 0) throw new Llama2cError(binPath, `truncated while reading weights at byte ${HEADER_BYTES + got}`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  const block = new Map<string, Float32Array>();
  let off = 0;
  for (const { key, count } of layout(h)) {
    block.set(key, data.subarray(off, off + count));
    off += count;
  }
  const get = (key: string): Float32Array => block.get(key) as Float32Array;
  /** Layer l's slice of a block stored as [layers, ...]. */
  const layer = (key: string, l: number): Float32Array => {
    const b = get(key);
    const per = b.length / h.nLayers;
    return b.subarray(l * per, (l + 1) * per);
  };

  const headDim = h.dim / h.nHeads;
  const tensors = new Map<string, TensorToWrite>();
  const put = (name: string, shape: number[], values: Float32Array): void => {
    tensors.set(name, { dtype: stDtype, shape, data: values });
  };
  const shapes = expectedTensors(config);
  const shape = (name: string): number[] => {
    const s = shapes.get(name);
    if (!s) throw new Error(`internal: ${name} is not an expected tensor`);
    return s;
  };
  put('model.embed_tokens.weight', shape('model.embed_tokens.weight'), get('tok_embeddings'));
  for (let l = 0; l < h.nLayers; l++) {
    const p = `model.layers.${l}.`;
    put(`${p}input_layernorm.weight`, shape(`${p}input_layernorm.weight`), layer('rms_att', l));
    put(`${p}self_attn.q_proj.weight`, shape(`${p}self_attn.q_proj.weight`), permuteRotary(layer('wq', l), h.nHeads, headDim, h.dim));
    put(`${p}self_attn.k_proj.weight`, shape(`${p}self_attn.k_proj.weight`), permuteRotary(layer('wk', l), h.nKvHeads, headDim, h.dim));
    put(`${p}self_attn.v_proj.weight`, shape(`${p}self_attn.v_proj.weight`), layer('wv', l));
    put(`${p}self_attn.o_proj.weight`, shape(`${p}self_attn.o_proj.weight`), layer('wo', l));
    put(`${p}post_attention_layernorm.weight`, shape(`${p}post_attention_layernorm.weight`), layer('rms_ffn', l));
    put(`${p}mlp.gate_proj.weight`, shape(`${p}mlp.gate_proj.weight`), layer('w1', l));
    put(`${p}mlp.down_proj.weight`, shape(`${p}mlp.down_proj.weight`), layer('w2', l));
    put(`${p}mlp.up_proj.weight`, shape(`${p}mlp.up_proj.weight`), layer('w3', l));
  }
  put('model.norm.weight', shape('model.norm.weight'), get('rms_final'));
  if (!h.sharedClassifier) put('lm_head.weight', shape('lm_head.weight'), get('wcls'));
  if (tensors.size !== shapes.size) throw new Error(`internal: wrote ${tensors.size} tensors, the config expects ${shapes.size}`);
  let parameters = 0;
  for (const t of tensors.values()) parameters += t.shape.reduce((a, b) => a * b, 1);
  const weights = encodeSafetensors(tensors, { format: 'pt', source: `llama2.c legacy checkpoint ${basename(binPath)}` });

  const files: Array<{ name: string; bytes: number }> = [];
  const write = (name: string, content: string | Uint8Array): void => {
    writeFileAtomic(join(outDir, name), content);
    files.push({ name, bytes: typeof content === 'string' ? Buffer.byteLength(content) : content.length });
  };
  const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;
  write('config.json', json(configJson));
  write('generation_config.json', json({ bos_token_id: 1, eos_token_id: 2, transformers_version: '4.51.0' }));
  write('model.safetensors', weights);
  if (tok && tokenizerBinPath !== undefined) {
    for (const [name, value] of Object.entries(sentencePieceTokenizerFiles(tok, h.seqLen))) write(name, json(value));
    // The SentencePiece model itself, when it sits next to the .bin, lets Python's slow tokenizer and
    // llama.cpp's converter read the folder too.
    const spModel = tokenizerBinPath.replace(/\.bin$/, '.model');
    if (spModel !== tokenizerBinPath && existsSync(spModel)) write('tokenizer.model', readFileSync(spModel));
  }
  return { dir: outDir, header: h, config, files, tensors: tensors.size, parameters, tokenizer: tok !== undefined };
}
