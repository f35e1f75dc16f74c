// Widening (src/checkpoint/widen.ts): the wider model's logits equal the source's (the float64 reference
// forward and our tfjs forward), the new weights are laid out as the header states (zeros where they write into
// the residual stream or out of a new head or unit, random elsewhere, norms rescaled), one SFT step moves the
// zero-initialised weights (no saddle), and bad input is refused naming the file and field.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { WIDEN_DEFAULTS, widenCheckpoint } from '../src/checkpoint/widen.js';
import { growCheckpoint, shapeOf } from '../src/checkpoint/grow.js';
import { SafetensorsCheckpoint, writeSafetensors } from '../src/formats/safetensors.js';
import { loadModelConfig } from '../src/model/config.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { AdamW } from '../src/rl/optimizer.js';
import { sftStep } from '../src/sft/trainer.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ReferenceModel } from './helpers/reference-forward.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-widen-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const WIDE = { ...WIDEN_DEFAULTS, hidden: 96, heads: 6, kvHeads: 3, intermediate: 160 };
let src = '';
let dst = '';
beforeAll(() => {
  src = makeTinyCheckpoint({ out: join(root, 'src'), arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 96, vocab: 320, tie: true, seed: 21 }).dir;
  writeFileSync(join(src, 'priming-cards.jsonl'), '{"id":"x"}\n');
  dst = join(root, 'wide');
  widenCheckpoint(src, dst, WIDE);
});

function sequence(seed: number, n: number, vocab: number): number[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => rng.int(vocab));
}

describe('widenCheckpoint', () => {
  it('writes the new sizes, ε·d/D, the tokenizer and the priming cards', () => {
    const cfg = loadModelConfig(dst);
    expect([cfg.hiddenSize, cfg.numHeads, cfg.numKvHeads, cfg.headDim, cfg.intermediateSize, cfg.numLayers]).toEqual([96, 6, 3, 16, 160, 2]);
    expect(cfg.rmsNormEps).toBeCloseTo((loadModelConfig(src).rmsNormEps * 64) / 96, 15);
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'priming-cards.jsonl']) expect(readFileSync(join(dst, f)).equals(readFileSync(join(src, f))), f).toBe(true);
  });

  it('keeps the old weights in place, zeros what writes into new dims, random elsewhere, norms scaled by √(d/D)', () => {
    const a = new SafetensorsCheckpoint(src);
    const b = new SafetensorsCheckpoint(dst);
    const at = (ck: SafetensorsCheckpoint, name: string, r: number, c: number): number => {
      const cols = ck.entry(name).shape[1] as number;
      return ck.readFloat32(name)[r * cols + c] as number;
    };
    const p = 'model.layers.1.';
    // Old block intact.
    expect(at(b, `${p}self_attn.q_proj.weight`, 5, 7)).toBe(at(a, `${p}self_attn.q_proj.weight`, 5, 7));
    expect(at(b, `${p}mlp.down_proj.weight`, 63, 95)).toBe(at(a, `${p}mlp.down_proj.weight`, 63, 95));
    // Writers into the new residual dims, and out of new heads / units: zero.
    const rows = (name: string, from: number): number[] => {
      const [R, C] = b.entry(name).shape as [number, number];
      const w = b.readFloat32(name);
      return Array.from({ length: (R - from) * C }, (_, i) => w[from * C + i] as number);
    };
    const cols = (name: string, from: number): number[] => {
      const [R, C] = b.entry(name).shape as [number, number];
      const w = b.readFloat32(name);
      const out: number[] = [];
      for (let r = 0; r < R; r++) for (let c = from; c < C; c++) out.push(w[r * C + c] as number);
      return out;
    };
    expect(rows(`${p}self_attn.o_proj.weight`, 64).every((x) => x === 0)).toBe(true);
    expect(cols(`${p}self_attn.o_proj.weight`, 64).every((x) => x === 0)).toBe(true);
    expect(rows(`${p}mlp.down_proj.weight`, 64).every((x) => x === 0)).toBe(true);
    expect(cols(`${p}mlp.down_proj.weight`, 96).every((x) => x === 0)).toBe(true);
    expect(cols('model.embed_tokens.weight', 64).every((x) => x === 0)).toBe(true);
    // Readers: random at the initializer's scale.
    for (const v of [cols(`${p}self_attn.q_proj.weight`, 64), rows(`${p}self_attn.k_proj.weight`, 32), rows(`${p}mlp.gate_proj.weight`, 96)]) {
      const sd = Math.sqrt(v.reduce((s, x) => s + x * x, 0) / v.length);
      expect(sd).toBeGreaterThan(WIDEN_DEFAULTS.initStd * 0.8);
      expect(sd).toBeLessThan(WIDEN_DEFAULTS.initStd * 1.2);
    }
    const n0 = a.readFloat32(`${p}input_layernorm.weight`);
    const n1 = b.readFloat32(`${p}input_layernorm.weight`);
    expect(n1[3]).toBeCloseTo((n0[3] as number) * Math.sqrt(64 / 96), 6);
  });

  it('the float64 reference forward gives the same log-probs before and after (|Δ| ≤ 1e-5: the rescaled norm weights are rounded to f32)', () => {
    const seq = sequence(5, 48, 320);
    const before = new ReferenceModel(src).logProbs(seq);
    const after = new ReferenceModel(dst).logProbs(seq);
    let maxErr = 0;
    before.forEach((row, i) => row.forEach((x, j) => (maxErr = Math.max(maxErr, Math.abs(x - (after[i] as Float64Array)[j]!)))));
    expect(maxErr).toBeLessThanOrEqual(1e-5);
    // The control: the same folder with the norm weights not rescaled is far off, so the bound tells them apart.
    const unscaled = join(root, 'unscaled');
    const ck = new SafetensorsCheckpoint(dst);
    const tensors = new Map(ck.names().map((n) => {
      const data = ck.readFloat32(n);
      return [n, { dtype: 'F32' as const, shape: [...ck.entry(n).shape], data: n.endsWith('layernorm.weight') || n === 'model.norm.weight' ? data.map((x) => x / Math.sqrt(64 / 96)) : data }];
    }));
    mkdirSync(unscaled, { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(dst, f), join(unscaled, f));
    writeSafetensors(join(unscaled, 'model.safetensors'), tensors, { format: 'pt' });
    const off = new ReferenceModel(unscaled).logProbs(seq);
    let offErr = 0;
    before.forEach((row, i) => row.forEach((x, j) => (offErr = Math.max(offErr, Math.abs(x - (off[i] as Float64Array)[j]!)))));
    expect(offErr).toBeGreaterThan(1e-3);
  });

  it('our wasm forward gives the same log-probs before and after (|Δ| ≤ 1e-5), and one SFT step moves the zero-initialised weights', async () => {
    await initBackend('wasm');
    const [m0, m1] = [await CausalLM.load(src), await CausalLM.load(dst, { trainable: true })];
    const seqs = [sequence(6, 40, 320), sequence(7, 33, 320)];
    const [s0, s1] = [await scoreBatch(m0, seqs), await scoreBatch(m1, seqs)];
    let maxErr = 0;
    s0.forEach((r, b) => r.logprobs.forEach((x, i) => (maxErr = Math.max(maxErr, Math.abs(x - (s1[b]!.logprobs[i] as number))))));
    expect(maxErr).toBeLessThanOrEqual(1e-5);
    const params = Object.fromEntries(m1.variables());
    const name = Object.keys(params).find((k) => k.includes('layers.0') && k.includes('o_proj')) as string;
    const newRows = (): number[] => Array.from((params[name] as tf.Variable).dataSync()).slice(64 * 96);
    expect(newRows().every((x) => x === 0)).toBe(true);
    const opt = new AdamW(params, { lr: 1e-3 });
    sftStep(m1, undefined, params, opt, seqs.map((ids) => ({ ids, mask: ids.map(() => 1) })), { microBatchSize: 2, padTokenId: 0 });
    expect(newRows().some((x) => x !== 0)).toBe(true);
    opt.dispose();
    m0.dispose();
    m1.dispose();
  });

  it('refuses narrower sizes, a changed GQA ratio, and an untied model, naming the file and field', () => {
    expect(() => widenCheckpoint(src, join(root, 'a'), { ...WIDE, hidden: 32 })).toThrow(/hidden must be an integer ≥ the source's 64/);
    expect(() => widenCheckpoint(src, join(root, 'b'), { ...WIDE, heads: 8, kvHeads: 2 })).toThrow(/heads\/kvHeads must stay 4\/2/);
    const untied = makeTinyCheckpoint({ out: join(root, 'untied'), arch: 'qwen3', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 48, vocab: 300, tie: false, seed: 1 }).dir;
    expect(() => widenCheckpoint(untied, join(root, 'c'), { ...WIDE, hidden: 64, heads: 4, kvHeads: 2 })).toThrow(/config\.json: field tie_word_embeddings must be true/);
  });
});

describe('growCheckpoint', () => {
  it('widens then deepens: the grown model scores as the source (float64 reference, |Δ| ≤ 1e-5), with the new shape', () => {
    const grown = join(root, 'grown');
    const r = growCheckpoint(src, grown, { layers: 3, hidden: 96, heads: 6, kvHeads: 3, intermediate: 160 }, 7);
    expect(r.to).toEqual(shapeOf(grown));
    expect(r.parametersBefore).toBe(new SafetensorsCheckpoint(src).names().reduce((n, k) => n + new SafetensorsCheckpoint(src).readFloat32(k).length, 0));
    const seq = sequence(9, 40, 320);
    const before = new ReferenceModel(src).logProbs(seq);
    const after = new ReferenceModel(grown).logProbs(seq);
    let maxErr = 0;
    before.forEach((row, i) => row.forEach((x, j) => (maxErr = Math.max(maxErr, Math.abs(x - (after[i] as Float64Array)[j]!)))));
    expect(maxErr).toBeLessThanOrEqual(1e-5);
    expect(readFileSync(join(grown, 'priming-cards.jsonl'), 'utf8')).toBe('{"id":"x"}\n');
    expect(() => growCheckpoint(src, join(root, 'g2'), { layers: 1, hidden: 96, heads: 6, kvHeads: 3, intermediate: 160 }, 7)).toThrow(/layers must be ≥ the source's 2/);
  });
});
