// RMSNorm as a WebAssembly kernel in the wasm backend's memory, for the fused inference kernel of
// ./fused-kernels.ts: the same float32 operations in the same order as its JavaScript loop (and so as the op
// chain), about nine times faster (a ~100M prefill's 25 RMSNorms of [128, 768] took ~17 ms in JavaScript).
//
//   per row:  s = 0;  s = s + x[j]·x[j] for j in order          (every product and sum rounded to float32)
//             scale = 1 / sqrt(s / d + eps)                      (float32 division, square root, addition)
//             out[j] = (x[j] · scale) · w[j]                     (four lanes at a time, each rounded as alone)
//
// The sum is one dependency chain, as tfjs-backend-wasm's Mean sums (its order is what makes the result equal
// to the taped forward's); the output loop runs in SIMD. wasm has no fused multiply-add, so each product is
// rounded before it is used, as in the scalar code. `f32.sqrt` is correctly rounded, as is Math.sqrt of a
// float32 value rounded to float32.
import * as tf from '@tensorflow/tfjs';
import { assembleWat, backendMemory, isShared, type WasmBackendLike } from './wat-module.js';

const RMS_NORM_WAT = `(module
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
)`;

interface Prepared {
  memory: WebAssembly.Memory;
  rmsNorm(x: number, w: number, out: number, rows: number, d: number, eps: number): void;
}

let prepared: Prepared | undefined;
/** The assembled module by whether it imports a shared memory (the threaded build's) or not. */
const modules = new Map<boolean, WebAssembly.Module>();

/** Assembles and instantiates the kernel against the active wasm backend's memory (when the backend starts). */
export async function prepareRmsNormWat(): Promise<void> {
  const memory = backendMemory(tf.backend() as unknown as WasmBackendLike, 'rmsNorm');
  if (prepared?.memory === memory) return;
  const shared = isShared(memory);
  const module = modules.get(shared) ?? (await assembleWat('rms-norm.wat', RMS_NORM_WAT, shared));
  modules.set(shared, module);
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  prepared = { memory, ...(instance.exports as unknown as Omit<Prepared, 'memory'>) };
}

/** Whether the kernel is prepared for the active wasm backend's memory (tests). */
export function rmsNormWatReady(): boolean {
  return prepared !== undefined && tf.getBackend() === 'wasm' && prepared.memory === backendMemory(tf.backend() as unknown as WasmBackendLike, 'rmsNorm');
}

/**
 * RMSNorm of x [rows, d] with weight w [d] into out (tensors of the wasm backend `backend`, float32), in the
 * kernel; false (nothing written) where the kernel was not prepared for this backend's memory.
 */
export function rmsNormWat(backend: unknown, x: tf.TensorInfo, w: tf.TensorInfo, out: tf.TensorInfo, eps: number): boolean {
  const wasm = backend as WasmBackendLike;
  if (!prepared || prepared.memory !== backendMemory(wasm, 'rmsNorm')) return false;
  const d = x.shape[x.shape.length - 1] as number;
  const rows = x.shape.reduce((a, b) => a * b, 1) / d;
  const at = (info: tf.TensorInfo): number => (wasm.dataIdMap.get(info.dataId) as { memoryOffset: number }).memoryOffset;
  prepared.rmsNorm(at(x), at(w), at(out), rows, d, eps);
  return true;
}
