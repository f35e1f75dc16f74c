// A frozen weight matrix W [in, out] of the base model, and the two products the model needs of it: the forward's
// x·W and the backward's dy·Wᵀ (docs/method.md, "The tensor stack"). Two places it can live:
//
// - `TensorMatrix`: a tfjs tensor [in, out] (every backend). The backward multiplies by an explicit transpose, or
//   by a held one (`holdTransposed`): matMul with a transposed operand is ~7× slower on wasm's XNNPACK.
// - `NativeMatrix`: onnxruntime sessions whose initializer is W as the checkpoint stores it ([out, in]), on the
//   `native` backend. The forward is Gemm(x, W, transB = 1) and the backward MatMul(dy, W): MLAS packs the
//   constant operand once, when the session is made, and onnxruntime drops the unpacked copy, so nothing of W
//   is in the wasm heap. The backward's session is made on first use (a model that only generates never makes
//   it), from the same loader that gave the forward's weights (the checkpoint is read again). A loader may give
//   W as a `RawFill` instead of an array: the checkpoint is then read straight into a staging buffer shared by
//   every matrix (./weight-staging.ts), which onnxruntime copies from into the one copy it keeps (the model
//   names W as external data: it is not parsed as part of the model's bytes, a copy more). So a matrix's load
//   makes no garbage of its size, and its transient bytes are onnxruntime's own (its unpacked copy, while it
//   packs it).
//   The products run as one tfjs kernel each, reading x or dy from the heap and writing the output there.
//   Layout `once` (for a model whose two packed copies would not fit in memory: src/model/memory-need.ts): one
//   session holds W once, unpacked, for both products (prepacking off), and MLAS packs its panels per product:
//   half the memory, for a slower product (a decoded row's product most of all). Each run feeds both inputs,
//   the unused one with no rows (onnxruntime runs every node of a session).
//   A tied head may also serve the embedding table's lookups (`lookup`: ./frozen-table.ts, `TiedTable`): its
//   first session (`once`: the only one; `packed`: the forward's) then has a Gather node more over the same
//   initializer, and the table is held once for both instead of once more in a session of its own (a Qwen3
//   table is 26% of the 0.6B's weights). In `packed` onnxruntime keeps W unpacked beside the forward's packed
//   copy (the Gather reads it), which is what the table's own session held; in `once` the one unpacked copy
//   serves all three. A Gather copies values, and the products are the same nodes, so every result is the
//   same bits as with the table apart (test/native-matmul.test.ts).
//   Layout `int8` (the `native-int8` backend): each product's session holds W in 8-bit blocks (./block-int8.ts),
//   the forward's quantized along W's rows, the backward's along its columns: about a quarter of f32's bytes a
//   copy, which a decoded token reads once per matrix.
import * as tf from '@tensorflow/tfjs';
import { ONNX_FLOAT, ONNX_INT64, encodeOnnxModel, type OnnxValueInfo, type RawFill } from '../formats/onnx.js';
import { withWeightBytes } from './weight-staging.js';
import { createSession, type OrtInt64View, type OrtNativeSession, type OrtTensorView, view } from './ort-binding.js';
import { blockInt8Model, quantizeBlocks } from './block-int8.js';
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
      if (rows > 0) m.run(transposed, view(heapView(wasm, x, rows * inner), [rows, inner]), view(heapView(wasm, out, rows * width), [rows, width]));
      return out;
    },
  });
}

/** How onnxruntime holds a frozen W: packed for each product (two copies), once, unpacked, or in 8-bit blocks for each product (see the header). */
export type NativeLayout = 'packed' | 'once' | 'int8';


/** The product nodes: x [n, in] · Wᵀ (the forward, from W as stored [out, in]) and dy [m, out] · W. */
const FORWARD = { op: 'Gemm', inputs: ['x', 'w'], outputs: ['y'], attrs: [{ name: 'transB', int: 1 }] };
const BACKWARD = { op: 'MatMul', inputs: ['dy', 'w'], outputs: ['dx'] };
/** A tied table's lookup: the rows ids [k] of W as stored ([out, in]: the table [V, d]). */
const LOOKUP = { op: 'Gather', inputs: ['w', 'ids'], outputs: ['rows'], attrs: [{ name: 'axis', int: 0 }] };

const value = (name: string, shape: Array<number | string>): OnnxValueInfo => ({ name, elemType: ONNX_FLOAT, shape });

/** An input of no rows, for a node of a session that is not asked for (a run feeds every input). */
const none = (width: number): OrtTensorView => view(new Float32Array(0), [0, width]);
type Feeds = Record<string, OrtTensorView | OrtInt64View>;
const NO_IDS: OrtInt64View = { type: 'int64', dims: [0], data: new BigInt64Array(0), location: 'cpu' };

/** Where the product models name W's bytes (external data: ./ort-binding.ts, `externalData`). */
const WEIGHT_LOCATION = 'w.bin';

/**
 * The model of one product (`packed`) or of both (`once`) with W ([out, in], as stored) as an external
 * initializer, and with `lookup` a Gather of W's rows too.
 */
function productModel(inDim: number, outDim: number, products: 'forward' | 'backward' | 'both', lookup: boolean): Uint8Array {
  const forward = products !== 'backward';
  const backward = products !== 'forward';
  return encodeOnnxModel(
    {
      name: `frozen-${products}${lookup ? '-lookup' : ''}`,
      nodes: [...(forward ? [FORWARD] : []), ...(backward ? [BACKWARD] : []), ...(lookup ? [LOOKUP] : [])],
      initializers: [{ name: 'w', dims: [outDim, inDim], dataType: ONNX_FLOAT, data: { external: WEIGHT_LOCATION, byteLength: 4 * outDim * inDim } }],
      inputs: [
        ...(forward ? [value('x', ['n', inDim])] : []),
        ...(backward ? [value('dy', ['m', outDim])] : []),
        ...(lookup ? [{ name: 'ids', elemType: ONNX_INT64, shape: ['k'] } satisfies OnnxValueInfo] : []),
      ],
      outputs: [...(forward ? [value('y', ['n', outDim])] : []), ...(backward ? [value('dx', ['m', inDim])] : []), ...(lookup ? [value('rows', ['k', inDim])] : [])],
    },
    { opset: 17 },
  );
}

/** What a NativeMatrix's sessions hold besides its products. */
export interface NativeMatrixOptions {
  /** A Gather of W's rows in the first session (a tied head that is also the embedding table: see the header). Not in layout `int8`. */
  lookup?: boolean;
}

/**
 * W held by onnxruntime. `load` returns W as stored, [out, in] row-major, as values or as the source of their
 * little-endian bytes (it is called once for the forward's session and once more if the backward is used).
 */
export class NativeMatrix implements FrozenMatrix {
  readonly shape: readonly [number, number];
  readonly heapFloats = 0;
  private readonly id: number;
  private readonly threads: number;
  /** `packed`: the forward's session; `once`: the one session of both products. */
  private forward: OrtNativeSession | undefined;
  private backward: OrtNativeSession | undefined;
  /** Whether the first session also gathers W's rows (`lookupRows`). */
  readonly lookup: boolean;

  constructor(
    inDim: number,
    outDim: number,
    private readonly load: () => Float32Array | RawFill,
    readonly layout: NativeLayout = 'packed',
    opts: NativeMatrixOptions = {},
  ) {
    const threads = nativeMatMulThreads();
    if (threads === undefined) throw new Error('NativeMatrix needs the native backend (initBackend("native"))');
    this.lookup = opts.lookup === true;
    if (this.lookup && layout === 'int8') throw new Error('NativeMatrix: a lookup needs W in f32 (layout packed or once), not in 8-bit blocks');
    this.threads = threads;
    this.shape = [inDim, outDim];
    registerKernel();
    this.id = nextId++;
    this.forward = this.makeSession(layout === 'once' ? 'both' : 'forward');
    live.set(this.id, this);
  }

  private makeSession(products: 'forward' | 'backward' | 'both'): OrtNativeSession {
    const [inDim, outDim] = this.shape;
    const w = this.load();
    const floats = w instanceof Float32Array ? w.length : w.byteLength / 4;
    if (floats !== inDim * outDim) throw new Error(`NativeMatrix: the loader gave ${floats} floats for a [${outDim}, ${inDim}] weight`);
    return withWeightBytes(w, (bytes) => {
      if (this.layout === 'int8') {
        // W [out, in]: the forward sums over `in` (W's rows), the backward over `out` (its columns).
        const values = new Float32Array(bytes.buffer, bytes.byteOffset, inDim * outDim);
        const q = products === 'forward' ? quantizeBlocks(values, outDim, inDim, inDim, 1) : quantizeBlocks(values, inDim, outDim, 1, inDim);
        return createSession(blockInt8Model(q, `frozen-int8-${products}`), { threads: this.threads });
      }
      const model = productModel(inDim, outDim, products, this.lookup && products !== 'backward');
      return createSession(model, { threads: this.threads, prepack: products !== 'both', externalData: [{ path: WEIGHT_LOCATION, data: bytes }] });
    });
  }

  /** Runs one product: x·W (`transposed` false) or dy·Wᵀ, from `input` into `output` (the backward's session made on first use). */
  run(transposed: boolean, input: OrtTensorView, output: OrtTensorView): void {
    if (!this.forward) throw new Error('NativeMatrix: used after dispose');
    const [inDim, outDim] = this.shape;
    // Every node of the first session runs: the ones not asked for get no rows (and a lookup no ids).
    const ids: Feeds = this.lookup ? { ids: NO_IDS } : {};
    if (this.layout === 'once') {
      if (transposed) this.forward.run({ x: none(inDim), dy: input, ...ids }, { dx: output });
      else this.forward.run({ x: input, dy: none(outDim), ...ids }, { y: output });
      return;
    }
    if (!transposed) {
      this.forward.run({ x: input, ...ids }, { y: output });
      return;
    }
    this.backward ??= this.makeSession('backward');
    // The 8-bit sessions name their one input x and output y (./block-int8.ts).
    if (this.layout === 'int8') this.backward.run({ x: input }, { y: output });
    else this.backward.run({ dy: input }, { dx: output });
  }

  /**
   * W's rows `ids` (checked by the caller: ./frozen-table.ts, `TiedTable`) into `output` [ids, in], from the
   * first session (`lookup` only).
   */
  lookupRows(ids: OrtInt64View, output: OrtTensorView): void {
    if (!this.forward) throw new Error('NativeMatrix: used after dispose');
    if (!this.lookup) throw new Error('NativeMatrix: made without a lookup');
    const [inDim, outDim] = this.shape;
    const feeds: Feeds = this.layout === 'once' ? { x: none(inDim), dy: none(outDim), ids } : { x: none(inDim), ids };
    this.forward.run(feeds, { rows: output });
  }

  /** Whether the backward's product can run without making a session (its packed copy counts in memory). */
  get hasBackward(): boolean {
    return this.layout === 'once' || this.backward !== undefined;
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
