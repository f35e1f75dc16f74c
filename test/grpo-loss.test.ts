// The GRPO loss on cpu and wasm vs a hand-written float64 reference: both clip sides, dual clip, k3 KL, masks,
// each aggregation; its gradient vs float64 central differences; zero advantages and zero KL give a zero
// gradient; the whole-batch normalizer makes micro-batch losses add up; memory.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import { grpoLoss, lossNormalizer, type GrpoLossConfig, type LossAggregation } from '../src/rl/grpo-loss.js';

const B = 3;
const T = 4;
// log ratios chosen to hit every branch (ε_low 0.2, ε_high 0.28, c = 3):
//   row 0 (A = +1.2): ρ = 1.5 (clipped high), 0.6 (below 1−ε but A > 0: unclipped), 1.1, 1.0
//   row 1 (A = −0.9): ρ = 0.5 (clipped low), 4.0 (dual clip: 3.6 > 2.7), 1.2, masked
//   row 2 (A = +0.4): ρ = 0.9, 1.3 (clipped high), masked, masked (tool output)
const ratios = [1.5, 0.6, 1.1, 1.0, 0.5, 4.0, 1.2, 1.0, 0.9, 1.3, 1.0, 1.0];
const oldLp = [-1.2, -0.7, -2.3, -0.4, -1.9, -3.1, -0.8, -1.0, -0.5, -2.2, -1.4, -0.9].map(Math.fround);
const lp = oldLp.map((o, i) => Math.fround(o + Math.log(ratios[i] as number)));
const refLp = lp.map((l, i) => Math.fround(l + 0.3 * Math.sin(i + 1)));
const adv = [1.2, -0.9, 0.4].map(Math.fround);
const mask = [1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0];
const ent = [0.5, 1.5, 2.0, 0.1, 0.7, 0.9, 1.1, 3.0, 0.3, 0.2, 5.0, 5.0].map(Math.fround);

interface Ref {
  loss: number;
  pgLoss: number;
  kl: number;
  clipFrac: number;
  dualClipFrac: number;
  ppoKl: number;
  entropy: number;
}

/** float64 reference of docs/method.md ("GRPO") / verl, written out per token. */
function reference(lpv: number[], cfg: Required<Omit<GrpoLossConfig, 'dualClip'>> & { dualClip: number | null }, rows = B): Ref {
  const per: number[] = [];
  const pgs: number[] = [];
  const kls: number[] = [];
  let clipped = 0;
  let dual = 0;
  let ppo = 0;
  let entSum = 0;
  let tokens = 0;
  for (let b = 0; b < rows; b++) {
    const A = adv[b] as number;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      const logRatio = Math.max(-20, Math.min(20, (lpv[i] as number) - (oldLp[i] as number)));
      const rho = Math.exp(logRatio);
      const l1 = -A * rho;
      const l2 = -A * Math.max(1 - cfg.clipLow, Math.min(1 + cfg.clipHigh, rho));
      let pg = Math.max(l1, l2);
      let isDual = false;
      if (cfg.dualClip !== null && A < 0) {
        isDual = pg > -A * cfg.dualClip;
        pg = Math.min(pg, -A * cfg.dualClip);
      }
      const r = Math.max(-20, Math.min(20, (refLp[i] as number) - (lpv[i] as number)));
      const kl = Math.min(Math.exp(r) - r - 1, 10);
      pgs.push(pg);
      kls.push(kl);
      per.push(pg + cfg.klCoef * kl);
      const m = mask[i] as number;
      tokens += m;
      if (m) {
        if (l2 > l1) clipped++;
        if (isDual) dual++;
        ppo += -logRatio;
        entSum += ent[i] as number;
      }
    }
  }
  const agg = (x: number[]): number => {
    let seqs = 0;
    let total = 0;
    let seqMeans = 0;
    for (let b = 0; b < rows; b++) {
      let s = 0;
      let n = 0;
      for (let t = 0; t < T; t++) {
        const m = mask[b * T + t] as number;
        s += m * (x[b * T + t] as number);
        n += m;
      }
      total += s;
      if (n > 0) {
        seqs++;
        seqMeans += s / n;
      }
    }
    if (cfg.aggregation === 'token-mean') return total / tokens;
    if (cfg.aggregation === 'seq-mean-token-mean') return seqMeans / seqs;
    return total / (seqs * cfg.maxLen);
  };
  return {
    loss: agg(per),
    pgLoss: agg(pgs),
    kl: agg(kls),
    clipFrac: clipped / tokens,
    dualClipFrac: dual / tokens,
    ppoKl: ppo / tokens,
    entropy: entSum / tokens,
  };
}

const AGGS: LossAggregation[] = ['token-mean', 'seq-mean-token-mean', 'seq-sum-norm'];

for (const backend of ['cpu', 'wasm'] as const) {
  describe(`grpoLoss on ${backend}`, () => {
    let logProbs: tf.Tensor2D;
    let oldLogProbs: tf.Tensor2D;
    let refLogProbs: tf.Tensor2D;
    let advantages: tf.Tensor1D;
    let maskT: tf.Tensor2D;
    let entropy: tf.Tensor2D;
    beforeAll(async () => {
      await initBackend(backend);
      logProbs = tf.tensor2d(lp, [B, T]);
      oldLogProbs = tf.tensor2d(oldLp, [B, T]);
      refLogProbs = tf.tensor2d(refLp, [B, T]);
      advantages = tf.tensor1d(adv);
      maskT = tf.tensor2d(mask, [B, T]);
      entropy = tf.tensor2d(ent, [B, T]);
    });

    it('matches the float64 reference for every aggregation, with and without dual clip and KL', () => {
      let worst = 0;
      for (const aggregation of AGGS) {
        for (const dualClip of [null, 3]) {
          for (const klCoef of [0, 0.01, 0.5]) {
            const cfg = { clipLow: 0.2, clipHigh: 0.28, klCoef, aggregation, maxLen: 6, dualClip };
            const r = grpoLoss({ logProbs, oldLogProbs, refLogProbs, advantages, mask: maskT, entropy }, cfg);
            const want = reference(lp, cfg);
            const got: Record<string, number> = { loss: r.loss.dataSync()[0] as number };
            for (const [k, v] of Object.entries(r.metrics)) got[k] = (v as tf.Scalar).dataSync()[0] as number;
            for (const k of Object.keys(want) as Array<keyof Ref>) {
              const e = Math.abs((got[k] as number) - want[k]);
              worst = Math.max(worst, e);
              expect(e, `${aggregation} dual=${dualClip} kl=${klCoef} ${k}`).toBeLessThan(2e-6);
            }
            tf.dispose([r.loss, ...Object.values(r.metrics)]);
          }
        }
      }
      // Both clip sides and the dual clip were exercised.
      const ref = reference(lp, { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, aggregation: 'token-mean', maxLen: 6, dualClip: 3 });
      expect(ref.clipFrac * 9).toBeCloseTo(3, 9); // ρ = 1.5 and 1.3 clipped high (A > 0), ρ = 0.5 clipped low (A < 0)
      expect(ref.dualClipFrac * 9).toBeCloseTo(1, 9);
      console.log(`[${backend}] grpoLoss vs float64 reference: max error ${worst.toExponential(2)}`);
    });

    it('gradient w.r.t. logπ matches float64 central differences', () => {
      for (const aggregation of AGGS) {
        const cfg = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0.5, aggregation, maxLen: 6, dualClip: 3 };
        const g = tf.grad((x: tf.Tensor) =>
          grpoLoss({ logProbs: x as tf.Tensor2D, oldLogProbs, refLogProbs, advantages, mask: maskT }, cfg).loss,
        )(logProbs);
        const h = 1e-6;
        const fd = lp.map((_, i) => {
          const up = lp.slice();
          const dn = lp.slice();
          up[i] = (up[i] as number) + h;
          dn[i] = (dn[i] as number) - h;
          return (reference(up, cfg).loss - reference(dn, cfg).loss) / (2 * h);
        });
        const gv = g.dataSync();
        let err = 0;
        for (let i = 0; i < fd.length; i++) err = Math.max(err, Math.abs((gv[i] as number) - (fd[i] as number)));
        console.log(`[${backend}] grpoLoss ${aggregation} grad vs FD(float64): ${err.toExponential(2)}`);
        expect(err).toBeLessThan(1e-5);
        // Masked tokens get exactly zero gradient.
        expect(Math.abs(gv[7] as number)).toBe(0);
        expect(Math.abs(gv[10] as number)).toBe(0);
        g.dispose();
      }
    });

    it('all advantages 0 and KL 0 give a zero gradient', () => {
      const zeroAdv = tf.zeros([B]) as tf.Tensor1D;
      for (const aggregation of AGGS) {
        // KL coefficient 0, and alternatively a reference equal to the policy (k3 and its slope are 0 there).
        for (const [klCoef, ref] of [[0, refLogProbs], [0.01, logProbs]] as const) {
          const g = tf.grad((x: tf.Tensor) =>
            grpoLoss(
              { logProbs: x as tf.Tensor2D, oldLogProbs, refLogProbs: ref, advantages: zeroAdv, mask: maskT },
              { klCoef, aggregation, dualClip: 3 },
            ).loss,
          )(logProbs);
          expect(Array.from(g.dataSync()).every((v) => v === 0)).toBe(true);
          g.dispose();
        }
      }
      zeroAdv.dispose();
    });

    it('with the whole-batch normalizer, micro-batch losses and metrics add up to the big batch', () => {
      const split = (x: tf.Tensor, a: number, b: number) => tf.slice(x, [a], [b - a]);
      const rows2 = (x: tf.Tensor2D, a: number, b: number) => tf.slice(x, [a, 0], [b - a, T]) as tf.Tensor2D;
      for (const aggregation of AGGS) {
        const cfg = { klCoef: 0.5, aggregation, maxLen: 6, dualClip: 3 };
        const full = grpoLoss({ logProbs, oldLogProbs, refLogProbs, advantages, mask: maskT, entropy }, cfg);
        const parts = [
          [0, 1],
          [1, 3],
        ] as const;
        const masks = parts.map(([a, b]) => rows2(maskT, a, b));
        const normalizer = lossNormalizer(masks);
        expect(normalizer).toEqual({ tokens: 9, sequences: 3 });
        const sums: Record<string, number> = {};
        for (const [a, b] of parts) {
          const r = grpoLoss(
            {
              logProbs: rows2(logProbs, a, b),
              oldLogProbs: rows2(oldLogProbs, a, b),
              refLogProbs: rows2(refLogProbs, a, b),
              advantages: split(advantages, a, b) as tf.Tensor1D,
              mask: rows2(maskT, a, b),
              entropy: rows2(entropy, a, b),
              normalizer,
            },
            cfg,
          );
          sums.loss = (sums.loss ?? 0) + (r.loss.dataSync()[0] as number);
          for (const [k, v] of Object.entries(r.metrics)) sums[k] = (sums[k] ?? 0) + ((v as tf.Scalar).dataSync()[0] as number);
          tf.dispose([r.loss, ...Object.values(r.metrics)]);
        }
        expect(Math.abs((sums.loss as number) - (full.loss.dataSync()[0] as number))).toBeLessThan(1e-6);
        for (const [k, v] of Object.entries(full.metrics)) {
          expect(Math.abs((sums[k] as number) - ((v as tf.Scalar).dataSync()[0] as number)), k).toBeLessThan(1e-6);
        }
        tf.dispose([full.loss, ...Object.values(full.metrics), ...masks]);
      }
    });

    it('leaks no tensors across repeated calls with gradients', () => {
      const run = () => {
        const g = tf.grad((x: tf.Tensor) => {
          const r = grpoLoss({ logProbs: x as tf.Tensor2D, oldLogProbs, refLogProbs, advantages, mask: maskT, entropy }, { dualClip: 3 });
          tf.dispose(Object.values(r.metrics));
          return r.loss;
        })(logProbs);
        g.dispose();
      };
      run();
      const before = tf.memory().numTensors;
      for (let i = 0; i < 5; i++) run();
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
