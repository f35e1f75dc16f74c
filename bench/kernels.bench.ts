// The GRPO kernels: the fused chunked log-prob against the naive logSoftmax + gather at Qwen3's
// vocab (151,936), forward and forward+backward, time and peak tensor bytes; and the group-advantage kernel
// against its tf-ops composition.
//
// The fused backward is given Wᵀ (a tied embedding table in a real model) so it does not transpose W per call.
//
// Peak bytes are tfjs's own accounting (tf.profile: the high-water mark of live tensor bytes, sampled after
// every kernel), minus the bytes live before the call (the weight and inputs): the working memory of the
// call. The naive form holds several [N × V] float32 tensors on the tape at once (logits, log-softmax,
// one-hot, their product, and the same again in the backward); when its estimate exceeds the wasm heap
// (4 GiB) it is not attempted (an out-of-bounds failure leaves the wasm backend unusable for the
// rest of the run) and the row reports the estimate instead.
import { initBackend, tf } from '../src/tensor/backend.js';
import { tokenLogProbs } from '../kernels/token-logprob.js';
import { groupAdvantages, groupAdvantagesOps } from '../kernels/group-advantage.js';
import { benchBackends, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

const VOCAB = 151_936;
const WASM_HEAP = 4 * 2 ** 30;
const GiB = 2 ** 30;

interface LogProbCase {
  tokens: number;
  hidden: number;
  chunkSize: number;
  /** Also run the naive form at this size (if it fits). */
  naive: boolean;
}

function cases(backend: string, quick: boolean): LogProbCase[] {
  if (quick) return [{ tokens: backend === 'cpu' ? 32 : 128, hidden: 64, chunkSize: 64, naive: true }];
  // The pure-JS backend runs ~1 GFLOP/s: keep it to a size that finishes in well under a minute.
  if (backend === 'cpu') return [{ tokens: 64, hidden: 128, chunkSize: 32, naive: true }];
  // d = 256 keeps the 4,096-token case to about a minute of matMul on one wasm thread (the point of the
  // comparison is the [N × V] memory, which does not depend on d); 256 tokens is where the naive form fits.
  return [
    { tokens: 256, hidden: 256, chunkSize: 128, naive: true },
    { tokens: 4096, hidden: 256, chunkSize: 128, naive: true },
  ];
}

/** Bytes the naive form keeps alive at its peak (forward tape + backward temporaries), estimated. */
function naivePeakEstimate(n: number, d: number): number {
  return 8 * n * VOCAB * 4 + 2 * n * d * 4;
}

async function measure(fn: () => tf.Tensor | tf.Tensor[]): Promise<{ seconds: number; peakExtra: number }> {
  const startBytes = tf.memory().numBytes;
  const t0 = performance.now();
  let info: Awaited<ReturnType<typeof tf.profile>>;
  try {
    info = await tf.profile(() => {
      const out = fn();
      tf.dispose(out);
    });
  } catch (err) {
    // tf.profile leaves the engine in profiling mode when its query throws, and every later kernel then pays
    // the profiler's per-kernel bookkeeping: the rest of the run crawls. Switch it off before reporting.
    (tf.engine() as unknown as { state: { profiling: boolean } }).state.profiling = false;
    throw err;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, peakExtra: Math.max(0, info.peakBytes - startBytes) };
}

function naiveLogProbs(h: tf.Tensor2D, w: tf.Tensor2D, t: tf.Tensor1D): tf.Tensor1D {
  return tf.sum(tf.mul(tf.cast(tf.oneHot(t, VOCAB), 'float32'), tf.logSoftmax(tf.matMul(h, w))), 1) as tf.Tensor1D;
}

async function logProbRows(backend: string, c: LogProbCase, ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const name = `V=${VOCAB.toLocaleString('en-US')} N=${c.tokens} d=${c.hidden}`;
  const engine = `sesa/${backend}`;
  const w = tf.tidy(() => tf.mul(tf.randomNormal([c.hidden, VOCAB], 0, 1, 'float32', 1), 1 / Math.sqrt(c.hidden))) as tf.Tensor2D;
  const h = tf.randomNormal([c.tokens, c.hidden], 0, 1, 'float32', 2) as tf.Tensor2D;
  const t = tf.tidy(() => tf.cast(tf.mul(tf.randomUniform([c.tokens], 0, 1, 'float32', 3), VOCAB - 1), 'int32')) as tf.Tensor1D;
  // The weight transposed once, as a model with tied embeddings has it ([V, d] is the embedding table); without
  // it every backward transposes W and XNNPACK re-packs the new tensor.
  const wT = tf.transpose(w) as tf.Tensor2D;
  // XNNPACK packs a matMul's right operand on its first use with that tensor and reuses the packing after:
  // do that here, so the timings below are those of a training step (the weight persists across steps).
  tf.tidy(() => {
    tf.matMul(tf.slice(h, [0, 0], [1, c.hidden]), w).dataSync();
    tf.matMul(tf.ones([1, VOCAB]), wT).dataSync();
  });
  const flops = 2 * c.tokens * c.hidden * VOCAB;
  const push = (kind: string, variant: string, r: { seconds: number; peakExtra: number }, matmuls: number) => {
    ctx.log(`${backend} ${name} ${variant} ${kind}: ${r.seconds.toFixed(2)} s, peak +${(r.peakExtra / GiB).toFixed(3)} GiB`);
    rows.push({
      case: `log-prob ${variant} ${kind} ${name}`,
      engine,
      metric: 'time',
      value: r.seconds,
      unit: 's',
      notes: `one call (weight already packed by XNNPACK; fused backward given Wᵀ); ${((matmuls * flops) / r.seconds / 1e9).toFixed(1)} GFLOP/s in its ${matmuls} [N×d]·[d×V]-sized matMul(s)`,
    });
    rows.push({
      case: `log-prob ${variant} ${kind} ${name}`,
      engine,
      metric: 'peak bytes',
      value: r.peakExtra / GiB,
      unit: 'GiB',
      notes: 'tf.profile high-water of live tensor bytes minus the bytes live before the call',
    });
  };
  try {
    // Fused, chunked.
    const dy = tf.ones([c.tokens]) as tf.Tensor1D;
    const fusedFwd = await measure(() => tokenLogProbs(h, w, t, { chunkSize: c.chunkSize }));
    push('fwd', `fused(chunk ${c.chunkSize})`, fusedFwd, 1);
    const fusedBwd = await measure(() =>
      tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tokenLogProbs(x as tf.Tensor2D, w, t, { chunkSize: c.chunkSize, weightT: wT }), dy)))(h),
    );
    push('fwd+bwd', `fused(chunk ${c.chunkSize})`, fusedBwd, 3);
    // Naive: logSoftmax over [N, V], then the one-hot gather (the form that is differentiable on wasm).
    if (c.naive) {
      const estimate = naivePeakEstimate(c.tokens, c.hidden) + tf.memory().numBytes;
      if (backend === 'wasm' && estimate > 0.9 * WASM_HEAP) {
        const note = `not run: estimated ${(estimate / GiB).toFixed(1)} GiB (8 [N×V] float32 tensors + the weight) > the 4 GiB wasm heap`;
        ctx.log(`${backend} ${name} naive: ${note}`);
        rows.push({ case: `log-prob naive fwd+bwd ${name}`, engine, metric: 'peak bytes', value: estimate / GiB, unit: 'GiB (estimate)', notes: note });
      } else {
        try {
          const naiveFwd = await measure(() => naiveLogProbs(h, w, t));
          push('fwd', 'naive', naiveFwd, 1);
          const naiveBwd = await measure(() => tf.grad((x: tf.Tensor) => tf.sum(tf.mul(naiveLogProbs(x as tf.Tensor2D, w, t), dy)))(h));
          push('fwd+bwd', 'naive', naiveBwd, 2);
        } catch (err) {
          const msg = (err as Error).message.split('\n')[0] ?? String(err);
          ctx.log(`${backend} ${name} naive failed: ${msg}`);
          rows.push({ case: `log-prob naive ${name}`, engine, metric: 'failed', value: Number.NaN, unit: '', notes: `failed: ${msg}` });
        }
      }
    }
    dy.dispose();
  } finally {
    tf.dispose([w, wT, h, t]);
  }
  return rows;
}

function advantageRows(backend: string, ctx: BenchContext): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const [groups, g] of [
    [16, 16],
    [256, 16],
  ] as const) {
    const r = tf.randomUniform([groups, g], 0, 1, 'float32', 4) as tf.Tensor2D;
    for (const [variant, fn] of [
      ['kernel', () => groupAdvantages(r)],
      ['tf ops', () => groupAdvantagesOps(r)],
    ] as const) {
      fn().dispose();
      const times: number[] = [];
      const reps = ctx.quick ? 20 : 200;
      for (let s = 0; s < 5; s++) {
        const t0 = performance.now();
        for (let i = 0; i < reps; i++) fn().dispose();
        times.push((performance.now() - t0) / reps);
      }
      const ms = median(times);
      ctx.log(`${backend} advantages ${variant} [${groups}, ${g}]: ${(ms * 1000).toFixed(1)} µs`);
      rows.push({
        case: `group advantages ${variant} [${groups}×${g}] grpo`,
        engine: `sesa/${backend}`,
        metric: 'time',
        value: ms * 1000,
        unit: 'µs/call',
        notes: 'forward only; median of 5 samples',
      });
    }
    r.dispose();
  }
  return rows;
}

export const suite: BenchSuite = {
  name: 'kernels',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    for (const backend of benchBackends(ctx)) {
      if (backend === 'tensorflow') continue; // not installable here; the kernels fall back to tf ops there
      await initBackend(backend);
      const before = tf.memory().numTensors;
      rows.push(...advantageRows(backend, ctx));
      // Warm-up at a small size (kernel compilation, first-call costs).
      tf.tidy(() => {
        const h = tf.randomNormal([8, 16]) as tf.Tensor2D;
        const w = tf.randomNormal([16, 64]) as tf.Tensor2D;
        const t = tf.zeros([8], 'int32') as tf.Tensor1D;
        tf.grad((x: tf.Tensor) => tf.sum(tokenLogProbs(x as tf.Tensor2D, w, t, { chunkSize: 3 })))(h);
        tf.grad((x: tf.Tensor) => tf.sum(naiveLogProbs(x as tf.Tensor2D, tf.randomNormal([16, VOCAB]) as tf.Tensor2D, t)))(h);
      });
      for (const c of cases(backend, ctx.quick)) rows.push(...(await logProbRows(backend, c, ctx)));
      const leaked = tf.memory().numTensors - before;
      // tf.profile itself keeps one tensor per profiled call whose ops nest kernels in a customGrad (tfjs's
      // logSoftmax does too); the kernels leak nothing outside it (tested). So this is informational only.
      if (leaked !== 0) ctx.log(`${backend}: ${leaked} tensors still live after the suite (tf.profile keeps some)`);
    }
    return rows;
  },
};
