// AdamW vs a hand-written float64 reference (warmup, clipping, decay) for 3 steps; learning-rate schedules;
// state export → import → next step identical bit-for-bit; no state for parameters without gradients; memory.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, tf } from '../src/tensor/backend.js';
import { AdamW, clipByGlobalNorm, globalNorm, learningRateAt, type AdamWConfig } from '../src/rl/optimizer.js';
import { randoms } from './helpers/random.js';


const SHAPES: Record<string, number[]> = { a: [3, 4], b: [5] };
const size = (s: number[]) => s.reduce((x, y) => x * y, 1);
const init: Record<string, number[]> = { a: randoms(12, 1), b: randoms(5, 2) };
// Per step gradients; step 2 is large so that clipping at 1.0 is active there.
const gradsByStep: Array<Record<string, number[]>> = [
  { a: randoms(12, 3, 0.1), b: randoms(5, 4, 0.1) },
  { a: randoms(12, 5, 3.0), b: randoms(5, 6, 3.0) },
  { a: randoms(12, 7, 0.2), b: randoms(5, 8, 0.2) },
];

/** float64 reference: torch.optim.AdamW + clip_grad_norm_ + our schedule. */
function reference(cfg: Required<Pick<AdamWConfig, 'lr' | 'warmupSteps' | 'beta1' | 'beta2' | 'eps' | 'weightDecay'>> & { maxGradNorm: number }, steps: number) {
  const p: Record<string, number[]> = { a: init.a!.slice(), b: init.b!.slice() };
  const m: Record<string, number[]> = { a: new Array(12).fill(0), b: new Array(5).fill(0) };
  const v: Record<string, number[]> = { a: new Array(12).fill(0), b: new Array(5).fill(0) };
  const history: Array<Record<string, number[]>> = [];
  for (let t = 1; t <= steps; t++) {
    const g = gradsByStep[t - 1]!;
    let sq = 0;
    for (const k of ['a', 'b']) for (const x of g[k]!) sq += x * x;
    const norm = Math.sqrt(sq);
    const coef = Math.min(1, cfg.maxGradNorm / (norm + 1e-6));
    const lr = t <= cfg.warmupSteps ? (cfg.lr * t) / cfg.warmupSteps : cfg.lr;
    for (const k of ['a', 'b']) {
      for (let i = 0; i < p[k]!.length; i++) {
        const gi = g[k]![i]! * coef;
        p[k]![i] = p[k]![i]! * (1 - lr * cfg.weightDecay);
        m[k]![i] = cfg.beta1 * m[k]![i]! + (1 - cfg.beta1) * gi;
        v[k]![i] = cfg.beta2 * v[k]![i]! + (1 - cfg.beta2) * gi * gi;
        const mhat = m[k]![i]! / (1 - cfg.beta1 ** t);
        const vhat = v[k]![i]! / (1 - cfg.beta2 ** t);
        p[k]![i] = p[k]![i]! - (lr * mhat) / (Math.sqrt(vhat) + cfg.eps);
      }
    }
    history.push({ a: p.a!.slice(), b: p.b!.slice(), norm: [norm], lr: [lr] });
  }
  return history;
}

function makeParams(tag: string, values = init): Record<string, tf.Variable> {
  return {
    a: tf.variable(tf.tensor(values.a!, SHAPES.a), true, `opt_a_${tag}`),
    b: tf.variable(tf.tensor(values.b!, SHAPES.b), true, `opt_b_${tag}`),
  };
}
function gradTensors(step: number): Record<string, tf.Tensor> {
  const g = gradsByStep[step]!;
  return { a: tf.tensor(g.a!, SHAPES.a), b: tf.tensor(g.b!, SHAPES.b) };
}

let counter = 0;
for (const backend of ['cpu', 'wasm'] as const) {
  describe(`AdamW on ${backend}`, () => {
    beforeAll(async () => {
      await initBackend(backend);
    });
    const tag = () => `${backend}_${counter++}`;

    it('matches a float64 reference for 3 steps (warmup, one clipped step, weight decay)', () => {
      const cfg = { lr: 0.05, warmupSteps: 2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1.0 };
      const ref = reference(cfg, 3);
      const params = makeParams(tag());
      const opt = new AdamW(params, cfg);
      let worst = 0;
      for (let s = 0; s < 3; s++) {
        const g = gradTensors(s);
        const info = opt.step(g);
        tf.dispose(Object.values(g));
        const r = ref[s]!;
        expect(info.step).toBe(s + 1);
        expect(info.lr).toBeCloseTo(r.lr![0]!, 12);
        expect(Math.abs(info.gradNorm - r.norm![0]!) / r.norm![0]!).toBeLessThan(1e-6);
        expect(info.clipped).toBe(s === 1);
        for (const k of ['a', 'b']) {
          const got = params[k]!.dataSync();
          for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs((got[i] as number) - r[k]![i]!));
        }
      }
      console.log(`[${backend}] AdamW vs float64 reference after 3 steps: max |Δp| ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(1e-6);
      opt.dispose();
      tf.dispose(Object.values(params));
    });

    it('export → import → next step is identical bit-for-bit', () => {
      const cfg: AdamWConfig = { lr: 0.02, warmupSteps: 2, schedule: 'cosine', totalSteps: 5 };
      // Run A: three steps straight.
      const pa = makeParams(tag());
      const optA = new AdamW(pa, cfg);
      let saved: ReturnType<AdamW['exportState']> | undefined;
      let savedParams: Record<string, number[]> = {};
      for (let s = 0; s < 3; s++) {
        const g = gradTensors(s);
        optA.step(g);
        tf.dispose(Object.values(g));
        if (s === 1) {
          saved = optA.exportState();
          savedParams = { a: Array.from(pa.a!.dataSync()), b: Array.from(pa.b!.dataSync()) };
        }
      }
      // Run B: a fresh optimizer and fresh variables restored from the checkpoint after step 2.
      const pb = makeParams(tag(), savedParams);
      const optB = new AdamW(pb, cfg);
      optB.importState(saved!);
      expect(optB.stepCount).toBe(2);
      const g = gradTensors(2);
      optB.step(g);
      tf.dispose(Object.values(g));
      for (const k of ['a', 'b']) {
        const x = new Uint32Array(Float32Array.from(pa[k]!.dataSync()).buffer);
        const y = new Uint32Array(Float32Array.from(pb[k]!.dataSync()).buffer);
        expect(Array.from(y)).toEqual(Array.from(x));
      }
      const sa = optA.exportState();
      const sb = optB.exportState();
      expect(sb.step).toBe(sa.step);
      for (const k of ['a', 'b']) {
        expect(Array.from(new Uint32Array(sb.m[k]!.buffer))).toEqual(Array.from(new Uint32Array(sa.m[k]!.buffer)));
        expect(Array.from(new Uint32Array(sb.v[k]!.buffer))).toEqual(Array.from(new Uint32Array(sa.v[k]!.buffer)));
      }
      optA.dispose();
      optB.dispose();
      tf.dispose([...Object.values(pa), ...Object.values(pb)]);
    });

    it('leaves parameters without a gradient alone and creates no state for them', () => {
      const params = makeParams(tag());
      const before = Array.from(params.b!.dataSync());
      const opt = new AdamW(params, { lr: 0.1 });
      const g = { a: tf.ones(SHAPES.a!) };
      opt.step(g);
      expect(Array.from(params.b!.dataSync())).toEqual(before);
      expect(Object.keys(opt.exportState().m)).toEqual(['a']);
      const stray = tf.ones([1]);
      expect(() => opt.step({ c: stray })).toThrow(/unknown parameter/);
      expect(opt.stepCount).toBe(1);
      tf.dispose([g.a, stray]);
      opt.dispose();
      tf.dispose(Object.values(params));
    });

    it('clipByGlobalNorm and globalNorm', () => {
      const g = { x: tf.tensor1d([3, 0]), y: tf.tensor1d([0, 4]) };
      expect(globalNorm(g)).toBeCloseTo(5, 6);
      const c = clipByGlobalNorm(g, 1);
      expect(c.norm).toBeCloseTo(5, 6);
      expect(globalNorm(c.grads)).toBeCloseTo(1, 5);
      tf.dispose([...Object.values(g), ...Object.values(c.grads)]);
    });

    it('leaks no tensors across steps (state tensors stay constant in number)', () => {
      const params = makeParams(tag());
      const opt = new AdamW(params, { lr: 0.01 });
      const run = () => {
        const g = gradTensors(0);
        opt.step(g);
        tf.dispose(Object.values(g));
      };
      run();
      const before = tf.memory().numTensors;
      for (let i = 0; i < 5; i++) run();
      opt.importState(opt.exportState());
      expect(tf.memory().numTensors).toBe(before);
      opt.dispose();
      tf.dispose(Object.values(params));
    });
  });
}

describe('learningRateAt', () => {
  it('warms up linearly from lr/warmup, then constant or cosine to the floor', () => {
    const s = { lr: 1e-5, warmupSteps: 4 };
    expect(learningRateAt(1, s)).toBeCloseTo(2.5e-6, 15);
    expect(learningRateAt(4, s)).toBeCloseTo(1e-5, 15);
    expect(learningRateAt(100, s)).toBe(1e-5);
    const c = { lr: 1, warmupSteps: 2, schedule: 'cosine' as const, totalSteps: 12, minLrRatio: 0.1 };
    expect(learningRateAt(2, c)).toBe(1);
    expect(learningRateAt(7, c)).toBeCloseTo(0.55, 12); // halfway: floor + (1 − floor)/2
    expect(learningRateAt(12, c)).toBeCloseTo(0.1, 12);
    expect(learningRateAt(50, c)).toBeCloseTo(0.1, 12);
    expect(() => learningRateAt(3, { lr: 1, schedule: 'cosine' })).toThrow(/totalSteps/);
  });
});
