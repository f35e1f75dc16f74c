// Deepening (src/checkpoint/deepen.ts): the appended layers compute the identity, so the deepened model's
// logits equal the source's (checked with the float64 reference forward and with our tfjs forward), the new
// weights are laid out as stated (norms 1, o_proj/down_proj 0, the rest random), and bad input is refused
// with the file and field named.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEEPEN_DEFAULTS, deepenCheckpoint } from '../src/checkpoint/deepen.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { SafetensorsCheckpoint } from '../src/formats/safetensors.js';
import { loadModelConfig } from '../src/model/config.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ReferenceModel } from './helpers/reference-forward.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-deepen-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let src = '';
let dst = '';
beforeAll(() => {
  src = makeTinyCheckpoint({ out: join(root, 'src'), arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, vocab: 320, tie: true, seed: 21 }).dir;
  dst = join(root, 'deep');
  deepenCheckpoint(src, dst, { ...DEEPEN_DEFAULTS, addLayers: 2 });
});

function sequence(seed: number, n: number, vocab: number): number[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => rng.int(vocab));
}

describe('deepenCheckpoint', () => {
  it('raises num_hidden_layers, copies the tokenizer, and writes every tensor the deeper config expects', () => {
    expect(loadModelConfig(src).numLayers).toBe(2);
    const cfg = loadModelConfig(dst);
    expect(cfg.numLayers).toBe(4);
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) expect(readFileSync(join(dst, f)).equals(readFileSync(join(src, f))), f).toBe(true);
    const ck = new SafetensorsCheckpoint(dst);
    expect(ck.has('model.layers.3.mlp.down_proj.weight')).toBe(true);
    expect(ck.has('model.layers.4.mlp.down_proj.weight')).toBe(false);
  });

  it('keeps the source weights, and lays the new ones out as an identity block that still gets gradients', () => {
    const a = new SafetensorsCheckpoint(src);
    const b = new SafetensorsCheckpoint(dst);
    for (const name of a.names()) expect(Array.from(b.readFloat32(name)), name).toEqual(Array.from(a.readFloat32(name)));
    for (const l of [2, 3]) {
      const w = (k: string): Float32Array => b.readFloat32(`model.layers.${l}.${k}`);
      for (const k of ['input_layernorm.weight', 'post_attention_layernorm.weight', 'self_attn.q_norm.weight', 'self_attn.k_norm.weight']) expect(w(k).every((x) => x === 1), k).toBe(true);
      for (const k of ['self_attn.o_proj.weight', 'mlp.down_proj.weight']) expect(w(k).every((x) => x === 0), k).toBe(true);
      for (const k of ['self_attn.q_proj.weight', 'self_attn.k_proj.weight', 'self_attn.v_proj.weight', 'mlp.gate_proj.weight', 'mlp.up_proj.weight']) {
        const v = w(k);
        const sd = Math.sqrt(v.reduce((s, x) => s + x * x, 0) / v.length);
        expect(sd, k).toBeGreaterThan(DEEPEN_DEFAULTS.initStd * 0.8);
        expect(sd, k).toBeLessThan(DEEPEN_DEFAULTS.initStd * 1.2);
      }
    }
    // Layers 2 and 3 draw different weights.
    expect(Array.from(b.readFloat32('model.layers.2.self_attn.q_proj.weight'))).not.toEqual(Array.from(b.readFloat32('model.layers.3.self_attn.q_proj.weight')));
  });

  it('the float64 reference forward gives the same log-probs before and after (|Δ| ≤ 1e-12)', () => {
    const seq = sequence(5, 48, 320);
    const before = new ReferenceModel(src).logProbs(seq);
    const after = new ReferenceModel(dst).logProbs(seq);
    let maxErr = 0;
    before.forEach((row, i) => row.forEach((x, j) => (maxErr = Math.max(maxErr, Math.abs(x - (after[i] as Float64Array)[j]!)))));
    expect(maxErr).toBeLessThanOrEqual(1e-12);
  });

  it('our wasm forward gives the same log-probs before and after (|Δ| ≤ 1e-5)', async () => {
    await initBackend('wasm');
    const [m0, m1] = [await CausalLM.load(src), await CausalLM.load(dst)];
    const seqs = [sequence(6, 40, 320), sequence(7, 33, 320)];
    const [s0, s1] = [await scoreBatch(m0, seqs), await scoreBatch(m1, seqs)];
    let maxErr = 0;
    s0.forEach((r, b) => r.logprobs.forEach((x, i) => (maxErr = Math.max(maxErr, Math.abs(x - (s1[b]!.logprobs[i] as number))))));
    expect(maxErr).toBeLessThanOrEqual(1e-5);
    m0.dispose();
    m1.dispose();
  });

  it('the same seed writes the same file; another seed other new weights', () => {
    const again = join(root, 'again');
    const other = join(root, 'other');
    deepenCheckpoint(src, again, { ...DEEPEN_DEFAULTS, addLayers: 2 });
    deepenCheckpoint(src, other, { ...DEEPEN_DEFAULTS, seed: DEEPEN_DEFAULTS.seed + 1, addLayers: 2 });
    expect(readFileSync(join(again, 'model.safetensors')).equals(readFileSync(join(dst, 'model.safetensors')))).toBe(true);
    expect(readFileSync(join(other, 'model.safetensors')).equals(readFileSync(join(dst, 'model.safetensors')))).toBe(false);
  });

  it('refuses a non-Qwen3 model, naming config.json and model_type', () => {
    const llama = makeTinyCheckpoint({ out: join(root, 'llama'), arch: 'llama', layers: 1, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, vocab: 300, seed: 1 }).dir;
    expect(() => deepenCheckpoint(llama, join(root, 'x'), { ...DEEPEN_DEFAULTS, addLayers: 1 })).toThrow(/config\.json: field model_type is "llama"/);
  });

  it('refuses addLayers < 1 and a config without num_hidden_layers', () => {
    expect(() => deepenCheckpoint(src, join(root, 'y'), { ...DEEPEN_DEFAULTS, addLayers: 0 })).toThrow(/addLayers must be an integer >= 1/);
    const broken = join(root, 'broken');
    deepenCheckpoint(src, broken, { ...DEEPEN_DEFAULTS, addLayers: 1 });
    const cfg = JSON.parse(readFileSync(join(broken, 'config.json'), 'utf8')) as Record<string, unknown>;
    delete cfg.num_hidden_layers;
    writeFileSync(join(broken, 'config.json'), JSON.stringify(cfg));
    expect(() => deepenCheckpoint(broken, join(root, 'z'), { ...DEEPEN_DEFAULTS, addLayers: 1 })).toThrow(/config\.json: field num_hidden_layers must be a positive integer/);
  });
});
