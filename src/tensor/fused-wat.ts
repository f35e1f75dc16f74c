// The fused inference kernels of ./fused-kernels.ts as WebAssembly in the wasm backend's memory: the same float32
// operations in the same order as their JavaScript loops (and so as the op chains), several times faster (a
// ~100M prefill's 25 RMSNorms of [128, 768] took ~17 ms in JavaScript, its 12 scale-and-masks of [12, 128, 128]
// ~6 ms). wasm has no fused multiply-add, so each product is rounded before it is used, as in the scalar code,
// and a SIMD lane rounds as a scalar operation does.
//
// RMSNorm, per row:  s = 0;  s = s + x[j]·x[j] for j in order          (every product and sum rounded to float32)
//                    scale = 1 / sqrt(s / d + eps)                      (float32 division, square root, addition)
//                    out[j] = (x[j] · scale) · w[j]                     (four lanes at a time)
//   The sum is one dependency chain, as tfjs-backend-wasm's Mean sums (its order is what makes the result equal
//   to the taped forward's). `f32.sqrt` is correctly rounded, as is Math.sqrt of a float32 value rounded to float32.
// Scale and mask: out[b, h, i] = (x[b, h, i] · c) + m[b, i] over each head's plane of i = (query, key).
// RoPE: per row r, head h and j < hd/2:  out[j] = x1·cos − x2·sin,  out[hd/2 + j] = x2·cos + x1·sin  (each
//   product rounded, then the sum), with x1 = x[j], x2 = x[hd/2 + j] and the row's cos[j], sin[j].
// LoRA's scale and add: out[i] = y[i] + (p[i] · s).
import * as tf from '@tensorflow/tfjs';
import { backendMemory, type WasmBackendLike, WatKernels } from './wat-module.js';

const FUSED_WAT = `(module
  (import "env" "memory" (memory 1 MEMORY_LIMITS))
  ;; out[r, j] = (x[r, j] · scale_r) · w[j],  scale_r = 1 / sqrt((Σ_j x[r, j]²) / d + eps)   (byte addresses)
  (func (export "rmsNorm") (param $x i32) (param $w i32) (param $out i32) (param $rows i32) (param $d i32) (param $eps f32)
    (local $r i32) (local $j i32) (local $row i32) (local $orow i32) (local $d4 i32)
    (local $sum f32) (local $v f32) (local $scale f32) (local $sv v128)
    (local.set $d4 (i32.and (local.get $d) (i32.const -4)))
    (block $rDone (loop $rLoop
      (br_if $rDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $row (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $d)) (i32.const 2))))
      (local.set $orow (i32.add (local.get $out) (i32.shl (i32.mul (local.get $r) (local.get $d)) (i32.const 2))))
      (local.set $sum (f32.const 0))
      (local.set $j (i32.const 0))
      (block $sDone (loop $sLoop
        (br_if $sDone (i32.ge_u (local.get $j) (local.get $d)))
        (local.set $v (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))))
        (local.set $sum (f32.add (local.get $sum) (f32.mul (local.get $v) (local.get $v))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $sLoop)))
      (local.set $scale (f32.div (f32.const 1)
        (f32.sqrt (f32.add (f32.div (local.get $sum) (f32.convert_i32_u (local.get $d))) (local.get $eps)))))
      (local.set $sv (f32x4.splat (local.get $scale)))
      (local.set $j (i32.const 0))
      (block $vDone (loop $vLoop
        (br_if $vDone (i32.ge_u (local.get $j) (local.get $d4)))
        (v128.store (i32.add (local.get $orow) (i32.shl (local.get $j) (i32.const 2)))
          (f32x4.mul (f32x4.mul (v128.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))) (local.get $sv))
                     (v128.load (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 2))))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $vLoop)))
      ;; d not a multiple of 4: the last columns one at a time
      (block $tDone (loop $tLoop
        (br_if $tDone (i32.ge_u (local.get $j) (local.get $d)))
        (f32.store (i32.add (local.get $orow) (i32.shl (local.get $j) (i32.const 2)))
          (f32.mul (f32.mul (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))) (local.get $scale))
                   (f32.load (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 2))))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $tLoop)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rLoop))))

  ;; out[i] = (x[i] · c) + m[i mod plane (within batch b)] for x [batch, heads, plane], m [batch, plane]
  (func (export "scaleMask") (param $x i32) (param $m i32) (param $out i32) (param $batch i32) (param $heads i32) (param $plane i32) (param $c f32)
    (local $b i32) (local $h i32) (local $i i32) (local $xs i32) (local $os i32) (local $ms i32) (local $p4 i32) (local $cv v128)
    (local.set $p4 (i32.and (local.get $plane) (i32.const -4)))
    (local.set $cv (f32x4.splat (local.get $c)))
    (block $bDone (loop $bLoop
      (br_if $bDone (i32.ge_u (local.get $b) (local.get $batch)))
      (local.set $ms (i32.add (local.get $m) (i32.shl (i32.mul (local.get $b) (local.get $plane)) (i32.const 2))))
      (local.set $h (i32.const 0))
      (block $hDone (loop $hLoop
        (br_if $hDone (i32.ge_u (local.get $h) (local.get $heads)))
        (local.set $xs (i32.shl (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $plane)) (i32.const 2)))
        (local.set $os (i32.add (local.get $out) (local.get $xs)))
        (local.set $xs (i32.add (local.get $x) (local.get $xs)))
        (local.set $i (i32.const 0))
        (block $vDone (loop $vLoop
          (br_if $vDone (i32.ge_u (local.get $i) (local.get $p4)))
          (v128.store (i32.add (local.get $os) (i32.shl (local.get $i) (i32.const 2)))
            (f32x4.add (f32x4.mul (v128.load (i32.add (local.get $xs) (i32.shl (local.get $i) (i32.const 2)))) (local.get $cv))
                       (v128.load (i32.add (local.get $ms) (i32.shl (local.get $i) (i32.const 2))))))
          (local.set $i (i32.add (local.get $i) (i32.const 4)))
          (br $vLoop)))
        (block $tDone (loop $tLoop
          (br_if $tDone (i32.ge_u (local.get $i) (local.get $plane)))
          (f32.store (i32.add (local.get $os) (i32.shl (local.get $i) (i32.const 2)))
            (f32.add (f32.mul (f32.load (i32.add (local.get $xs) (i32.shl (local.get $i) (i32.const 2)))) (local.get $c))
                     (f32.load (i32.add (local.get $ms) (i32.shl (local.get $i) (i32.const 2))))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $tLoop)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $hLoop)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $bLoop))))

  ;; rotate-half RoPE of x [rows, heads, hd] with cos, sin [rows, hd/2]
  (func (export "rope") (param $x i32) (param $cos i32) (param $sin i32) (param $out i32) (param $rows i32) (param $heads i32) (param $hd i32)
    (local $r i32) (local $h i32) (local $j i32) (local $half i32) (local $h4 i32) (local $xa i32) (local $oa i32) (local $ta i32) (local $hb i32)
    (local $x1 v128) (local $x2 v128) (local $cv v128) (local $sv v128) (local $a f32) (local $b f32) (local $c f32) (local $s f32)
    (local.set $half (i32.shr_u (local.get $hd) (i32.const 1)))
    (local.set $hb (i32.shl (local.get $half) (i32.const 2)))
    (local.set $h4 (i32.and (local.get $half) (i32.const -4)))
    (block $rDone (loop $rLoop
      (br_if $rDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $h (i32.const 0))
      (block $hDone (loop $hLoop
        (br_if $hDone (i32.ge_u (local.get $h) (local.get $heads)))
        (local.set $xa (i32.shl (i32.mul (i32.add (i32.mul (local.get $r) (local.get $heads)) (local.get $h)) (local.get $hd)) (i32.const 2)))
        (local.set $oa (i32.add (local.get $out) (local.get $xa)))
        (local.set $xa (i32.add (local.get $x) (local.get $xa)))
        (local.set $ta (i32.shl (i32.mul (local.get $r) (local.get $half)) (i32.const 2)))
        (local.set $j (i32.const 0))
        (block $vDone (loop $vLoop
          (br_if $vDone (i32.ge_u (local.get $j) (local.get $h4)))
          (local.set $x1 (v128.load (i32.add (local.get $xa) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $x2 (v128.load (i32.add (i32.add (local.get $xa) (local.get $hb)) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $cv (v128.load (i32.add (i32.add (local.get $cos) (local.get $ta)) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $sv (v128.load (i32.add (i32.add (local.get $sin) (local.get $ta)) (i32.shl (local.get $j) (i32.const 2)))))
          (v128.store (i32.add (local.get $oa) (i32.shl (local.get $j) (i32.const 2)))
            (f32x4.sub (f32x4.mul (local.get $x1) (local.get $cv)) (f32x4.mul (local.get $x2) (local.get $sv))))
          (v128.store (i32.add (i32.add (local.get $oa) (local.get $hb)) (i32.shl (local.get $j) (i32.const 2)))
            (f32x4.add (f32x4.mul (local.get $x2) (local.get $cv)) (f32x4.mul (local.get $x1) (local.get $sv))))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $vLoop)))
        (block $tDone (loop $tLoop
          (br_if $tDone (i32.ge_u (local.get $j) (local.get $half)))
          (local.set $a (f32.load (i32.add (local.get $xa) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $b (f32.load (i32.add (i32.add (local.get $xa) (local.get $hb)) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $c (f32.load (i32.add (i32.add (local.get $cos) (local.get $ta)) (i32.shl (local.get $j) (i32.const 2)))))
          (local.set $s (f32.load (i32.add (i32.add (local.get $sin) (local.get $ta)) (i32.shl (local.get $j) (i32.const 2)))))
          (f32.store (i32.add (local.get $oa) (i32.shl (local.get $j) (i32.const 2)))
            (f32.sub (f32.mul (local.get $a) (local.get $c)) (f32.mul (local.get $b) (local.get $s))))
          (f32.store (i32.add (i32.add (local.get $oa) (local.get $hb)) (i32.shl (local.get $j) (i32.const 2)))
            (f32.add (f32.mul (local.get $b) (local.get $c)) (f32.mul (local.get $a) (local.get $s))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $tLoop)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $hLoop)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rLoop))))

  ;; out[i] = y[i] + (p[i] · s) for n values
  (func (export "addScaled") (param $y i32) (param $p i32) (param $out i32) (param $n i32) (param $s f32)
    (local $i i32) (local $n4 i32) (local $sv v128) (local $o i32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $sv (f32x4.splat (local.get $s)))
    (block $vDone (loop $vLoop
      (br_if $vDone (i32.ge_u (local.get $i) (local.get $n4)))
      (local.set $o (i32.shl (local.get $i) (i32.const 2)))
      (v128.store (i32.add (local.get $out) (local.get $o))
        (f32x4.add (v128.load (i32.add (local.get $y) (local.get $o))) (f32x4.mul (v128.load (i32.add (local.get $p) (local.get $o))) (local.get $sv))))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $vLoop)))
    (block $tDone (loop $tLoop
      (br_if $tDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $o (i32.shl (local.get $i) (i32.const 2)))
      (f32.store (i32.add (local.get $out) (local.get $o))
        (f32.add (f32.load (i32.add (local.get $y) (local.get $o))) (f32.mul (f32.load (i32.add (local.get $p) (local.get $o))) (local.get $s))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $tLoop))))
)`;

interface Kernels {
  rmsNorm(x: number, w: number, out: number, rows: number, d: number, eps: number): void;
  scaleMask(x: number, m: number, out: number, batch: number, heads: number, plane: number, c: number): void;
  rope(x: number, cos: number, sin: number, out: number, rows: number, heads: number, hd: number): void;
  addScaled(y: number, p: number, out: number, n: number, s: number): void;
}

const kernels = new WatKernels<Kernels>('fused.wat', FUSED_WAT);
const activeMemory = (backend: unknown): WebAssembly.Memory => backendMemory(backend as WasmBackendLike, 'fused kernels');

/** Assembles and instantiates the kernels against the active wasm backend's memory (when the backend starts). */
export async function prepareFusedWat(): Promise<void> {
  await kernels.prepare(activeMemory(tf.backend()));
}

/** Whether the kernels are prepared for the active wasm backend's memory (tests). */
export function fusedWatReady(): boolean {
  return tf.getBackend() === 'wasm' && kernels.boundTo(activeMemory(tf.backend())) !== undefined;
}

let bypassed = false;

/** Runs `f` with the JavaScript loops of ./fused-kernels.ts in place of these kernels (tests compare the two). */
export function withoutFusedWat<T>(f: () => T): T {
  bypassed = true;
  try {
    return f();
  } finally {
    bypassed = false;
  }
}

/**
 * Runs one kernel with the byte offsets of tensors of the wasm backend `backend`; false (nothing written) where
 * the kernels were not prepared for this backend's memory (the JavaScript loops of ./fused-kernels.ts run then).
 */
function withKernels(backend: unknown, run: (k: Kernels, at: (info: tf.TensorInfo) => number) => void): boolean {
  const k = bypassed ? undefined : kernels.boundTo(activeMemory(backend));
  if (!k) return false;
  const wasm = backend as WasmBackendLike;
  run(k, (info) => (wasm.dataIdMap.get(info.dataId) as { memoryOffset: number }).memoryOffset);
  return true;
}

/** RMSNorm of x [rows, d] with weight w [d] into out (float32 tensors of the wasm backend). */
export function rmsNormWat(backend: unknown, x: tf.TensorInfo, w: tf.TensorInfo, out: tf.TensorInfo, eps: number): boolean {
  const d = x.shape[x.shape.length - 1] as number;
  return withKernels(backend, (k, at) => k.rmsNorm(at(x), at(w), at(out), x.shape.reduce((a, b) => a * b, 1) / d, d, eps));
}

/** (x · c) + m for x [B, H, T, S] and m [B, 1, T, S] into out. */
export function scaleMaskWat(backend: unknown, x: tf.TensorInfo, m: tf.TensorInfo, out: tf.TensorInfo, c: number): boolean {
  const [batch, heads, rows, keys] = x.shape as [number, number, number, number];
  return withKernels(backend, (k, at) => k.scaleMask(at(x), at(m), at(out), batch, heads, rows * keys, c));
}

/** Rotate-half RoPE of x [B, T, H, hd] with cos/sin [B, T, 1, hd/2] into out. */
export function ropeWat(backend: unknown, x: tf.TensorInfo, cos: tf.TensorInfo, sin: tf.TensorInfo, out: tf.TensorInfo): boolean {
  const [b, t, heads, hd] = x.shape as [number, number, number, number];
  return withKernels(backend, (k, at) => k.rope(at(x), at(cos), at(sin), at(out), b * t, heads, hd));
}

/** y + (p · s) into out, y and p of one shape. */
export function addScaledWat(backend: unknown, y: tf.TensorInfo, p: tf.TensorInfo, out: tf.TensorInfo, s: number): boolean {
  return withKernels(backend, (k, at) => k.addScaled(at(y), at(p), at(out), y.shape.reduce((a, b) => a * b, 1), s));
}
