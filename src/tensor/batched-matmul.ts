// Batched matMuls of small planes on wasm in SIMD, bit-exact with the op they replace (docs/method.md, "The
// tensor stack").
//
// tfjs-backend-wasm sends a matMul to XNNPACK only when it is one plane with no transposed operand; every other
// matMul (a batch of planes, or a transposed right operand) runs a scalar loop at about 2 GFLOP/s. Decoding
// runs its attention that way, as one batched matMul per layer for the scores (q·kᵀ over each kv head's plane)
// and one for the context (probabilities · v): a third of a tiny model's decode and a sixth of a ~100M one's.
// Per-plane 2-D matMuls (the training and prefill path) would cost more kernels than they save for one query.
//
// The kernels (their WebAssembly text is ./batched-matmul-wat.ts) compute the same float32 operations in the same
// order as that scalar loop, four outputs to a SIMD vector (the text's header), at 7–14 GFLOP/s on these shapes.
// They are assembled with wabt when the wasm backend starts and import the backend's memory, so they read and
// write the tensors where they are.
// `batchedMatMul` takes it where tfjs would run its scalar loop, on wasm without a gradient tape, and is
// tf.matMul everywhere else.
import * as tf from '@tensorflow/tfjs';
import { BATCHED_MATMUL_WAT } from './batched-matmul-wat.js';
import { backendMemory as memoryOf, type WasmBackendLike, WatKernels } from './wat-module.js';

export const BATCHED_MATMUL = 'SesaBatchedMatMul';

/** The block along the shared axis of tfjs-backend-wasm's scalar BatchMatMul loop (its kBlockSize). */
const TFJS_BLOCK = 48;

interface Kernels {
  /** out[p] = a[p]·b[p]; N % 4 = 0 (byte addresses; P, M, K, N). */
  matmulNN(a: number, b: number, out: number, P: number, M: number, K: number, N: number): void;
  /** out[p] = a[p]·b[p]ᵀ; K % 4 = 0. */
  matmulNT(a: number, b: number, out: number, P: number, M: number, K: number, N: number): void;
}

const kernels = new WatKernels<Kernels>('batched-matmul.wat', BATCHED_MATMUL_WAT.replaceAll('BLOCK', String(TFJS_BLOCK)));
let registered = false;

const backendMemory = (backend: WasmBackendLike): WebAssembly.Memory => memoryOf(backend, 'batchedMatMul');

/**
 * Compiles the kernels against the active wasm backend's memory (called when the wasm backend starts; again
 * after a switch between its single-threaded and threaded builds, whose memories differ).
 */
export async function prepareBatchedMatMul(): Promise<void> {
  await kernels.prepare(backendMemory(tf.backend() as unknown as WasmBackendLike));
  register();
}

function register(): void {
  if (registered) return;
  registered = true;
  tf.registerKernel({
    kernelName: BATCHED_MATMUL,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { a, b } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const transposeB = (attrs as unknown as { transposeB: boolean }).transposeB;
      const wasm = backend as unknown as WasmBackendLike;
      const k = kernels.boundTo(backendMemory(wasm));
      if (!k) throw new Error('batchedMatMul: the kernels were not prepared for this wasm backend (prepareBatchedMatMul)');
      const [P, M, K] = a.shape as [number, number, number];
      const N = (transposeB ? b.shape[1] : b.shape[2]) as number;
      const out = wasm.makeOutput([P, M, N], 'float32');
      // Offsets are read after the output is made: making it may grow the heap, never move a tensor.
      const at = (info: tf.TensorInfo): number => (wasm.dataIdMap.get(info.dataId) as { memoryOffset: number }).memoryOffset;
      (transposeB ? k.matmulNT : k.matmulNN)(at(a), at(b), at(out), P, M, K, N);
      return out;
    },
  });
}

/**
 * a[p]·b[p] (b[p]ᵀ when `transposeB`) for every plane p: a [P, M, K], b [P, K, N] ([P, N, K] transposed). The
 * SIMD kernel where tfjs-backend-wasm would run its scalar loop (P > 1 or `transposeB`) and the shared axis
 * suits four lanes (N % 4 = 0, or K % 4 = 0 when transposed), with no gradient tape; tf.matMul otherwise. The
 * same float32 result either way.
 */
export function batchedMatMul(a: tf.Tensor3D, b: tf.Tensor3D, transposeB: boolean): tf.Tensor3D {
  const [P, , K] = a.shape;
  const fits =
    tf.getBackend() === 'wasm' &&
    // Prepared for this backend's memory (a backend switched by tf.setBackend rather than initBackend is not).
    kernels.boundTo(backendMemory(tf.backend() as unknown as WasmBackendLike)) !== undefined &&
    // No gradient tape records (./ops.ts, recordingGradients; not imported: ./backend.ts starts this module).
    !(tf.engine() as unknown as { isTapeOn(): boolean }).isTapeOn() &&
    a.dtype === 'float32' &&
    b.dtype === 'float32' &&
    b.shape[0] === P &&
    (transposeB ? b.shape[2] === K && K % 4 === 0 : b.shape[1] === K && P > 1 && b.shape[2] % 4 === 0);
  if (!fits) return tf.matMul(a, b, false, transposeB);
  return tf.engine().runKernel(BATCHED_MATMUL, { a, b }, { transposeB }) as tf.Tensor3D;
}
