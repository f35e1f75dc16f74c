// The memory plan of a GRPO update on the wasm heap: the per-micro-batch estimate against a hand count, the
// split into smaller micro-batches when the configured size does not fit (same update, since gradients
// accumulate over micro-batches), and a refusal with the numbers and the flags to change when one rollout
// alone does not fit, instead of an opaque WebAssembly error. A tiny real model through the updater.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTinyCheckpoint } from '../../src/checkpoint/make-tiny.js';
import { CausalLM } from '../../src/model/qwen3.js';
import { MemoryBudgetError, microBatchBytes, planMicroBatches } from '../../src/rl/memory-budget.js';
import { WASM_HEAP_LIMIT_BYTES } from '../../src/tensor/wasm-heap.js';
import type { Rollout } from '../../src/agent/rollout.js';
import { GrpoPolicyUpdater, type RolloutGroup, type TrainedRole } from '../../src/selfplay/updater.js';
import { initBackend, tf } from '../../src/tensor/backend.js';
import { Rng } from '../../src/util/rng.js';
import { trainedRoles } from '../helpers/trained-roles.js';

let root: string;
let model: CausalLM;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-mem-'));
  const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, vocab: 300, seed: 8 });
  model = await CausalLM.load(dir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

const SHAPE = { numLayers: 2, hiddenSize: 32, numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 64, vocabSize: 300 };

describe('the micro-batch memory estimate', () => {
  it('counts activations per token, scores per token pair and one logits chunk', () => {
    // Per token per layer: 8·32 + 6·(4 + 2·2)·16 + 6·64 + 7·2·4 = 256 + 768 + 384 + 56 = 1464 floats.
    // Per layer, with the calibration factors 7 and 2: 7·B·T·1464 + 2·4·B·4·T²; logits: 3·128·300.
    // Bytes = 4·(2 layers · perLayer + logits).
    const B = 3;
    const T = 100;
    expect(microBatchBytes(SHAPE, B, T, 4)).toBe(4 * (2 * (7 * B * T * 1464 + 32 * B * T * T) + 3 * 128 * 300));
  });

  it('plans the largest micro-batch size that fits, else refuses with the numbers', () => {
    const seqs = [{ tokens: 1000 }, { tokens: 400 }, { tokens: 1000 }, { tokens: 300 }];
    const one = microBatchBytes(SHAPE, 1, 1000, 4);
    const two = microBatchBytes(SHAPE, 2, 1000, 4);
    // Free memory such that 80% of it holds a pair of the longest but not four.
    const free = (two * 1.01) / 0.8;
    expect(planMicroBatches(seqs, 4, SHAPE, free, { loraRank: 4, heapLimitBytes: WASM_HEAP_LIMIT_BYTES, what: 'test' })).toEqual({ microBatchSize: 2, largest: { tokens: 1000, sequences: 2, bytes: two } });
    expect(() => planMicroBatches(seqs, 4, SHAPE, (one * 0.9) / 0.8, { loraRank: 4, heapLimitBytes: WASM_HEAP_LIMIT_BYTES, what: 'the solver update' })).toThrow(
      new MemoryBudgetError(
        `the solver update: one rollout of 1000 tokens needs about ${(one / 2 ** 30).toFixed(2)} GiB for its forward and backward (estimate), more than the ${((one * 0.9) / 2 ** 30).toFixed(2)} GiB usable of the ${((one * 0.9) / 0.8 / 2 ** 30).toFixed(2)} GiB free in the wasm heap (limit 4.00 GiB). Lower --max-response-tokens (tool output counts toward it) or --max-new-tokens, or use --backend tensorflow, which has no such limit`,
      ),
    );
  });
});

const roles = (): Record<'proposer' | 'solver', TrainedRole> => trainedRoles(model, 1e-3);

function groups(seed: number): RolloutGroup[] {
  const rng = new Rng(seed);
  const rollout = (i: number): Rollout => {
    const n = 30 + rng.int(20);
    return { id: `r${i}`, promptIds: [1, 2, 3, 4], responseIds: Array.from({ length: n }, () => rng.int(300)), responseMask: Array.from({ length: n }, () => 1), logprobs: Array.from({ length: n }, () => -5.7), samplingTemperature: 1, queries: [], retrieved: [], turns: 1 } as unknown as Rollout;
  };
  return [0, 1].map((g) => ({ rollouts: [0, 1].map((i) => rollout(g * 2 + i)), rewards: [1, 0] }));
}

describe('the updater on the wasm heap', () => {
  it('splits an update that does not fit into smaller micro-batches, with the same result and a warning', async () => {
    // Layers recomputed, as where keeping them does not fit (the next test).
    const cfg = { microBatchSize: 4, klCoef: 0.01, clipLow: 0.2, clipHigh: 0.28, recomputeLayers: true };
    const whole = await new GrpoPolicyUpdater(model, roles(), cfg).update('solver', groups(1));
    const splits: string[] = [];
    // A heap whose free part holds micro-batches of 2 of these rollouts but not 4.
    const two = microBatchBytes(model.config, 2, 49 + 4, 4, true);
    const limit = tf.memory().numBytes + (two * 1.05) / 0.8;
    const split = await new GrpoPolicyUpdater(model, roles(), cfg, {}, { limitBytes: limit, usedBytes: () => tf.memory().numBytes, onSplit: (m) => splits.push(m) }).update('solver', groups(1));
    expect(splits).toHaveLength(1);
    expect(splits[0]).toMatch(/^the solver update runs in micro-batches of [12] instead of 4: \d+ × \d+ tokens need about \d+\.\d\d GiB \(estimate\) of \d+\.\d\d GiB free in the wasm heap$/);
    expect(split?.loss).toBeCloseTo(whole?.loss as number, 5);
    expect(split?.gradNorm).toBeCloseTo(whole?.gradNorm as number, 5);
  });

  it('keeps every activation where it fits, in smaller passes if need be, and recomputes where one rollout alone does not fit the pass budget', async () => {
    const cfg = { microBatchSize: 4, klCoef: 0.01, clipLow: 0.2, clipHigh: 0.28 };
    const seen: Array<boolean | undefined> = [];
    const forward = model.forward.bind(model);
    const spy = vi.spyOn(model, 'forward').mockImplementation((ids, opts) => {
      if (opts?.adapter) seen.push(opts.recomputeLayers);
      return forward(ids, opts);
    });
    const splits: string[] = [];
    const heap = (limitBytes: number) => ({ limitBytes, usedBytes: () => tf.memory().numBytes, onSplit: (m: string) => splits.push(m) });
    try {
      const recomputed = await new GrpoPolicyUpdater(model, roles(), { ...cfg, recomputeLayers: true }).update('solver', groups(1));
      expect(seen).toEqual([true]);
      seen.length = 0;
      const kept = await new GrpoPolicyUpdater(model, roles(), cfg, {}, heap(tf.memory().numBytes + 2 ** 30)).update('solver', groups(1));
      expect(seen).toEqual([false]);
      expect(kept?.loss).toBeCloseTo(recomputed?.loss as number, 6);
      expect(kept?.gradNorm).toBeCloseTo(recomputed?.gradNorm as number, 6);
      // A heap that holds 4 rollouts recomputed but not 4 kept: kept, in smaller passes, with no warning (a
      // choice of speed, not a forced split).
      seen.length = 0;
      const fourRecomputed = microBatchBytes(model.config, 4, 49 + 4, 4, true);
      expect(microBatchBytes(model.config, 4, 49 + 4, 4, false)).toBeGreaterThan(fourRecomputed * 1.05);
      const smaller = await new GrpoPolicyUpdater(model, roles(), cfg, {}, heap(tf.memory().numBytes + (fourRecomputed * 1.05) / 0.8)).update('solver', groups(1));
      expect(seen.length).toBeGreaterThan(1);
      expect(seen.every((r) => r === false)).toBe(true);
      expect(splits).toEqual([]);
      expect(smaller?.loss).toBeCloseTo(recomputed?.loss as number, 6);
      // A pass budget below one kept rollout (every rollout has at least 30 + 4 tokens): recomputed.
      seen.length = 0;
      const oneKept = microBatchBytes(model.config, 1, 30 + 4, 4, false);
      await new GrpoPolicyUpdater(model, roles(), { ...cfg, memoryBudgetBytes: oneKept - 1 }, {}, heap(tf.memory().numBytes + 2 ** 30)).update('solver', groups(1));
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((r) => r === true)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses an update whose single rollout cannot fit, naming tokens, bytes, the limit and the flags', async () => {
    const updater = new GrpoPolicyUpdater(model, roles(), { microBatchSize: 4, klCoef: 0.01, clipLow: 0.2, clipHigh: 0.28 }, {}, { limitBytes: tf.memory().numBytes + 1000, usedBytes: () => tf.memory().numBytes });
    await expect(updater.update('proposer', groups(2))).rejects.toThrow(/^the proposer update: one rollout of \d+ tokens needs about .* GiB .*free in the wasm heap \(limit 0\.\d\d GiB\)\. Lower --max-response-tokens/);
  });
});
