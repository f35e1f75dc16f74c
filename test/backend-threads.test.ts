// The threaded wasm backend: exactly the requested threads, the same results as one thread and as the cpu
// backend, and clear errors instead of silent fallbacks.
import { afterAll, describe, expect, it } from 'vitest';
import { getThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import { describeBackend, initBackend, isInstalled, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ortAvailability } from '../src/tensor/ort-binding.js';

function randomMatrix(rows: number, cols: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: rows * cols }, () => rng.next() * 2 - 1);
}

/** A matMul big enough for XNNPACK to split it over threads, and a softmax over its rows. */
function compute(a: Float32Array, b: Float32Array, n: number): Float32Array {
  return tf.tidy(() => {
    const y = tf.softmax(tf.matMul(tf.tensor2d(a, [n, n]), tf.tensor2d(b, [n, n])));
    return y.dataSync() as Float32Array;
  }).slice();
}

function maxAbsDiff(x: Float32Array, y: Float32Array): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs((x[i] as number) - (y[i] as number)));
  return m;
}

describe('wasm threads', () => {
  afterAll(async () => {
    await initBackend('wasm', { threads: 1 });
  });
  const n = 192;
  const a = randomMatrix(n, n, 1);
  const b = randomMatrix(n, n, 2);

  it('runs exactly the requested threads, reports them, and computes what one thread and cpu compute', async () => {
    const info = await initBackend('wasm', { threads: 2 });
    expect(info.threads).toBe(2);
    expect(tf.getBackend()).toBe('wasm');
    expect(getThreadsCount()).toBe(2);
    expect(describeBackend(info)).toContain('2 threads');
    const two = compute(a, b, n);

    const one = await initBackend('wasm', { threads: 1 });
    expect(one.threads).toBe(1);
    expect(tf.getBackend()).toBe('wasm');
    const single = compute(a, b, n);

    await initBackend('cpu');
    const cpu = compute(a, b, n);
    expect(maxAbsDiff(two, single)).toBeLessThan(1e-6);
    expect(maxAbsDiff(two, cpu)).toBeLessThan(1e-5);

    // Back to two threads after cpu: the same instance is reused.
    await initBackend('wasm', { threads: 2 });
    expect(getThreadsCount()).toBe(2);
    expect(maxAbsDiff(compute(a, b, n), two)).toBe(0);
  });

  it('refuses thread counts it cannot honour', async () => {
    await expect(initBackend('cpu', { threads: 2 })).rejects.toThrow(/cpu backend runs on one thread/);
    await expect(initBackend('wasm', { threads: 0 })).rejects.toThrow(/positive integer/);
  });

  const native = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'].some(isInstalled);
  it.skipIf(native)("'auto' without a TensorFlow binding installed picks native where onnxruntime-node loads, else wasm, also under vitest's loader (whose missing-package error has no Node code)", async () => {
    const info = await initBackend('auto', { threads: 1 });
    expect(info.name).toBe(ortAvailability().ok ? 'native' : 'wasm');
    expect(info.reason).toMatch(/no native TensorFlow binding installed/);
  });
});
