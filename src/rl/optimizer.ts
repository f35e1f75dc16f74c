// AdamW over a named map of tf.Variables (docs/method.md, "GRPO": weight decay 0.01, warmup, global-norm clipping at 1.0),
// with exportable state so that a resumed run continues bit-for-bit.
//
// The update is PyTorch's `torch.optim.AdamW` (decoupled weight decay), for step t = 1, 2, …:
//   p ← p · (1 − lr·wd)
//   m ← β1·m + (1 − β1)·g
//   v ← β2·v + (1 − β2)·g²
//   p ← p − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps)
// Gradients are first clipped by their global norm like `torch.nn.utils.clip_grad_norm_`:
//   norm = √(Σ ‖g‖²);  if maxNorm/(norm + 1e-6) < 1, every g is scaled by it. The pre-clip norm is returned.
// State (m, v) exists only for the parameters passed in, and is created at a parameter's first gradient. A
// parameter with no gradient in a step is skipped entirely, decay included (PyTorch's `grad is None`).
import { tf } from '../tensor/backend.js';

export type LrScheduleKind = 'constant' | 'cosine';

export interface LrSchedule {
  /** Peak learning rate (docs/method.md, "GRPO": LoRA default 1e-5). */
  lr: number;
  /** Linear warmup length in steps (default 0): step t ≤ warmup uses lr·t/warmup. */
  warmupSteps?: number;
  /** After warmup: 'constant' (default) or 'cosine' decay to lr·minLrRatio at totalSteps. */
  schedule?: LrScheduleKind;
  /** Needed for 'cosine'. */
  totalSteps?: number;
  /** Cosine floor as a fraction of lr (default 0). */
  minLrRatio?: number;
}

/**
 * The learning rate of update number `step` (1-based). Warmup starts at lr/warmup (not 0, unlike Hugging
 * Face's schedulers whose first update uses lr 0); cosine runs from lr at the end of warmup to
 * lr·minLrRatio at totalSteps and stays there.
 */
export function learningRateAt(step: number, s: LrSchedule): number {
  const warmup = s.warmupSteps ?? 0;
  if (warmup > 0 && step <= warmup) return (s.lr * step) / warmup;
  if ((s.schedule ?? 'constant') === 'constant') return s.lr;
  const total = s.totalSteps;
  if (total === undefined || total <= warmup) throw new Error('cosine schedule needs totalSteps > warmupSteps');
  const progress = Math.min(1, (step - warmup) / (total - warmup));
  const floor = s.minLrRatio ?? 0;
  return s.lr * (floor + (1 - floor) * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

export interface AdamWConfig extends LrSchedule {
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (default 0.01). */
  weightDecay?: number;
  /** Global-norm clipping threshold (default 1.0); null or Infinity: no clipping. */
  maxGradNorm?: number | null;
}

export interface AdamWState {
  /** Number of updates taken. */
  step: number;
  /** First and second moments per parameter name (only for parameters that have state). */
  m: Record<string, Float32Array>;
  v: Record<string, Float32Array>;
}

export interface StepInfo {
  /** The learning rate used by this step. */
  lr: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Whether the gradients were scaled down. */
  clipped: boolean;
  /** The update number just taken (1-based). */
  step: number;
}

/** √(Σ‖g‖²) over a map of gradients (read back as a number). */
export function globalNorm(grads: Readonly<Record<string, tf.Tensor>>): number {
  const list = Object.values(grads);
  if (list.length === 0) return 0;
  const sq = tf.tidy(() => tf.addN(list.map((g) => tf.sum(tf.square(g)))));
  const v = sq.dataSync()[0] as number;
  sq.dispose();
  return Math.sqrt(v);
}

/** The factor clip_grad_norm_ scales by (1 when no clipping is needed). */
export function clipScale(norm: number, maxNorm: number | null | undefined): number {
  if (maxNorm === null || maxNorm === undefined || !Number.isFinite(maxNorm)) return 1;
  const c = maxNorm / (norm + 1e-6);
  return c < 1 ? c : 1;
}

/**
 * Returns new gradients scaled to global norm ≤ maxNorm (the caller disposes them, and still owns the
 * inputs), and the pre-clip norm.
 */
export function clipByGlobalNorm(
  grads: Readonly<Record<string, tf.Tensor>>,
  maxNorm: number,
): { grads: Record<string, tf.Tensor>; norm: number; scale: number } {
  const norm = globalNorm(grads);
  const scale = clipScale(norm, maxNorm);
  const out: Record<string, tf.Tensor> = {};
  for (const [k, g] of Object.entries(grads)) out[k] = scale < 1 ? tf.mul(g, scale) : tf.clone(g);
  return { grads: out, norm, scale };
}

export class AdamW {
  private readonly params: Record<string, tf.Variable>;
  private readonly cfg: Required<Omit<AdamWConfig, 'totalSteps' | 'maxGradNorm'>> & {
    totalSteps?: number;
    maxGradNorm: number | null;
  };
  private readonly m = new Map<string, tf.Tensor>();
  private readonly v = new Map<string, tf.Tensor>();
  private t = 0;

  constructor(params: Record<string, tf.Variable>, config: AdamWConfig) {
    this.params = { ...params };
    this.cfg = {
      lr: config.lr,
      warmupSteps: config.warmupSteps ?? 0,
      schedule: config.schedule ?? 'constant',
      minLrRatio: config.minLrRatio ?? 0,
      beta1: config.beta1 ?? 0.9,
      beta2: config.beta2 ?? 0.999,
      eps: config.eps ?? 1e-8,
      weightDecay: config.weightDecay ?? 0.01,
      maxGradNorm: config.maxGradNorm === undefined ? 1.0 : config.maxGradNorm,
    };
    if (config.totalSteps !== undefined) this.cfg.totalSteps = config.totalSteps;
  }

  /** Updates taken so far. */
  get stepCount(): number {
    return this.t;
  }

  /** The learning rate the next step will use. */
  nextLearningRate(): number {
    return learningRateAt(this.t + 1, this.cfg);
  }

  /**
   * One AdamW update from `grads` (keyed like the params; the caller keeps ownership of them). Keys not among
   * the params are an error; params without a gradient are left alone.
   */
  step(grads: Readonly<Record<string, tf.Tensor>>): StepInfo {
    // Validate everything before touching any state, so a bad call leaves the optimizer unchanged.
    for (const [k, g] of Object.entries(grads)) {
      const p = this.params[k];
      if (!p) throw new Error(`AdamW.step: gradient for unknown parameter '${k}'`);
      if (g.shape.length !== p.shape.length || g.shape.some((d, i) => d !== p.shape[i])) {
        throw new Error(`AdamW.step: gradient for '${k}' has shape [${g.shape.join(', ')}], param [${p.shape.join(', ')}]`);
      }
    }
    const gradNorm = globalNorm(grads);
    const scale = clipScale(gradNorm, this.cfg.maxGradNorm);
    this.t += 1;
    const t = this.t;
    const lr = learningRateAt(t, this.cfg);
    const { beta1, beta2, eps, weightDecay } = this.cfg;
    const stepSize = lr / (1 - Math.pow(beta1, t));
    const bc2Sqrt = Math.sqrt(1 - Math.pow(beta2, t));
    const decay = 1 - lr * weightDecay;
    for (const [k, gIn] of Object.entries(grads)) {
      const p = this.params[k] as tf.Variable;
      const m0 = this.m.get(k);
      const v0 = this.v.get(k);
      const [m1, v1] = tf.tidy(() => {
        const g = scale < 1 ? tf.mul(gIn, scale) : gIn;
        const m = m0 ? tf.add(tf.mul(m0, beta1), tf.mul(g, 1 - beta1)) : tf.mul(g, 1 - beta1);
        const v = v0 ? tf.add(tf.mul(v0, beta2), tf.mul(tf.square(g), 1 - beta2)) : tf.mul(tf.square(g), 1 - beta2);
        const denom = tf.add(tf.div(tf.sqrt(v), bc2Sqrt), eps);
        const decayed = weightDecay !== 0 ? tf.mul(p, decay) : p;
        p.assign(tf.sub(decayed, tf.mul(tf.div(m, denom), stepSize)));
        return [m, v];
      });
      m0?.dispose();
      v0?.dispose();
      this.m.set(k, m1 as tf.Tensor);
      this.v.set(k, v1 as tf.Tensor);
    }
    return { lr, gradNorm, clipped: scale < 1, step: t };
  }

  /** A copy of the state as plain typed arrays (with the step count), for checkpoints. */
  exportState(): AdamWState {
    const m: Record<string, Float32Array> = {};
    const v: Record<string, Float32Array> = {};
    for (const [k, t] of this.m) m[k] = Float32Array.from(t.dataSync());
    for (const [k, t] of this.v) v[k] = Float32Array.from(t.dataSync());
    return { step: this.t, m, v };
  }

  /** Restores a state from `exportState` (replacing the current one). */
  importState(state: AdamWState): void {
    const keys = new Set([...Object.keys(state.m), ...Object.keys(state.v)]);
    for (const k of keys) {
      const p = this.params[k];
      if (!p) throw new Error(`AdamW.importState: state for unknown parameter '${k}'`);
      const mv = state.m[k];
      const vv = state.v[k];
      if (!mv || !vv) throw new Error(`AdamW.importState: '${k}' needs both m and v`);
      if (mv.length !== p.size || vv.length !== p.size) {
        throw new Error(`AdamW.importState: '${k}' has ${mv.length}/${vv.length} values, param has ${p.size}`);
      }
    }
    this.disposeState();
    for (const k of keys) {
      const p = this.params[k] as tf.Variable;
      this.m.set(k, tf.tensor(Float32Array.from(state.m[k] as Float32Array), p.shape, 'float32'));
      this.v.set(k, tf.tensor(Float32Array.from(state.v[k] as Float32Array), p.shape, 'float32'));
    }
    this.t = state.step;
  }

  private disposeState(): void {
    for (const t of this.m.values()) t.dispose();
    for (const t of this.v.values()) t.dispose();
    this.m.clear();
    this.v.clear();
  }

  /** Frees the moments (the params are the caller's). */
  dispose(): void {
    this.disposeState();
  }
}
