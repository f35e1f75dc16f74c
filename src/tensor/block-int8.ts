// A frozen weight in 8-bit blocks, and the onnxruntime model that multiplies by it (docs/method.md, "The tensor
// stack": the 8-bit frozen base). The format is llama.cpp's Q8_0 with a float32 scale:
//
//   W is cut along its inner dimension (the one a product sums over) into blocks of BLOCK = 32 values;
//   block b of row n has the scale s = max_k |W[n, k]| / 127 over its values, and each value is stored as
//   q = roundf(W[n, k] · (1 / s)) + 128 (a byte, 1..255; ggml's reference arithmetic: the reciprocal and the
//   product rounded to float32, halves rounded away from zero; a block of zeros has s = 1 and every q = 128),
//   so that Ŵ[n, k] = s · (q − 128) and |W − Ŵ| ≤ s / 2 = max |block| / 254 (to float32 rounding).
//
// The product is onnxruntime's contrib op MatMulNBits (bits 8, zero point 128 implied when none is given), which
// takes B as [N, K/BLOCK, BLOCK] bytes and scales [N · K/BLOCK]: y[m, n] = Σ_k x[m, k] · Ŵ[n, k]. With
// accuracy_level 4 it also cuts each row of x into blocks of 32 and rounds them to int8 with a scale of their
// own, and sums int8 products (as llama.cpp's Q8_0 product does with its activations): the error is that of
// both roundings, not Ŵ's alone (test/native-int8.test.ts bounds it from first principles).
//
// A frozen W [out, in] (as a checkpoint stores it) serves two products: the forward x·Wᵀ sums over `in`, so it
// quantizes W's rows; the backward dy·W sums over `out`, so it quantizes W's columns (Wᵀ's rows), a second,
// differently rounded copy of W. Each is within s / 2 of W per value; they are not bit-identical to each other.
import { roundHalfAway } from '../formats/gguf.js';
import { ONNX_FLOAT, ONNX_UINT8, encodeOnnxModel } from '../formats/onnx.js';

/** Values per block (llama.cpp's Q8_0 block). */
export const BLOCK = 32;
/** The implied zero point of an 8-bit MatMulNBits weight. */
const ZERO = 128;
/** onnxruntime's int8-compute mode of MatMulNBits (the activations rounded to int8 per block as well). */
const ACCURACY_INT8 = 4;

export interface BlockInt8 {
  /** Rows (N) of the quantized matrix: each is one output of the product. */
  rows: number;
  /** Values per row (K, the inner dimension). */
  cols: number;
  /** [rows, ceil(cols / BLOCK), BLOCK] bytes; a last partial block is padded with the zero point. */
  q: Uint8Array;
  /** [rows · ceil(cols / BLOCK)]. */
  scales: Float32Array;
}

/**
 * Quantizes the `rows` × `cols` matrix whose value (r, c) is `w[r · rowStride + c · colStride]`: W's rows with
 * (cols, 1), W's columns (Wᵀ's rows) with (1, cols of W). No copy of W is made.
 */
export function quantizeBlocks(w: Float32Array, rows: number, cols: number, rowStride: number, colStride: number): BlockInt8 {
  const blocks = Math.ceil(cols / BLOCK);
  const q = new Uint8Array(rows * blocks * BLOCK).fill(ZERO);
  const scales = new Float32Array(rows * blocks);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const start = b * BLOCK;
      const end = Math.min(cols, start + BLOCK);
      let max = 0;
      for (let c = start; c < end; c++) max = Math.max(max, Math.abs(w[r * rowStride + c * colStride] as number));
      const s = max > 0 ? Math.fround(max / 127) : 1;
      const inverse = Math.fround(1 / s);
      scales[r * blocks + b] = s;
      const out = (r * blocks + b) * BLOCK - start;
      for (let c = start; c < end; c++) q[out + c] = Math.max(1, Math.min(255, roundHalfAway(Math.fround((w[r * rowStride + c * colStride] as number) * inverse)) + ZERO));
    }
  }
  return { rows, cols, q, scales };
}

/** Ŵ[r, c], the value a quantized matrix stands for. */
export function dequantized(m: BlockInt8, r: number, c: number): number {
  const blocks = Math.ceil(m.cols / BLOCK);
  const b = Math.floor(c / BLOCK);
  return (m.scales[r * blocks + b] as number) * ((m.q[(r * blocks + b) * BLOCK + (c % BLOCK)] as number) - ZERO);
}

/** The one-node model x [n, cols] → y [n, rows], y = x·Ŵᵀ, with Ŵ as initializers. */
export function blockInt8Model(m: BlockInt8, name: string): Uint8Array {
  const blocks = Math.ceil(m.cols / BLOCK);
  return encodeOnnxModel(
    {
      name,
      nodes: [
        {
          op: 'MatMulNBits',
          domain: 'com.microsoft',
          inputs: ['x', 'w', 'scales'],
          outputs: ['y'],
          attrs: [
            { name: 'K', int: m.cols },
            { name: 'N', int: m.rows },
            { name: 'bits', int: 8 },
            { name: 'block_size', int: BLOCK },
            { name: 'accuracy_level', int: ACCURACY_INT8 },
          ],
        },
      ],
      initializers: [
        { name: 'w', dims: [m.rows, blocks, BLOCK], dataType: ONNX_UINT8, data: m.q },
        { name: 'scales', dims: [m.rows * blocks], dataType: ONNX_FLOAT, data: m.scales },
      ],
      inputs: [{ name: 'x', elemType: ONNX_FLOAT, shape: ['n', m.cols] }],
      outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['n', m.rows] }],
    },
    { opset: 17 },
  );
}

/** Bytes a quantized matrix of `rows` × `cols` takes (values and scales). */
export function blockInt8Bytes(rows: number, cols: number): number {
  const blocks = Math.ceil(cols / BLOCK);
  return rows * blocks * (BLOCK + 4);
}
