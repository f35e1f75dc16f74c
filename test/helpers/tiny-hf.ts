// Tiny random Hugging Face checkpoints for GGUF export tests: config.json, model.safetensors (f32) and a
// small tokenizer.json, either byte-level BPE (Qwen/GPT-2 style) or SentencePiece-style BPE with
// byte_fallback (Llama 2 style). Weights are scaled so logits spread over O(1): with the usual 0.02 init a
// tiny model is near-uniform, and greedy decoding would hinge on near-ties.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { byteLevelAlphabet } from '../../src/checkpoint/make-tiny.js';
import { writeSafetensors, type TensorToWrite } from '../../src/formats/safetensors.js';
import { expectedTensors, parseModelConfig } from '../../src/model/config.js';
import { Rng } from '../../src/util/rng.js';

export interface TinySpec {
  arch: 'qwen3' | 'qwen2' | 'llama';
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim?: number;
  layers: number;
  ff: number;
  /** Embedding rows; the tokenizer defines fewer ids, so the export pads with [PAD{i}]. */
  vocab: number;
  tie: boolean;
  seed: number;
  ropeTheta?: number;
  ropeScaling?: { factor: number; low_freq_factor: number; high_freq_factor: number; original_max_position_embeddings: number };
  attentionBias?: boolean;
  tokenizer: 'bytebpe' | 'spm';
  maxPositions?: number;
}

/** GPT-2's byte → printable-unicode map indexed by byte (make-tiny's table, in byte order). */
function bytesToUnicode(): string[] {
  const out = new Array<string>(256);
  for (const { byte, char } of byteLevelAlphabet()) out[byte] = char;
  return out;
}

const QWEN2_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function byteBpeTokenizer(): { tokenizer: object; config: object; bos: number; eos: number; defined: number } {
  const b2u = bytesToUnicode();
  const vocab: Record<string, number> = {};
  b2u.forEach((ch, b) => (vocab[ch] = b));
  const merges: Array<[string, string]> = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['i', 'n'], ['Ġ', 'a'], ['e', 'r'], ['o', 'n'], ['Ġ', 's']];
  for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const base = Object.keys(vocab).length;
  const added = specials.map((content, i) => ({ id: base + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  added.push({ id: base + 3, content: '<think>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_SPLIT }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
  const config = { add_bos_token: false, bos_token: null, eos_token: '<|im_end|>', pad_token: '<|endoftext|>', model_max_length: 4096, tokenizer_class: 'Qwen2Tokenizer', chat_template: "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" };
  return { tokenizer, config, bos: base, eos: base + 2, defined: base + 4 };
}

function spmTokenizer(): { tokenizer: object; config: object; bos: number; eos: number; defined: number; scores: number[] } {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  const pieces = ['▁', 'e', 't', 'a', 'h', 'o', 'n', 's', '▁t', 'he', '▁the', '▁a', 'in', 'er', '▁s', 'on'];
  for (const p of pieces) vocab[p] = Object.keys(vocab).length;
  const merges = ['▁ t', 'h e', '▁t he', '▁ a', 'i n', 'e r', '▁ s', 'o n'];
  const scores = Object.keys(vocab).map((_, i) => (i < 259 ? 0 : -(i - 259)));
  const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }], pair: [], special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
  };
  const config = { add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', tokenizer_class: 'LlamaTokenizer' };
  return { tokenizer, config, bos: 1, eos: 2, defined: Object.keys(vocab).length, scores };
}

export interface TinyModel {
  dir: string;
  /** Ids the tokenizer defines (the embedding has `spec.vocab` rows). */
  definedTokens: number;
}

/** Writes a random tiny checkpoint folder into `dir`. */
export function writeTinyHf(dir: string, spec: TinySpec): TinyModel {
  mkdirSync(dir, { recursive: true });
  const tok = spec.tokenizer === 'spm' ? spmTokenizer() : byteBpeTokenizer();
  if (tok.defined > spec.vocab) throw new Error(`tiny fixture: vocab ${spec.vocab} is smaller than the tokenizer's ${tok.defined} ids`);
  const archName = { qwen3: 'Qwen3ForCausalLM', qwen2: 'Qwen2ForCausalLM', llama: 'LlamaForCausalLM' }[spec.arch];
  const raw: Record<string, unknown> = {
    architectures: [archName],
    model_type: spec.arch,
    vocab_size: spec.vocab,
    hidden_size: spec.hidden,
    intermediate_size: spec.ff,
    num_hidden_layers: spec.layers,
    num_attention_heads: spec.heads,
    num_key_value_heads: spec.kvHeads,
    head_dim: spec.headDim ?? spec.hidden / spec.heads,
    rms_norm_eps: 1e-6,
    rope_theta: spec.ropeTheta ?? (spec.arch === 'llama' ? 10000 : 1_000_000),
    rope_scaling: spec.ropeScaling ? { rope_type: 'llama3', ...spec.ropeScaling } : null,
    max_position_embeddings: spec.maxPositions ?? 4096,
    tie_word_embeddings: spec.tie,
    attention_bias: spec.attentionBias ?? false,
    hidden_act: 'silu',
    bos_token_id: tok.bos,
    eos_token_id: tok.eos,
    torch_dtype: 'float32',
  };
  if (spec.arch === 'qwen2') delete raw.head_dim;
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(raw, null, 2)}\n`);
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), `${JSON.stringify(tok.config, null, 2)}\n`);
  if ('scores' in tok) writeFileSync(join(dir, 'tokenizer_scores.json'), JSON.stringify(tok.scores));

  const cfg = parseModelConfig(raw);
  const rng = new Rng(spec.seed);
  const tensors: Record<string, TensorToWrite> = {};
  for (const [name, shape] of expectedTensors(cfg)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (shape.length === 1) {
      const isNorm = name.endsWith('norm.weight');
      for (let i = 0; i < n; i++) data[i] = isNorm ? 1 + 0.2 * rng.normal() : 0.3 * rng.normal();
    } else {
      // Embeddings unit-variance; projections ~1/sqrt(fan-in) so activations keep O(1) scale.
      // A tied embedding is also the head: 0.3 keeps its logits O(1) (RMSNorm makes the input scale moot).
      const std = name.includes('embed_tokens') ? (spec.tie ? 0.3 : 1) : name === 'lm_head.weight' ? 1.5 / Math.sqrt(shape[1] as number) : 1 / Math.sqrt(shape[1] as number);
      for (let i = 0; i < n; i++) data[i] = std * rng.normal();
    }
    tensors[name] = { dtype: 'F32', shape, data };
  }
  writeSafetensors(join(dir, 'model.safetensors'), tensors);
  return { dir, definedTokens: tok.defined };
}
