// matMul GFLOP/s per tfjs backend (wasm on 1 thread and on all cores): square 256 and 1024, a projection-shaped [128,1024]×[1024,3072], the same
// with B transposed (the slow path on wasm), and a decode-shaped GEMV. f32, 2·M·N·K flops per call.
// The cpu and wasm backends run kernels eagerly and synchronously, so the time of `tf.matMul` is the time of
// the multiplication (the result is not read back).
import { tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { benchEngines, initEngine, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface MatMulCase {
  name: string;
  m: number;
  k: number;
  n: number;
  transposeB: boolean;
  /** Skipped on the cpu backend in quick mode (seconds per call there). */
  heavy?: boolean;
}

const CASES: MatMulCase[] = [
  { name: '256×256×256', m: 256, k: 256, n: 256, transposeB: false },
  { name: '1024×1024×1024', m: 1024, k: 1024, n: 1024, transposeB: false, heavy: true },
  { name: '[128,1024]×[1024,3072]', m: 128, k: 1024, n: 3072, transposeB: false },
  { name: '[128,1024]×[3072,1024]ᵀ (transposeB)', m: 128, k: 1024, n: 3072, transposeB: true },
  { name: '[1,1024]×[1024,3072] (GEMV)', m: 1, k: 1024, n: 3072, transposeB: false },
];

function randomTensor(shape: [number, number], rng: Rng): tf.Tensor2D {
  const data = new Float32Array(shape[0] * shape[1]);
  for (let i = 0; i < data.length; i++) data[i] = rng.next() * 2 - 1;
  return tf.tensor2d(data, shape);
}

/** Median seconds per call: one warm-up call, then `samples` samples of enough calls to last ≥ minSampleS. */
function timeCall(fn: () => void, samples: number, minSampleS: number): number {
  let t0 = performance.now();
  fn();
  const warm = (performance.now() - t0) / 1000;
  const perSample = Math.max(1, Math.ceil(minSampleS / Math.max(warm, 1e-6)));
  const times: number[] = [];
  for (let s = 0; s < samples; s++) {
    t0 = performance.now();
    for (let i = 0; i < perSample; i++) fn();
    times.push((performance.now() - t0) / 1000 / perSample);
  }
  return median(times);
}

export const suite: BenchSuite = {
  name: 'matmul',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const rng = new Rng(7);
    for (const engine of benchEngines(ctx, 'tfjs')) {
      const backend = engine.backend;
      await initEngine(engine);
      const before = tf.memory().numTensors;
      for (const c of CASES) {
        if (ctx.quick && backend === 'cpu' && c.heavy) continue;
        // The cpu backend takes seconds per 1024³ call: fewer samples there.
        const samples = ctx.quick ? 2 : backend === 'cpu' ? 3 : 5;
        const a = randomTensor([c.m, c.k], rng);
        const b = randomTensor(c.transposeB ? [c.n, c.k] : [c.k, c.n], rng);
        try {
          const seconds = timeCall(
            () => tf.matMul(a, b, false, c.transposeB).dispose(),
            samples,
            backend === 'cpu' ? 0.5 : 0.2,
          );
          const gflops = (2 * c.m * c.n * c.k) / seconds / 1e9;
          ctx.log(`${engine.label} ${c.name}: ${(seconds * 1000).toFixed(2)} ms, ${gflops.toFixed(2)} GFLOP/s`);
          rows.push({
            case: c.name,
            engine: engine.label,
            metric: 'matMul',
            value: gflops,
            unit: 'GFLOP/s',
            notes: `f32; median of ${samples} samples after one warm-up call; no llama.cpp counterpart (it exposes no matMul)`,
          });
        } finally {
          a.dispose();
          b.dispose();
        }
      }
      const leaked = tf.memory().numTensors - before;
      if (leaked !== 0) ctx.log(`warning: ${leaked} tensors leaked on ${engine.label}`);
    }
    return rows;
  },
};
