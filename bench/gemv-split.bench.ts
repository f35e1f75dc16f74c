// The products of one decoded row, two ways on two threads (issue 63, item 4: choosing how decode uses the
// second core, docs/usage.md "Is decode of one row bound by the bytes?"). The ~100M Qwen3 of the inference
// bench holds 61 matrices natively (per layer q, o, gate, up, down; then the tied head: k and v are too small,
// src/tensor/frozen-matrix.ts `holdsNatively`), and a token runs one product of one row with each, in order:
// - today: one onnxruntime session per matrix with T intra-op threads (its helper threads sleep between calls,
//   src/tensor/ort-binding.ts), T = 1 and 2;
// - split by hand: each matrix in two halves of its output rows, each half a one-thread session; the calling
//   thread runs the first half while a worker thread (bench/native/gemv-split-worker.mjs), which spins on
//   shared memory between products, runs the second; the row's input and the worker's half of the output are
//   copied through shared memory, as a kernel would have to.
// Random weights (products' speed does not depend on the values); the same x for every product. A prototype
// to choose by: nothing in the model uses the split yet.
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { encodeOnnxModel, ONNX_FLOAT } from '../src/formats/onnx.js';
import { createSession, ortAvailability, type OrtNativeSession, view } from '../src/tensor/ort-binding.js';
import { median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

/** [in, out] of the ~100M model's native matrices, in a token's order. */
function decodeShapes(layers: number): Array<[number, number]> {
  const d = 768;
  const ff = 2048;
  const perLayer: Array<[number, number]> = [
    [d, d],
    [d, d],
    [d, ff],
    [d, ff],
    [ff, d],
  ];
  return [...Array.from({ length: layers }, () => perLayer).flat(), [d, 32000]];
}

/** The forward's model of W [out, in] (Gemm, transB = 1), W inline. */
function gemmModel(inDim: number, outDim: number, w: Float32Array): Uint8Array {
  return encodeOnnxModel(
    {
      name: 'gemv',
      nodes: [{ op: 'Gemm', inputs: ['x', 'w'], outputs: ['y'], attrs: [{ name: 'transB', int: 1 }] }],
      initializers: [{ name: 'w', dims: [outDim, inDim], dataType: ONNX_FLOAT, data: w }],
      inputs: [{ name: 'x', elemType: ONNX_FLOAT, shape: ['n', inDim] }],
      outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: ['n', outDim] }],
    },
    { opset: 17 },
  );
}

/** A cheap deterministic fill in [-0.5, 0.5) (an LCG: 400 MB of Rng draws would take longer than the bench). */
function randomFill(a: Float32Array, seed: number): void {
  let s = seed >>> 0;
  for (let i = 0; i < a.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 32 - 0.5;
  }
}

/** Median ms per token over `samples` samples of `tokens` tokens each, after one untimed sample. */
function timeTokens(token: () => void, tokens: number, samples: number): number {
  const times: number[] = [];
  for (let s = 0; s <= samples; s++) {
    const t0 = performance.now();
    for (let t = 0; t < tokens; t++) token();
    if (s > 0) times.push((performance.now() - t0) / tokens);
  }
  return median(times);
}

const SPIN = 2_000_000;

/**
 * Other work between two products, as a decoded token has (the rest of a layer on wasm: norms, k/v, attention):
 * a real decode of this model spends ~4.5 ms a token outside its 61 products on one thread, ~75 µs a product.
 */
const GAP_US = 75;

function busy(us: number): void {
  if (us <= 0) return;
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

export const suite: BenchSuite = {
  name: 'gemv-split',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const status = ortAvailability();
    if (!status.ok) throw new Error(`gemv-split needs onnxruntime-node: ${status.reason}`);
    const shapes = decodeShapes(ctx.quick ? 1 : 12);
    const weights = shapes.map(([i, o], k) => {
      const w = new Float32Array(i * o);
      randomFill(w, 17 + k);
      return w;
    });
    const bytes = 4 * weights.reduce((a, w) => a + w.length, 0);
    const tokens = ctx.quick ? 4 : 32;
    const samples = ctx.quick ? 2 : 7;
    const x = new Float32Array(2048);
    randomFill(x, 3);
    const rows: BenchRow[] = [];
    const caseName = `${shapes.length} products of one row (${(bytes / 1e6).toFixed(0)} MB)`;
    const gapCase = `the same, ${GAP_US} µs of other work after each`;
    const push = (engine: string, ms: number, note: string, gap: boolean): void => {
      const productsMs = gap ? ms - (shapes.length * GAP_US) / 1000 : ms;
      const gbs = bytes / (productsMs / 1000) / 1e9;
      ctx.log(`${engine}${gap ? ` (${GAP_US} µs gaps)` : ''}: ${ms.toFixed(2)} ms a token, products ${gbs.toFixed(1)} GB/s`);
      rows.push({ case: gap ? gapCase : caseName, engine, metric: 'a token', value: ms, unit: 'ms', notes: note });
      rows.push({ case: gap ? gapCase : caseName, engine, metric: 'weights read', value: gbs, unit: 'GB/s', ...(gap ? { notes: `the token's time less its gaps (${((shapes.length * GAP_US) / 1000).toFixed(2)} ms)` } : {}) });
    };

    // Today: one session per matrix with T threads.
    const today = new Map<number, number>();
    for (const threads of ctx.threads > 1 ? [1, ctx.threads] : [1]) {
      const sessions = shapes.map(([i, o], k) => createSession(gemmModel(i, o, weights[k] as Float32Array), { threads }));
      const outs = shapes.map(([, o]) => new Float32Array(o));
      for (const gap of [0, GAP_US]) {
        const ms = timeTokens(
          () => {
            for (let k = 0; k < shapes.length; k++) {
              const [i, o] = shapes[k] as [number, number];
              (sessions[k] as OrtNativeSession).run({ x: view(x.subarray(0, i), [1, i]) }, { y: view(outs[k] as Float32Array, [1, o]) });
              busy(gap);
            }
          },
          tokens,
          samples,
        );
        today.set(threads * 1000 + gap, ms);
        push(`one session a matrix, ${threads}t`, ms, `${threads} intra-op thread(s) a session, no spinning (today's native path)`, gap > 0);
      }
      for (const s of sessions) s.dispose?.();
    }

    if (ctx.threads < 2) {
      ctx.log('one thread: the split (a second thread) is not measured');
      return rows;
    }
    // Split: first half of W's rows here, second half in the worker.
    const halves = shapes.map(([i, o], k) => {
      const w = weights[k] as Float32Array;
      const half = o >> 1;
      return { inDim: i, out: o, half, mine: w.subarray(0, half * i), theirs: w.subarray(half * i) };
    });
    const ctrl = new Int32Array(new SharedArrayBuffer(8 * 4));
    const xs = new Float32Array(new SharedArrayBuffer(4 * 8 * 2048));
    const ys = new Float32Array(new SharedArrayBuffer(4 * 8 * 16000));
    const worker = new Worker(join(import.meta.dirname, 'native', 'gemv-split-worker.mjs'), {
      workerData: {
        ctrl: ctrl.buffer,
        xs: xs.buffer,
        ys: ys.buffer,
        spin: SPIN,
        models: halves.map((h) => ({ bytes: gemmModel(h.inDim, h.out - h.half, h.theirs), inDim: h.inDim, half: h.out - h.half })),
      },
    });
    try {
      await new Promise<void>((res, rej) => {
        worker.once('message', () => res());
        worker.once('error', rej);
      });
      const mine = halves.map((h) => createSession(gemmModel(h.inDim, h.half, h.mine), { threads: 1 }));
      const outs = shapes.map(([, o]) => new Float32Array(o));
      let job = 0;
      for (const gap of [0, GAP_US]) {
        const ms = timeTokens(
          () => {
            for (let k = 0; k < halves.length; k++) {
              const h = halves[k] as (typeof halves)[number];
              const out = outs[k] as Float32Array;
              xs.set(x.subarray(0, h.inDim));
              Atomics.store(ctrl, 1, k);
              Atomics.store(ctrl, 2, 1);
              job++;
              Atomics.store(ctrl, 0, job);
              Atomics.notify(ctrl, 0);
              (mine[k] as OrtNativeSession).run({ x: view(x.subarray(0, h.inDim), [1, h.inDim]) }, { y: view(out.subarray(0, h.half), [1, h.half]) });
              while (Atomics.load(ctrl, 3) !== job);
              out.set(ys.subarray(0, h.out - h.half), h.half);
              busy(gap);
            }
          },
          tokens,
          samples,
        );
        const t2 = today.get(ctx.threads * 1000 + gap) as number;
        const t1 = today.get(1000 + gap) as number;
        push(`split by hand, 1t + worker`, ms, `${(t2 / ms).toFixed(2)}× one session a matrix on ${ctx.threads} threads, ${(t1 / ms).toFixed(2)}× on 1`, gap > 0);
      }
      for (const s of mine) s.dispose?.();
      // A check that the split computes the same product: the last matrix's output against today's 1-thread session.
      const k = halves.length - 1;
      const [i, o] = shapes[k] as [number, number];
      const ref = createSession(gemmModel(i, o, weights[k] as Float32Array), { threads: 1 });
      const want = new Float32Array(o);
      ref.run({ x: view(x.subarray(0, i), [1, i]) }, { y: view(want, [1, o]) });
      ref.dispose?.();
      let maxDiff = 0;
      for (let j = 0; j < o; j++) maxDiff = Math.max(maxDiff, Math.abs((want[j] as number) - ((outs[k] as Float32Array)[j] as number)));
      ctx.log(`split's head output against one session's: max |difference| ${maxDiff.toExponential(2)}`);
      if (maxDiff > 1e-3) throw new Error(`gemv-split: the split product differs from the whole one by ${maxDiff}`);
    } finally {
      Atomics.store(ctrl, 4, 1);
      Atomics.store(ctrl, 0, Atomics.load(ctrl, 0) + 1);
      Atomics.notify(ctrl, 0);
      await worker.terminate();
    }
    return rows;
  },
};
