// Gradient accumulation over micro-batches equals one big batch (≤ 1e-6), for every aggregation, with a tiny
// differentiable policy (hidden states × a trainable head through the fused log-prob kernel), on cpu and wasm.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import { tokenLogProbs } from '../kernels/token-logprob.js';
import { grpoLoss, lossNormalizer, type LossAggregation } from '../src/rl/grpo-loss.js';
import { accumulateGradients, disposeGrads } from '../src/rl/accumulate.js';
import { randoms } from './helpers/random.js';


const B = 5;
const T = 6;
const D = 4;
const V = 11;
const AGGS: LossAggregation[] = ['token-mean', 'seq-mean-token-mean', 'seq-sum-norm'];
// Ragged masks: different lengths, one tool-output gap, one empty sequence.
const maskV = [
  [1, 1, 1, 1, 1, 1],
  [1, 1, 0, 0, 1, 0],
  [1, 1, 1, 0, 0, 0],
  [0, 0, 0, 0, 0, 0],
  [1, 0, 0, 0, 0, 0],
].flat();

for (const backend of ['cpu', 'wasm'] as const) {
  describe(`accumulateGradients on ${backend}`, () => {
    let hidden: tf.Tensor3D;
    let targets: tf.Tensor2D;
    let oldLp: tf.Tensor2D;
    let refLp: tf.Tensor2D;
    let adv: tf.Tensor1D;
    let mask: tf.Tensor2D;
    let params: Record<string, tf.Variable>;
    beforeAll(async () => {
      await initBackend(backend);
      hidden = tf.tensor3d(randoms(B * T * D, 1), [B, T, D]);
      targets = tf.tensor2d(Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % V), [B, T], 'int32');
      oldLp = tf.tensor2d(randoms(B * T, 2, 0.3).map((x) => x - 2.4), [B, T]);
      refLp = tf.tensor2d(randoms(B * T, 3, 0.3).map((x) => x - 2.4), [B, T]);
      adv = tf.tensor1d([1.1, -0.7, 0.3, 0.9, -1.4]);
      mask = tf.tensor2d(maskV, [B, T]);
      params = {
        head: tf.variable(tf.tensor2d(randoms(D * V, 4), [D, V]), true, `acc_head_${backend}`),
        bias: tf.variable(tf.tensor2d(randoms(D, 5, 0.1), [1, D]), true, `acc_bias_${backend}`),
        unused: tf.variable(tf.zeros([2]), true, `acc_unused_${backend}`),
      };
    });
    afterAll(() => {
      tf.dispose([hidden, targets, oldLp, refLp, adv, mask, ...Object.values(params)]);
    });

    /** The loss of rows [a, b) with the given normalizer. */
    const microLoss = (a: number, b: number, aggregation: LossAggregation, normalizer?: { tokens: number; sequences: number }) => {
      const n = b - a;
      const h = tf.reshape(tf.slice(hidden, [a, 0, 0], [n, T, D]), [n * T, D]) as tf.Tensor2D;
      const hb = tf.add(h, params.bias as tf.Variable) as tf.Tensor2D;
      const tg = tf.reshape(tf.slice(targets, [a, 0], [n, T]), [n * T]) as tf.Tensor1D;
      const lp = tf.reshape(tokenLogProbs(hb, params.head as tf.Variable as tf.Tensor2D, tg, { chunkSize: 7, weightGrad: true }), [n, T]) as tf.Tensor2D;
      const rows = (x: tf.Tensor2D) => tf.slice(x, [a, 0], [n, T]) as tf.Tensor2D;
      const r = grpoLoss(
        {
          logProbs: lp,
          oldLogProbs: rows(oldLp),
          refLogProbs: rows(refLp),
          advantages: tf.slice(adv, [a], [n]) as tf.Tensor1D,
          mask: rows(mask),
          ...(normalizer ? { normalizer } : {}),
        },
        { aggregation, klCoef: 0.1, dualClip: 3, maxLen: 8 },
      );
      return { loss: r.loss, metrics: r.metrics };
    };

    it('sums of micro-batch gradients equal the big-batch gradient for every aggregation (≤ 1e-6)', () => {
      let worst = 0;
      for (const aggregation of AGGS) {
        const big = accumulateGradients(params, 1, () => microLoss(0, B, aggregation));
        expect(Object.keys(big.grads).sort()).toEqual(['bias', 'head']); // nothing for the unused param
        for (const splits of [
          [0, 2, 5],
          [0, 1, 2, 3, 4, 5],
          [0, 4, 5],
        ]) {
          const masks = splits.slice(1).map((e, k) => tf.slice(mask, [splits[k] as number, 0], [e - (splits[k] as number), T]) as tf.Tensor2D);
          const normalizer = lossNormalizer(masks);
          tf.dispose(masks);
          const acc = accumulateGradients(params, splits.length - 1, (k) =>
            microLoss(splits[k] as number, splits[k + 1] as number, aggregation, normalizer),
          );
          for (const key of ['head', 'bias']) {
            const d = tf.tidy(() => tf.max(tf.abs(tf.sub(acc.grads[key] as tf.Tensor, big.grads[key] as tf.Tensor))).dataSync()[0] as number);
            worst = Math.max(worst, d);
            expect(d, `${aggregation} ${splits.join(',')} ${key}`).toBeLessThan(1e-6);
          }
          expect(Math.abs(acc.loss - big.loss)).toBeLessThan(1e-6);
          for (const [k, v] of Object.entries(big.metrics)) expect(Math.abs((acc.metrics[k] as number) - v), k).toBeLessThan(1e-6);
          disposeGrads(acc.grads);
        }
        disposeGrads(big.grads);
      }
      console.log(`[${backend}] accumulation vs big batch: max |Δgrad| ${worst.toExponential(2)}`);
    });

    it('leaks no tensors across repeated accumulations', () => {
      const normalizer = lossNormalizer(mask);
      const run = () => {
        const acc = accumulateGradients(params, 2, (k) => microLoss(k === 0 ? 0 : 2, k === 0 ? 2 : 5, 'token-mean', normalizer));
        disposeGrads(acc.grads);
      };
      run();
      const before = tf.memory().numTensors;
      for (let i = 0; i < 3; i++) run();
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
