// Group-normalized advantages for GRPO (docs/method.md, "GRPO"), as a custom tfjs kernel with its gradient.
//
//   rewards [groups, G] → advantages [groups, G]
//   'grpo':   A_i = (R_i − mean(R)) / (std(R) + eps)
//   'drgrpo': A_i =  R_i − mean(R)                      (Dr. GRPO: no std division)
//
// std is the SAMPLE standard deviation (Bessel-corrected, divisor G − 1), because verl's
// `compute_grpo_outcome_advantage` uses `torch.std`, which is unbiased by default.
// A group of size 1 follows verl's rule: its mean is taken as 0 and its std as 1, so A = R in both modes
// (the SSP setting of one proposal per seed trains on the raw reward). A group of two or more with zero
// spread (all rewards equal) gives advantage 0 in 'grpo' mode (and R − mean = 0 in 'drgrpo').
//
// Gradient (vector-Jacobian product), with c = R − mean, s = std, D = s + eps, per group:
//   'grpo':   ∂L/∂R_k = (dy_k − mean(dy)) / D − (Σ_i dy_i c_i) · c_k / (D² · (G − 1) · s)
//   'drgrpo': ∂L/∂R_k =  dy_k − mean(dy)
// For a group of size 1 the output is R itself, so ∂L/∂R = dy. For zero spread ('grpo', G ≥ 2) the output
// is the constant 0 there, so the gradient is 0 (the function is defined piecewise; the formula's s → 0
// limit does not exist).
//
// Backends: 'cpu' and 'wasm' get typed-array kernels (forward and backward, float64 arithmetic inside);
// any other backend (the native 'tensorflow' one) computes the same function from tf ops, whose autodiff
// gives the same gradient (see `groupAdvantagesOps`).
import { tf } from '../src/tensor/backend.js';

export type AdvantageMode = 'grpo' | 'drgrpo';

export interface GroupAdvantageOptions {
  /** 'grpo' (default) divides by the group's sample std + eps; 'drgrpo' only subtracts the group mean. */
  mode?: AdvantageMode;
  /** Added to the std in 'grpo' mode; default 1e-6 (docs/method.md, "GRPO"; verl). */
  eps?: number;
  /** 'auto' (default): the typed-array kernel on cpu/wasm, tf ops elsewhere. 'ops' forces tf ops. */
  impl?: 'auto' | 'kernel' | 'ops';
}

export const GROUP_ADVANTAGE = 'SesaGroupAdvantage';
export const GROUP_ADVANTAGE_GRAD = 'SesaGroupAdvantageGrad';
const KERNEL_BACKENDS = ['cpu', 'wasm'] as const;

type Values = ArrayLike<number>;
type OutArray = Float32Array;

interface CpuBackendLike {
  readSync(dataId: object): Values;
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: Float32Array): tf.TensorInfo;
}
interface WasmBackendLike {
  readSync(dataId: object): Values;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array | Int32Array | Uint8Array;
}

interface Attrs {
  mode: AdvantageMode;
  eps: number;
}

function readAttrs(attrs: unknown): Attrs {
  const a = attrs as { mode?: unknown; eps?: unknown };
  const mode = a.mode === 'drgrpo' ? 'drgrpo' : 'grpo';
  const eps = typeof a.eps === 'number' ? a.eps : 1e-6;
  return { mode, eps };
}

/** Group statistics in float64 (G ≥ 2): mean, sample std, and whether the group has no spread. */
function groupStats(r: Values, base: number, g: number): { mean: number; std: number; degenerate: boolean } {
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let j = 0; j < g; j++) {
    const v = r[base + j] as number;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const mean = sum / g;
  if (g < 2 || !(max > min)) return { mean, std: 0, degenerate: true };
  let ss = 0;
  for (let j = 0; j < g; j++) {
    const c = (r[base + j] as number) - mean;
    ss += c * c;
  }
  return { mean, std: Math.sqrt(ss / (g - 1)), degenerate: false };
}

/** Forward on plain arrays (exported for tests and for callers that hold rewards as numbers). */
export function groupAdvantagesArray(r: Values, groups: number, g: number, attrs: Attrs, out: OutArray): void {
  for (let k = 0; k < groups; k++) {
    const base = k * g;
    if (g === 1) {
      out[base] = r[base] as number; // verl's rule for a group of one: mean 0, std 1
      continue;
    }
    const { mean, std, degenerate } = groupStats(r, base, g);
    for (let j = 0; j < g; j++) {
      const c = (r[base + j] as number) - mean;
      if (attrs.mode === 'drgrpo') out[base + j] = c;
      else out[base + j] = degenerate ? 0 : c / (std + attrs.eps);
    }
  }
}

function groupAdvantagesGradArray(dy: Values, r: Values, groups: number, g: number, attrs: Attrs, out: OutArray): void {
  for (let k = 0; k < groups; k++) {
    const base = k * g;
    if (g === 1) {
      out[base] = dy[base] as number; // A = R
      continue;
    }
    let dySum = 0;
    for (let j = 0; j < g; j++) dySum += dy[base + j] as number;
    const dyMean = dySum / g;
    if (attrs.mode === 'drgrpo') {
      for (let j = 0; j < g; j++) out[base + j] = (dy[base + j] as number) - dyMean;
      continue;
    }
    const { mean, std, degenerate } = groupStats(r, base, g);
    if (degenerate) {
      for (let j = 0; j < g; j++) out[base + j] = 0;
      continue;
    }
    const d = std + attrs.eps;
    let dyc = 0;
    for (let j = 0; j < g; j++) dyc += (dy[base + j] as number) * ((r[base + j] as number) - mean);
    const coef = dyc / (d * d * (g - 1) * std);
    for (let j = 0; j < g; j++) {
      const c = (r[base + j] as number) - mean;
      out[base + j] = ((dy[base + j] as number) - dyMean) / d - coef * c;
    }
  }
}

function dims2(shape: readonly number[]): [number, number] {
  if (shape.length !== 2) throw new Error(`groupAdvantages: rewards must be [groups, G]; got shape [${shape.join(', ')}]`);
  return [shape[0] as number, shape[1] as number];
}

/** Makes a float32 output on the given backend and lets `fill` write its values. */
function makeOut(backendName: string, backend: unknown, shape: number[], fill: (out: OutArray) => void): tf.TensorInfo {
  if (backendName === 'wasm') {
    const wasm = backend as WasmBackendLike;
    const info = wasm.makeOutput(shape, 'float32');
    fill(wasm.typedArrayFromHeap(info) as Float32Array);
    return info;
  }
  const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
  fill(values);
  return (backend as CpuBackendLike).makeTensorInfo(shape, 'float32', values);
}

let registered = false;

/** Registers the forward and backward kernels for cpu and wasm, and the gradient. Idempotent. */
export function registerGroupAdvantageKernels(): void {
  if (registered) return;
  registered = true;
  for (const backendName of KERNEL_BACKENDS) {
    if (tf.getKernel(GROUP_ADVANTAGE, backendName) === undefined) {
      tf.registerKernel({
        kernelName: GROUP_ADVANTAGE,
        backendName,
        kernelFunc: ({ inputs, backend, attrs }) => {
          const { rewards } = inputs as { rewards: tf.TensorInfo };
          const [groups, g] = dims2(rewards.shape);
          const b = backend as unknown as CpuBackendLike;
          const r = b.readSync(rewards.dataId);
          const a = readAttrs(attrs);
          return makeOut(backendName, backend, [groups, g], (out) => groupAdvantagesArray(r, groups, g, a, out));
        },
      });
    }
    if (tf.getKernel(GROUP_ADVANTAGE_GRAD, backendName) === undefined) {
      tf.registerKernel({
        kernelName: GROUP_ADVANTAGE_GRAD,
        backendName,
        kernelFunc: ({ inputs, backend, attrs }) => {
          const { dy, rewards } = inputs as { dy: tf.TensorInfo; rewards: tf.TensorInfo };
          const [groups, g] = dims2(rewards.shape);
          const b = backend as unknown as CpuBackendLike;
          const r = b.readSync(rewards.dataId);
          const dyv = b.readSync(dy.dataId);
          const a = readAttrs(attrs);
          return makeOut(backendName, backend, [groups, g], (out) => groupAdvantagesGradArray(dyv, r, groups, g, a, out));
        },
      });
    }
  }
  if (tf.getGradient(GROUP_ADVANTAGE) === undefined) {
    tf.registerGradient({
      kernelName: GROUP_ADVANTAGE,
      inputsToSave: ['rewards'],
      gradFunc: (dy, saved, attrs) => {
        const [rewards] = saved as [tf.Tensor];
        return {
          rewards: () =>
            tf.engine().runKernel(
              GROUP_ADVANTAGE_GRAD,
              { dy: dy as tf.Tensor, rewards },
              attrs as unknown as tf.NamedAttrMap,
            ) as tf.Tensor,
        };
      },
    });
  }
}

/**
 * The same function from tf ops only (any backend; autodiff gives the gradient above). Used on backends
 * without the typed-array kernel, and in tests as a second implementation.
 */
export function groupAdvantagesOps(rewards: tf.Tensor2D, opts: GroupAdvantageOptions = {}): tf.Tensor2D {
  const mode = opts.mode ?? 'grpo';
  const eps = opts.eps ?? 1e-6;
  const [, g] = dims2(rewards.shape);
  return tf.tidy(() => {
    const r = tf.cast(rewards, 'float32');
    if (g === 1) return tf.mul(r, 1) as tf.Tensor2D; // verl's rule for a group of one: A = R (a copy, not the input)
    const mean = tf.mean(r, 1, true);
    const c = tf.sub(r, mean);
    if (mode === 'drgrpo') return c as tf.Tensor2D;
    const spread = tf.sub(tf.max(r, 1, true), tf.min(r, 1, true));
    const live = tf.greater(spread, 0);
    const variance = tf.div(tf.sum(tf.square(c), 1, true), g - 1);
    // sqrt only where the variance is > 0, so the zero-spread branch has no 0·∞ in its gradient.
    const std = tf.sqrt(tf.where(live, variance, tf.onesLike(variance)));
    const a = tf.div(c, tf.add(std, eps));
    return tf.where(tf.broadcastTo(live, r.shape), a, tf.zerosLike(a)) as tf.Tensor2D;
  });
}

/** Group-normalized advantages (see the file header). rewards: float32 [groups, G]. */
export function groupAdvantages(rewards: tf.Tensor2D, opts: GroupAdvantageOptions = {}): tf.Tensor2D {
  dims2(rewards.shape);
  const impl = opts.impl ?? 'auto';
  const backendName = tf.getBackend();
  const haveKernel = (KERNEL_BACKENDS as readonly string[]).includes(backendName);
  if (impl === 'ops' || (impl === 'auto' && !haveKernel)) return groupAdvantagesOps(rewards, opts);
  if (!haveKernel) throw new Error(`groupAdvantages: no typed-array kernel for backend '${backendName}'`);
  registerGroupAdvantageKernels();
  const attrs = { mode: opts.mode ?? 'grpo', eps: opts.eps ?? 1e-6 };
  const r = rewards.dtype === 'float32' ? rewards : tf.cast(rewards, 'float32');
  const out = tf.engine().runKernel(GROUP_ADVANTAGE, { rewards: r }, attrs) as tf.Tensor2D;
  if (r !== rewards) r.dispose();
  return out;
}
