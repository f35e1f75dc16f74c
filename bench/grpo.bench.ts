// GRPO step throughput: one full update (reference log-probs, forward + backward with the adapter, fused
// log-probs, loss, AdamW) of a LoRA adapter (the defaults of docs/method.md, "Adapters": r 16, all seven projections) on random
// sequences, for the tiny and the ~100M configurations. tokens/s counts every token through the update
// (prompt and response); the ~100M model runs on wasm only (the cpu backend would take many minutes).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { LORA_DEFAULTS, LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { grpoUpdate, type TrainingSequence } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { benchBackends, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  sequences: number;
  prompt: number;
  response: number;
  microBatch: number;
  backends: Array<'wasm' | 'cpu'>;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 320, seed: 1 }, sequences: 16, prompt: 64, response: 64, microBatch: 8, backends: ['wasm', 'cpu'] },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, sequences: 4, prompt: 64, response: 64, microBatch: 2, backends: ['wasm'] },
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

export const suite: BenchSuite = {
  name: 'grpo',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-grpo-'));
    try {
      for (const c of CASES) {
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        for (const backend of benchBackends(ctx).filter((b): b is 'wasm' | 'cpu' => (c.backends as string[]).includes(b))) {
          await initBackend(backend);
          const model = await CausalLM.load(dir);
          const adapter = LoraAdapter.create('solver', model.config, LORA_DEFAULTS, { seed: 1, randomB: true, randomBStd: 0.01 });
          const params = Object.fromEntries(adapter.variables());
          const optimizer = new AdamW(params, { lr: 1e-5 });
          const n = ctx.quick ? Math.max(2, c.sequences / 4) : c.sequences;
          const seqs = sequences(n, c.prompt, c.response, model.config.vocabSize, 7);
          const cfg = { microBatchSize: c.microBatch, klCoef: 0.01 };
          ctx.log(`grpo: ${c.key} on ${backend}: warm-up`);
          await grpoUpdate(model, adapter, optimizer, params, seqs.slice(0, Math.min(2, n)), cfg);
          const repeats = ctx.quick || c.key === '100m' ? 1 : 3;
          const speeds: number[] = [];
          const secs: number[] = [];
          for (let i = 0; i < repeats; i++) {
            const m = await grpoUpdate(model, adapter, optimizer, params, seqs, cfg);
            speeds.push(m.tokensPerSecond);
            secs.push(m.seconds);
          }
          const note = `${n} seqs × (${c.prompt} prompt + ${c.response} response), micro-batch ${c.microBatch}, LoRA r${LORA_DEFAULTS.r} on 7 projections, ${(model.parameterCount() / 1e6).toFixed(1)}M base params`;
          rows.push({ case: `grpo step ${c.key}`, engine: `sesa/${backend}`, metric: 'throughput', value: median(speeds), unit: 'tok/s', notes: note });
          rows.push({ case: `grpo step ${c.key}`, engine: `sesa/${backend}`, metric: 'step time', value: median(secs), unit: 's' });
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
