// SFT step throughput (docs/sft.md): one optimizer step (forward and backward over every micro-batch, the
// fused masked NLL, AdamW) on random transcripts of a fixed layout, full-weight and LoRA, for the tiny
// configuration and a ~4M-parameter one of the size a demo model trained from scratch would have. tokens/s
// counts every token through the step (prompt, tool output and trained tokens).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { LORA_DEFAULTS, LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { AdamW } from '../src/rl/optimizer.js';
import type { MaskedSequence } from '../src/sft/nll.js';
import { sftStep } from '../src/sft/trainer.js';
import { initBackend, type tf } from '../src/tensor/backend.js';
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
  backends: Array<'native' | 'wasm' | 'cpu'>;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 320, seed: 1 }, sequences: 8, prompt: 64, response: 64, microBatch: 4, backends: ['wasm', 'cpu'] },
  { key: '4m', make: { arch: 'qwen3', layers: 4, hidden: 256, heads: 4, kvHeads: 2, headDim: 64, intermediate: 768, vocab: 4096, seed: 2 }, sequences: 8, prompt: 96, response: 160, microBatch: 4, backends: ['wasm'] },
];

/** Prompt (masked), then a response with a tool-output span (masked) every 32 tokens. */
function sequences(n: number, prompt: number, response: number, vocab: number, seed: number): MaskedSequence[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const ids = Array.from({ length: prompt + response }, () => rng.int(vocab));
    const mask = ids.map((_, i) => (i >= prompt && (i - prompt) % 32 < 24 ? 1 : 0));
    return { ids, mask };
  });
}

export const suite: BenchSuite = {
  name: 'sft',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-sft-'));
    try {
      for (const c of CASES) {
        if (ctx.quick && c.key !== 'tiny') continue;
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        for (const backend of benchBackends(ctx).filter((b): b is 'wasm' | 'cpu' => (c.backends as string[]).includes(b))) {
          await initBackend(backend);
          for (const mode of ['full', 'lora'] as const) {
            const model = await CausalLM.load(dir, { trainable: mode === 'full' });
            const adapter = mode === 'lora' ? LoraAdapter.create('sft', model.config, LORA_DEFAULTS, { seed: 1 }) : undefined;
            const params: Record<string, tf.Variable> = Object.fromEntries(adapter ? adapter.variables() : model.variables());
            const optimizer = new AdamW(params, { lr: 1e-4 });
            const n = ctx.quick ? c.microBatch : c.sequences;
            const batch = sequences(n, c.prompt, c.response, model.config.vocabSize, 7);
            const opts = { microBatchSize: c.microBatch, padTokenId: 0 };
            ctx.log(`sft: ${c.key} ${mode} on ${backend}: warm-up`);
            sftStep(model, adapter, params, optimizer, batch.slice(0, Math.min(2, n)), opts);
            const speeds: number[] = [];
            const secs: number[] = [];
            for (let i = 0; i < (ctx.quick || c.key !== 'tiny' ? 1 : 3); i++) {
              const r = sftStep(model, adapter, params, optimizer, batch, opts);
              speeds.push(r.tokens / r.seconds);
              secs.push(r.seconds);
            }
            const trainable = Object.values(params).reduce((k, v) => k + v.size, 0);
            const note = `${n} seqs × (${c.prompt} prompt + ${c.response} response), micro-batch ${c.microBatch}, ${(model.parameterCount() / 1e6).toFixed(2)}M params, ${(trainable / 1e6).toFixed(2)}M trainable${mode === 'lora' ? ` (LoRA r${LORA_DEFAULTS.r}, 7 projections)` : ''}`;
            rows.push({ case: `sft step ${c.key} ${mode}`, engine: `sesa/${backend}`, metric: 'throughput', value: median(speeds), unit: 'tok/s', notes: note });
            rows.push({ case: `sft step ${c.key} ${mode}`, engine: `sesa/${backend}`, metric: 'step time', value: median(secs), unit: 's' });
            optimizer.dispose();
            adapter?.dispose();
            model.dispose();
          }
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
