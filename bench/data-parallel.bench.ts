// Data-parallel GRPO updates (src/parallel/): seconds per update of one adapter with 1 worker and with
// ctx.threads workers (one wasm thread each) on the same batch, and the speedup. The workers' start-up (model
// load) is outside the timing; the first update is a warm-up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { LORA_DEFAULTS } from '../src/model/lora.js';
import { DataParallelPool, shard } from '../src/parallel/coordinator.js';
import type { TrainingSequence } from '../src/rl/grpo-update.js';
import { Rng } from '../src/util/rng.js';
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
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
