// How fast this machine reads memory, beside how fast a decoded token reads its weights (issue 63, item 4: is f32
// decode of one row bound by the bytes?). A token of one sequence reads every frozen matrix once, so its speed is
// at most the read rate over the bytes of those matrices. Measured in one run, on 1 and on all threads:
// - the read ceiling: a C loop (bench/native/read-bandwidth.c, built here with the system's gcc; its rows are left
//   out, saying so, where there is none) summing a 384 MiB f32 array (far beyond the caches) on T threads, GB/s
//   (onnxruntime's ReduceSum read the same array at under half of it, so it is no ceiling);
// - one big product of one row: MLAS's [1,4096]×[4096,24576] with the matrix an initializer packed at load, as the
//   native path holds a frozen weight (the same 384 MiB), GB/s of the matrix;
// - the peer, our decode: the inference bench's ~100M Qwen3 (f32, native), a 128-token prompt then 32 greedy
//   decode steps of one row, tok/s and the GB/s of its frozen matrices that gives (every layer's seven and the
//   tied head, 4 bytes a weight; the embedding lookup reads one row).
// The rows say how much of the ceiling each one reaches (the ceiling: the faster of the C loop and the big
// product, per thread count); the decode bound is that ceiling over a token's bytes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { encodeOnnxModel, ONNX_FLOAT } from '../src/formats/onnx.js';
import type { ModelConfig } from '../src/model/config.js';
import { CausalLM } from '../src/model/qwen3.js';
import { createSession, ortAvailability, view } from '../src/tensor/ort-binding.js';
import { tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { decodeSteps, prompts, step } from './inference.bench.js';
import { type KernelProfile, profileKernels, profileRows } from './profile.js';
import { initEngine, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

/** 384 MiB of f32: about the ~100M model's frozen matrices (400 MB), 12× the L3 of this machine's EPYC. */
const READ_FLOATS = 96 * 2 ** 20;
const GEMV_K = 4096;
const GEMV_N = READ_FLOATS / GEMV_K;

/** The inference bench's ~100M Qwen3 (bench/inference.bench.ts, M100). */
const M100 = { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, tie: true, seed: 12, dtype: 'f32' } as const;
const PROMPT = 128;
const DECODE = 32;

/** Bytes of the frozen matrices one decoded token reads: per layer q, k, v, o, gate, up, down; then the head. */
export function decodeMatrixBytes(c: ModelConfig): number {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const perLayer = c.hiddenSize * q * 2 + c.hiddenSize * kv * 2 + c.hiddenSize * c.intermediateSize * 3;
  return 4 * (c.numLayers * perLayer + c.vocabSize * c.hiddenSize);
}

/** Median seconds of `fn` over `samples` calls after `warm` untimed ones. */
function timeRuns(fn: () => void, warm: number, samples: number): number {
  for (let i = 0; i < warm; i++) fn();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    fn();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

/** The C reader built into `dir`; undefined (with the reason) where gcc is missing or fails. */
function buildReader(dir: string): { exe: string } | { error: string } {
  const exe = join(dir, 'read-bandwidth');
  const src = join(import.meta.dirname, 'native', 'read-bandwidth.c');
  try {
    execFileSync('gcc', ['-O3', '-ffast-math', '-march=native', '-pthread', '-o', exe, src], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { exe };
  } catch (err) {
    return { error: `gcc -O3 -march=native ${src} failed: ${(err as Error).message.split('\n')[0]}` };
  }
}

/** The C reader's median GB/s over `passes` timed passes (after one warm-up pass) on `threads` threads. */
function readCeiling(exe: string, floats: number, threads: number, passes: number): number {
  const out = execFileSync(exe, [String(floats), String(threads), String(passes)], { encoding: 'utf8' });
  const parsed = JSON.parse(out) as { gbps: number[] };
  return median(parsed.gbps);
}

function gemvRate(threads: number, weight: Float32Array, samples: number): number {
  const session = createSession(
    encodeOnnxModel(
      {
        name: 'gemv',
        nodes: [{ op: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
        initializers: [{ name: 'w', dims: [GEMV_K, GEMV_N], dataType: ONNX_FLOAT, data: weight }],
        inputs: [{ name: 'x', elemType: ONNX_FLOAT, shape: [1, GEMV_K] }],
        outputs: [{ name: 'y', elemType: ONNX_FLOAT, shape: [1, GEMV_N] }],
      },
      { opset: 17 },
    ),
    { threads },
  );
  const x = new Float32Array(GEMV_K).fill(0.5);
  const out = new Float32Array(GEMV_N);
  const s = timeRuns(() => session.run({ x: view(x, [1, GEMV_K]) }, { y: view(out, [1, GEMV_N]) }), 2, samples);
  session.dispose?.();
  return (4 * weight.length) / s / 1e9;
}

/**
 * A prompt, then `steps` greedy decode steps of one row, the steps run by `around` (a timer or a profiler): the
 * inference bench's own prefill and decode steps (bench/inference.bench.ts), so the two benches time one loop.
 */
async function decodeOnce(model: CausalLM, steps: number, around: (decode: () => Promise<unknown>) => Promise<void>): Promise<void> {
  const cache = model.newCache(1);
  try {
    const next = await step(model, prompts(model.config.vocabSize, 1, PROMPT, 5), cache);
    await around(() => decodeSteps(model, cache, next, steps));
  } finally {
    cache.dispose();
  }
}

/** Greedy decode of one row after a prompt: tok/s of the decode steps (median of `repeats` runs after two warm-up). */
async function decodeRate(model: CausalLM, repeats: number): Promise<number> {
  const once = async (): Promise<number> => {
    let seconds = 0;
    await decodeOnce(model, DECODE, async (decode) => {
      const t0 = performance.now();
      await decode();
      seconds = (performance.now() - t0) / 1000;
    });
    return DECODE / seconds;
  };
  // Two untimed runs first, as the inference bench warms up (one left the first timed runs slower there).
  await once();
  await once();
  const rates: number[] = [];
  for (let r = 0; r < repeats; r++) rates.push(await once());
  return median(rates);
}

/** Kernel groups of the decode steps under tf.profile (where a token's time goes, products and the rest). */
async function decodeProfile(model: CausalLM): Promise<KernelProfile> {
  let profile: KernelProfile | undefined;
  await decodeOnce(model, PROFILED_STEPS, async (decode) => {
    profile = await profileKernels(decode, PROFILE_TOP);
  });
  return profile as KernelProfile;
}

const PROFILED_STEPS = 16;
const PROFILE_TOP = 10;

export const suite: BenchSuite = {
  name: 'memory-read',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const status = ortAvailability();
    if (!status.ok) throw new Error(`memory-read needs onnxruntime-node: ${status.reason}`);
    const rows: BenchRow[] = [];
    const profiles: BenchRow[] = []; // after the speed rows
    const threadCounts = ctx.threads > 1 ? [1, ctx.threads] : [1];
    const samples = ctx.quick ? 3 : 9;
    const floats = ctx.quick ? READ_FLOATS / 8 : READ_FLOATS;
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-read-'));
    try {
      const ceiling = new Map<number, number>();
      const reader = buildReader(root);
      if ('error' in reader) ctx.log(`the read ceiling's rows are left out: ${reader.error}`);
      else {
        for (const threads of threadCounts) {
          const r = readCeiling(reader.exe, floats, threads, samples);
          ceiling.set(threads, r);
          ctx.log(`read ${((4 * floats) / 2 ** 20).toFixed(0)} MiB, ${threads} thread(s): ${r.toFixed(1)} GB/s`);
          rows.push({ case: `read ${((4 * floats) / 2 ** 20).toFixed(0)} MiB f32`, engine: `C sum loop ${threads}t`, metric: 'read', value: r, unit: 'GB/s', notes: `median of ${samples} passes after one; gcc -O3 -ffast-math -march=native: the machine's read ceiling` });
        }
      }
      const ofCeiling = (gbs: number, threads: number): string => {
        const c = ceiling.get(threads);
        return c === undefined ? 'no read ceiling measured' : `${(100 * (gbs / c)).toFixed(0)}% of the read ceiling on ${threads} thread(s) (${c.toFixed(1)} GB/s)`;
      };
      if (!ctx.quick) {
        const data = new Float32Array(floats);
        const rng = new Rng(3);
        for (let i = 0; i < data.length; i++) data[i] = rng.next();
        for (const threads of threadCounts) {
          const r = gemvRate(threads, data, samples);
          const c = ceiling.get(threads);
          const ofC = c === undefined ? 'no C loop measured' : `${(100 * (r / c)).toFixed(0)}% of the C loop's read on ${threads} thread(s)`;
          ctx.log(`GEMV [1,${GEMV_K}]×[${GEMV_K},${GEMV_N}], ${threads} thread(s): ${r.toFixed(1)} GB/s (${ofC})`);
          rows.push({ case: `[1,${GEMV_K}]×[${GEMV_K},${GEMV_N}] GEMV`, engine: `onnxruntime MLAS ${threads}t`, metric: 'matrix read', value: r, unit: 'GB/s', notes: `${ofC}; the matrix an initializer, packed at load, median of ${samples}` });
        // MLAS's own read can beat the C loop's (two threads: 38.7 against 34.8 GB/s, 2026-12-07): the ceiling the
        // decode is held to is the faster of the two.
        ceiling.set(threads, Math.max(ceiling.get(threads) ?? 0, r));
        }
      }
        const spec = ctx.quick ? { ...M100, layers: 2, hidden: 256, heads: 4, kvHeads: 2, intermediate: 512, vocab: 4000 } : M100;
        const made = makeTinyCheckpoint({ ...spec, out: join(root, 'm') });
        const bytes = decodeMatrixBytes(made.config);
        for (const threads of threadCounts) {
          await initEngine({ backend: 'native', threads, label: `sesa/native-${threads}t` });
          const before = tf.memory().numTensors;
          const model = await CausalLM.load(join(root, 'm'));
          try {
            const tokS = await decodeRate(model, ctx.quick ? 1 : 5);
            const gbs = (tokS * bytes) / 1e9;
            ctx.log(`decode b1 native ${threads} thread(s): ${tokS.toFixed(1)} tok/s, ${gbs.toFixed(1)} GB/s of ${(bytes / 1e6).toFixed(0)} MB a token (${ofCeiling(gbs, threads)})`);
            const name = `decode b1, ${(made.parameters / 1e6).toFixed(0)}M f32`;
            rows.push({ case: name, engine: `sesa/native-${threads}t`, metric: 'decode', value: tokS, unit: 'tok/s', notes: `${DECODE} steps after a ${PROMPT}-token prompt, median of ${ctx.quick ? 1 : 5}` });
            rows.push({ case: name, engine: `sesa/native-${threads}t`, metric: 'weights read', value: gbs, unit: 'GB/s', notes: `${(bytes / 1e6).toFixed(0)} MB of frozen matrices a token; ${ofCeiling(gbs, threads)}` });
            const c = ceiling.get(threads);
            if (c !== undefined) {
              const bound = (c * 1e9) / bytes;
              rows.push({ case: name, engine: `read ceiling ${threads}t`, metric: 'decode bound', value: bound, unit: 'tok/s', notes: `the read ceiling over ${(bytes / 1e6).toFixed(0)} MB a token: ${(bound / tokS).toFixed(2)}× the decode measured` });
            }
            if (!ctx.quick) profiles.push(...profileRows(`decode b1 profile, ${threads}t (${PROFILED_STEPS} steps)`, await decodeProfile(model)));
          } finally {
            model.dispose();
          }
          const leaked = tf.memory().numTensors - before;
          if (leaked !== 0) ctx.log(`warning: ${leaked} tensors leaked on native-${threads}t`);
        }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return [...rows, ...profiles];
  },
};
