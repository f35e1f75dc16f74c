// A frozen embedding table E [rows, cols] and its one operation, the rows of given ids (docs/method.md, "The
// native matMul path": the frozen base outside the heap). Two places it can live, as a frozen matrix can
// (./frozen-matrix.ts):
//
// - a tfjs tensor: `tf.gather` (every backend);
// - on the native backend, an onnxruntime session whose initializer is E and whose one node is Gather: E is in
//   system memory, not the wasm heap, where a Qwen3 table (151,936 rows) takes 0.6–1.6 GB of the 4 GiB beside
//   the activations an update needs. The ids go in as int64 and the rows come out into a plain array that
//   becomes a tensor: one copy of the [ids, cols] rows, against none of E. A gather copies values, so both give
//   the same bits.
// - natively, as the Gather of a tied head (`TiedTable`): the head's NativeMatrix holds E as its W ([V, d] is
//   the head's [out, in]) and its first session gathers from that initializer too (./frozen-matrix.ts,
//   `lookup`), so E is held once for the lookups and the head instead of once for each (src/model/qwen3.ts).
import * as tf from '@tensorflow/tfjs';
import { ONNX_FLOAT, ONNX_INT64, encodeOnnxModel, type RawFill } from '../formats/onnx.js';
import { holdsNatively, type NativeMatrix } from './frozen-matrix.js';
import { nativeMatMulThreads } from './native-matmul.js';
import { createSession, type OrtInt64View, type OrtNativeSession, type OrtTensorView, view } from './ort-binding.js';
import { withWeightBytes } from './weight-staging.js';

/** Where the table's model names E's bytes (external data: ./ort-binding.ts, `externalData`). */
const TABLE_LOCATION = 'table.bin';

export interface FrozenTable {
  readonly shape: readonly [number, number];
  /** E[ids] → [ids.length, cols]. */
  rows(ids: readonly number[]): tf.Tensor2D;
  /** Floats this table keeps in the tfjs heap. */
  readonly heapFloats: number;
  dispose(): void;
}

/** Whether a frozen table [rows, cols] is held natively: where a matrix of its size would be. */
export function holdsTableNatively(rows: number, cols: number): boolean {
  return holdsNatively(cols, rows);
}

export class TensorTable implements FrozenTable {
  constructor(readonly table: tf.Tensor2D) {}

  get shape(): readonly [number, number] {
    return this.table.shape;
  }

  get heapFloats(): number {
    return this.table.size;
  }

  rows(ids: readonly number[]): tf.Tensor2D {
    return tf.tidy(() => tf.gather(this.table, tf.tensor1d(ids as number[], 'int32')) as tf.Tensor2D);
  }

  dispose(): void {
    this.table.dispose();
  }
}

export class NativeTable implements FrozenTable {
  readonly heapFloats = 0;
  readonly shape: readonly [number, number];
  private session: OrtNativeSession | undefined;

  /** `load` gives E as stored, [rows, cols] row-major, as values or as the source of their bytes. */
  constructor(rows: number, cols: number, load: () => Float32Array | RawFill) {
    const threads = nativeMatMulThreads();
    if (threads === undefined) throw new Error('NativeTable needs the native backend (initBackend("native"))');
    this.shape = [rows, cols];
    const data = load();
    const floats = data instanceof Float32Array ? data.length : data.byteLength / 4;
    if (floats !== rows * cols) throw new Error(`NativeTable: the loader gave ${floats} floats for a [${rows}, ${cols}] table`);
    // E as external data, copied by onnxruntime from the staged bytes into the one copy it keeps (./weight-staging.ts).
    const model = encodeOnnxModel(
      {
        name: 'frozen-table',
        nodes: [{ op: 'Gather', inputs: ['table', 'ids'], outputs: ['y'], attrs: [{ name: 'axis', int: 0 }] }],
        initializers: [{ name: 'table', dims: [rows, cols], dataType: ONNX_FLOAT, data: { external: TABLE_LOCATION, byteLength: 4 * rows * cols } }],
        inputs: [{ name: 'ids', elemType: ONNX_INT64, shape: ['n'] }],
        outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['n', cols] }],
      },
      { opset: 17 },
    );
    this.session = withWeightBytes(data, (bytes) => createSession(model, { threads: 1, externalData: [{ path: TABLE_LOCATION, data: bytes }] }));
  }

  rows(ids: readonly number[]): tf.Tensor2D {
    const session = this.session;
    if (!session) throw new Error('NativeTable: used after dispose');
    return gatheredRows('NativeTable', this.shape, ids, (feed, out) => session.run({ ids: feed }, { y: out }));
  }

  dispose(): void {
    this.session?.dispose?.();
    this.session = undefined;
  }
}

/** The rows `ids` of a native table of `shape`, checked, gathered by `gather` into a fresh array, as a tensor. */
function gatheredRows(who: string, shape: readonly [number, number], ids: readonly number[], gather: (ids: OrtInt64View, out: OrtTensorView) => void): tf.Tensor2D {
  const [rows, cols] = shape;
  for (const id of ids) if (!Number.isInteger(id) || id < 0 || id >= rows) throw new Error(`${who}: token id ${id} is outside the table's ${rows} rows`);
  const out = new Float32Array(ids.length * cols);
  if (ids.length > 0) gather({ type: 'int64', dims: [ids.length], data: BigInt64Array.from(ids, (i) => BigInt(i)), location: 'cpu' }, view(out, [ids.length, cols]));
  return tf.tensor2d(out, [ids.length, cols]);
}

/**
 * The embedding table E [V, d] held by a tied head made with `lookup` (its W as stored: ./frozen-matrix.ts): the
 * rows come from the head's own initializer, so E is held once. The head owns the session: disposing this table
 * only ends its own use (the model disposes the head too), and after the head's dispose the rows are refused.
 */
export class TiedTable implements FrozenTable {
  readonly heapFloats = 0;
  readonly shape: readonly [number, number];
  private head: NativeMatrix | undefined;

  constructor(head: NativeMatrix) {
    if (!head.lookup) throw new Error('TiedTable: the head was made without a lookup');
    this.head = head;
    const [inDim, outDim] = head.shape;
    this.shape = [outDim, inDim];
  }

  rows(ids: readonly number[]): tf.Tensor2D {
    const head = this.head;
    if (!head) throw new Error('TiedTable: used after dispose');
    return gatheredRows('TiedTable', this.shape, ids, (feed, out) => head.lookupRows(feed, out));
  }

  dispose(): void {
    this.head = undefined;
  }
}
