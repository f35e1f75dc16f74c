// config.json parsing: the fields the forward reads, and errors that name the offending field.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, expectedTensors, loadModelConfig, parseModelConfig } from '../src/model/config.js';

// The shape of a real Qwen3-0.6B config.json.
const qwen3 = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  vocab_size: 151936,
};

const dir = mkdtempSync(join(tmpdir(), 'sesa-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseModelConfig', () => {
  it('reads a Qwen3 config', () => {
    const c = parseModelConfig(qwen3);
    expect(c).toMatchObject({
      architecture: 'qwen3',
      vocabSize: 151936,
      hiddenSize: 1024,
      numLayers: 28,
      numHeads: 16,
      numKvHeads: 8,
      headDim: 128, // not hidden/heads (64): Qwen3 sets it explicitly
      qkNorm: true,
      qkvBias: false,
      oBias: false,
      tieWordEmbeddings: true,
      bosTokenId: 151643,
      eosTokenIds: [151645],
    });
  });

  it('Qwen2 always has q/k/v biases and no q/k norm; head_dim defaults to hidden/heads', () => {
    const { head_dim: _hd, attention_bias: _ab, ...rest } = qwen3;
    const c = parseModelConfig({ ...rest, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', hidden_size: 896, num_attention_heads: 14, num_key_value_heads: 2 });
    expect(c).toMatchObject({ architecture: 'qwen2', headDim: 64, qkvBias: true, oBias: false, qkNorm: false });
  });

  it('Llama with attention_bias and llama3 rope scaling; eos list', () => {
    const c = parseModelConfig({
      ...qwen3,
      architectures: ['LlamaForCausalLM'],
      attention_bias: true,
      eos_token_id: [128001, 128009],
      rope_scaling: { factor: 32, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 8192, rope_type: 'llama3' },
    });
    expect(c).toMatchObject({ architecture: 'llama', qkvBias: true, oBias: true, qkNorm: false, eosTokenIds: [128001, 128009] });
    expect(c.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
  });

  it('falls back to model_type when architectures is absent', () => {
    const { architectures: _a, ...rest } = qwen3;
    expect(parseModelConfig(rest).architecture).toBe('qwen3');
  });

  it('names the field: unknown architecture', () => {
    expect(() => parseModelConfig({ ...qwen3, architectures: ['MistralForCausalLM'] }, 'x/config.json')).toThrow(
      /x\/config\.json: field 'architectures' names "MistralForCausalLM", which is not supported/,
    );
  });

  it('names the field: missing hidden_size', () => {
    const { hidden_size: _h, ...rest } = qwen3;
    expect(() => parseModelConfig(rest, 'c.json')).toThrow(ConfigError);
    expect(() => parseModelConfig(rest, 'c.json')).toThrow(/c\.json: field 'hidden_size' is missing/);
  });

  it('names the field: kv heads that do not divide heads', () => {
    expect(() => parseModelConfig({ ...qwen3, num_key_value_heads: 5 })).toThrow(/field 'num_key_value_heads' \(5\) must divide num_attention_heads \(16\)/);
  });

  it('names the field: bad values', () => {
    expect(() => parseModelConfig({ ...qwen3, num_hidden_layers: 2.5 })).toThrow(/field 'num_hidden_layers' must be a positive integer, got 2\.5/);
    expect(() => parseModelConfig({ ...qwen3, head_dim: 7 })).toThrow(/field 'head_dim' must be even/);
    expect(() => parseModelConfig({ ...qwen3, tie_word_embeddings: 'yes' })).toThrow(/field 'tie_word_embeddings' must be true or false/);
    expect(() => parseModelConfig({ ...qwen3, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/field 'rope_scaling' has type "yarn"/);
    expect(() => parseModelConfig({ ...qwen3, rope_scaling: { rope_type: 'llama3', factor: 8 } })).toThrow(/field 'low_freq_factor' is missing/);
  });

  it('loadModelConfig names the file', () => {
    expect(() => loadModelConfig(join(dir, 'nowhere'))).toThrow(/nowhere[/\\]config\.json: not found/);
    writeFileSync(join(dir, 'config.json'), '{"hidden_size": ');
    expect(() => loadModelConfig(dir)).toThrow(/config\.json: not valid JSON/);
  });
});

describe('expectedTensors', () => {
  const small = { ...qwen3, hidden_size: 32, head_dim: 8, intermediate_size: 48, num_attention_heads: 4, num_key_value_heads: 2, num_hidden_layers: 2, vocab_size: 100 };

  it('Qwen3 (tied): q/k norms per head, no lm_head', () => {
    const m = expectedTensors(parseModelConfig(small));
    expect(m.get('model.embed_tokens.weight')).toEqual([100, 32]);
    expect(m.get('model.layers.1.self_attn.q_proj.weight')).toEqual([32, 32]);
    expect(m.get('model.layers.1.self_attn.k_proj.weight')).toEqual([16, 32]);
    expect(m.get('model.layers.1.self_attn.o_proj.weight')).toEqual([32, 32]);
    expect(m.get('model.layers.0.self_attn.q_norm.weight')).toEqual([8]);
    expect(m.get('model.layers.0.mlp.down_proj.weight')).toEqual([32, 48]);
    expect(m.has('lm_head.weight')).toBe(false);
    expect(m.has('model.layers.0.self_attn.q_proj.bias')).toBe(false);
    expect(m.size).toBe(1 + 2 * 11 + 1);
  });

  it('Qwen2 (untied): q/k/v biases, lm_head', () => {
    const m = expectedTensors(parseModelConfig({ ...small, architectures: ['Qwen2ForCausalLM'], tie_word_embeddings: false }));
    expect(m.get('model.layers.0.self_attn.k_proj.bias')).toEqual([16]);
    expect(m.has('model.layers.0.self_attn.o_proj.bias')).toBe(false);
    expect(m.has('model.layers.0.self_attn.q_norm.weight')).toBe(false);
    expect(m.get('lm_head.weight')).toEqual([100, 32]);
  });
});
