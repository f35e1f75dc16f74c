// The 8-bit frozen base (`--backend native-int8`, src/tensor/block-int8.ts): the block quantizer against its
// definition, each product against a bound derived from both roundings (the weight's and onnxruntime's int8
// activations), and a model on it against the f32 native path: what moves and by how much.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkNativeModelMemory } from '../src/doctor/model.js';
import { loadModelConfig } from '../src/model/config.js';
import { backendRefusal, memoryNeed, memoryNeedOfConfig, parameterCount } from '../src/model/memory-need.js';
import { activeBackend, describeBackend, initBackend, tf } from '../src/tensor/backend.js';
import { roundHalfAway } from '../src/formats/gguf.js';
import { BLOCK, type BlockInt8, blockInt8Bytes, dequantized, quantizeBlocks } from '../src/tensor/block-int8.js';
import { NativeMatrix } from '../src/tensor/frozen-matrix.js';
import { nativeFrozenBase } from '../src/tensor/native-matmul.js';
import { Rng } from '../src/util/rng.js';
import { makeNativeTestModel, type NativeTestRun, nativeTestSequences, runNativeTestModel } from './helpers/native-model.js';

function values(n: number, rng: Rng): Float32Array {
  // Mixed signs and magnitudes, so blocks have different scales.
  return Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 10 ** (rng.int(3) - 1));
}

afterAll(async () => {
  await initBackend('wasm', { threads: 1 });
});

describe('8-bit blocks', () => {
  it('round each value to the nearest of 255 steps of its block scale max|block|/127, a last partial block padded', () => {
    const rng = new Rng(3);
    const rows = 5;
    const cols = 70; // two full blocks and one of 6
    const w = values(rows * cols, rng);
    w.fill(0, 2 * cols, 2 * cols + BLOCK); // a block of zeros
    const m = quantizeBlocks(w, rows, cols, cols, 1);
    expect(m.q.length).toBe(rows * 3 * BLOCK);
    expect(m.scales.length).toBe(rows * 3);
    for (let r = 0; r < rows; r++) {
      for (let b = 0; b < 3; b++) {
        const block = Array.from(w.subarray(r * cols + b * BLOCK, r * cols + Math.min(cols, (b + 1) * BLOCK)));
        const max = Math.max(...block.map(Math.abs));
        const s = m.scales[r * 3 + b] as number;
        expect(s).toBe(max > 0 ? Math.fround(max / 127) : 1);
        block.forEach((v, j) => {
          const c = b * BLOCK + j;
          const back = dequantized(m, r, c);
          // Round to nearest: within half a step (and the largest value is at most one float32 ulp off 127 steps).
          expect(Math.abs(back - v)).toBeLessThanOrEqual(s / 2 + Math.abs(v) * 2 ** -22);
          // ggml's arithmetic: float32 reciprocal and product, halves away from zero.
          expect(back + 0).toBe(s * roundHalfAway(Math.fround(v * Math.fround(1 / s))) + 0);
        });
        // Padding stands for zero.
        for (let j = block.length; j < BLOCK; j++) expect(m.q[(r * 3 + b) * BLOCK + j]).toBe(128);
      }
    }
    expect(m.q.subarray(2 * 3 * BLOCK, 2 * 3 * BLOCK + BLOCK).every((q) => q === 128)).toBe(true);
    expect(blockInt8Bytes(rows, cols)).toBe(m.q.length + 4 * m.scales.length);
  });

  it("round a bf16 tie as ggml's Q8_0 does (float32 reciprocal and product, away from zero), where w / s in float64 would not", () => {
    // max 0.0908203125 gives s = fround(max / 127); ±0.04541015625 · fround(1 / s) is ±63.5 in float32 (→ ±64),
    // while 0.04541015625 / s in float64 is just under 63.5 (→ 63).
    const w = new Float32Array(BLOCK);
    w[0] = 0.0908203125;
    w[1] = 0.04541015625;
    w[2] = -0.04541015625;
    const s = Math.fround(0.0908203125 / 127);
    expect(Math.round(0.04541015625 / s)).toBe(63);
    const m = quantizeBlocks(w, 1, BLOCK, BLOCK, 1);
    expect(Array.from(m.q.subarray(0, 3))).toEqual([128 + 127, 128 + 64, 128 - 64]);
  });

  it("quantize W's columns through strides exactly as an explicit transpose's rows", () => {
    const rng = new Rng(4);
    const [out, inDim] = [40, 96];
    const w = values(out * inDim, rng);
    const t = new Float32Array(inDim * out);
    for (let o = 0; o < out; o++) for (let i = 0; i < inDim; i++) t[i * out + o] = w[o * inDim + i] as number;
    const strided = quantizeBlocks(w, inDim, out, 1, inDim);
    const explicit = quantizeBlocks(t, inDim, out, out, 1);
    expect(strided.q).toEqual(explicit.q);
    expect(strided.scales).toEqual(explicit.scales);
  });
});

/**
 * x [n, K] · Ŵᵀ in float64, with Ŵ the quantized [N, K], and the bound of onnxruntime's int8 product against
 * it: each block of 32 of x is rounded to int8 with the scale max|block|/127 (error ≤ half a step), so
 * |y − x·Ŵᵀ| ≤ Σ_blocks (s_x / 2) · Σ_k |Ŵ[n, k]|, plus float32 summation (K · 2⁻²⁴ · Σ|x·Ŵ|).
 */
function productBound(x: Float32Array, n: number, m: BlockInt8): { y: Float64Array; bound: Float64Array } {
  const K = m.cols;
  const N = m.rows;
  const y = new Float64Array(n * N);
  const bound = new Float64Array(n * N);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      let b = 0;
      let abs = 0;
      for (let start = 0; start < K; start += BLOCK) {
        let xmax = 0;
        let wsum = 0;
        for (let k = start; k < Math.min(K, start + BLOCK); k++) {
          const xv = x[r * K + k] as number;
          const wv = dequantized(m, j, k);
          s += xv * wv;
          abs += Math.abs(xv * wv);
          xmax = Math.max(xmax, Math.abs(xv));
          wsum += Math.abs(wv);
        }
        b += (xmax / 127 / 2) * wsum;
      }
      y[r * N + j] = s;
      bound[r * N + j] = b * 1.001 + K * 2 ** -24 * abs;
    }
  }
  return { y, bound };
}

function worstOverBound(got: Float32Array, ref: { y: Float64Array; bound: Float64Array }): number {
  let worst = 0;
  got.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - (ref.y[i] as number)) / (ref.bound[i] as number))));
  return worst;
}

describe('a frozen matrix in 8-bit blocks', () => {
  it('forms x·W and dy·Wᵀ from two roundings of W (rows for the forward, columns for the backward) within the int8 bound', async () => {
    await initBackend('native-int8', { threads: 2 });
    expect(nativeFrozenBase()).toBe('int8');
    const rng = new Rng(5);
    const [inDim, outDim] = [96, 64];
    const w = values(outDim * inDim, rng); // [out, in], as stored
    const matrix = new NativeMatrix(inDim, outDim, () => w, 'int8');
    const before = tf.memory().numTensors;
    const n = 20;
    const x = values(n * inDim, rng);
    const dy = values(n * outDim, rng);
    const y = tf.tidy(() => matrix.times(tf.tensor2d(x, [n, inDim])));
    const dx = tf.tidy(() => matrix.timesTransposed(tf.tensor2d(dy, [n, outDim])));
    expect(y.shape).toEqual([n, outDim]);
    expect(dx.shape).toEqual([n, inDim]);
    const forward = quantizeBlocks(w, outDim, inDim, inDim, 1);
    const backward = quantizeBlocks(w, inDim, outDim, 1, inDim);
    expect(worstOverBound(y.dataSync() as Float32Array, productBound(x, n, forward))).toBeLessThanOrEqual(1);
    expect(worstOverBound(dx.dataSync() as Float32Array, productBound(dy, n, backward))).toBeLessThanOrEqual(1);
    // A wrong layout would not be close: the forward against the backward's rounding of another matrix fails.
    expect(worstOverBound(y.dataSync() as Float32Array, productBound(x, n, quantizeBlocks(w, outDim, inDim, 1, outDim)))).toBeGreaterThan(1);
    y.dispose();
    dx.dispose();
    expect(tf.memory().numTensors).toBe(before);
    matrix.dispose();
  });
});

describe('a model on native-int8', () => {
  let root: string;
  let dir: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sesa-int8-'));
    // As test/native-matmul.test.ts: q, o, the MLP and the head are held natively (≥ 2^18 floats).
    dir = makeNativeTestModel(root);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const seqs = nativeTestSequences();
  const run = (backend: 'native' | 'native-int8'): Promise<NativeTestRun> => runNativeTestModel(dir, seqs, backend);

  it('scores and trains LoRA close to the f32 model (an 8-bit base moves log-probs by a few hundredths), holding no weight more in the heap', async () => {
    const f32 = await run('native');
    const int8 = await run('native-int8');
    expect(describeBackend(activeBackend())).toContain('native-int8');
    expect(int8.described).toContain('8-bit blocks');
    expect(int8.heapFloats).toBe(f32.heapFloats);
    // Log-probs: measured 0.062 at most on this random model (log-probs of about −6); the bound leaves over 2×.
    let worst = 0;
    let moved = 0;
    f32.logprobs.forEach((lp, t) => {
      const d = Math.abs(lp - (int8.logprobs[t] as number));
      worst = Math.max(worst, d);
      moved += d > 1e-4 ? 1 : 0;
    });
    expect(int8.logprobs).toHaveLength(f32.logprobs.length);
    expect(moved).toBeGreaterThan(0); // it is another model, not the f32 path under another name
    expect(worst).toBeLessThanOrEqual(0.15);
    // Gradients: relative to the largest, as test/native-matmul.test.ts compares the f32 paths (1e-5 there).
    let scale = 0;
    let diff = 0;
    for (const [k, w] of Object.entries(f32.grads)) {
      const q = int8.grads[k] as Float32Array;
      w.forEach((v, i) => {
        scale = Math.max(scale, Math.abs(v));
        diff = Math.max(diff, Math.abs(v - (q[i] as number)));
      });
    }
    expect(scale).toBeGreaterThan(0);
    expect(diff).toBeLessThanOrEqual(GRADIENT_TOLERANCE * scale);
  });

  it('needs about a quarter of f32 native memory, and is refused only where even that does not fit', () => {
    const n = memoryNeed(4e9, true);
    const f32 = n.backends.find((b) => b.backend === 'native');
    const int8 = n.backends.find((b) => b.backend === 'native-int8');
    expect(int8?.runBytes).toBe(2 * (36 / 32) * 4e9);
    expect((int8?.runBytes as number) / (f32?.runBytes as number)).toBeCloseTo(36 / 32 / 4, 6);
    expect(backendRefusal('qwen3-4b', n, 'native-int8', 24 * 2 ** 30)).toBeUndefined();
    expect(backendRefusal('big', n, 'native-int8', 8 * 2 ** 30)).toMatch(/^big: .*native-int8 backend keeps them in system memory in 8-bit blocks \(8\.4 GiB to train\), more than this machine's 8\.0 GiB/);
    // The f32 refusal names the 8-bit backend as one that would hold it.
    expect(backendRefusal('qwen3-4b', n, 'native', 12 * 2 ** 30)).toContain('--backend native-int8');
  });

  it("doctor counts the 8-bit copies on native-int8, and names native-int8 where f32's copies do not fit", () => {
    const cfg = loadModelConfig(dir);
    const params = parameterCount(cfg);
    // Two 8-bit copies of every frozen matrix (the tied head is the table) and the f32 table once.
    const table = cfg.vocabSize * cfg.hiddenSize;
    const int8Run = 2 * (36 / 32) * params + 4 * table;
    expect(memoryNeedOfConfig(cfg).backends.find((b) => b.backend === 'native-int8')?.runBytes).toBe(int8Run);
    // A machine that holds them and the working memory, but not one f32 copy.
    const small = Math.ceil(int8Run + 4 * params * 0.3) + 1;
    expect(small).toBeLessThan(4 * params);
    const onInt8 = checkNativeModelMemory(cfg, small, 'int8');
    expect(onInt8.status).toBe('ok');
    expect(onInt8.detail).toContain('the frozen base in 8-bit blocks, twice to train');
    expect(checkNativeModelMemory(cfg, Math.floor(int8Run) - 1, 'int8').status).toBe('fail');
    const onF32 = checkNativeModelMemory(cfg, small, 'f32');
    expect(onF32.status).toBe('fail');
    expect(onF32.fix).toContain('--backend native-int8');
  });
});

/** LoRA gradients on the 8-bit base against the f32 one, as a fraction of the largest (measured 0.039; over 2× margin). */
const GRADIENT_TOLERANCE = 0.1;
