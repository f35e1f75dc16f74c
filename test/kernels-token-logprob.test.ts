// The fused chunked log-prob kernel on cpu and wasm: forward vs naive logSoftmax + onehot gather and vs a
// float64 reference, gradients vs plain tfjs autodiff and vs float64 central differences, chunk sizes that do
// not divide N, entropy, the from-logits variant, and memory.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import {
  LOG_SOFTMAX_STATS,
  type KernelImpl,
  tokenEntropy,
  tokenEntropyFromLogits,
  tokenLogProbs,
  tokenLogProbsFromLogits,
  tokenLogProbsWithEntropy,
} from '../kernels/token-logprob.js';
import { randoms } from './helpers/random.js';
import { TensorMatrix } from '../src/tensor/frozen-matrix.js';

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

const N = 13;
const D = 8;
const V = 37;
const hv = randoms(N * D, 1, 1.5);
const wv = randoms(D * V, 2, 1.0);
const tv = Array.from({ length: N }, (_, i) => (i * 11 + 5) % V);
const dyv = randoms(N, 3); // the upstream gradient (weights of the rows)

/** float64 reference: logits = h·W, per row logp[target], entropy. */
function ref64(h: number[], w: number[]): { logp: number[]; ent: number[] } {
  const logp: number[] = [];
  const ent: number[] = [];
  for (let n = 0; n < N; n++) {
    const z: number[] = [];
    for (let v = 0; v < V; v++) {
      let s = 0;
      for (let k = 0; k < D; k++) s += (h[n * D + k] as number) * (w[k * V + v] as number);
      z.push(s);
    }
    const mx = Math.max(...z);
    const lse = mx + Math.log(z.reduce((a, b) => a + Math.exp(b - mx), 0));
    logp.push((z[tv[n] as number] as number) - lse);
    ent.push(lse - z.reduce((a, b) => a + Math.exp(b - lse) * b, 0));
  }
  return { logp, ent };
}
const f64 = (h: number[], w: number[]) => ref64(h, w).logp.reduce((a, lp, n) => a + lp * (dyv[n] as number), 0);

/** Naive reference from plain tfjs ops (differentiable on both backends: onehot · logSoftmax). */
function naive(h: tf.Tensor2D, w: tf.Tensor2D, t: tf.Tensor1D): tf.Tensor1D {
  return tf.sum(tf.mul(tf.cast(tf.oneHot(t, V), 'float32'), tf.logSoftmax(tf.matMul(h, w))), 1) as tf.Tensor1D;
}

for (const [backend, impl] of [
  ['cpu', 'auto'],
  ['cpu', 'ops'],
  ['wasm', 'auto'],
  ['wasm', 'ops'],
] as Array<['cpu' | 'wasm', KernelImpl]>) {
  // 'auto': the typed-array kernels for the passes over the logits; 'ops': the tf-ops composition.
  describe(`tokenLogProbs on ${backend} (${impl === 'auto' ? 'typed-array kernels' : 'tf ops'})`, () => {
    let h: tf.Tensor2D;
    let w: tf.Tensor2D;
    let t: tf.Tensor1D;
    let dy: tf.Tensor1D;
    beforeAll(async () => {
      await initBackend(backend);
      h = tf.tensor2d(hv, [N, D]);
      w = tf.tensor2d(wv, [D, V]);
      t = tf.tensor1d(tv, 'int32');
      dy = tf.tensor1d(dyv);
    });

    it('forward matches naive logSoftmax + gather and float64, for chunk sizes 5 (not dividing 13), 1, 13, 64', () => {
      const naiveLp = naive(h, w, t);
      const r64 = ref64(hv, wv).logp;
      for (const chunkSize of [5, 1, 13, 64]) {
        const lp = tokenLogProbs(h, w, t, { impl, chunkSize });
        expect(lp.shape).toEqual([N]);
        if (impl === 'auto') expect(tf.getKernel(LOG_SOFTMAX_STATS, backend)).toBeDefined(); // the typed-array path ran
        const eNaive = maxAbsDiff(lp.dataSync(), naiveLp.dataSync());
        const e64 = maxAbsDiff(lp.dataSync(), r64);
        if (chunkSize === 5) console.log(`[${backend}/${impl}] tokenLogProbs fwd: |fused − naive| ${eNaive.toExponential(2)}, |fused − f64| ${e64.toExponential(2)}`);
        expect(eNaive).toBeLessThan(1e-5);
        expect(e64).toBeLessThan(1e-5);
        lp.dispose();
      }
      naiveLp.dispose();
    });

    it('gradient w.r.t. hidden and (opt-in) weight matches autodiff of the naive form (≤ 1e-5), in chunks of 5 and in one chunk (64, whose logits the backward keeps)', () => {
      const gn = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(naive(a as tf.Tensor2D, b as tf.Tensor2D, t), dy)))([h, w]);
      for (const chunkSize of [5, 64]) {
        const gh = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, w, t, { impl, chunkSize }), dy)))(h);
        const both = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
          tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, b as tf.Tensor2D, t, { impl, chunkSize, weightGrad: true }), dy)),
        )([h, w]);
        const wT = tf.transpose(w) as tf.Tensor2D;
        const ghT = tf.grad((a: tf.Tensor) =>
          tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, w, t, { impl, chunkSize, weightT: wT }), dy)),
        )(h);
        const eh = maxAbsDiff(gh.dataSync(), (gn[0] as tf.Tensor).dataSync());
        const eh2 = maxAbsDiff((both[0] as tf.Tensor).dataSync(), (gn[0] as tf.Tensor).dataSync());
        const ew = maxAbsDiff((both[1] as tf.Tensor).dataSync(), (gn[1] as tf.Tensor).dataSync());
        const ehT = maxAbsDiff(ghT.dataSync(), (gn[0] as tf.Tensor).dataSync());
        if (chunkSize === 5) {
          console.log(`[${backend}/${impl}] tokenLogProbs grad vs autodiff: hidden ${eh.toExponential(2)}, weight ${ew.toExponential(2)}`);
        }
        expect(eh).toBeLessThan(1e-5);
        expect(eh2).toBeLessThan(1e-5);
        expect(ew).toBeLessThan(1e-5);
        expect(ehT).toBeLessThan(1e-5);
        tf.dispose([gh, ...both, wT, ghT]);
      }
      tf.dispose(gn);
    });

    it('gradient matches float64 central differences (hidden and weight)', () => {
      const g = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
        tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, b as tf.Tensor2D, t, { impl, chunkSize: 4, weightGrad: true }), dy)),
      )([h, w]);
      const step = 1e-6;
      const fd = (x: number[], which: 'h' | 'w', i: number) => {
        const up = x.slice();
        const dn = x.slice();
        up[i] = (up[i] as number) + step;
        dn[i] = (dn[i] as number) - step;
        return which === 'h' ? (f64(up, wv) - f64(dn, wv)) / (2 * step) : (f64(hv, up) - f64(hv, dn)) / (2 * step);
      };
      const fdH = hv.map((_, i) => fd(hv, 'h', i));
      // A sample of weight entries (all target columns plus others), to keep the float64 loop small.
      const wIdx = Array.from({ length: 60 }, (_, j) => (j * 37 + 3) % (D * V));
      const fdW = wIdx.map((i) => fd(wv, 'w', i));
      const gH = (g[0] as tf.Tensor).dataSync();
      const gW = (g[1] as tf.Tensor).dataSync();
      const eH = maxAbsDiff(gH, fdH);
      const eW = maxAbsDiff(wIdx.map((i) => gW[i] as number), fdW);
      console.log(`[${backend}/${impl}] tokenLogProbs grad vs FD(float64): hidden ${eH.toExponential(2)}, weight ${eW.toExponential(2)}`);
      expect(eH).toBeLessThan(1e-5);
      expect(eW).toBeLessThan(1e-5);
      tf.dispose(g);
    });

    it('without weightGrad the weight gets no gradient (frozen lm_head)', () => {
      const wVar = tf.variable(w, true, `lmhead_${backend}_frozen`);
      const hVar = tf.variable(h, true, `hidden_${backend}_frozen`);
      const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(tokenLogProbs(hVar, wVar, t, { impl, chunkSize: 5 }), dy)), [hVar, wVar]);
      expect(Object.keys(grads)).toEqual([hVar.name]);
      tf.dispose([value, ...Object.values(grads), wVar, hVar]);
    });

    it('a frozen head (a FrozenMatrix) gives the hidden gradient of the same head as a tensor', () => {
      const frozen = new TensorMatrix(w.clone());
      const loss = (head: tf.Tensor2D | TensorMatrix) => (a: tf.Tensor) => tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, head, t, { impl, chunkSize: 5 }), dy));
      const gFrozen = tf.grad(loss(frozen))(h);
      const gTensor = tf.grad(loss(w))(h);
      const err = maxAbsDiff(gFrozen.dataSync(), gTensor.dataSync());
      console.log(`[${backend}/${impl}] frozen-head hidden grad vs tensor head: ${err.toExponential(2)}`);
      expect(err).toBeLessThan(1e-6);
      expect(() => tokenLogProbs(h, frozen, t, { impl, weightGrad: true })).toThrow(/frozen head/);
      tf.dispose([gFrozen, gTensor]);
      frozen.dispose();
    });

    it('entropy matches float64 (fused pass, separate pass, from logits) and has no gradient on the tape', () => {
      const ent64 = ref64(hv, wv).ent;
      const { logProbs, entropy } = tokenLogProbsWithEntropy(h, w, t, { impl, chunkSize: 5 });
      const e2 = tokenEntropy(h, w, { impl, chunkSize: 3 });
      const logits = tf.matMul(h, w) as tf.Tensor2D;
      const e3 = tokenEntropyFromLogits(logits, { impl, chunkSize: 6 });
      const lp = tokenLogProbs(h, w, t, { impl });
      const errs = [entropy, e2, e3].map((e) => maxAbsDiff(e.dataSync(), ent64));
      console.log(`[${backend}/${impl}] tokenEntropy vs f64: ${errs.map((e) => e.toExponential(2)).join(', ')}`);
      for (const e of errs) expect(e).toBeLessThan(1e-5);
      expect(maxAbsDiff(logProbs.dataSync(), lp.dataSync())).toBe(0);
      // Under a gradient tape: logProbs differentiable, entropy a constant.
      const gh = tf.grad((a: tf.Tensor) => {
        const r = tokenLogProbsWithEntropy(a as tf.Tensor2D, w, t, { impl, chunkSize: 5 });
        return tf.add(tf.sum(tf.mul(r.logProbs, dy)), tf.mul(tf.sum(r.entropy), 0));
      })(h);
      const ghRef = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, w, t, { impl, chunkSize: 5 }), dy)))(h);
      expect(maxAbsDiff(gh.dataSync(), ghRef.dataSync())).toBeLessThan(1e-6);
      tf.dispose([logProbs, entropy, e2, e3, logits, lp, gh, ghRef]);
    });

    it('from-logits variant: forward and gradient match the naive form', () => {
      const logits = tf.matMul(h, w) as tf.Tensor2D;
      const naiveL = (l: tf.Tensor) => tf.sum(tf.mul(tf.cast(tf.oneHot(t, V), 'float32'), tf.logSoftmax(l)), 1);
      const a = tokenLogProbsFromLogits(logits, t, { impl, chunkSize: 4 });
      const b = naiveL(logits);
      const ga = tf.grad((l: tf.Tensor) => tf.sum(tf.mul(tokenLogProbsFromLogits(l as tf.Tensor2D, t, { impl, chunkSize: 4 }), dy)))(logits);
      const gb = tf.grad((l: tf.Tensor) => tf.sum(tf.mul(naiveL(l), dy)))(logits);
      const ef = maxAbsDiff(a.dataSync(), b.dataSync());
      const eg = maxAbsDiff(ga.dataSync(), gb.dataSync());
      console.log(`[${backend}/${impl}] tokenLogProbsFromLogits vs naive: fwd ${ef.toExponential(2)}, grad ${eg.toExponential(2)}`);
      expect(ef).toBeLessThan(1e-5);
      expect(eg).toBeLessThan(1e-5);
      tf.dispose([logits, a, b, ga, gb]);
    });

    it('handles N = 0', () => {
      const h0 = tf.zeros([0, D]) as tf.Tensor2D;
      const t0 = tf.zeros([0], 'int32') as tf.Tensor1D;
      const lp = tokenLogProbs(h0, w, t0, { impl, chunkSize: 4 });
      expect(lp.shape).toEqual([0]);
      const g = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
        tf.sum(tokenLogProbs(a as tf.Tensor2D, b as tf.Tensor2D, t0, { impl, chunkSize: 4, weightGrad: true })),
      )([h0, w]);
      expect((g[0] as tf.Tensor).shape).toEqual([0, D]);
      expect((g[1] as tf.Tensor).shape).toEqual([D, V]);
      tf.dispose([h0, t0, lp, ...g]);
    });

    it('leaks no tensors across repeated forward + backward calls', () => {
      const run = () => {
        const lp = tokenLogProbs(h, w, t, { impl, chunkSize: 5 });
        const g = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
          tf.sum(tf.mul(tokenLogProbs(a as tf.Tensor2D, b as tf.Tensor2D, t, { impl, chunkSize: 5, weightGrad: true }), dy)),
        )([h, w]);
        const gh = tf.grad((a: tf.Tensor) => tf.sum(tokenLogProbs(a as tf.Tensor2D, w, t, { impl, chunkSize: 4 })))(h);
        const r = tokenLogProbsWithEntropy(h, w, t, { impl, chunkSize: 6 });
        const e = tokenEntropy(h, w, { impl, chunkSize: 6 });
        tf.dispose([lp, ...g, gh, r.logProbs, r.entropy, e]);
      };
      run();
      const before = tf.memory().numTensors;
      for (let i = 0; i < 4; i++) run();
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
