// Where a frozen weight's bytes wait between the checkpoint and onnxruntime (./frozen-matrix.ts, ./frozen-table.ts).
//
// onnxruntime keeps its own copy of every initializer, whatever it is given (src/tensor/ort-binding.ts,
// `externalData`), so a weight read from the checkpoint is a copy that lives only while its session is made.
// Made afresh per matrix, each such copy was garbage that waited for V8's next full GC, and under the glibc
// settings of bin/sesa-train.mjs a freed one stays resident: the copies of a 4B shape's load left ~1.6× its
// weights resident (docs/models.md, "Loading"). So matrices are staged in one buffer, made once and reused for
// every matrix up to `STAGING_MAX_BYTES`; a larger weight (a Qwen3 embedding table, 0.6–1.6 GB) gets a buffer
// of its own.
//
// Both are resizable ArrayBuffers, whose memory V8 maps from the system itself rather than from malloc, and
// gives back at `resize(0)` at once: a table's own buffer when its session is made, the shared one at the end
// of a load (`releaseWeightStaging`). A plain ArrayBuffer's memory is malloc's and is freed only when V8 has
// collected it and then swept it on a background thread; under the bin's malloc settings (a threshold of
// ~1 GB for mmap) even then it stays in the process's heap (measured: docs/models.md, "Loading").
import type { RawFill } from '../formats/onnx.js';

/** The largest weight staged in the shared buffer (a 4B shape's largest projection is 95 MiB). */
export const STAGING_MAX_BYTES = 256 * 2 ** 20;

/** ES2024's resizable ArrayBuffer (Node ≥ 20), which this project's TypeScript target does not declare. */
interface ResizableBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
}
const resizable = (byteLength: number, maxByteLength: number): ResizableBuffer =>
  new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ResizableBuffer)(byteLength, { maxByteLength });

let shared: ResizableBuffer | undefined;
let busy = false;

/**
 * Calls `use` with the bytes of `source`: a Float32Array's own bytes (no copy), or a `RawFill` written into the
 * shared staging buffer (or, over `STAGING_MAX_BYTES` or while that one is in use, into one of its own, given
 * back when `use` returns). The bytes are valid only during `use`, and start at a byte offset that is a multiple
 * of 4 (a Float32Array view fits).
 */
export function withWeightBytes<T>(source: Float32Array | RawFill, use: (bytes: Uint8Array) => T): T {
  if (source instanceof Float32Array) return use(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  const n = source.byteLength;
  const own = busy || n > STAGING_MAX_BYTES ? resizable(n, n) : undefined;
  let buffer: ResizableBuffer;
  if (own) buffer = own;
  else {
    shared ??= resizable(0, STAGING_MAX_BYTES);
    if (shared.byteLength < n) shared.resize(n);
    buffer = shared;
    busy = true;
  }
  try {
    const bytes = new Uint8Array(buffer, 0, n);
    source.fill(bytes);
    return use(bytes);
  } finally {
    if (own) own.resize(0);
    else busy = false;
  }
}

/** Gives the shared staging buffer's memory back (the end of a load); the next staged weight takes it again. */
export function releaseWeightStaging(): void {
  if (!busy) shared?.resize(0);
}

/** Bytes of the shared staging buffer now (tests). */
export function weightStagingBytes(): number {
  return shared?.byteLength ?? 0;
}
