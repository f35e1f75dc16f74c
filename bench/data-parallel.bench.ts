// Data-parallel training (src/parallel/, docs/scale-out.md):
// - GRPO updates: seconds per update of one adapter with 1 worker and with ctx.threads workers (one wasm
//   thread each) on the same batch, and the speedup. The workers' start-up (model load) is outside the
//   timing; the first update is a warm-up.
// - The whole SESA step in the demo world (--corpus world): seconds per step, and per phase, with the step in
//   the trainer's process (1 worker) and sharded over ctx.threads workers, same seed and batch. From the
//   shipped warm start (models/demo) when it exists, else from a random-init model of the same spec (then
//   every proposal is invalid and the step is proposing and the proposer update: the note says which). The
//   first step is a warm-up; workers start before it.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { LORA_DEFAULTS } from '../src/model/lora.js';
import { DataParallelPool, shard } from '../src/parallel/coordinator.js';
import type { TrainingSequence } from '../src/rl/grpo-update.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import type { StepMetrics } from '../src/selfplay/step.js';
import { train } from '../src/selfplay/trainer.js';
import { Rng } from '../src/util/rng.js';
import { repoRoot } from '../src/util/shared-data.js';
import { DEMO_MODEL_SPEC, initDemoModel, trainWorldTokenizer } from '../src/world/demo-model.js';
import { DEFAULT_EXPERT_RATES } from '../src/world/experts.js';
import { buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS } from '../src/world/transcripts.js';
import { trainingWorldSeeds } from '../src/world/world.js';
import { median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  sequences: number;
  promptTokens: number;
  responseTokens: number;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 2000, seed: 1 }, sequences: 16, promptTokens: 64, responseTokens: 128 },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, sequences: 4, promptTokens: 32, responseTokens: 64 },
];

function batch(c: Case, vocab: number, seed: number): TrainingSequence[] {
  const rng = new Rng(seed);
  return Array.from({ length: c.sequences }, () => ({
    samplingTemperature: 1,
    promptIds: Array.from({ length: c.promptTokens }, () => 1 + rng.int(vocab - 1)),
    responseIds: Array.from({ length: c.responseTokens }, () => 1 + rng.int(vocab - 1)),
    responseMask: Array.from({ length: c.responseTokens }, () => 1),
    oldLogprobs: Array.from({ length: c.responseTokens }, () => -Math.log(vocab)),
    advantage: rng.next() * 2 - 1,
  }));
}

/** The model of the demo world: the shipped warm start, else a random-init model of its spec (and which). */
async function demoWorldModel(root: string): Promise<{ model: string; note: string }> {
  if (existsSync(join(repoRoot(), 'models', 'demo', 'model.safetensors'))) return { model: 'demo', note: 'shipped warm start' };
  const set = await buildTranscripts({ ...DEFAULT_TRANSCRIPT_OPTIONS, worldSeeds: trainingWorldSeeds(1), solverPerWorld: 48, proposerPerWorld: 16, rates: DEFAULT_EXPERT_RATES });
  const bpe = trainWorldTokenizer(set.transcripts, DEMO_MODEL_SPEC.vocabSize);
  return { model: initDemoModel(join(root, 'world-init'), DEMO_MODEL_SPEC, bpe, 0).dir, note: 'random-init model of the demo spec: every proposal invalid' };
}

/** Seconds per SESA step in the demo world (after a warm-up step), in process and sharded over n workers. */
async function wholeStep(ctx: BenchContext, root: string, workerCounts: number[]): Promise<BenchRow[]> {
  const { model, note } = await demoWorldModel(root);
  const steps = ctx.quick ? 2 : 4;
  const size = ctx.quick
    ? { seedsPerStep: 2, proposalsPerSeed: 2, groupSize: 2, maxTurns: 2, maxNewTokens: 16, maxResponseTokens: 96 }
    : { seedsPerStep: 4, proposalsPerSeed: 4, groupSize: 5 };
  const perStep: Record<number, StepMetrics[]> = {};
  for (const n of workerCounts) {
    ctx.log(`data-parallel: SESA step in the demo world, ${n} worker${n > 1 ? 's' : ''}`);
    const summary = await train(
      { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...size, model, steps, evalEvery: 0, evalData: undefined, saveEvery: steps, workers: n, out: join(root, `step-${n}`), backend: 'wasm' },
      { log: () => undefined },
    );
    perStep[n] = summary.metrics.slice(1);
  }
  const first = (perStep[1] as StepMetrics[])[0];
  const what = `SESA step, demo world: ${first?.seeds ?? size.seedsPerStep} seeds × ${first ? first.proposals / first.seeds : size.proposalsPerSeed} proposals, G ${size.groupSize}`;
  const seconds = (n: number, phase: keyof StepMetrics['seconds']): number => median((perStep[n] as StepMetrics[]).map((m) => m.seconds[phase]));
  const rows: BenchRow[] = [];
  for (const phase of ['total', 'propose', 'validate', 'solve', 'judge', 'update'] as const) {
    // A phase with nothing to do (no valid question: no solving) would only show timer noise.
    if (phase !== 'total' && workerCounts.every((n) => seconds(n, phase) < 0.01)) continue;
    for (const n of workerCounts) {
      const s = seconds(n, phase);
      const engine = n > 1 ? `${n} workers, step sharded (wasm)` : 'in process (wasm)';
      rows.push({ case: what, engine, metric: phase === 'total' ? 'step' : phase, value: s, unit: 's', ...(n > 1 && s > 0 ? { ratio: seconds(1, phase) / s } : {}), notes: `${note}; median of ${steps - 1} step(s) after a warm-up${n > 1 ? `; speedup over in process on ${ctx.threads} core(s)` : ''}` });
    }
  }
  return rows;
}

export const suite: BenchSuite = {
  name: 'data-parallel',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-dp-'));
    const workerCounts = [...new Set([1, Math.max(2, ctx.threads)])];
    try {
      for (const c of CASES) {
        if (ctx.quick && c.key === '100m') continue;
        const modelDir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        const vocab = c.make.vocab as number;
        const seconds: Record<number, number> = {};
        for (const n of workerCounts) {
          ctx.log(`data-parallel: ${c.key}, ${n} worker${n > 1 ? 's' : ''}`);
          const pool = await DataParallelPool.start({
            workers: n,
            init: { modelDir, backend: 'wasm', roles: { solver: { lora: LORA_DEFAULTS, loraSeed: 1, optimizer: { lr: 1e-5 } } }, grpo: { microBatchSize: 2, klCoef: 0.01, padTokenId: 0 } },
          });
          try {
            await pool.update('solver', shard(batch(c, vocab, 0), n));
            const times: number[] = [];
            for (let r = 0; r < (ctx.quick ? 1 : 3); r++) {
              const t = performance.now();
              await pool.update('solver', shard(batch(c, vocab, r + 1), n));
              times.push((performance.now() - t) / 1000);
            }
            seconds[n] = median(times);
          } finally {
            await pool.close();
          }
        }
        const what = `GRPO update ${c.key}: ${c.sequences} seqs × (${c.promptTokens} + ${c.responseTokens}) tokens, LoRA r${LORA_DEFAULTS.r}`;
        for (const n of workerCounts) {
          const one = seconds[1] as number;
          const s = seconds[n] as number;
          rows.push({ case: what, engine: `${n} worker${n > 1 ? 's' : ''} (wasm)`, metric: 'update', value: s, unit: 's', ...(n > 1 ? { ratio: one / s, notes: `speedup over 1 worker on ${ctx.threads} core(s)` } : {}) });
        }
      }
      rows.push(...(await wholeStep(ctx, root, workerCounts)));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
