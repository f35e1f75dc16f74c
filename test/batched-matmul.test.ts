// The SIMD batched matMul (src/tensor/batched-matmul.ts): bit for bit tf.matMul on wasm, on the single-threaded
// and the threaded build, for the shapes decoding runs (kv-head planes of a few query rows against a cache of
// keys) and for the edges of its loops (48-wide blocks along the shared axis, a key count not divisible by 4);
// tf.matMul itself where the kernel does not apply; no tensor left behind.
import { afterAll, describe, expect, it } from 'vitest';
import { BATCHED_MATMUL, batchedMatMul } from '../src/tensor/batched-matmul.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

function random(shape: number[], rng: Rng): tf.Tensor3D {
  const n = shape.reduce((a, b) => a * b, 1);
  // Mixed signs and magnitudes, so that a different order of float32 operations would show in the bits.
  return tf.tensor3d(Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 10 ** (rng.int(5) - 2)), shape as [number, number, number]);
}

/** The kernels that ran while `f` did. */
async function kernelsOf(f: () => tf.Tensor): Promise<string[]> {
  const info = await tf.profile(() => void f().dispose());
  return info.kernels.map((k) => k.name);
}

afterAll(async () => {
  await initBackend('wasm', { threads: 1 });
});

describe.each([1, 2])('batchedMatMul on wasm, %i thread(s)', (threads) => {
  // [P, M, K, N]: planes, query rows, shared axis, output columns.
  const shapes: Array<[number, number, number, number]> = [
    [4, 3, 64, 192], // ~100M decode, batch 1: 4 kv heads, 3 query heads each, head dim 64
    [16, 2, 32, 256], // the world's model decoding 8 rows: 16 planes, 2 query heads each, head dim 32
    [2, 5, 128, 203], // head dim 128 (three 48-wide blocks: 48 + 48 + 32), 203 keys (3 past a multiple of 4)
    [3, 1, 100, 7], // a shared axis of 100 (blocks 48 + 48 + 4)
    [1, 2, 16, 9], // one plane, transposed
  ];

  it.each(shapes)('scores q·kᵀ [%i, %i, %i] × [·, %i, ·]ᵀ equal tf.matMul bit for bit', async (P, M, K, N) => {
    await initBackend('wasm', { threads });
    const rng = new Rng(P * 1000 + N);
    const q = random([P, M, K], rng);
    const keys = random([P, N, K], rng);
    const want = tf.matMul(q, keys, false, true);
    const before = tf.memory().numTensors;
    const got = batchedMatMul(q, keys, true);
    expect(await kernelsOf(() => batchedMatMul(q, keys, true))).toEqual([BATCHED_MATMUL]);
    expect(got.shape).toEqual([P, M, N]);
    expect(Array.from(got.dataSync())).toEqual(Array.from(want.dataSync()));
    got.dispose();
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([q, keys, want]);
  });

  // As probabilities · values: S = N keys (odd counts included), D = K the head dimension (the output's columns).
  it.each(shapes.filter(([P, , K]) => P > 1 && K % 4 === 0).map(([P, M, K, N]): [number, number, number, number] => [P, M, N, K]))(
    'context p·v [%i, %i, %i] × [·, ·, %i] equals tf.matMul bit for bit',
    async (P, M, S, D) => {
      await initBackend('wasm', { threads });
      const rng = new Rng(P * 77 + S);
      const probs = random([P, M, S], rng);
      const values = random([P, S, D], rng);
      const want = tf.matMul(probs, values);
      const got = batchedMatMul(probs, values, false);
      expect(await kernelsOf(() => batchedMatMul(probs, values, false))).toEqual([BATCHED_MATMUL]);
      expect(Array.from(got.dataSync())).toEqual(Array.from(want.dataSync()));
      tf.dispose([probs, values, want, got]);
    },
  );

  it('is tf.matMul where the kernel does not apply: one plane untransposed (XNNPACK), a shared axis off four lanes, under a tape', async () => {
    await initBackend('wasm', { threads });
    const rng = new Rng(5);
    const one = [random([1, 3, 8], rng), random([1, 8, 12], rng)] as const;
    const odd = [random([2, 3, 6], rng), random([2, 5, 6], rng)] as const;
    const fitting = [random([2, 3, 8], rng), random([2, 5, 8], rng)] as const;
    expect(await kernelsOf(() => batchedMatMul(one[0], one[1], false))).toEqual(['BatchMatMul']);
    expect(await kernelsOf(() => batchedMatMul(odd[0], odd[1], true))).toEqual(['BatchMatMul']);
    expect(await kernelsOf(() => batchedMatMul(fitting[0], fitting[1], true))).toEqual([BATCHED_MATMUL]);
    // Shapes the kernel takes, but a tape records: tf.matMul, whose gradient exists (the kernel has none).
    const taped = tf.grad((x: tf.Tensor) => tf.sum(batchedMatMul(x as tf.Tensor3D, fitting[1], true)))(fitting[0]);
    const want = tf.grad((x: tf.Tensor) => tf.sum(tf.matMul(x as tf.Tensor3D, fitting[1], false, true)))(fitting[0]);
    expect(Array.from(taped.dataSync())).toEqual(Array.from(want.dataSync()));
    tf.dispose([...one, ...odd, ...fitting, taped, want]);
  });
});
