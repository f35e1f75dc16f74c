// What the wasm backend's heap holds, for the memory plans above it (src/rl/memory-budget.ts, the model-size
// check of src/model/memory-need.ts, doctor): its fixed limit and the packed copy of the weights XNNPACK keeps.

/** The wasm backend's heap cannot grow past this. */
export const WASM_HEAP_LIMIT_BYTES = 4 * 2 ** 30;

/**
 * Bytes of the packed weights XNNPACK keeps on wasm: a packed f32 copy of every weight matrix a matMul has read,
 * counted as the whole model (f32). Measured: the heap grew by ~450 MiB on the first forward of a ~100M model
 * (100M parameters, 382 MiB as f32).
 */
export function packedWeightBytes(parameters: number): number {
  return 4 * parameters;
}
