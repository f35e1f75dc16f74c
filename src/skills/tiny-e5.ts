// A tiny random BERT-like encoder with the E5 interface (inputs input_ids, attention_mask,
// token_type_ids; output last_hidden_state), written as an ONNX model folder that
// @huggingface/transformers loads like a real E5 export. Where no E5 weights are at hand, this model lets
// tests and demos exercise the whole e5 path offline.
//
// The graph is more than a lookup, so that pooling is meaningful and the attention mask matters inside
// the model as it does in BERT:
//   x   = word[ids] + type[token_type_ids] + pos[0..seq)
//   ctx = Σ_t mask_t·x_t / Σ_t mask_t            (a masked global mean: padding never leaks in)
//   h   = tanh((x + ctx)·W + b)                 = last_hidden_state
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../util/rng.js';
import { sharedDataPath } from '../util/shared-data.js';
import type { OnnxGraph, OnnxTensor } from '../formats/onnx.js';
import { ONNX_FLOAT, ONNX_INT64, encodeOnnxModel } from '../formats/onnx.js';
import { seedCards } from './seeds.js';

/** The real E5 WordPiece tokenizer in the shared development data ($SESA_SHARED_DATA or ../shared/data), if present. */
export function e5TokenizerDir(): string | undefined {
  return sharedDataPath('tokenizers', 'e5-bert-uncased');
}

export interface TinyE5Weights {
  vocabSize: number;
  hidden: number;
  maxPositions: number;
  word: Float32Array; // [vocab, hidden]
  type: Float32Array; // [2, hidden]
  pos: Float32Array; // [maxPositions, hidden]
  dense: Float32Array; // [hidden, hidden]
  bias: Float32Array; // [hidden]
}

export function tinyE5Weights(vocabSize: number, hidden: number, maxPositions: number, seed: number): TinyE5Weights {
  const rng = new Rng(seed);
  const fill = (n: number, scale: number): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = rng.normal() * scale;
    return a;
  };
  return {
    vocabSize,
    hidden,
    maxPositions,
    word: fill(vocabSize * hidden, 1),
    type: fill(2 * hidden, 0.1),
    pos: fill(maxPositions * hidden, 0.1),
    dense: fill(hidden * hidden, 1 / Math.sqrt(hidden)),
    bias: fill(hidden, 0.1),
  };
}

const f32 = (name: string, dims: number[], data: Float32Array): OnnxTensor => ({ name, dims, dataType: ONNX_FLOAT, data });
const i64 = (name: string, dims: number[], values: number[]): OnnxTensor => ({ name, dims, dataType: ONNX_INT64, data: BigInt64Array.from(values.map(BigInt)) });

export function tinyE5Graph(w: TinyE5Weights): OnnxGraph {
  const io = (name: string): { name: string; elemType: typeof ONNX_INT64; shape: string[] } => ({ name, elemType: ONNX_INT64, shape: ['batch_size', 'sequence_length'] });
  return {
    name: 'tiny_e5',
    initializers: [
      f32('word_embeddings', [w.vocabSize, w.hidden], w.word),
      f32('token_type_embeddings', [2, w.hidden], w.type),
      f32('position_embeddings', [w.maxPositions, w.hidden], w.pos),
      f32('dense_weight', [w.hidden, w.hidden], w.dense),
      f32('dense_bias', [w.hidden], w.bias),
      i64('zero', [], [0]),
      i64('one', [], [1]),
      i64('axis_seq', [1], [1]),
      i64('axis_last', [1], [2]),
    ],
    inputs: [io('input_ids'), io('attention_mask'), io('token_type_ids')],
    outputs: [{ name: 'last_hidden_state', elemType: ONNX_FLOAT, shape: ['batch_size', 'sequence_length', w.hidden] }],
    nodes: [
      { op: 'Gather', inputs: ['word_embeddings', 'input_ids'], outputs: ['we'] },
      { op: 'Gather', inputs: ['token_type_embeddings', 'token_type_ids'], outputs: ['te'] },
      { op: 'Shape', inputs: ['input_ids'], outputs: ['shape'] },
      { op: 'Gather', inputs: ['shape', 'one'], outputs: ['seq_len'], attrs: [{ name: 'axis', int: 0 }] },
      { op: 'Range', inputs: ['zero', 'seq_len', 'one'], outputs: ['pos_ids'] },
      { op: 'Gather', inputs: ['position_embeddings', 'pos_ids'], outputs: ['pe'] },
      { op: 'Add', inputs: ['we', 'te'], outputs: ['x0'] },
      { op: 'Add', inputs: ['x0', 'pe'], outputs: ['x'] },
      { op: 'Cast', inputs: ['attention_mask'], outputs: ['mask_f'], attrs: [{ name: 'to', int: ONNX_FLOAT }] },
      { op: 'Unsqueeze', inputs: ['mask_f', 'axis_last'], outputs: ['mask3'] },
      { op: 'Mul', inputs: ['x', 'mask3'], outputs: ['xm'] },
      { op: 'ReduceSum', inputs: ['xm', 'axis_seq'], outputs: ['x_sum'], attrs: [{ name: 'keepdims', int: 1 }] },
      { op: 'ReduceSum', inputs: ['mask3', 'axis_seq'], outputs: ['m_sum'], attrs: [{ name: 'keepdims', int: 1 }] },
      { op: 'Div', inputs: ['x_sum', 'm_sum'], outputs: ['ctx'] },
      { op: 'Add', inputs: ['x', 'ctx'], outputs: ['xc'] },
      { op: 'MatMul', inputs: ['xc', 'dense_weight'], outputs: ['mm'] },
      { op: 'Add', inputs: ['mm', 'dense_bias'], outputs: ['pre'] },
      { op: 'Tanh', inputs: ['pre'], outputs: ['last_hidden_state'] },
    ],
  };
}

/** The same forward in float64, for checking what onnxruntime computes: [seq][hidden] per row. */
export function tinyE5Forward(w: TinyE5Weights, ids: number[], mask: number[], typeIds?: number[]): number[][] {
  const H = w.hidden;
  const x = ids.map((id, t) => {
    const tt = typeIds?.[t] ?? 0;
    return Array.from({ length: H }, (_, j) => (w.word[id * H + j] as number) + (w.type[tt * H + j] as number) + (w.pos[t * H + j] as number));
  });
  const ctx = new Array<number>(H).fill(0);
  let m = 0;
  x.forEach((row, t) => {
    const mt = mask[t] ?? 0;
    m += mt;
    row.forEach((v, j) => (ctx[j] = (ctx[j] as number) + mt * v));
  });
  for (let j = 0; j < H; j++) ctx[j] = (ctx[j] as number) / m;
  return x.map((row) =>
    Array.from({ length: H }, (_, o) => {
      let s = w.bias[o] as number;
      for (let j = 0; j < H; j++) s += ((row[j] as number) + (ctx[j] as number)) * (w.dense[j * H + o] as number);
      return Math.tanh(s);
    }),
  );
}

export interface TinyE5Options {
  hidden?: number;
  maxPositions?: number;
  seed?: number;
  /** A folder with the E5 WordPiece tokenizer.json; default: e5TokenizerDir() if present; null: build one. */
  tokenizerDir?: string | null;
}

export interface TinyE5Result {
  dir: string;
  vocabSize: number;
  hidden: number;
  tokenizer: 'e5-bert-uncased' | 'built';
  weights: TinyE5Weights;
}

/** Writes config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx into `dir`. */
export function writeTinyE5(dir: string, opts: TinyE5Options = {}): TinyE5Result {
  const hidden = opts.hidden ?? 32;
  const maxPositions = opts.maxPositions ?? 512;
  const seed = opts.seed ?? 1234;
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  const tokDir = opts.tokenizerDir === undefined ? e5TokenizerDir() : opts.tokenizerDir;
  let vocabSize: number;
  let tokenizer: TinyE5Result['tokenizer'];
  if (tokDir && existsSync(join(tokDir, 'tokenizer.json'))) {
    // Copy the bytes, not the file mode (the shared copy is read-only).
    writeFileSync(join(dir, 'tokenizer.json'), readFileSync(join(tokDir, 'tokenizer.json')));
    const tj = JSON.parse(readFileSync(join(tokDir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
    vocabSize = Math.max(...Object.values(tj.model.vocab)) + 1;
    tokenizer = 'e5-bert-uncased';
  } else {
    const tj = buildWordPieceTokenizer();
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tj));
    vocabSize = Object.keys(tj.model.vocab).length;
    tokenizer = 'built';
  }
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify(
      {
        tokenizer_class: 'BertTokenizer',
        do_lower_case: true,
        model_max_length: maxPositions,
        cls_token: '[CLS]',
        sep_token: '[SEP]',
        pad_token: '[PAD]',
        unk_token: '[UNK]',
        mask_token: '[MASK]',
        clean_up_tokenization_spaces: true,
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify(
      {
        model_type: 'bert',
        architectures: ['BertModel'],
        vocab_size: vocabSize,
        hidden_size: hidden,
        num_hidden_layers: 1,
        num_attention_heads: 1,
        intermediate_size: hidden,
        max_position_embeddings: maxPositions,
        type_vocab_size: 2,
        pad_token_id: 0,
        _comment: `tiny random encoder with the E5 interface, generated by sesa-train (seed ${seed}); not a real E5`,
      },
      null,
      2,
    ),
  );
  const weights = tinyE5Weights(vocabSize, hidden, maxPositions, seed);
  writeFileSync(join(dir, 'onnx', 'model.onnx'), encodeOnnxModel(tinyE5Graph(weights)));
  return { dir, vocabSize, hidden, tokenizer, weights };
}

/**
 * A small BERT-uncased-style WordPiece tokenizer for when the real E5 one is absent: the special tokens,
 * punctuation, letters and digits (word-initial and `##` continuations) and the words of the seed cards.
 * Same normalizer, pre-tokenizer, template and decoder as bert-base-uncased.
 */
export function buildWordPieceTokenizer(): { model: { vocab: Record<string, number> } & Record<string, unknown> } & Record<string, unknown> {
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const chars = [...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', ...'abcdefghijklmnopqrstuvwxyz0123456789'];
  const words = new Set<string>();
  const text = seedCards()
    .map((c) => [c.description, ...c.triggers, ...c.avoid, ...c.queries].join(' '))
    .join(' ')
    .toLowerCase();
  for (const w of text.split(/[^a-z0-9]+/)) if (w.length > 1) words.add(w);
  for (const w of ['query', 'passage', 'who', 'wrote', 'born', 'film', 'what', 'when', 'where', 'which', 'year']) words.add(w);
  const tokens = [...specials, ...chars, ...chars.filter((c) => /[a-z0-9]/.test(c)).map((c) => `##${c}`), ...[...words].sort()];
  const vocab: Record<string, number> = {};
  for (const t of tokens) if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  const special = (content: string): Record<string, unknown> => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map(special),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}
