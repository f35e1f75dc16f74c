// Where a frozen weight's bytes wait between the checkpoint and onnxruntime (./frozen-matrix.ts, ./frozen-table.ts).
//
// onnxruntime keeps its own copy of every initializer, whatever it is given (src/tensor/ort-binding.ts,
// `externalData`), so a weight read from the checkpoint is a copy that lives only while its session is made.
// Made afresh per matrix, each such copy was garbage that waited for V8's next full GC, and under the glibc
// settings of bin/sesa-train.mjs a freed one stays resident: the copies of a 4B shape's load left ~1.6× its
// weights resident (docs/models.md, "Loading"). So matrices are staged in one buffer, made once and reused for
// every matrix up to `STAGING_MAX_BYTES`; a larger weight (a Qwen3 embedding table, 0.6–1.6 GB) gets a buffer
// of its own, dropped when its session is made.
import type { RawFill } from '../formats/onnx.js';

/** The largest weight staged in the shared buffer (a 4B shape's largest projection is 95 MiB). */
export const STAGING_MAX_BYTES = 256 * 2 ** 20;

let shared: Uint8Array | undefined;
let busy = false;

/**
 * Calls `use` with the bytes of `source`: a Float32Array's own bytes (no copy), or a `RawFill` written into the
 * shared staging buffer (or, over `STAGING_MAX_BYTES` or while that one is in use, into one of its own). The
 * bytes are valid only during `use`, and start at a byte offset that is a multiple of 4 (a Float32Array view fits).
 */
export function withWeightBytes<T>(source: Float32Array | RawFill, use: (bytes: Uint8Array) => T): T {
  if (source instanceof Float32Array) return use(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  const n = source.byteLength;
  const own = busy || n > STAGING_MAX_BYTES;
  let bytes: Uint8Array;
  if (own) bytes = new Uint8Array(n);
  else {
    if (!shared || shared.byteLength < n) shared = new Uint8Array(Math.max(n, Math.min(STAGING_MAX_BYTES, 2 * (shared?.byteLength ?? 0))));
    bytes = shared.subarray(0, n);
    busy = true;
  }
  try {
    source.fill(bytes);
    return use(bytes);
  } finally {
    if (!own) busy = false;
  }
}

/** Bytes of the shared staging buffer now (tests). */
export function weightStagingBytes(): number {
  return shared?.byteLength ?? 0;
}
