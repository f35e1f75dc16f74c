// The group-advantage kernel on cpu and wasm: forward vs a float64 reference, edge cases, gradient vs tf-ops
// autodiff and vs float64 central differences, memory.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import { GROUP_ADVANTAGE, groupAdvantages, groupAdvantagesOps, type AdvantageMode } from '../kernels/group-advantage.js';
import { rng } from './helpers/random.js';


/** Independent float64 reference: sample std (torch.std); a group of one has mean 0 and std 1 (A = R, verl's
 * rule); a zero-spread group of two or more → 0. */
function reference(r: number[], groups: number, g: number, mode: AdvantageMode, eps = 1e-6): number[] {
  const out: number[] = [];
  for (let k = 0; k < groups; k++) {
    const row = r.slice(k * g, (k + 1) * g);
    const mean = row.reduce((a, b) => a + b, 0) / g;
    const allEqual = row.every((x) => x === row[0]);
    const std = g > 1 ? Math.sqrt(row.reduce((a, b) => a + (b - mean) ** 2, 0) / (g - 1)) : 0;
    for (const x of row) {
      if (g < 2) out.push(x);
      else if (mode === 'drgrpo') out.push(x - mean);
      else out.push(allEqual ? 0 : (x - mean) / (std + eps));
    }
  }
  return out;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

/** Rewards with float32-exact values so the float64 reference sees the same inputs. */
function randomRewards(n: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Math.fround(r() * 4 - 2));
}

const MODES: AdvantageMode[] = ['grpo', 'drgrpo'];

for (const backend of ['cpu', 'wasm'] as const) {
  describe(`groupAdvantages on ${backend}`, () => {
    beforeAll(async () => {
      await initBackend(backend);
    });

    it('matches a float64 reference (sample std), with zero-spread and binary groups', () => {
      const groups = 5;
      const g = 6;
      const vals = randomRewards(groups * g, 1);
      vals.splice(6, 6, 1, 1, 1, 1, 1, 1); // zero spread
      vals.splice(12, 6, 0, 1, 0, 0, 1, 0); // binary rewards
      for (const mode of MODES) {
        const r = tf.tensor2d(vals, [groups, g]);
        const a = groupAdvantages(r, { mode });
        const err = maxAbsDiff(a.dataSync(), reference(vals, groups, g, mode));
        expect(err).toBeLessThan(1e-6);
        expect(tf.getKernel(GROUP_ADVANTAGE, backend)).toBeDefined(); // the typed-array kernel ran
        const zeroRow = Array.from(a.dataSync()).slice(6, 12);
        expect(zeroRow.every((x) => x === 0)).toBe(true);
        r.dispose();
        a.dispose();
      }
    });

    it("a group of size 1 gets A = R (verl's rule: mean 0, std 1), through the kernel and the tf-ops path, gradient 1", () => {
      for (const mode of MODES) {
        for (const impl of ['kernel', 'ops'] as const) {
          const r1 = tf.tensor2d([[3], [-1], [0.5], [0]]);
          const a1 = groupAdvantages(r1, { mode, impl });
          expect(Array.from(a1.dataSync()), `${mode} ${impl}`).toEqual([3, -1, 0.5, 0]);
          const g1 = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(groupAdvantages(x as tf.Tensor2D, { mode, impl }), tf.tensor2d([[2], [3], [-1], [0.5]]))))(r1);
          expect(Array.from(g1.dataSync()), `${mode} ${impl} gradient`).toEqual([2, 3, -1, 0.5]);
          tf.dispose([r1, a1, g1]);
        }
      }
    });

    it('gives 0 for zero spread (groups of two or more), in both modes', () => {
      for (const mode of MODES) {
        const r2 = tf.tensor2d([[2, 2, 2, 2], [0, 0, 0, 0]]);
        const a2 = groupAdvantages(r2, { mode });
        expect(Array.from(a2.dataSync())).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
        tf.dispose([r2, a2]);
      }
    });

    it('kernel forward and gradient match the tf-ops composition under autodiff (≤ 1e-5)', () => {
      const groups = 4;
      const g = 5;
      const vals = randomRewards(groups * g, 2);
      vals.splice(5, 5, 0.5, 0.5, 0.5, 0.5, 0.5); // a zero-spread group: gradient 0 in both
      const w = tf.tensor2d(randomRewards(groups * g, 3), [groups, g]);
      const r = tf.tensor2d(vals, [groups, g]);
      for (const mode of MODES) {
        const fk = (x: tf.Tensor) => tf.sum(tf.mul(groupAdvantages(x as tf.Tensor2D, { mode }), w));
        const fo = (x: tf.Tensor) => tf.sum(tf.mul(groupAdvantagesOps(x as tf.Tensor2D, { mode }), w));
        const ak = groupAdvantages(r, { mode });
        const ao = groupAdvantagesOps(r, { mode });
        const fwdErr = maxAbsDiff(ak.dataSync(), ao.dataSync());
        const gk = tf.grad(fk)(r);
        const go = tf.grad(fo)(r);
        const gradErr = maxAbsDiff(gk.dataSync(), go.dataSync());
        console.log(`[${backend}] groupAdvantages ${mode}: |kernel − ops| fwd ${fwdErr.toExponential(2)}, grad ${gradErr.toExponential(2)}`);
        expect(fwdErr).toBeLessThan(1e-5);
        expect(gradErr).toBeLessThan(1e-5);
        expect(Array.from(gk.dataSync()).slice(5, 10).every((x) => x === 0)).toBe(mode === 'grpo');
        tf.dispose([ak, ao, gk, go]);
      }
      tf.dispose([w, r]);
    });

    it('gradient matches float64 central differences of the reference formula', () => {
      const groups = 3;
      const g = 7;
      const vals = randomRewards(groups * g, 4);
      const wv = randomRewards(groups * g, 5);
      const f64 = (x: number[], mode: AdvantageMode) =>
        reference(x, groups, g, mode).reduce((acc, a, i) => acc + a * (wv[i] as number), 0);
      const h = 1e-6;
      const r = tf.tensor2d(vals, [groups, g]);
      const w = tf.tensor2d(wv, [groups, g]);
      for (const mode of MODES) {
        const fd = vals.map((_, i) => {
          const up = vals.slice();
          const dn = vals.slice();
          up[i] = (up[i] as number) + h;
          dn[i] = (dn[i] as number) - h;
          return (f64(up, mode) - f64(dn, mode)) / (2 * h);
        });
        const gk = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(groupAdvantages(x as tf.Tensor2D, { mode }), w)))(r);
        const err = maxAbsDiff(gk.dataSync(), fd);
        console.log(`[${backend}] groupAdvantages ${mode}: |grad − FD(float64)| ${err.toExponential(2)}`);
        expect(err).toBeLessThan(1e-5);
        gk.dispose();
      }
      tf.dispose([r, w]);
    });

    it('leaks no tensors across repeated forward + backward calls', () => {
      const r = tf.tensor2d(randomRewards(24, 6), [4, 6]);
      const run = () => {
        for (const mode of MODES) {
          const a = groupAdvantages(r, { mode });
          const gr = tf.grad((x: tf.Tensor) => tf.sum(tf.square(groupAdvantages(x as tf.Tensor2D, { mode }))))(r);
          tf.dispose([a, gr]);
        }
      };
      run();
      const before = tf.memory().numTensors;
      for (let i = 0; i < 5; i++) run();
      expect(tf.memory().numTensors).toBe(before);
      r.dispose();
    });
  });
}
