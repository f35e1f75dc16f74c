// The wasm kernels we re-register (Slice, Unpack, SplitV copy only what they return; Identity shares its
// input's data): the same values as the cpu backend, forward and through the gradients of stack and concat,
// and a gradient that saves a large tensor does not copy it.
import { describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

function values(seed: number, n: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
}

/** unstack/split along every axis, and d/dx of Σ w·stack(unstack(x)) and of Σ w·concat(split(x)). */
function compute(): number[][] {
  const shape: [number, number, number] = [3, 4, 5];
  const data = values(1, 60);
  const w = values(2, 60);
  return tf.tidy(() => {
    const x = tf.tensor3d(data, shape);
    const out: number[][] = [];
    for (const axis of [0, 1, 2]) {
      for (const t of tf.unstack(x, axis)) out.push(Array.from(t.dataSync()));
      const n = shape[axis] as number;
      const sizes = n === 3 ? [1, 2] : n === 4 ? [1, 3] : [2, 1, 2];
      for (const t of tf.split(x, sizes, axis)) out.push(Array.from(t.dataSync()));
      const g = tf.grad((y: tf.Tensor) => tf.sum(tf.mul(tf.concat([tf.stack(tf.unstack(y, axis), axis)], 0), tf.tensor3d(w, shape))))(x);
      out.push(Array.from(g.dataSync()));
      const g2 = tf.grad((y: tf.Tensor) => tf.sum(tf.mul(tf.concat(tf.split(y, sizes, axis), axis), tf.tensor3d(w, shape))))(x);
      out.push(Array.from(g2.dataSync()));
    }
    out.push(Array.from(tf.slice(x, [1, 1, 2], [2, 2, 3]).dataSync()));
    return out;
  });
}

describe('wasm kernel fixes', () => {
  it('Unpack, SplitV and Slice give what the cpu backend gives', async () => {
    await initBackend('cpu');
    const want = compute();
    await initBackend('wasm');
    const got = compute();
    expect(got).toEqual(want);
  });
});

describe('wasm Identity', () => {
  it('a clone shares its source data and outlives it', async () => {
    await initBackend('wasm');
    const x = tf.tensor2d(values(3, 4096), [64, 64]);
    const y = tf.clone(x);
    expect(y.dataId).toBe(x.dataId);
    x.dispose();
    expect(Array.from(y.dataSync())).toEqual(Array.from(values(3, 4096)));
    y.dispose();
  });

  it('a tensor a gradient saves is its data, not a copy (the LM head saved by the log-prob op)', async () => {
    await initBackend('wasm');
    const w = tf.tensor2d(values(4, 256 * 64), [256, 64]);
    let savedSame: boolean | undefined;
    const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [x, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
      save([w]);
      return {
        value: tf.sum(tf.matMul(x, w)),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          savedSame = saved[0]?.dataId === w.dataId;
          return tf.mul(tf.ones([2, 1]), tf.mul(dy, tf.transpose(tf.sum(saved[0] as tf.Tensor2D, 1, true))));
        },
      };
    });
    const x = tf.tensor2d(values(5, 2 * 256), [2, 256]);
    const g = tf.grad((t: tf.Tensor) => f(t) as tf.Tensor)(x);
    expect(savedSame).toBe(true);
    // The gradient is still right: d/dx Σ x·W = row sums of W, for every row of x.
    const rowSums = tf.sum(w, 1).arraySync() as number[];
    const got = g.arraySync() as number[][];
    for (const row of got) row.forEach((v, k) => expect(v).toBeCloseTo(rowSums[k] as number, 4));
    tf.dispose([w, x, g]);
  });
});
