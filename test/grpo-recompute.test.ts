// Activation recomputation and memory-budgeted micro-batches in the GRPO update: the same gradients
// (≤ 1e-6) as keeping every activation, with and without LoRA dropout, on cpu and wasm; no tensor is left
// behind; and the budget splits a batch into passes that each fit it. Held transposes of the frozen projections
// give the gradients of transposing per backward, bit for bit.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { disposeGrads } from '../src/rl/accumulate.js';
import { grpoGradients, holdTransposesIfRoom, type TrainingSequence } from '../src/rl/grpo-update.js';
import { microBatches } from '../src/rl/sequence-layout.js';
import { microBatchBytes } from '../src/rl/memory-budget.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-recompute-'));
const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 3, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, vocab: 300, seed: 4 });
afterAll(() => rmSync(root, { recursive: true, force: true }));

function sequences(n: number, seed: number): TrainingSequence[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const promptIds = Array.from({ length: 3 + rng.int(6) }, () => rng.int(300));
    const responseIds = Array.from({ length: 4 + rng.int(8) }, () => rng.int(300));
    return {
      promptIds,
      responseIds,
      responseMask: responseIds.map((_, j) => (j === 2 ? 0 : 1)),
      oldLogprobs: responseIds.map(() => -Math.log(300) + (rng.next() - 0.5) * 0.2),
      advantage: rng.next() * 2 - 1,
      samplingTemperature: 1,
    };
  });
}

async function gradients(model: CausalLM, adapter: LoraAdapter, seqs: TrainingSequence[], recomputeLayers: boolean, extra: { memoryBudgetBytes?: number } = {}): Promise<Record<string, Float32Array>> {
  adapter.randomState = 0;
  const params = Object.fromEntries(adapter.variables());
  const g = await grpoGradients(model, adapter, params, seqs, { microBatchSize: 2, klCoef: 0.01, recomputeLayers, ...extra });
  const out: Record<string, Float32Array> = {};
  for (const [k, t] of Object.entries(g.grads)) out[k] = Float32Array.from(await t.data());
  disposeGrads(g.grads);
  return out;
}

describe.each(['cpu', 'wasm'] as const)('GRPO with recomputed layers on %s', (backend) => {
  it.each([0, 0.2])('gives the gradients of the full tape (LoRA dropout %f)', async (dropout) => {
    await initBackend(backend);
    const model = await CausalLM.load(dir);
    const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, { seed: 3, randomB: true, randomBStd: 0.1 });
    const seqs = sequences(5, 9);
    // On wasm the model holds its projections' transposes from the first update on: made before counting.
    holdTransposesIfRoom(model, {});
    const before = tf.memory().numTensors;
    const full = await gradients(model, adapter, seqs, false);
    const again = await gradients(model, adapter, seqs, true);
    expect(tf.memory().numTensors).toBe(before);
    expect(Object.keys(again).sort()).toEqual(Object.keys(full).sort());
    let worst = 0;
    let scale = 0;
    for (const [k, want] of Object.entries(full)) {
      const got = again[k] as Float32Array;
      for (let i = 0; i < want.length; i++) {
        worst = Math.max(worst, Math.abs((got[i] as number) - (want[i] as number)));
        scale = Math.max(scale, Math.abs(want[i] as number));
      }
    }
    expect(scale).toBeGreaterThan(1e-4);
    expect(worst).toBeLessThanOrEqual(1e-6);
    adapter.dispose();
    model.dispose();
  });
});

describe('held transposes of the frozen projections (wasm)', () => {
  it('give the gradients of transposing per backward, bit for bit; are held where the heap has room, and not on cpu', async () => {
    await initBackend('wasm');
    const model = await CausalLM.load(dir);
    const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, { seed: 3, randomB: true, randomBStd: 0.1 });
    const seqs = sequences(5, 9);
    // A pass budget that leaves no room beside the heap's contents: nothing is held.
    expect(holdTransposesIfRoom(model, { memoryBudgetBytes: 4 * 2 ** 30 })).toBe(false);
    const transposes = async (f: () => Promise<unknown>): Promise<number> =>
      (await tf.profile(async () => void (await f()))).kernels.filter((k) => k.name === 'Transpose').length;
    let perBackward: Record<string, Float32Array> = {};
    const transposedPerBackward = await transposes(async () => (perBackward = await gradients(model, adapter, seqs, false, { memoryBudgetBytes: 4 * 2 ** 30 })));
    expect(model.holdsTransposedProjections).toBe(false);
    const before = tf.memory().numTensors;
    let held: Record<string, Float32Array> = {};
    const transposedHeld = await transposes(async () => (held = await gradients(model, adapter, seqs, false)));
    expect(model.holdsTransposedProjections).toBe(true);
    expect(tf.memory().numTensors - before).toBe(7 * model.config.numLayers);
    // Transposing per backward: each of the 3 passes (5 sequences, micro-batches of 2) transposes the 7·L
    // projections less layer 0's q, k and v, whose input (the embedding) needs no gradient. Held: the first
    // update makes the 7·L transposes once, and the next makes none.
    const L = model.config.numLayers;
    expect(transposedPerBackward - transposedHeld).toBe(3 * (7 * L - 3) - 7 * L);
    expect(transposedPerBackward - (await transposes(() => gradients(model, adapter, seqs, false)))).toBe(3 * (7 * L - 3));
    for (const [k, want] of Object.entries(perBackward)) expect(Array.from(held[k] as Float32Array)).toEqual(Array.from(want));
    adapter.dispose();
    model.dispose();
    await initBackend('cpu');
    const onCpu = await CausalLM.load(dir);
    expect(holdTransposesIfRoom(onCpu, {})).toBe(false);
    onCpu.dispose();
  });
});

describe('recomputation memory', () => {
  it('the peak bytes of a GRPO pass drop when layers are recomputed (wasm, 6 layers, longer sequences)', async () => {
    await initBackend('wasm');
    const deep = makeTinyCheckpoint({ out: join(root, 'deep'), arch: 'qwen3', layers: 6, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 300, seed: 5 });
    const model = await CausalLM.load(deep.dir);
    holdTransposesIfRoom(model, {}); // held before either peak is measured
    const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] }, { seed: 3, randomB: true, randomBStd: 0.1 });
    const rng = new Rng(2);
    const seqs: TrainingSequence[] = Array.from({ length: 2 }, () => ({
      promptIds: Array.from({ length: 96 }, () => rng.int(300)),
      responseIds: Array.from({ length: 96 }, () => rng.int(300)),
      responseMask: Array.from({ length: 96 }, () => 1),
      oldLogprobs: Array.from({ length: 96 }, () => -5.7),
      advantage: 1,
      samplingTemperature: 1,
    }));
    const peak = async (recomputeLayers: boolean): Promise<number> => {
      const start = tf.memory().numBytes;
      const info = await tf.profile(async () => {
        const g = await grpoGradients(model, adapter, Object.fromEntries(adapter.variables()), seqs, { microBatchSize: 2, klCoef: 0, recomputeLayers });
        disposeGrads(g.grads);
      });
      return info.peakBytes - start;
    };
    const full = await peak(false);
    const recomputed = await peak(true);
    expect(recomputed).toBeLessThan(0.6 * full);
    adapter.dispose();
    model.dispose();
  });
});

describe('memory-budgeted micro-batches', () => {
  it('packs sequences in order while each pass stays within the budget and the size cap', () => {
    const seqs = sequences(9, 1);
    const bytes = (b: number, t: number): number => b * t * 1000;
    const tokens = (s: TrainingSequence): number => s.promptIds.length + s.responseIds.length;
    const groups = microBatches(seqs, 4, 40_000, bytes, tokens);
    expect(groups.flat()).toEqual(seqs);
    for (const g of groups) {
      expect(g.length).toBeLessThanOrEqual(4);
      const t = Math.max(...g.map((s) => s.promptIds.length + s.responseIds.length));
      if (g.length > 1) expect(bytes(g.length, t)).toBeLessThanOrEqual(40_000);
    }
    // Without a budget only the size cap applies; a tiny budget runs one sequence per pass.
    expect(microBatches(seqs, 4, undefined, bytes, tokens).map((g) => g.length)).toEqual([4, 4, 1]);
    expect(microBatches(seqs, 4, 1, bytes, tokens).every((g) => g.length === 1)).toBe(true);
  });

  it('recomputation shrinks the estimate for a deep model', async () => {
    await initBackend('cpu');
    const model = await CausalLM.load(dir);
    const cfg = { ...model.config, numLayers: 12 };
    expect(microBatchBytes(cfg, 4, 512, 16, true)).toBeLessThan(microBatchBytes(cfg, 4, 512, 16, false) / 3);
    model.dispose();
  });
});
