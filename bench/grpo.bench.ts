// GRPO step throughput: one full update (reference log-probs, forward + backward with the adapter, fused
// log-probs, loss, AdamW) of a LoRA adapter (r 16, all seven projections) on random sequences, for the tiny
// and the ~100M configurations, on native and wasm with one thread and with all cores (native: its matMuls' threads;
// the rest of tfjs runs on one). The wasm rows are the path as it was before the native one: the two side by side
// in one run are the comparison. tokens/s counts every token through the update (prompt and response); the
// ~100M model does not run on the cpu backend (it would take many minutes). Where native runs, the ~100M case
// also runs on native-int8 (the frozen base in 8-bit blocks: docs/method.md), whose MFU rows are left out (its
// products are not the f32 matMul measured beside them).
//
// Model-FLOPs utilization: the useful matMul work of an update (a forward for the reference log-probs, a
// forward and an input-gradient backward with the adapter: 3 × 2 flops per weight per token, plus attention)
// per second, divided by the rate of a projection-shaped matMul measured in the same run on the same threads.
// Recomputing layers costs one more forward that this count leaves out, as MFU does by definition.
//
// Profile: one more update of the ~100M model (quick: the tiny one) under tf.profile, kernels grouped by name and input shapes,
// the ten that take the most time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { LORA_DEFAULTS, LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { grpoUpdate, recomputesLayers, type TrainingSequence } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import type { ModelConfig } from '../src/model/config.js';
import { tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { profileKernels, profileRows } from './profile.js';
import { benchEngines, initEngine, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  sequences: number;
  prompt: number;
  response: number;
  microBatch: number;
  backends: Array<'native' | 'native-int8' | 'wasm' | 'cpu'>;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 320, seed: 1 }, sequences: 16, prompt: 64, response: 64, microBatch: 8, backends: ['native', 'wasm', 'cpu'] },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, sequences: 4, prompt: 64, response: 64, microBatch: 2, backends: ['native', 'native-int8', 'wasm'] },
];

function sequences(n: number, prompt: number, response: number, vocab: number, seed: number): TrainingSequence[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => ({
    promptIds: Array.from({ length: prompt }, () => rng.int(vocab)),
    responseIds: Array.from({ length: response }, () => rng.int(vocab)),
    responseMask: Array.from({ length: response }, (_, j) => (j % 16 < 12 ? 1 : 0)), // a tool-output span every 16 tokens
    oldLogprobs: Array.from({ length: response }, () => -Math.log(vocab) + (rng.next() - 0.5) * 0.1),
    advantage: rng.next() * 2 - 1,
    samplingTemperature: 1,
  }));
}

/** Useful flops of one update per token of a sequence of T tokens (see the header). */
function modelFlopsPerToken(c: ModelConfig, T: number): number {
  const { hiddenSize: d, intermediateSize: ff, numHeads: H, numKvHeads: KV, headDim: hd, numLayers: L, vocabSize: V } = c;
  const weights = L * (d * (H + 2 * KV) * hd + H * hd * d + 3 * d * ff) + d * V;
  const attention = L * 2 * H * hd * T; // q·kᵀ and probs·v, half the positions on average (causal), ×2 flops
  return 3 * 2 * (weights + attention);
}

/** GFLOP/s of an [M, d] × [d, ff] matMul (the projection shape of the model) on the active backend. */
function matMulRate(M: number, K: number, N: number): number {
  const rng = new Rng(3);
  const a = tf.tensor2d(Float32Array.from({ length: M * K }, () => rng.next() - 0.5), [M, K]);
  const b = tf.tensor2d(Float32Array.from({ length: K * N }, () => rng.next() - 0.5), [K, N]);
  const once = (): void => tf.tidy(() => void tf.matMul(a, b).dataSync());
  once();
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    once();
    times.push((performance.now() - t) / 1000);
  }
  tf.dispose([a, b]);
  return (2 * M * K * N) / median(times) / 1e9;
}

export const suite: BenchSuite = {
  name: 'grpo',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-grpo-'));
    try {
      for (const c of CASES) {
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        // Where native runs, the ~100M case also runs on native-int8 (the 8-bit frozen base), as the inference suite does.
        const engines = benchEngines(ctx);
        const int8 = engines.filter((e) => e.backend === 'native').map((e) => ({ ...e, backend: 'native-int8' as const, label: e.label.replace('/native-', '/native-int8-') }));
        for (const engine of [...engines, ...int8].filter((e) => (c.backends as string[]).includes(e.backend))) {
          const backend = engine.backend;
          await initEngine(engine);
          const model = await CausalLM.load(dir);
          const adapter = LoraAdapter.create('solver', model.config, LORA_DEFAULTS, { seed: 1, randomB: true, randomBStd: 0.01 });
          const params = Object.fromEntries(adapter.variables());
          const optimizer = new AdamW(params, { lr: 1e-5 });
          const n = ctx.quick ? Math.max(2, c.sequences / 4) : c.sequences;
          const seqs = sequences(n, c.prompt, c.response, model.config.vocabSize, 7);
          const cfg = { microBatchSize: c.microBatch, klCoef: 0.01 };
          ctx.log(`grpo: ${c.key} on ${engine.label}: warm-up`);
          await grpoUpdate(model, adapter, optimizer, params, seqs.slice(0, Math.min(2, n)), cfg);
          const repeats = ctx.quick || c.key === '100m' ? 1 : 3;
          const speeds: number[] = [];
          const secs: number[] = [];
          for (let i = 0; i < repeats; i++) {
            const m = await grpoUpdate(model, adapter, optimizer, params, seqs, cfg);
            speeds.push(m.tokensPerSecond);
            secs.push(m.seconds);
          }
          const T = c.prompt + c.response;
          const note = `${n} seqs × (${c.prompt} prompt + ${c.response} response), micro-batch ${c.microBatch}, layers ${recomputesLayers(model, LORA_DEFAULTS.r, T, {}) ? 'recomputed in the backward' : 'kept'}${model.holdsTransposedProjections ? ', projection transposes held' : ''}, LoRA r${LORA_DEFAULTS.r} on 7 projections, ${(model.parameterCount() / 1e6).toFixed(1)}M base params`;
          const caseName = `grpo step ${c.key}`;
          rows.push({ case: caseName, engine: engine.label, metric: 'throughput', value: median(speeds), unit: 'tok/s', notes: note });
          rows.push({ case: caseName, engine: engine.label, metric: 'step time', value: median(secs), unit: 's' });
          if (backend === 'wasm' || backend === 'native') {
            const rate = matMulRate(c.microBatch * T, model.config.hiddenSize, model.config.intermediateSize);
            const achieved = (median(speeds) * modelFlopsPerToken(model.config, T)) / 1e9;
            rows.push({ case: caseName, engine: engine.label, metric: 'matMul rate', value: rate, unit: 'GFLOP/s', notes: `[${c.microBatch * T},${model.config.hiddenSize}]×[${model.config.hiddenSize},${model.config.intermediateSize}] in this run, same threads` });
            rows.push({ case: caseName, engine: engine.label, metric: 'model GFLOP/s', value: achieved, unit: 'GFLOP/s' });
            rows.push({ case: caseName, engine: engine.label, metric: 'MFU vs matMul', value: achieved / rate, unit: '×', notes: 'useful update flops per second ÷ the matMul rate above' });
          }
          const profiled = ctx.quick ? 'tiny' : '100m';
          // The profile of the last engine of wasm and of native (all cores).
          const lastOf = (b: string): string | undefined => benchEngines(ctx).filter((e) => e.backend === b).at(-1)?.label;
          if (c.key === profiled && (engine.label === lastOf('wasm') || engine.label === lastOf('native'))) {
            ctx.log(`grpo: ${c.key} on ${engine.label}: kernel profile`);
            const profile = await profileKernels(() => grpoUpdate(model, adapter, optimizer, params, seqs, cfg), 10);
            rows.push(...profileRows(`profile: grpo step ${c.key} (${engine.label})`, profile));
          }
          optimizer.dispose();
          adapter.dispose();
          model.dispose();
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
