// The native matMul path (src/tensor/native-matmul.ts, src/tensor/frozen-matrix.ts): onnxruntime's MLAS for
// tfjs's large matMuls and for the frozen base, checked against float64 references and against the wasm path.
//
// Tolerances (docs/method.md, "The tensor stack"): a product of K terms in float32 is off its exact value by at
// most about K·2⁻²⁴·Σ|aₖbₖ| whatever the order of the sums; both paths are held to 4× that bound against float64.
// The forward's log-probs are held to the wasm forward's own bound against the float64 reference (1e-4), and a
// GRPO update's LoRA gradients to 1e-5 of the largest gradient against the wasm path's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainingSequence } from '../src/rl/grpo-update.js';
import { activeBackend, initBackend, tf } from '../src/tensor/backend.js';
import { holdsNatively, NATIVE_LINEAR, NATIVE_MIN_FLOATS, NativeMatrix, TensorMatrix } from '../src/tensor/frozen-matrix.js';
import { holdsTableNatively, NativeTable, TensorTable, TiedTable } from '../src/tensor/frozen-table.js';
import { MIN_ROWS, MIN_WORK, nativeMatMulCalls, nativeMatMulThreads } from '../src/tensor/native-matmul.js';
import { matMulT } from '../src/tensor/ops.js';
import { Rng } from '../src/util/rng.js';
import { ONNX_FLOAT, encodeOnnxModel } from '../src/formats/onnx.js';
import { createSession, view } from '../src/tensor/ort-binding.js';
import { releaseWeightStaging, STAGING_MAX_BYTES, weightStagingBytes, withWeightBytes } from '../src/tensor/weight-staging.js';
import { makeNativeTestModel, type NativeTestRun, nativeTestSequences, runNativeTestModel } from './helpers/native-model.js';
import { ReferenceModel } from './helpers/reference-forward.js';

function values(n: number, rng: Rng): Float32Array {
  // Mixed signs and magnitudes.
  return Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 10 ** (rng.int(3) - 1));
}

/** op(a)·op(b) in float64 for 3-D a, b (one side may have a single plane), and the per-element bound Σ|aₖbₖ|. */
function reference(a: Float32Array, aShape: number[], b: Float32Array, bShape: number[], ta: boolean, tb: boolean): { y: Float64Array; bound: Float64Array; K: number } {
  const [pa, ra, ca] = aShape as [number, number, number];
  const [pb, rb, cb] = bShape as [number, number, number];
  const M = ta ? ca : ra;
  const K = ta ? ra : ca;
  const N = tb ? rb : cb;
  const P = Math.max(pa, pb);
  const y = new Float64Array(P * M * N);
  const bound = new Float64Array(P * M * N);
  for (let p = 0; p < P; p++) {
    const ao = (pa === 1 ? 0 : p) * ra * ca;
    const bo = (pb === 1 ? 0 : p) * rb * cb;
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0;
        let m = 0;
        for (let k = 0; k < K; k++) {
          const av = a[ao + (ta ? k * ca + i : i * ca + k)] as number;
          const bv = b[bo + (tb ? j * cb + k : k * cb + j)] as number;
          s += av * bv;
          m += Math.abs(av * bv);
        }
        y[(p * M + i) * N + j] = s;
        bound[(p * M + i) * N + j] = m;
      }
    }
  }
  return { y, bound, K };
}

/** The largest error of `got` against the float64 product, as a multiple of the float32 bound K·2⁻²⁴·Σ|aₖbₖ|. */
function boundMultiple(got: Float32Array, ref: { y: Float64Array; bound: Float64Array; K: number }): number {
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const allowed = ref.K * 2 ** -24 * (ref.bound[i] as number);
    if (allowed > 0) worst = Math.max(worst, Math.abs((got[i] as number) - (ref.y[i] as number)) / allowed);
  }
  return worst;
}

afterAll(async () => {
  await initBackend('wasm', { threads: 1 });
});

describe('tf.matMul on the native backend', () => {
  // [a shape, b shape, transposeA, transposeB]: every layout, 2-D and batched, one side broadcast.
  const cases: Array<[number[], number[], boolean, boolean]> = [
    [[1, 96, 200], [1, 200, 80], false, false],
    [[1, 96, 200], [1, 80, 200], false, true],
    [[1, 200, 96], [1, 200, 80], true, false],
    [[1, 200, 96], [1, 80, 200], true, true],
    [[3, 64, 128], [3, 128, 48], false, false],
    [[3, 64, 128], [1, 48, 128], false, true],
  ];

  it.each(cases)('%j · %j (transposed %s, %s) runs on MLAS within the float32 bound, as the wasm path does', async (aShape, bShape, ta, tb) => {
    const rng = new Rng(aShape[1] as number);
    const a = values(aShape.reduce((x, y) => x * y, 1), rng);
    const b = values(bShape.reduce((x, y) => x * y, 1), rng);
    const ref = reference(a, aShape, b, bShape, ta, tb);
    const product = async (backend: 'wasm' | 'native'): Promise<Float32Array> => {
      await initBackend(backend, { threads: 2 });
      const before = tf.memory().numTensors;
      const y = tf.tidy(() => tf.matMul(tf.tensor3d(a, aShape as [number, number, number]), tf.tensor3d(b, bShape as [number, number, number]), ta, tb));
      const out = y.dataSync() as Float32Array;
      y.dispose();
      expect(tf.memory().numTensors).toBe(before);
      return out;
    };
    const wasm = await product('wasm');
    const calls = nativeMatMulCalls();
    const native = await product('native');
    expect(nativeMatMulCalls()).toBe(calls + 1);
    expect(boundMultiple(wasm, ref)).toBeLessThanOrEqual(4);
    expect(boundMultiple(native, ref)).toBeLessThanOrEqual(4);
  });

  it('leaves small products, and products of few rows, to the stock kernel: the same bits as wasm', async () => {
    const rng = new Rng(5);
    const shapes: Array<[number[], number[]]> = [
      [[MIN_ROWS - 1, 512], [512, 512]], // too few rows, however large
      [[64, 32], [32, 64]], // 64·32·64 = 2^17 < MIN_WORK
    ];
    expect(64 * 32 * 64).toBeLessThan(MIN_WORK);
    for (const [as, bs] of shapes) {
      const a = values(as.reduce((x, y) => x * y, 1), rng);
      const b = values(bs.reduce((x, y) => x * y, 1), rng);
      const run = async (backend: 'wasm' | 'native') => {
        await initBackend(backend, { threads: 1 });
        return tf.tidy(() => tf.matMul(tf.tensor2d(a, as as [number, number]), tf.tensor2d(b, bs as [number, number])).dataSync());
      };
      const want = await run('wasm');
      const calls = nativeMatMulCalls();
      const got = await run('native');
      expect(nativeMatMulCalls()).toBe(calls);
      expect(Array.from(got)).toEqual(Array.from(want));
    }
  });

  it('forms a small product with a transposed operand as the wasm path does (explicit transpose, XNNPACK): the same bits', async () => {
    const rng = new Rng(12);
    const [M, K, N] = [40, 24, 32]; // 30,720 multiply-adds, under MIN_WORK
    const a = values(M * K, rng);
    const b = values(N * K, rng);
    await initBackend('wasm', { threads: 1 });
    const want = tf.tidy(() => tf.matMul(tf.tensor2d(a, [M, K]), tf.transpose(tf.tensor2d(b, [N, K]))).dataSync());
    await initBackend('native', { threads: 1 });
    const got = tf.tidy(() => matMulT(tf.tensor2d(a, [M, K]), tf.tensor2d(b, [N, K]), false, true).dataSync());
    const kernels = (await tf.profile(() => void matMulT(tf.tensor2d(a, [M, K]), tf.tensor2d(b, [N, K]), false, true).dispose())).kernels.map((k) => k.name);
    expect(kernels).not.toContain('Transpose'); // the flag reaches the kernel, which transposes inside
    expect(Array.from(got)).toEqual(Array.from(want));
  });

  it('carries tfjs matMul gradients (their transposed products reach the same kernel) within the float32 bound', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(9);
    const [M, K, N] = [80, 120, 72];
    const a = values(M * K, rng);
    const b = values(K * N, rng);
    const dy = values(M * N, rng);
    const calls = nativeMatMulCalls();
    const [da, db] = tf.tidy(() => {
      const g = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x as tf.Tensor2D, y as tf.Tensor2D), tf.tensor2d(dy, [M, N]))));
      return g([tf.tensor2d(a, [M, K]), tf.tensor2d(b, [K, N])]).map((t) => t.dataSync() as Float32Array);
    }) as unknown as [Float32Array, Float32Array];
    // da = dy·bᵀ and db = aᵀ·dy, both on MLAS (plus the forward).
    expect(nativeMatMulCalls()).toBe(calls + 3);
    expect(boundMultiple(da, reference(dy, [1, M, N], b, [1, K, N], false, true))).toBeLessThanOrEqual(4);
    expect(boundMultiple(db, reference(a, [1, M, K], dy, [1, M, N], true, false))).toBeLessThanOrEqual(4);
  });

  it('is off on the wasm backend, and the backend says which path runs', async () => {
    const native = await initBackend('native', { threads: 2 });
    expect(native.name).toBe('native');
    expect(native.threads).toBe(2);
    expect(nativeMatMulThreads()).toBe(2);
    expect(native.provider).toMatch(/^onnxruntime-node \d+\.\d+\.\d+ \(MLAS\)/);
    expect(tf.getBackend()).toBe('wasm');
    await initBackend('wasm', { threads: 1 });
    expect(nativeMatMulThreads()).toBeUndefined();
    const calls = nativeMatMulCalls();
    tf.tidy(() => tf.matMul(tf.ones([128, 256]), tf.ones([256, 128])));
    expect(nativeMatMulCalls()).toBe(calls);
    expect(activeBackend().name).toBe('wasm');
  });
});

describe('frozen matrices', () => {
  it('NativeMatrix forms x·W and dy·Wᵀ within the float32 bound, in one kernel each, and refuses after dispose', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(3);
    const [inDim, outDim, rows] = [96, 160, 40];
    const stored = values(outDim * inDim, rng); // [out, in], as a checkpoint stores it
    const x = values(rows * inDim, rng);
    const dy = values(rows * outDim, rng);
    let loads = 0;
    const m = new NativeMatrix(inDim, outDim, () => {
      loads++;
      return stored;
    });
    expect(m.heapFloats).toBe(0);
    expect(m.hasBackward).toBe(false);
    const y = tf.tidy(() => m.times(tf.tensor2d(x, [rows, inDim])).dataSync() as Float32Array);
    expect(m.hasBackward).toBe(false); // made on first use only
    const dx = tf.tidy(() => m.timesTransposed(tf.tensor2d(dy, [rows, outDim])).dataSync() as Float32Array);
    expect(loads).toBe(2);
    // x·W with W = storedᵀ; dy·Wᵀ = dy·stored.
    expect(boundMultiple(y, reference(x, [1, rows, inDim], stored, [1, outDim, inDim], false, true))).toBeLessThanOrEqual(4);
    expect(boundMultiple(dx, reference(dy, [1, rows, outDim], stored, [1, outDim, inDim], false, false))).toBeLessThanOrEqual(4);
    const profile = await tf.profile(() => void m.times(tf.zeros([2, inDim])).dispose());
    expect(profile.kernels.map((k) => k.name).filter((n) => n === NATIVE_LINEAR)).toHaveLength(1);
    expect(tf.tidy(() => m.times(tf.zeros([0, inDim])).shape)).toEqual([0, outDim]);
    expect(() => tf.tidy(() => m.times(tf.zeros([2, inDim + 1])))).toThrow(/cannot multiply/);
    m.dispose();
    expect(() => tf.tidy(() => m.times(tf.zeros([2, inDim])))).toThrow(/disposed/);
  });

  it('a loader that writes W\'s bytes into the model (RawFill) gives the same products, bit for bit, as one that returns W', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(5);
    const [inDim, outDim, rows] = [80, 112, 24];
    const stored = values(outDim * inDim, rng);
    const x = tf.tensor2d(values(rows * inDim, rng), [rows, inDim]);
    const dy = tf.tensor2d(values(rows * outDim, rng), [rows, outDim]);
    const bytes = new Uint8Array(stored.buffer, stored.byteOffset, stored.byteLength);
    const fill = { byteLength: stored.byteLength, fill: (target: Uint8Array) => target.set(bytes) };
    for (const layout of ['packed', 'once'] as const) {
      const a = new NativeMatrix(inDim, outDim, () => stored, layout);
      const b = new NativeMatrix(inDim, outDim, () => fill, layout);
      for (const [p, q] of [[a.times(x), b.times(x)], [a.timesTransposed(dy), b.timesTransposed(dy)]] as const) {
        expect(Array.from(q.dataSync()), layout).toEqual(Array.from(p.dataSync()));
        tf.dispose([p, q]);
      }
      a.dispose();
      b.dispose();
    }
    expect(() => new NativeMatrix(inDim, outDim, () => ({ byteLength: 4 * (inDim * outDim - 1), fill: () => {} }))).toThrow(/gave 8959 floats for a \[112, 80\] weight/);
    tf.dispose([x, dy]);
  });

  it('W given as external data, staged in one shared buffer, gives the products of W inlined in the model bytes (the old load), bit for bit, whatever is staged after', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(6);
    const [inDim, outDim, rows] = [96, 104, 20];
    const first = values(outDim * inDim, rng);
    const second = values(outDim * inDim, rng);
    const x = values(rows * inDim, rng);
    const fill = (w: Float32Array) => ({ byteLength: w.byteLength, fill: (target: Uint8Array) => target.set(new Uint8Array(w.buffer)) });
    // The old load: W's bytes inside the model, parsed by onnxruntime.
    const inline = createSession(
      encodeOnnxModel(
        {
          name: 'inline',
          nodes: [{ op: 'Gemm', inputs: ['x', 'w'], outputs: ['y'], attrs: [{ name: 'transB', int: 1 }] }],
          initializers: [{ name: 'w', dims: [outDim, inDim], dataType: ONNX_FLOAT, data: first }],
          inputs: [{ name: 'x', elemType: ONNX_FLOAT, shape: ['n', inDim] }],
          outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['n', outDim] }],
        },
        { opset: 17 },
      ),
      { threads: 2 },
    );
    const want = new Float32Array(rows * outDim);
    inline.run({ x: view(x, [rows, inDim]) }, { y: view(want, [rows, outDim]) });
    for (const layout of ['packed', 'once'] as const) {
      const a = new NativeMatrix(inDim, outDim, () => fill(first), layout);
      expect(weightStagingBytes()).toBeGreaterThanOrEqual(first.byteLength);
      // The next matrix is staged in the same bytes: onnxruntime copied the first one's.
      const b = new NativeMatrix(inDim, outDim, () => fill(second), layout);
      const y = tf.tidy(() => a.times(tf.tensor2d(x, [rows, inDim])).dataSync() as Float32Array);
      expect(Array.from(y), layout).toEqual(Array.from(want));
      // The staging memory given back (the end of a load) changes nothing held, and the next matrix stages again.
      releaseWeightStaging();
      expect(weightStagingBytes()).toBe(0);
      const c = new NativeMatrix(inDim, outDim, () => fill(first), layout);
      expect(weightStagingBytes()).toBeGreaterThanOrEqual(first.byteLength);
      for (const m of [a, c]) expect(Array.from(tf.tidy(() => m.times(tf.tensor2d(x, [rows, inDim])).dataSync() as Float32Array)), layout).toEqual(Array.from(want));
      a.dispose();
      b.dispose();
      c.dispose();
    }
    // A weight over the shared buffer's limit, or staged while that one is in use, gets a buffer of its own.
    const big = { byteLength: STAGING_MAX_BYTES + 4, fill: (target: Uint8Array) => target.fill(7) };
    const seen: number[] = [];
    withWeightBytes(big, (own) => seen.push(own.byteLength, own[own.byteLength - 1] as number, Number(own.byteLength > weightStagingBytes())));
    withWeightBytes(fill(first), (outer) => {
      withWeightBytes(fill(second), (inner) => seen.push(inner.byteLength, Number(inner.buffer === outer.buffer), new Float32Array(inner.buffer, 0, 1)[0] === second[0] ? 1 : 0));
    });
    expect(seen).toEqual([STAGING_MAX_BYTES + 4, 7, 1, second.byteLength, 0, 1]);
    inline.dispose?.();
  });

  it("layout 'once' holds W once, unpacked, in one session of both products: the same products within the bound", async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(8);
    const [inDim, outDim, rows] = [72, 120, 33];
    const stored = values(outDim * inDim, rng);
    const x = values(rows * inDim, rng);
    const dy = values(rows * outDim, rng);
    let loads = 0;
    const m = new NativeMatrix(inDim, outDim, () => (loads++, stored), 'once');
    expect(m.hasBackward).toBe(true);
    const y = tf.tidy(() => m.times(tf.tensor2d(x, [rows, inDim])).dataSync() as Float32Array);
    const dx = tf.tidy(() => m.timesTransposed(tf.tensor2d(dy, [rows, outDim])).dataSync() as Float32Array);
    expect(loads).toBe(1); // one read of the checkpoint, one copy
    expect(boundMultiple(y, reference(x, [1, rows, inDim], stored, [1, outDim, inDim], false, true))).toBeLessThanOrEqual(4);
    expect(boundMultiple(dx, reference(dy, [1, rows, outDim], stored, [1, outDim, inDim], false, false))).toBeLessThanOrEqual(4);
    m.dispose();
  });

  it('only large matrices are held natively, and only on the native backend', async () => {
    await initBackend('native', { threads: 1 });
    expect(holdsNatively(512, 512)).toBe(512 * 512 >= NATIVE_MIN_FLOATS);
    expect(holdsNatively(128, 384)).toBe(false);
    await initBackend('wasm', { threads: 1 });
    expect(holdsNatively(4096, 4096)).toBe(false);
    expect(() => new NativeMatrix(4, 4, () => new Float32Array(16))).toThrow(/native backend/);
    const t = new TensorMatrix(tf.ones([3, 2]) as tf.Tensor2D);
    expect(t.heapFloats).toBe(6);
    t.holdTransposed();
    expect(t.heapFloats).toBe(12);
    t.dispose();
  });
});

describe('frozen tables', () => {
  it('NativeTable gives the rows tf.gather gives, bit for bit, keeps nothing in the heap, and names a bad id', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(23);
    const [rows, cols] = [600, 40];
    const e = values(rows * cols, rng);
    const native = new NativeTable(rows, cols, () => e);
    const tensor = new TensorTable(tf.tensor2d(e, [rows, cols]));
    expect(native.heapFloats).toBe(0);
    expect(tensor.heapFloats).toBe(rows * cols);
    const ids = [0, 599, 17, 17, 301];
    const before = tf.memory().numTensors;
    const a = native.rows(ids);
    const b = tensor.rows(ids);
    expect(a.shape).toEqual([5, cols]);
    expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
    const empty = native.rows([]);
    expect(empty.shape).toEqual([0, cols]);
    tf.dispose([a, b, empty]);
    expect(tf.memory().numTensors).toBe(before);
    expect(() => native.rows([600])).toThrow(/token id 600 is outside the table's 600 rows/);
    native.dispose();
    tensor.dispose();
    expect(() => native.rows([1])).toThrow(/after dispose/);
    expect(holdsTableNatively(512, 512)).toBe(true);
    expect(holdsTableNatively(320, 64)).toBe(false);
  });
  it('a tied head with a lookup (TiedTable) gathers the rows NativeTable gathers and forms the products of a head without one, bit for bit, in both f32 layouts, from one read of the table', async () => {
    await initBackend('native', { threads: 2 });
    const rng = new Rng(29);
    // The table E [V, d] is the head's W as stored ([out, in]): the head is [d, V].
    const [vocab, d, rows] = [640, 48, 37];
    const e = values(vocab * d, rng);
    const fill = { byteLength: e.byteLength, fill: (target: Uint8Array) => target.set(new Uint8Array(e.buffer)) };
    const x = tf.tensor2d(values(rows * d, rng), [rows, d]);
    const dy = tf.tensor2d(values(rows * vocab, rng), [rows, vocab]);
    const one = tf.tensor2d(values(d, rng), [1, d]);
    const ids = [0, 639, 17, 17, 301, 5];
    for (const layout of ['packed', 'once'] as const) {
      const apartTable = new NativeTable(vocab, d, () => fill);
      const apartHead = new NativeMatrix(d, vocab, () => fill, layout);
      let loads = 0;
      const head = new NativeMatrix(d, vocab, () => (loads++, fill), layout, { lookup: true });
      const table = new TiedTable(head);
      expect(loads, layout).toBe(1);
      expect(table.shape).toEqual([vocab, d]);
      expect(table.heapFloats).toBe(0);
      const before = tf.memory().numTensors;
      // Lookups before and after the products, and between them: the session's other nodes change nothing.
      const pairs: Array<[tf.Tensor, tf.Tensor]> = [
        [table.rows(ids), apartTable.rows(ids)],
        [head.times(x), apartHead.times(x)],
        [table.rows([3]), apartTable.rows([3])],
        [head.timesTransposed(dy), apartHead.timesTransposed(dy)],
        [table.rows(ids), apartTable.rows(ids)],
        [head.times(one), apartHead.times(one)],
      ];
      for (const [a, b] of pairs) {
        expect(a.shape, layout).toEqual(b.shape);
        expect(Array.from(a.dataSync()), layout).toEqual(Array.from(b.dataSync()));
      }
      // The rows are E's, exactly.
      expect(Array.from((pairs[0] as [tf.Tensor, tf.Tensor])[0].dataSync())).toEqual(ids.flatMap((i) => Array.from(e.subarray(i * d, (i + 1) * d))));
      const empty = table.rows([]);
      expect(empty.shape).toEqual([0, d]);
      tf.dispose([...pairs.flat(), empty]);
      expect(tf.memory().numTensors, layout).toBe(before);
      expect(() => table.rows([640])).toThrow(/TiedTable: token id 640 is outside the table's 640 rows/);
      // The packed backward's session is made on first use, as without a lookup: one read more.
      expect(loads, layout).toBe(layout === 'packed' ? 2 : 1);
      // The head owns the session: the table's dispose ends only the table's use.
      table.dispose();
      expect(() => table.rows([1])).toThrow(/after dispose/);
      const y = head.times(x);
      y.dispose();
      const again = new TiedTable(head);
      head.dispose();
      expect(() => again.rows([1])).toThrow(/NativeMatrix: used after dispose/);
      apartTable.dispose();
      apartHead.dispose();
    }
    expect(() => new NativeMatrix(d, vocab, () => e, 'int8', { lookup: true })).toThrow(/lookup needs W in f32/);
    const plain = new NativeMatrix(d, vocab, () => e, 'packed');
    expect(() => new TiedTable(plain)).toThrow(/without a lookup/);
    plain.dispose();
    tf.dispose([x, dy, one]);
  });
});

describe('a model on the native backend', () => {
  let root: string;
  let dir: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sesa-native-'));
    // q, o, the MLP and the head are held natively (≥ 2^18 floats); k and v (512 × 128) stay tensors.
    dir = makeNativeTestModel(root);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const seqs = nativeTestSequences();
  const run = (backend: 'wasm' | 'native'): Promise<NativeTestRun> => runNativeTestModel(dir, seqs, backend);

  it('scores within the float64 reference bound, trains LoRA with the wasm path\'s gradients, and keeps its large weights out of the heap', async () => {
    const wasm = await run('wasm');
    const native = await run('native');
    const ref = new ReferenceModel(dir).logProbs((seqs[0] as TrainingSequence).promptIds);
    const ids = (seqs[0] as TrainingSequence).promptIds;
    let worst = 0;
    native.logprobs.forEach((lp, t) => (worst = Math.max(worst, Math.abs(lp - ((ref[t] as Float64Array)[ids[t + 1] as number] as number)))));
    expect(native.logprobs).toHaveLength(ids.length - 1);
    expect(worst).toBeLessThanOrEqual(1e-4);
    let scale = 0;
    let diff = 0;
    for (const [k, w] of Object.entries(wasm.grads)) {
      const n = native.grads[k] as Float32Array;
      expect(n.length).toBe(w.length);
      w.forEach((v, i) => {
        scale = Math.max(scale, Math.abs(v));
        diff = Math.max(diff, Math.abs(v - (n[i] as number)));
      });
    }
    expect(scale).toBeGreaterThan(0);
    expect(diff).toBeLessThanOrEqual(1e-5 * scale);
    // The same model; natively, q, o, the MLP (each with the transpose the wasm update holds for its backward)
    // and the head (the embedding's transpose) left the heap, k and v hold no transpose (the native path
    // multiplies by Wᵀ without forming it), and the embedding table itself is a native Gather.
    expect(native.parameters).toBe(wasm.parameters);
    const held = 2 * 2 * (2 * 512 * 512 + 3 * 512 * 1024) + 2 * 2 * 512 * 128 + 512 * 512 + 512 * 512;
    expect(wasm.heapFloats - native.heapFloats).toBe(held);
  });

  it('the tied table held once (the head\'s lookup) gives the logits, hidden states and LoRA gradients of the table held apart, bit for bit, in both f32 layouts', async () => {
    for (const nativeLayout of ['packed', 'once'] as const) {
      const apart = await runNativeTestModel(dir, seqs, 'native', { nativeLayout, nativeTiedTable: 'apart' });
      const shared = await runNativeTestModel(dir, seqs, 'native', { nativeLayout });
      expect(shared.logits.length).toBe((seqs[0] as TrainingSequence).promptIds.length * 512);
      expect(Array.from(shared.hidden), nativeLayout).toEqual(Array.from(apart.hidden));
      expect(Array.from(shared.logits), nativeLayout).toEqual(Array.from(apart.logits));
      expect(shared.logprobs, nativeLayout).toEqual(apart.logprobs);
      expect(Object.keys(shared.grads).sort()).toEqual(Object.keys(apart.grads).sort());
      for (const [k, g] of Object.entries(apart.grads)) expect(Array.from(shared.grads[k] as Float32Array), `${nativeLayout} ${k}`).toEqual(Array.from(g));
      expect([shared.heapFloats, shared.parameters, shared.described]).toEqual([apart.heapFloats, apart.parameters, apart.described]);
    }
  });
});
