// tfjs's matMul on onnxruntime's MLAS (docs/method.md, "The tensor stack": the native matMul path).
//
// tfjs-backend-wasm runs a matMul on XNNPACK in 128-bit wasm SIMD (about 36 GFLOP/s on one thread here), or, with
// a transposed or batched operand, as a scalar loop (about 2). onnxruntime-node's MLAS runs the same product with
// the machine's own vector width, on its own threads. On the `native` backend (./backend.ts) the wasm backend's
// BatchMatMul kernel, which every tf.matMul and tfjs's matMul gradient reach, is replaced by one that sends a
// product of at least `MIN_WORK` multiply-adds and `MIN_ROWS` output rows per plane to MLAS and the rest to the
// stock kernel (a small product costs less than the binding's call: a decoded token's row, a LoRA rank). MLAS
// multiplies transposed operands at full speed, so on this path the model passes transposes as matMul flags
// (./ops.ts, `matMulT`) instead of forming them; a small single-plane product with a flag is then formed here
// as the wasm path does it, an explicit transpose and XNNPACK (the stock kernel would run its scalar loop).
//
// The product runs where the tensors are: the single-threaded wasm build's heap is a plain ArrayBuffer, so MLAS
// reads both operands from it and writes the output into a tensor allocated there (./ort-binding.ts). One
// onnxruntime session per transpose layout, `com.microsoft` FusedMatMul with named dimensions, serves every
// shape. MLAS is deterministic on one machine, across runs and thread counts (its threads split the output,
// never a sum), but it sums in another order than XNNPACK: results match the wasm path to float32 rounding, not
// bit for bit (test/native-matmul.test.ts states the tolerance).
import * as tf from '@tensorflow/tfjs';
import { ONNX_FLOAT, encodeOnnxModel } from '../formats/onnx.js';
import { createSession, type OrtNativeSession, view } from './ort-binding.js';

/** Products below this many multiply-adds (M·K·N per plane, summed over planes) stay on XNNPACK. */
export const MIN_WORK = 2 ** 18;
/** Products with fewer output rows per plane stay on XNNPACK (MLAS gains nothing on a few rows). */
export const MIN_ROWS = 16;

interface WasmBackendLike {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  wasm: { HEAPF32: Float32Array };
}

type KernelFunc = (args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs: tf.NamedAttrMap }) => tf.TensorInfo | tf.TensorInfo[];

/** How the native backend holds a model's frozen weights: float32, or in 8-bit blocks (`native-int8`, ./block-int8.ts). */
export type FrozenBase = 'f32' | 'int8';

interface Active {
  threads: number;
  base: FrozenBase;
  /** One session per (transposeA, transposeB), made on first use. */
  sessions: Map<string, OrtNativeSession>;
  /** Products sent to MLAS since activation (for tests and the bench's note). */
  calls: number;
}

let active: Active | undefined;
let stock: { kernelFunc: KernelFunc; setupFunc?: (backend: unknown) => void } | undefined;

/** The FusedMatMul model of one transpose layout: y = op(a)·op(b) over broadcast leading planes. */
function layoutModel(transposeA: boolean, transposeB: boolean): Uint8Array {
  return encodeOnnxModel(
    {
      name: `matmul-${transposeA ? 't' : 'n'}${transposeB ? 't' : 'n'}`,
      nodes: [
        {
          op: 'FusedMatMul',
          domain: 'com.microsoft',
          inputs: ['a', 'b'],
          outputs: ['y'],
          attrs: [
            { name: 'transA', int: transposeA ? 1 : 0 },
            { name: 'transB', int: transposeB ? 1 : 0 },
            { name: 'alpha', float: 1 },
          ],
        },
      ],
      initializers: [],
      inputs: [
        { name: 'a', elemType: ONNX_FLOAT, shape: ['pa', 'ra', 'ca'] },
        { name: 'b', elemType: ONNX_FLOAT, shape: ['pb', 'rb', 'cb'] },
      ],
      outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['p', 'm', 'n'] }],
    },
    { opset: 17 },
  );
}

function sessionFor(state: Active, transposeA: boolean, transposeB: boolean): OrtNativeSession {
  const key = `${transposeA}${transposeB}`;
  let s = state.sessions.get(key);
  if (!s) {
    s = createSession(layoutModel(transposeA, transposeB), { threads: state.threads });
    state.sessions.set(key, s);
  }
  return s;
}

/** A float32 view of a tensor in the wasm heap (taken after every allocation of the kernel: the heap may grow). */
export function heapView(backend: WasmBackendLike, info: tf.TensorInfo, size: number): Float32Array {
  const offset = (backend.dataIdMap.get(info.dataId) as { memoryOffset: number }).memoryOffset;
  const heap = backend.wasm.HEAPF32;
  if (typeof SharedArrayBuffer !== 'undefined' && heap.buffer instanceof SharedArrayBuffer) {
    throw new Error('the native matMul path needs the single-threaded wasm build (its heap is shared memory here)');
  }
  return new Float32Array(heap.buffer, offset, size);
}

const sizeOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The replacement BatchMatMul kernel: MLAS where the product is large enough and native is on, else the stock one. */
function batchMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs: tf.NamedAttrMap }): tf.TensorInfo | tf.TensorInfo[] {
  const base = stock as { kernelFunc: KernelFunc };
  const state = active;
  if (!state) return base.kernelFunc(args);
  const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
  const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
  if (a.dtype !== 'float32' || b.dtype !== 'float32') return base.kernelFunc(args);
  const ar = a.shape.length;
  const br = b.shape.length;
  const M = (transposeA ? a.shape[ar - 1] : a.shape[ar - 2]) as number;
  const K = (transposeA ? a.shape[ar - 2] : a.shape[ar - 1]) as number;
  const N = (transposeB ? b.shape[br - 2] : b.shape[br - 1]) as number;
  const planesA = sizeOf(a.shape.slice(0, -2));
  const planesB = sizeOf(b.shape.slice(0, -2));
  const planes = Math.max(planesA, planesB);
  // Broadcasting of leading dims other than one side's single plane is left to the stock kernel (tfjs checks it).
  const simple = planesA === planes || planesA === 1 ? planesB === planes || planesB === 1 : false;
  if (!simple || M < MIN_ROWS || planes * M * K * N < MIN_WORK || K === 0 || N === 0) {
    return (transposeA || transposeB) && planes === 1 ? withExplicitTransposes(args, base) : base.kernelFunc(args);
  }
  const wasm = args.backend as WasmBackendLike;
  const outShape = [...(planesA >= planesB ? a.shape : b.shape).slice(0, -2), M, N];
  const out = wasm.makeOutput(outShape, 'float32');
  const aDims = [planesA, a.shape[ar - 2] as number, a.shape[ar - 1] as number];
  const bDims = [planesB, b.shape[br - 2] as number, b.shape[br - 1] as number];
  sessionFor(state, transposeA, transposeB).run(
    { a: view(heapView(wasm, a, sizeOf(aDims)), aDims), b: view(heapView(wasm, b, sizeOf(bDims)), bDims) },
    { y: view(heapView(wasm, out, planes * M * N), [planes, M, N]) },
  );
  state.calls++;
  return out;
}

/** A single-plane product with transposed operands as explicit transposes and a plain stock matMul (XNNPACK). */
function withExplicitTransposes(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs: tf.NamedAttrMap }, base: { kernelFunc: KernelFunc }): tf.TensorInfo {
  const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
  const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
  const transpose = tf.getKernel('Transpose', 'wasm');
  if (!transpose) throw new Error('the native matMul path: tfjs-backend-wasm registers no Transpose kernel');
  const backend = args.backend as { disposeData(dataId: object): void };
  const made: tf.TensorInfo[] = [];
  const plain = (x: tf.TensorInfo, flip: boolean): tf.TensorInfo => {
    if (!flip) return x;
    const perm = x.shape.map((_, i) => i);
    [perm[perm.length - 2], perm[perm.length - 1]] = [perm[perm.length - 1] as number, perm[perm.length - 2] as number];
    const t = transpose.kernelFunc({ inputs: { x }, backend: args.backend as tf.KernelBackend, attrs: { perm } }) as tf.TensorInfo;
    made.push(t);
    return t;
  };
  try {
    return base.kernelFunc({ inputs: { a: plain(a, transposeA), b: plain(b, transposeB) }, backend: args.backend, attrs: { ...args.attrs, transposeA: false, transposeB: false } }) as tf.TensorInfo;
  } finally {
    for (const t of made) backend.disposeData(t.dataId);
  }
}

/** Replaces the wasm BatchMatMul kernel with the routing one (once per process; it routes only while active). */
function install(): void {
  if (stock) return;
  const config = tf.getKernel('BatchMatMul', 'wasm');
  if (!config) throw new Error('the native matMul path: tfjs-backend-wasm registers no BatchMatMul kernel (tfjs-backend-wasm changed?)');
  stock = { kernelFunc: config.kernelFunc as unknown as KernelFunc, ...(config.setupFunc ? { setupFunc: config.setupFunc as (backend: unknown) => void } : {}) };
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    kernelName: 'BatchMatMul',
    backendName: 'wasm',
    kernelFunc: batchMatMul as unknown as tf.KernelFunc,
    ...(config.setupFunc ? { setupFunc: config.setupFunc } : {}),
  });
}

/** Routes large matMuls of the (single-threaded) wasm backend to MLAS on `threads` threads. */
export function activateNativeMatMul(threads: number, base: FrozenBase = 'f32'): void {
  install();
  if (active?.threads === threads) {
    active.base = base;
    return;
  }
  deactivateNativeMatMul();
  active = { threads, base, sessions: new Map(), calls: 0 };
}

/** Back to XNNPACK for every matMul (the `wasm` backend). */
export function deactivateNativeMatMul(): void {
  if (!active) return;
  for (const s of active.sessions.values()) s.dispose?.();
  active = undefined;
}

/** MLAS threads while the native path is on, else undefined. */
export function nativeMatMulThreads(): number | undefined {
  return active?.threads;
}

/** How frozen weights are held while the native path is on, else undefined. */
export function nativeFrozenBase(): FrozenBase | undefined {
  return active?.base;
}

/** Products sent to MLAS since the path was activated (0 when it is off). */
export function nativeMatMulCalls(): number {
  return active?.calls ?? 0;
}
