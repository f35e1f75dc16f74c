// The wasm kernels we re-register (Slice, Unpack, SplitV copy only what they return): the same values as the
// cpu backend, forward and through the gradients of stack and concat.
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
