// Inference speed, side by side with llama.cpp on the same weights: prefill tokens/s and decode tokens/s at
// batch 1 and 8, for a tiny Qwen3 and a ~100M-parameter Qwen3, on each tfjs backend (wasm, cpu).
//
// - Weights: a deterministic random checkpoint (make-tiny, f32) made in a temp folder once per run, exported
//   to an f32 GGUF for llama.cpp (node-llama-cpp), and deleted afterwards. Both engines get the same token ids.
// - Prefill = tokens/s of the first forward over a B × P prompt (ours includes the last position's logits,
//   read back to JS, as generate() does; llama.cpp's evaluateWithoutGeneratingNewTokens computes no logits).
// - Decode = tokens/s of the next D single-token steps per sequence with the KV cache (each step: forward,
//   logits of the new position, greedy pick in JS; llama.cpp: `sequence.evaluate` at temperature 0).
// - Two untimed warm-up runs at the measured size, then the median of a few repeats, each on a fresh cache (a
//   smaller warm-up left the first full-size runs slower: on native, ~100M b1 prefill on 2 threads ran at 540,
//   670, then 940–1020 tok/s in successive runs, 2026-12-05). Both engines get the same warm-up.
// - Ours runs on wasm with one thread and with all cores (and on the cpu backend); llama.cpp runs with an F32
//   KV cache and flash attention off (the precision our cache has), on 1 thread and on all cores. `ratio` is
//   ours divided by llama.cpp on the same number of threads for the same case (the cpu backend: 1 thread).
//   Batch 8 on llama.cpp = 8 sequences of one context, evaluated together in the same batches.
// - The cpu backend (~1 GFLOP/s) gets shorter prompts and fewer decode steps on the ~100M model; the case
//   name says P (prompt tokens) and D (decode steps), and llama.cpp is measured at the same P and D.
// - The 8-bit base: where native runs, the ~100M model is also measured on native-int8 (the frozen matrices in
//   8-bit blocks, src/tensor/block-int8.ts), and its peer is llama.cpp on a Q8_0 export of the same checkpoint
//   (rows `llama.cpp-q8_0/Nt`; ratio = native-int8 / that). The tiny model holds no matrix natively, so it
//   has no such rows.
// - Profile: a batch-1 prefill and the decode steps after it, of the ~100M model (quick: tiny) on wasm with all
//   cores, kernels grouped by name and shapes (bench/profile.ts), and the time spent outside kernels.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportGguf } from '../src/checkpoint/export-gguf.js';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import type { KVCache } from '../src/model/kv-cache.js';
import { CausalLM } from '../src/model/qwen3.js';
import { type Llama, type LlamaModel, openLlama } from '../src/llama-cpp/binding.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { profileKernels, profileRows } from './profile.js';
import { type BenchBackend, type BenchEngine, benchEngines, initEngine, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface ModelSpec {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
}

const TINY: ModelSpec = {
  key: 'tiny',
  make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 320, tie: true, seed: 11, dtype: 'f32' },
};

const M100: ModelSpec = {
  key: '100m',
  make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, tie: true, seed: 12, dtype: 'f32' },
};

/** One measured setting: B sequences, P prompt tokens each, D decode steps, `repeats` timed runs. */
interface Setting {
  batch: number;
  prompt: number;
  decode: number;
  repeats: number;
  /** The untimed warm-up runs before the repeats (at the measured size, but for the cpu backend's reduced settings). */
  warm: { batch: number; prompt: number; decode: number; runs: number };
  /** Also measured on llama.cpp with all cores (the cpu backend's reduced settings are not). */
  allCores: boolean;
}

/** Untimed full-size runs before the timed ones (see the header). */
const WARM_RUNS = 2;

function caseName(model: string, s: Setting): string {
  return `${model} b${s.batch} P${s.prompt} D${s.decode}`;
}

function settingsFor(model: ModelSpec, backend: BenchBackend, quick: boolean): Setting[] {
  const at = (batch: number, prompt: number, decode: number, repeats: number, allCores = true): Setting => ({
    batch,
    prompt,
    decode,
    repeats,
    warm: { batch, prompt, decode, runs: WARM_RUNS },
    allCores,
  });
  if (quick) return [at(1, 32, 8, 1), at(8, 32, 8, 1)];
  if (model.key === '100m') {
    if (backend === 'cpu') {
      // ~1 GFLOP/s: ~0.2 GFLOP per token, so a few tokens only, one timed run after a minimal warm-up.
      const warm = { batch: 1, prompt: 4, decode: 1, runs: 1 };
      return [
        { ...at(1, 32, 8, 1, false), warm },
        { ...at(8, 4, 4, 1, false), warm },
      ];
    }
    return [at(1, 128, 32, 3), at(8, 64, 16, 3)];
  }
  return [at(1, 128, 32, 3), at(8, 128, 32, 3)];
}

interface Timing {
  prefillTokS: number;
  decodeTokS: number;
}

export function prompts(vocab: number, batch: number, length: number, seed: number): number[][] {
  const rng = new Rng(seed);
  // Stay below the 3 special ids at the end of the tiny vocabulary.
  return Array.from({ length: batch }, () => Array.from({ length }, () => rng.int(vocab - 3)));
}

// ----- ours -----

/** Greedy next id of every row from the last position of hidden [B, T, d] (read back to JS). */
async function greedyLast(model: CausalLM, hidden: tf.Tensor3D): Promise<number[]> {
  const [B, T, d] = hidden.shape;
  const V = model.config.vocabSize;
  const logits = tf.tidy(() => model.logits(tf.reshape(tf.slice(hidden, [0, T - 1, 0], [B, 1, d]), [B, d]) as tf.Tensor2D));
  const values = (await logits.data()) as Float32Array;
  logits.dispose();
  const next: number[] = [];
  for (let b = 0; b < B; b++) {
    let best = 0;
    let bestV = -Infinity;
    for (let v = 0; v < V; v++) {
      const x = values[b * V + v] as number;
      if (x > bestV) {
        bestV = x;
        best = v;
      }
    }
    next.push(best);
  }
  return next;
}

/** Runs `ids` through the model into `cache` (a prefill, or one decode step); the greedy next id per row. */
export async function step(model: CausalLM, ids: number[][], cache: KVCache): Promise<number[]> {
  const h = model.forward(ids, { cache });
  const next = await greedyLast(model, h);
  h.dispose();
  return next;
}

/** `steps` greedy decode steps from `next`; the ids after the last one. */
export async function decodeSteps(model: CausalLM, cache: KVCache, next: number[], steps: number): Promise<number[]> {
  let ids = next;
  for (let i = 0; i < steps; i++) {
    ids = await step(
      model,
      ids.map((t) => [t]),
      cache,
    );
  }
  return ids;
}

async function sesaOnce(model: CausalLM, ids: number[][], decode: number): Promise<{ prefillS: number; decodeS: number }> {
  const cache = model.newCache(ids.length);
  try {
    const t0 = performance.now();
    const next = await step(model, ids, cache);
    const t1 = performance.now();
    await decodeSteps(model, cache, next, decode);
    const t2 = performance.now();
    return { prefillS: (t1 - t0) / 1000, decodeS: (t2 - t1) / 1000 };
  } finally {
    cache.dispose();
  }
}

async function sesaMeasure(model: CausalLM, s: Setting, seed: number): Promise<Timing> {
  const ids = prompts(model.config.vocabSize, s.batch, s.prompt, seed);
  // Warm-up: the same kernels, shorter (it only needs to touch every kernel and the weights once).
  for (let w = 0; w < s.warm.runs; w++) await sesaOnce(model, prompts(model.config.vocabSize, s.warm.batch, s.warm.prompt, seed + 1 + w), s.warm.decode);
  const pre: number[] = [];
  const dec: number[] = [];
  for (let r = 0; r < s.repeats; r++) {
    const t = await sesaOnce(model, ids, s.decode);
    pre.push((s.batch * s.prompt) / t.prefillS);
    dec.push((s.batch * s.decode) / t.decodeS);
  }
  return { prefillTokS: median(pre), decodeTokS: median(dec) };
}

/** Decode steps in the profile (after a prefill of PROFILE_PROMPT tokens). */
const PROFILE_DECODE = 8;
const PROFILE_PROMPT = 128;

/** Kernel profiles of a batch-1 prefill and of the decode steps after it (the ~100M model on all cores). */
async function profileInference(model: CausalLM, seed: number, label: string, key: string): Promise<BenchRow[]> {
  const ids = prompts(model.config.vocabSize, 1, PROFILE_PROMPT, seed);
  const cache = model.newCache(1);
  try {
    let next: number[] = [];
    const prefill = await profileKernels(async () => {
      next = await step(model, ids, cache);
    }, 8);
    const decode = await profileKernels(() => decodeSteps(model, cache, next, PROFILE_DECODE), 8);
    return [
      ...profileRows(`profile: ${key} prefill b1 P${PROFILE_PROMPT} (${label})`, prefill),
      ...profileRows(`profile: ${key} decode b1, ${PROFILE_DECODE} steps (${label})`, decode),
    ];
  } finally {
    cache.dispose();
  }
}

// ----- llama.cpp (node-llama-cpp) -----

/** A llama.cpp row's engine label: `llama.cpp/2t` on the f32 GGUF, `llama.cpp-q8_0/2t` on the Q8_0 one. */
function peerLabel(type: 'f32' | 'q8_0', threads: number): string {
  return `llama.cpp${type === 'f32' ? '' : '-q8_0'}/${threads}t`;
}

async function cpuLlama(): Promise<{ llama: Llama } | { error: string }> {
  try {
    return { llama: await openLlama({ gpu: false, maxThreads: availableParallelism() }) };
  } catch (err) {
    return { error: (err as Error).message.split('\n')[0] ?? 'unknown error' };
  }
}

async function llamaMeasure(model: LlamaModel, s: Setting, threads: number, repeats: number, vocab: number, seed: number): Promise<Timing> {
  const ids = prompts(vocab, s.batch, s.prompt, seed);
  const perSeq = s.prompt + s.decode + 16;
  const context = await model.createContext({
    contextSize: s.batch * perSeq,
    sequences: s.batch,
    batchSize: Math.max(s.batch * s.prompt, 32),
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
    threads: { ideal: threads, min: threads },
  });
  try {
    const seqs = ids.map(() => context.getSequence());
    const once = async (promptIds: number[][], decode: number): Promise<{ prefillS: number; decodeS: number }> => {
      await Promise.all(seqs.map((q) => q.clearHistory()));
      const t0 = performance.now();
      await Promise.all(seqs.map((q, i) => q.evaluateWithoutGeneratingNewTokens(promptIds[i] as number[])));
      const t1 = performance.now();
      const counts = await Promise.all(
        seqs.map(async (q, i) => {
          let n = 0;
          if (decode === 0) return 0;
          for await (const _tok of q.evaluate([(promptIds[i] as number[])[0] as number], { temperature: 0 })) {
            if (++n >= decode) break;
          }
          return n;
        }),
      );
      const t2 = performance.now();
      if (counts.some((c) => c !== decode)) throw new Error(`llama.cpp decoded ${counts.join(',')} tokens, expected ${decode} per sequence`);
      return { prefillS: (t1 - t0) / 1000, decodeS: (t2 - t1) / 1000 };
    };
    // One prompt per sequence of the context (the warm-up's own batch may be smaller: the cpu backend's).
    for (let w = 0; w < s.warm.runs; w++) await once(prompts(vocab, s.batch, s.warm.prompt, seed + 1 + w), s.warm.decode);
    const pre: number[] = [];
    const dec: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const t = await once(ids, s.decode);
      pre.push((s.batch * s.prompt) / t.prefillS);
      dec.push((s.batch * s.decode) / t.decodeS);
    }
    for (const q of seqs) q.dispose();
    return { prefillTokS: median(pre), decodeTokS: median(dec) };
  } finally {
    await context.dispose();
  }
}

// ----- the suite -----

function describeModel(spec: ModelSpec, parameters: number): string {
  const m = spec.make;
  return `Qwen3 d${m.hidden} L${m.layers} H${m.heads}/KV${m.kvHeads} hd${m.headDim} ff${m.intermediate} V${String(m.vocab)} ${m.tie ? 'tied' : 'untied'}, ${parameters.toLocaleString('en-US')} parameters, f32`;
}

export const suite: BenchSuite = {
  name: 'inference',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const profiles: BenchRow[] = []; // printed after the speed rows
    const engines = benchEngines(ctx);
    // The 8-bit base beside native (see the header), on the ~100M model only.
    const int8Engines: BenchEngine[] = engines.filter((e) => e.backend === 'native').map((e) => ({ ...e, backend: 'native-int8', label: e.label.replace('/native-', '/native-int8-') }));
    const specs = ctx.quick ? [TINY] : [TINY, M100];
    const allThreads = Math.max(1, ctx.threads);
    const threadCounts = allThreads > 1 ? [1, allThreads] : [1];
    const nlc = await cpuLlama();
    if ('error' in nlc) ctx.log(`llama.cpp rows skipped: node-llama-cpp is unavailable (${nlc.error})`);
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-'));
    // The ~100M checkpoint and its GGUF take ~800 MB: remove them even when the run is interrupted.
    const onSignal = (signal: NodeJS.Signals): void => {
      rmSync(root, { recursive: true, force: true });
      process.kill(process.pid, signal);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      for (const [mi, spec] of specs.entries()) {
        const dir = join(root, spec.key);
        let t = performance.now();
        const made = makeTinyCheckpoint({ ...spec.make, out: dir });
        const gguf = join(root, `${spec.key}.gguf`);
        await exportGguf(dir, gguf, { dtype: 'f32' });
        const specEngines = spec.key === M100.key ? [...engines, ...int8Engines] : engines;
        const ggufQ8 = join(root, `${spec.key}-q8_0.gguf`);
        const q8 = specEngines.some((e) => e.backend === 'native-int8');
        if (q8) await exportGguf(dir, ggufQ8, { dtype: 'q8_0' });
        const desc = describeModel(spec, made.parameters);
        ctx.log(`${spec.key}: ${desc} (made and exported in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
        const vocab = made.config.vocabSize;
        const seed = 1000 + mi;

        // Ours, per backend.
        const ours: Array<{ engine: BenchEngine; setting: Setting; timing: Timing }> = [];
        for (const engine of specEngines) {
          const backend = engine.backend;
          await initEngine(engine);
          const before = tf.memory().numTensors;
          const model = await CausalLM.load(dir);
          try {
            for (const s of settingsFor(spec, backend, ctx.quick)) {
              t = performance.now();
              const timing = await sesaMeasure(model, s, seed);
              ctx.log(
                `${engine.label} ${caseName(spec.key, s)}: prefill ${timing.prefillTokS.toFixed(1)} tok/s, decode ${timing.decodeTokS.toFixed(1)} tok/s (${((performance.now() - t) / 1000).toFixed(1)} s)`,
              );
              ours.push({ engine, setting: s, timing });
            }
            // Where the time of the batch-1 gap goes: the ~100M model (quick: tiny) on wasm with all cores.
            const profiled = ctx.quick ? TINY.key : M100.key;
            if (spec.key === profiled && engine.label === engines.filter((e) => e.backend === 'wasm').at(-1)?.label) {
              ctx.log(`${engine.label} ${spec.key}: kernel profile of a batch-1 prefill and decode`);
              profiles.push(...(await profileInference(model, seed, engine.label, spec.key)));
            }
          } finally {
            model.dispose();
          }
          const leaked = tf.memory().numTensors - before;
          if (leaked !== 0) ctx.log(`warning: ${leaked} tensors leaked on ${engine.label}`);
        }

        // llama.cpp at every distinct setting ours used, on 1 thread and on all cores: on the f32 GGUF, and on
        // the Q8_0 one at the settings native-int8 used.
        const reference = new Map<string, Timing>(); // key: case|threads|f32 or q8_0
        const peers = [{ type: 'f32' as const, path: gguf, of: ours.filter((o) => o.engine.backend !== 'native-int8') }, ...(q8 ? [{ type: 'q8_0' as const, path: ggufQ8, of: ours.filter((o) => o.engine.backend === 'native-int8') }] : [])];
        const llama = 'error' in nlc ? undefined : nlc.llama;
        if (llama) for (const peer of peers) {
          const lm = await llama.loadModel({ modelPath: peer.path, gpuLayers: 0 });
          try {
            const distinct = new Map<string, Setting>();
            for (const o of peer.of) {
              const name = caseName(spec.key, o.setting);
              const prev = distinct.get(name);
              distinct.set(name, { ...o.setting, allCores: o.setting.allCores || (prev?.allCores ?? false), repeats: Math.max(o.setting.repeats, prev?.repeats ?? 0) });
            }
            for (const [name, s] of distinct) {
              for (const threads of threadCounts) {
                if (threads > 1 && !s.allCores) continue;
                // 1 thread is the ratio's reference: at least 3 repeats (it is fast); all cores: as ours.
                const repeats = threads === 1 ? Math.max(3, s.repeats) : s.repeats;
                const timing = await llamaMeasure(lm, s, threads, repeats, vocab, seed);
                ctx.log(`${peerLabel(peer.type, threads)} ${name}: prefill ${timing.prefillTokS.toFixed(1)} tok/s, decode ${timing.decodeTokS.toFixed(1)} tok/s`);
                reference.set(`${name}|${threads}|${peer.type}`, timing);
              }
            }
          } finally {
            await lm.dispose();
          }
        }

        // Rows, grouped by case: ours per backend, then llama.cpp per thread count.
        const cases = [...new Set(ours.map((o) => caseName(spec.key, o.setting)))];
        for (const name of cases) {
          for (const metric of ['prefill', 'decode'] as const) {
            const key = metric === 'prefill' ? 'prefillTokS' : 'decodeTokS';
            for (const o of ours.filter((x) => caseName(spec.key, x.setting) === name)) {
              const threads = o.engine.threads ?? 1;
              const peerType = o.engine.backend === 'native-int8' ? 'q8_0' : 'f32';
              const ref = reference.get(`${name}|${threads}|${peerType}`);
              rows.push({
                case: name,
                engine: o.engine.label,
                metric,
                value: o.timing[key],
                unit: 'tok/s',
                ...(ref ? { ratio: o.timing[key] / ref[key] } : {}),
                notes:
                  `${desc}; median of ${o.setting.repeats} after ${o.setting.warm.runs} warm-up run${o.setting.warm.runs === 1 ? '' : 's'}` +
                  (o.engine.backend === 'cpu' && spec.key === '100m' ? '; cpu backend (~1 GFLOP/s): shorter prompt and fewer steps' : '') +
                  (o.engine.backend === 'native-int8' ? '; frozen base in 8-bit blocks' : '') +
                  (ref ? `; ratio = ours / ${peerLabel(peerType, threads)}` : '; no llama.cpp row at this thread count, no ratio'),
              });
            }
            for (const peerType of ['f32', 'q8_0'] as const) {
              for (const threads of threadCounts) {
                const ref = reference.get(`${name}|${threads}|${peerType}`);
                if (!ref) continue;
                rows.push({
                  case: name,
                  engine: peerLabel(peerType, threads),
                  metric,
                  value: ref[key],
                  unit: 'tok/s',
                  notes: `llama.cpp via node-llama-cpp, CPU, same checkpoint (GGUF ${peerType === 'f32' ? 'f32' : 'Q8_0 matrices'}), F32 KV cache, flash attention off, ${threads} thread${threads > 1 ? 's' : ''}; batch 8 = 8 sequences of one context; median of ${threads === 1 ? '≥3' : 'as many repeats as ours'}`,
                });
              }
            }
          }
        }
        rmSync(dir, { recursive: true, force: true });
        rmSync(gguf, { force: true });
        rmSync(ggufQ8, { force: true });
      }
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      rmSync(root, { recursive: true, force: true });
      if (!('error' in nlc)) await nlc.llama.dispose();
    }
    return [...rows, ...profiles];
  },
};
