// One-kernel forms of four op chains the decoder runs per layer, for inference (no gradient tape), on the wasm
// backend: RMSNorm (6 kernels as ops), rotate-half RoPE (8 kernels as ops), a LoRA delta's scale-and-add
// (2 kernels per adapted projection, 7 projections a layer) and the attention scores' scale and mask (2 kernels;
// the mask's broadcast add alone took ~100 µs a layer in a ~100M decode step, tfjs-wasm's generic broadcast
// loop, where the arithmetic is a few hundred adds). The tiny models
// decode at a few hundred kernels per token, and each kernel costs tens of microseconds of dispatch, far more
// than its arithmetic: fewer kernels is the lever (docs/method.md, "The tensor stack").
//
// Bit-exact by construction: each kernel performs, per element, the same float32 operations in the same
// order as the op chain it replaces, with the result of every operation rounded to float32 (Math.fround of
// an operation on two float32 values computed in float64 is the correctly rounded float32 result, for +, −,
// ×, ÷ and √, because float64 carries more than twice float32's precision). Each runs the same loop as
// WebAssembly where it is prepared (./fused-wat.ts: several times faster), else in JavaScript. The op chains, on wasm:
//   RMSNorm   y = (x · rsqrt(mean(x²) + eps)) · w, where mean sums the row left to right in float32 and divides
//             by its length in float32, and rsqrt(v) = 1 / sqrtf(v) in float32 (tfjs-backend-wasm's Mean and
//             Rsqrt kernels; checked against them on a million values).
//   RoPE      [x1·cos − x2·sin, x2·cos + x1·sin] over the two halves of the head dimension.
//   LoRA      y + (p · s): the projection's output plus the low-rank product times the adapter's scale.
//   Mask      (x · c) + m: scores [B, H, T, S] times the scale c, plus the additive mask [B, 1, T, S] (one per head).
// The chains stay the path under a gradient tape (their gradients come from tfjs), and on other backends (the
// cpu backend's Mean sums in float64, so there the chain is not this kernel's arithmetic).
import { tf } from './backend.js';
import { recordingGradients } from './ops.js';
import { addScaledWat, rmsNormWat, ropeWat, scaleMaskWat } from './fused-wat.js';

export const RMS_NORM = 'SesaRmsNorm';
export const ROPE = 'SesaRope';
export const ADD_SCALED = 'SesaAddScaled';
export const SCALE_MASK = 'SesaScaleMask';

interface WasmBackendLike {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array | Int32Array | Uint8Array;
}

/**
 * One fresh float32 output of `shape`, written by the kernel's WebAssembly form (`wat`, false where it is not
 * prepared) or else by its JavaScript loop over the inputs' values (views taken after allocating the output).
 */
function fusedKernel(backend: unknown, inputs: tf.TensorInfo[], shape: number[], wat: (out: tf.TensorInfo) => boolean, js: (ins: Float32Array[], out: Float32Array) => void): tf.TensorInfo {
  const wasm = backend as WasmBackendLike;
  const info = wasm.makeOutput(shape, 'float32');
  if (!wat(info)) js(inputs.map((i) => wasm.typedArrayFromHeap(i) as Float32Array), wasm.typedArrayFromHeap(info) as Float32Array);
  return info;
}

/** A float32 scalar tensor's value. */
function scalarOf(backend: unknown, info: tf.TensorInfo): number {
  return ((backend as WasmBackendLike).typedArrayFromHeap(info) as Float32Array)[0] as number;
}

const f32 = Math.fround;

/** out = (x · rsqrt(mean(x²) + eps)) · w per row of d values, in the wasm kernels' float32 order. */
function rmsNormRows(x: Float32Array, w: Float32Array, eps: number, d: number, out: Float32Array): void {
  const rows = x.length / d;
  const n = f32(d);
  for (let r = 0; r < rows; r++) {
    const base = r * d;
    let sum = 0;
    for (let j = 0; j < d; j++) {
      const v = x[base + j] as number;
      sum = f32(sum + f32(v * v));
    }
    const scale = f32(1 / f32(Math.sqrt(f32(f32(sum / n) + eps))));
    for (let j = 0; j < d; j++) out[base + j] = f32(f32((x[base + j] as number) * scale) * (w[j] as number));
  }
}

/** Rotate-half RoPE of x [rows, heads, hd] with cos/sin [rows, hd/2] (one table row per x row, shared by its heads). */
function ropeRows(x: Float32Array, cos: Float32Array, sin: Float32Array, heads: number, hd: number, out: Float32Array): void {
  const half = hd / 2;
  const rows = x.length / (heads * hd);
  for (let r = 0; r < rows; r++) {
    const table = r * half;
    for (let h = 0; h < heads; h++) {
      const base = (r * heads + h) * hd;
      for (let j = 0; j < half; j++) {
        const x1 = x[base + j] as number;
        const x2 = x[base + half + j] as number;
        const c = cos[table + j] as number;
        const s = sin[table + j] as number;
        out[base + j] = f32(f32(x1 * c) - f32(x2 * s));
        out[base + half + j] = f32(f32(x2 * c) + f32(x1 * s));
      }
    }
  }
}

/** out = y + (p · s) element by element (s one float32 value). */
function addScaled(y: Float32Array, p: Float32Array, s: number, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = f32((y[i] as number) + f32((p[i] as number) * s));
}

/** out[b, h, t, s] = x[b, h, t, s] · c + m[b, 0, t, s], for x [B, H, T, S] and m [B, 1, T, S]. */
function scaleMask(x: Float32Array, m: Float32Array, c: number, heads: number, plane: number, out: Float32Array): void {
  const batch = x.length / (heads * plane);
  for (let b = 0; b < batch; b++) {
    const mBase = b * plane;
    for (let h = 0; h < heads; h++) {
      const base = (b * heads + h) * plane;
      for (let i = 0; i < plane; i++) out[base + i] = f32(f32((x[base + i] as number) * c) + (m[mBase + i] as number));
    }
  }
}

let registered = false;

function register(): void {
  if (registered) return;
  registered = true;
  tf.registerKernel({
    kernelName: RMS_NORM,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x, weight } = inputs as { x: tf.TensorInfo; weight: tf.TensorInfo };
      const eps = (attrs as unknown as { eps: number }).eps;
      const d = x.shape[x.shape.length - 1] as number;
      return fusedKernel(backend, [x, weight], [...x.shape], (out) => rmsNormWat(backend, x, weight, out, eps), ([xs, ws], out) => rmsNormRows(xs as Float32Array, ws as Float32Array, eps, d, out));
    },
  });
  tf.registerKernel({
    kernelName: ROPE,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x, cos, sin } = inputs as { x: tf.TensorInfo; cos: tf.TensorInfo; sin: tf.TensorInfo };
      const [, , heads, hd] = x.shape as [number, number, number, number];
      return fusedKernel(backend, [x, cos, sin], [...x.shape], (out) => ropeWat(backend, x, cos, sin, out), ([xs, cs, ss], out) => ropeRows(xs as Float32Array, cs as Float32Array, ss as Float32Array, heads, hd, out));
    },
  });
  tf.registerKernel({
    kernelName: ADD_SCALED,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { y, p, s } = inputs as { y: tf.TensorInfo; p: tf.TensorInfo; s: tf.TensorInfo };
      const scale = scalarOf(backend, s);
      return fusedKernel(backend, [y, p], [...y.shape], (out) => addScaledWat(backend, y, p, out, scale), ([ys, ps], out) => addScaled(ys as Float32Array, ps as Float32Array, scale, out));
    },
  });
  tf.registerKernel({
    kernelName: SCALE_MASK,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x, mask, scale } = inputs as { x: tf.TensorInfo; mask: tf.TensorInfo; scale: tf.TensorInfo };
      const [, heads, rows, keys] = x.shape as [number, number, number, number];
      const c = scalarOf(backend, scale);
      return fusedKernel(backend, [x, mask], [...x.shape], (out) => scaleMaskWat(backend, x, mask, out, c), ([xs, ms], out) => scaleMask(xs as Float32Array, ms as Float32Array, c, heads, rows * keys, out));
    },
  });
}

/**
 * Whether the fused kernels may replace the op chains here: the active backend is wasm, and no gradient tape
 * records (inference, or the forward of a recomputed layer, which tfjs runs untaped).
 */
export function fusedInference(): boolean {
  if (tf.getBackend() !== 'wasm') return false;
  return !recordingGradients();
}

/** RMSNorm of x over its last axis, weight [d]: the op chain's float32 result in one kernel (see the file header). */
export function rmsNormKernel<T extends tf.Tensor>(x: T, weight: tf.Tensor1D, eps: number): T {
  register();
  return tf.engine().runKernel(RMS_NORM, { x, weight }, { eps: Math.fround(eps) }) as T;
}

/** Rotate-half RoPE of x [B, T, heads, hd] with cos/sin [B, T, 1, hd/2], in one kernel (see the file header). */
export function ropeKernel(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  const [B, T, , hd] = x.shape;
  for (const t of [cos, sin]) {
    if (t.shape[0] !== B || t.shape[1] !== T || t.shape[2] !== 1 || t.shape[3] !== hd / 2) throw new Error(`${ROPE}: table [${t.shape.join(', ')}] does not match x [${x.shape.join(', ')}] (one row of hd/2 per position)`);
  }
  register();
  return tf.engine().runKernel(ROPE, { x, cos, sin }, {}) as tf.Tensor4D;
}

/** y + p · s (y and p of one shape, s a float32 scalar tensor), in one kernel (see the file header). */
export function addScaledKernel<T extends tf.Tensor>(y: T, p: T, s: tf.Scalar): T {
  register();
  return tf.engine().runKernel(ADD_SCALED, { y, p, s }, {}) as T;
}

/**
 * Attention scores x [B, H, T, S] times the scalar `scale`, plus the additive mask [B, 1, T, S] shared by the
 * heads, in one kernel (see the file header).
 */
export function scaleMaskKernel(x: tf.Tensor4D, mask: tf.Tensor4D, scale: tf.Scalar): tf.Tensor4D {
  const [B, , T, S] = x.shape;
  if (mask.shape[0] !== B || mask.shape[1] !== 1 || mask.shape[2] !== T || mask.shape[3] !== S) throw new Error(`${SCALE_MASK}: mask [${mask.shape.join(', ')}] does not match scores [${x.shape.join(', ')}]`);
  register();
  return tf.engine().runKernel(SCALE_MASK, { x, mask, scale }, {}) as tf.Tensor4D;
}
