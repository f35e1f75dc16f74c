// A frozen weight matrix W [in, out] of the base model, and the two products the model needs of it: the forward's
// x·W and the backward's dy·Wᵀ (docs/method.md, "The tensor stack"). Two places it can live:
//
// - `TensorMatrix`: a tfjs tensor [in, out] (every backend). The backward multiplies by an explicit transpose, or
//   by a held one (`holdTransposed`): matMul with a transposed operand is ~7× slower on wasm's XNNPACK.
// - `NativeMatrix`: onnxruntime sessions whose initializer is W as the checkpoint stores it ([out, in]), on the
//   `native` backend. The forward is Gemm(x, W, transB = 1) and the backward MatMul(dy, W): MLAS packs the
//   constant operand once, when the session is made, and onnxruntime drops the unpacked copy, so nothing of W
//   is in the wasm heap. The backward's session is made on first use (a model that only generates never makes
//   it), from the same loader that gave the forward's weights (the checkpoint is read again).
//   The products run as one tfjs kernel each, reading x or dy from the heap and writing the output there.
import * as tf from '@tensorflow/tfjs';
import { ONNX_FLOAT, encodeOnnxModel } from '../formats/onnx.js';
import { createSession, type OrtNativeSession, view } from './ort-binding.js';
import { heapView, nativeMatMulThreads } from './native-matmul.js';
import { matMulT } from './ops.js';

export interface FrozenMatrix {
  /** [in, out]. */
  readonly shape: readonly [number, number];
  /** x [N, in] · W → [N, out]. */
  times(x: tf.Tensor2D): tf.Tensor2D;
  /** dy [N, out] · Wᵀ → [N, in]. */
  timesTransposed(dy: tf.Tensor2D): tf.Tensor2D;
  /** Floats this matrix keeps in the tfjs heap (W, and Wᵀ when held). */
  readonly heapFloats: number;
  dispose(): void;
}

/**
 * Whether W [in, out] is held natively: on the native backend, from `NATIVE_MIN_FLOATS` floats (smaller ones run
 * faster as tensors: a decoded row's product costs less than the binding's call).
 */
export function holdsNatively(inDim: number, outDim: number): boolean {
  return nativeMatMulThreads() !== undefined && inDim * outDim >= NATIVE_MIN_FLOATS;
}

/** The smallest W held natively (512 × 512). */
export const NATIVE_MIN_FLOATS = 2 ** 18;

/** W as a tfjs tensor [in, out]. */
export class TensorMatrix implements FrozenMatrix {
  private transposed: tf.Tensor2D | undefined;
  /** Whether `transposed` is this matrix's own (disposed with it) or shared (a tied head's embedding table). */
  private readonly ownsTransposed: boolean;

  /** `transposed`: Wᵀ held from the start and owned by the caller (a tied head's embedding table). */
  constructor(
    readonly weight: tf.Tensor2D,
    opts: { transposed?: tf.Tensor2D } = {},
  ) {
    this.transposed = opts.transposed;
    this.ownsTransposed = opts.transposed === undefined;
  }

  get shape(): readonly [number, number] {
    return this.weight.shape;
  }

  times(x: tf.Tensor2D): tf.Tensor2D {
    return tf.matMul(x, this.weight);
  }

  timesTransposed(dy: tf.Tensor2D): tf.Tensor2D {
    return this.transposed ? tf.matMul(dy, this.transposed) : matMulT(dy, this.weight, false, true);
  }

  /** Holds Wᵀ for the backward from now on (the caller decides whether the heap has room). Idempotent. */
  holdTransposed(): void {
    this.transposed ??= tf.keep(tf.transpose(this.weight));
  }

  get holdsTransposed(): boolean {
    return this.transposed !== undefined;
  }

  get heapFloats(): number {
    return this.weight.size * (this.transposed ? 2 : 1);
  }

  dispose(): void {
    this.weight.dispose();
    if (this.ownsTransposed) this.transposed?.dispose();
    this.transposed = undefined;
  }
}

export const NATIVE_LINEAR = 'SesaNativeLinear';

/** The matrices the kernel can name (by id: a kernel's attributes are plain values). */
const live = new Map<number, NativeMatrix>();
let nextId = 1;
let registered = false;

interface WasmBackendLike {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  wasm: { HEAPF32: Float32Array };
}

function registerKernel(): void {
  if (registered) return;
  registered = true;
  tf.registerKernel({
    kernelName: NATIVE_LINEAR,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x } = inputs as { x: tf.TensorInfo };
      const { matrix, transposed } = attrs as unknown as { matrix: number; transposed: boolean };
      const m = live.get(matrix);
      if (!m) throw new Error(`${NATIVE_LINEAR}: matrix ${matrix} was disposed`);
      const wasm = backend as unknown as WasmBackendLike;
      const [rows, inner] = x.shape as [number, number];
      const [inDim, outDim] = m.shape;
      const width = transposed ? inDim : outDim;
      if (inner !== (transposed ? outDim : inDim)) throw new Error(`${NATIVE_LINEAR}: [${x.shape.join(', ')}] cannot multiply W${transposed ? 'ᵀ' : ''} of W [${inDim}, ${outDim}]`);
      const out = wasm.makeOutput([rows, width], 'float32');
      if (rows > 0) {
        m.session(transposed).run(
          { x: view(heapView(wasm, x, rows * inner), [rows, inner]) },
          { y: view(heapView(wasm, out, rows * width), [rows, width]) },
        );
      }
      return out;
    },
  });
}

/** The one-node model of a product with W ([out, in], as stored) held as an initializer. */
function productModel(weight: Float32Array, inDim: number, outDim: number, transposed: boolean): Uint8Array {
  const node = transposed
    ? { op: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] } // dy [N, out] · W [out, in]
    : { op: 'Gemm', inputs: ['x', 'w'], outputs: ['y'], attrs: [{ name: 'transB', int: 1 }] }; // x [N, in] · Wᵀ
  return encodeOnnxModel(
    {
      name: transposed ? 'frozen-backward' : 'frozen-forward',
      nodes: [node],
      initializers: [{ name: 'w', dims: [outDim, inDim], dataType: ONNX_FLOAT, data: weight }],
      inputs: [{ name: 'x', elemType: ONNX_FLOAT, shape: ['n', transposed ? outDim : inDim] }],
      outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['n', transposed ? inDim : outDim] }],
    },
    { opset: 17 },
  );
}

/**
 * W held by onnxruntime. `load` returns W as stored, [out, in] row-major (it is called once for the forward's
 * session and once more if the backward is used).
 */
export class NativeMatrix implements FrozenMatrix {
  readonly shape: readonly [number, number];
  readonly heapFloats = 0;
  private readonly id: number;
  private readonly threads: number;
  private forward: OrtNativeSession | undefined;
  private backward: OrtNativeSession | undefined;

  constructor(
    inDim: number,
    outDim: number,
    private readonly load: () => Float32Array,
  ) {
    const threads = nativeMatMulThreads();
    if (threads === undefined) throw new Error('NativeMatrix needs the native backend (initBackend("native"))');
    this.threads = threads;
    this.shape = [inDim, outDim];
    registerKernel();
    this.id = nextId++;
    this.forward = this.makeSession(false);
    live.set(this.id, this);
  }

  private makeSession(transposed: boolean): OrtNativeSession {
    const [inDim, outDim] = this.shape;
    const w = this.load();
    if (w.length !== inDim * outDim) throw new Error(`NativeMatrix: the loader gave ${w.length} floats for a [${outDim}, ${inDim}] weight`);
    return createSession(productModel(w, inDim, outDim, transposed), { threads: this.threads });
  }

  /** The session of one product (the backward's made on first use). */
  session(transposed: boolean): OrtNativeSession {
    if (!this.forward) throw new Error('NativeMatrix: used after dispose');
    if (!transposed) return this.forward;
    this.backward ??= this.makeSession(true);
    return this.backward;
  }

  /** Whether the backward's session exists (its packed copy counts in memory). */
  get hasBackward(): boolean {
    return this.backward !== undefined;
  }

  times(x: tf.Tensor2D): tf.Tensor2D {
    return tf.engine().runKernel(NATIVE_LINEAR, { x }, { matrix: this.id, transposed: false }) as tf.Tensor2D;
  }

  timesTransposed(dy: tf.Tensor2D): tf.Tensor2D {
    return tf.engine().runKernel(NATIVE_LINEAR, { x: dy }, { matrix: this.id, transposed: true }) as tf.Tensor2D;
  }

  dispose(): void {
    live.delete(this.id);
    this.forward?.dispose?.();
    this.backward?.dispose?.();
    this.forward = undefined;
    this.backward = undefined;
  }
}
