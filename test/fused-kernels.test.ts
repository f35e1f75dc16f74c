// The decoder's fused inference kernels (src/tensor/fused-kernels.ts; RMSNorm's WebAssembly form,
// src/tensor/fused-wat.ts, on the single-threaded and the threaded build): each equals, bit for bit, the op chain it
// replaces on wasm, in its WebAssembly form (the JavaScript loops of fused-kernels.ts run only where that module is
// not prepared) (the chain runs when a gradient tape records, so both are computed here in one process), over
// values of mixed signs and magnitudes where another order of float32 operations would show; a mismatched mask
// is refused; no tensor is left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addScaledKernel, rmsNormKernel, ropeKernel, scaleMaskKernel } from '../src/tensor/fused-kernels.js';
import { fusedWatReady, withoutFusedWat } from '../src/tensor/fused-wat.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

function random(shape: number[], rng: Rng): tf.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 10 ** (rng.int(5) - 2)), shape);
}

async function bits(t: tf.Tensor): Promise<Uint32Array> {
  const v = (await t.data()) as Float32Array;
  t.dispose();
  return new Uint32Array(Float32Array.from(v).buffer);
}

beforeAll(async () => {
  await initBackend('wasm', { threads: 1 });
});
afterAll(async () => {
  await initBackend('wasm', { threads: 1 });
});

describe('fused inference kernels on wasm', () => {
  it.each([
    [1, 96],
    [1, 130], // a row not a multiple of four: the kernel's last columns one at a time
    [2, 768],
  ])('RMSNorm (the WebAssembly kernel, %i thread(s), rows of %i) equals x · rsqrt(mean(x²) + eps) · w bit for bit', async (threads, d) => {
    await initBackend('wasm', { threads });
    expect(fusedWatReady()).toBe(true);
    const rng = new Rng(d);
    const x = random([5, d], rng);
    const w = random([d], rng) as tf.Tensor1D;
    const eps = Math.fround(1e-6);
    const before = tf.memory().numTensors;
    const fused = await bits(rmsNormKernel(x, w, eps));
    const chain = await bits(tf.tidy(() => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), tf.scalar(eps)))), w)));
    expect(Array.from(fused)).toEqual(Array.from(chain));
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([x, w]);
    await initBackend('wasm', { threads: 1 });
  });

  it.each([
    [1, 16],
    [2, 16],
    [1, 12], // half 6: the kernel's last pairs one at a time
  ])('RoPE (%i thread(s), head dim %i) equals [x1·cos − x2·sin, x2·cos + x1·sin] bit for bit', async (threads, hd) => {
    await initBackend('wasm', { threads });
    expect(fusedWatReady()).toBe(true);
    const rng = new Rng(2 + hd);
    const [B, T, H] = [2, 3, 4];
    const x = random([B, T, H, hd], rng) as tf.Tensor4D;
    const cos = random([B, T, 1, hd / 2], rng) as tf.Tensor4D;
    const sin = random([B, T, 1, hd / 2], rng) as tf.Tensor4D;
    const fused = await bits(ropeKernel(x, cos, sin));
    const chain = await bits(
      tf.tidy(() => {
        const [x1, x2] = tf.split(x, 2, -1);
        return tf.concat([tf.sub(tf.mul(x1 as tf.Tensor, cos), tf.mul(x2 as tf.Tensor, sin)), tf.add(tf.mul(x2 as tf.Tensor, cos), tf.mul(x1 as tf.Tensor, sin))], -1);
      }),
    );
    expect(Array.from(fused)).toEqual(Array.from(chain));
    tf.dispose([x, cos, sin]);
    await initBackend('wasm', { threads: 1 });
  });

  it.each([
    [1, 40],
    [2, 40],
    [1, 41], // 287 values: the last three one at a time
  ])('the LoRA scale-and-add (%i thread(s), rows of %i) equals y + p · s bit for bit', async (threads, d) => {
    await initBackend('wasm', { threads });
    expect(fusedWatReady()).toBe(true);
    const rng = new Rng(3 + d);
    const y = random([7, d], rng);
    const p = random([7, d], rng);
    const s = tf.scalar(Math.fround(0.37));
    const fused = await bits(addScaledKernel(y, p, s));
    const chain = await bits(tf.tidy(() => tf.add(y, tf.mul(p, s))));
    expect(Array.from(fused)).toEqual(Array.from(chain));
    tf.dispose([y, p, s]);
    await initBackend('wasm', { threads: 1 });
  });

  it.each([
    [1, 1, 12, 1, 64], // a decoded token of the ~100M model: 12 heads, a 64-slot cache
    [1, 2, 4, 5, 9], // two rows, five queries, nine keys: planes of 45, the last one at a time
    [2, 2, 4, 5, 9],
  ])('the attention scale and mask (%i thread(s)) equal (x · c) + m bit for bit for scores [%i, %i, %i, %i]', async (threads, B, H, T, S) => {
    await initBackend('wasm', { threads });
    expect(fusedWatReady()).toBe(true);
    const rng = new Rng(B * 100 + S);
    const x = random([B, H, T, S], rng) as tf.Tensor4D;
    // An additive mask as the model builds it: 0 or −1e9.
    const mask = tf.tensor4d(Float32Array.from({ length: B * T * S }, () => (rng.next() < 0.3 ? -1e9 : 0)), [B, 1, T, S]);
    const c = tf.scalar(Math.fround(1 / Math.sqrt(64)));
    const before = tf.memory().numTensors;
    const fused = await bits(scaleMaskKernel(x, mask, c));
    const chain = await bits(tf.tidy(() => tf.add(tf.mul(x, c), mask)));
    expect(Array.from(fused)).toEqual(Array.from(chain));
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([x, mask, c]);
    await initBackend('wasm', { threads: 1 });
  });

  it('the JavaScript loops, which run where the WebAssembly module is not prepared, give the same bits', async () => {
    const rng = new Rng(9);
    const x = random([3, 2, 5, 7], rng) as tf.Tensor4D; // planes of 35 and rows of 7: every scalar tail
    const mask = tf.tensor4d(Float32Array.from({ length: 3 * 5 * 7 }, () => (rng.next() < 0.3 ? -1e9 : 0)), [3, 1, 5, 7]);
    const c = tf.scalar(Math.fround(0.125));
    const q = random([2, 3, 4, 12], rng) as tf.Tensor4D;
    const cos = random([2, 3, 1, 6], rng) as tf.Tensor4D;
    const sin = random([2, 3, 1, 6], rng) as tf.Tensor4D;
    const y = random([5, 7], rng);
    const p = random([5, 7], rng);
    const w = random([7], rng) as tf.Tensor1D;
    const all = (): tf.Tensor[] => [scaleMaskKernel(x, mask, c), ropeKernel(q, cos, sin), addScaledKernel(y, p, c), rmsNormKernel(y, w, Math.fround(1e-6))];
    const wat = await Promise.all(all().map(bits));
    const js = await Promise.all(withoutFusedWat(all).map(bits));
    js.forEach((b, i) => expect(Array.from(b), `kernel ${i}`).toEqual(Array.from(wat[i] as Uint32Array)));
    tf.dispose([x, mask, c, q, cos, sin, y, p, w]);
  });

  it('refuses a RoPE table whose shape is not [B, T, 1, hd/2] of x (the kernel would read past it)', () => {
    const x = tf.zeros([2, 3, 4, 8]) as tf.Tensor4D;
    const good = tf.zeros([2, 3, 1, 4]) as tf.Tensor4D;
    const broadcast = tf.zeros([1, 3, 1, 4]) as tf.Tensor4D;
    expect(() => ropeKernel(x, broadcast, good)).toThrow(/table \[1, 3, 1, 4\] does not match x \[2, 3, 4, 8\]/);
    expect(() => ropeKernel(x, good, broadcast)).toThrow(/does not match/);
    tf.dispose([x, good, broadcast]);
  });

  it('refuses a mask whose shape is not [B, 1, T, S] of the scores', () => {
    const x = tf.zeros([1, 2, 3, 4]) as tf.Tensor4D;
    const mask = tf.zeros([1, 1, 3, 5]) as tf.Tensor4D;
    const c = tf.scalar(1);
    expect(() => scaleMaskKernel(x, mask, c)).toThrow(/mask \[1, 1, 3, 5\] does not match scores \[1, 2, 3, 4\]/);
    tf.dispose([x, mask, c]);
  });
});
