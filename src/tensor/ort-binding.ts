// onnxruntime-node's native binding, called synchronously (docs/method.md, "The tensor stack": the native matMul
// path). The package's public `InferenceSession.run` is asynchronous only because its JavaScript wrapper defers
// the native call with setImmediate; the binding's own `run` computes on the calling thread and returns, so a
// tfjs kernel, which must return its output, can call it. What the binding takes and gives:
// - a session from the bytes of an ONNX model (src/formats/onnx.ts) and session options;
// - `run(feeds, fetches)`: a feed is any object with `type`, `dims`, `data` (a typed array) and `location:
//   'cpu'`; the binding wraps the array's memory without a copy. The array's buffer must not be a
//   SharedArrayBuffer ("Invalid argument"): the threaded wasm build's heap is one, the single-threaded build's
//   is not. A fetch given as such an object is a pre-allocated output that the kernel writes in place; the
//   binding also returns a copy of it, which is dropped.
// Every session runs on its own intra-op pool, with spinning off: a model holds one session per frozen weight
// (./frozen-matrix.ts), and pools that spin after their work would take the cores from the next one.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const PACKAGE = 'onnxruntime-node';

/** A tensor as the binding reads it (a feed, or a pre-allocated fetch). */
export interface OrtTensorView {
  type: 'float32';
  dims: number[];
  data: Float32Array;
  location: 'cpu';
}

/** An int64 feed (token ids). */
export interface OrtInt64View {
  type: 'int64';
  dims: number[];
  data: BigInt64Array;
  location: 'cpu';
}

/** The binding's session object. */
export interface OrtNativeSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: Record<string, unknown>): void;
  run(feeds: Record<string, OrtTensorView | OrtInt64View>, fetches: Record<string, OrtTensorView | null>): Record<string, { dims: number[]; data: Float32Array }>;
  dispose?(): void;
}

interface Binding {
  InferenceSession: new () => OrtNativeSession;
}

export interface OrtAvailability {
  ok: boolean;
  /** The package's version, when it is installed. */
  version?: string;
  /** Why it cannot be used (not installed, or the native library failed to load). */
  reason?: string;
}

let binding: Binding | undefined;
let availability: OrtAvailability | undefined;

/** Whether onnxruntime-node's native binding loads here, and its version; decided once per process. */
export function ortAvailability(): OrtAvailability {
  if (availability) return availability;
  let root: string;
  try {
    root = dirname(require.resolve(`${PACKAGE}/package.json`));
  } catch {
    availability = { ok: false, reason: `${PACKAGE} is not installed` };
    return availability;
  }
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  try {
    // The package's own loader: it picks the binary of this platform and starts onnxruntime's environment once
    // (the same module instance @huggingface/transformers uses for the E5 embedder).
    const loader = require(join(root, 'dist', 'binding.js')) as { binding: Binding; initOrt(): void };
    loader.initOrt();
    binding = loader.binding;
    availability = { ok: true, version };
  } catch (err) {
    availability = { ok: false, version, reason: `${PACKAGE} ${version} is installed but its native binding failed to load: ${(err as Error).message.split('\n')[0]}` };
  }
  return availability;
}

export interface SessionOptions {
  /** Intra-op threads (the caller's thread included). */
  threads: number;
  /** Whether constant operands are packed for MLAS when the session is made (default true). */
  prepack?: boolean;
  /**
   * The bytes of the model's external initializers, by the location their TensorProto names (onnx.ts,
   * `ExternalBytes`). onnxruntime copies them into its own buffers while the session is made (measured: a
   * session made from them does not change when they are overwritten after), so the caller may reuse them at once.
   */
  externalData?: Array<{ path: string; data: Uint8Array }>;
}

/** A session of the model `bytes` on `threads` threads; throws where the binding is unavailable. */
export function createSession(bytes: Uint8Array, options: SessionOptions): OrtNativeSession {
  const status = ortAvailability();
  if (!status.ok || !binding) throw new Error(`the native matMul path needs ${PACKAGE}: ${status.reason}`);
  const session = new binding.InferenceSession();
  session.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // The arena would keep the largest allocation of each session for its lifetime; outputs are ours anyway.
    enableCpuMemArena: false,
    extra: { session: { 'intra_op.allow_spinning': '0', ...(options.prepack === false ? { disable_prepacking: '1' } : {}) } },
    ...(options.externalData ? { externalData: options.externalData } : {}),
  });
  return session;
}

/** A binding tensor over `data` (no copy). */
export function view(data: Float32Array, dims: number[]): OrtTensorView {
  return { type: 'float32', dims, data, location: 'cpu' };
}
