// Evaluation throughput (docs/evaluation.md) on the wasm backend, for the tiny and the ~100M configurations:
// questions per second of the greedy one-rollout evaluation of the embedded encyclopedia's held-out questions,
// with the skill bank off and on (lexical embedder, seed cards), BM25 search over the encyclopedia. Random weights
// rarely write a search or an answer, so most rollouts run to the turn limit: the rate is that of full-length
// rollouts, which is the slow end of a real evaluation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { encyclopediaDataset, sampleQuestions } from '../src/eval/dataset.js';
import { evaluateSolver, type EvalSettings } from '../src/eval/runner.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { buildEvalSearcher } from '../src/eval/setup.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend } from '../src/tensor/backend.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  questions: number;
  settings: EvalSettings;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 2000, seed: 1 }, questions: 16, settings: { maxTurns: 3, maxTokensPerTurn: 32, maxResponseTokens: 512, batchSize: 8, passagesPerQuery: 3 } },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, questions: 2, settings: { maxTurns: 2, maxTokensPerTurn: 8, maxResponseTokens: 96, batchSize: 2, passagesPerQuery: 3 } },
];

export const suite: BenchSuite = {
  name: 'eval',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-eval-'));
    try {
      await initBackend('wasm');
      const searcher = await buildEvalSearcher({ corpus: 'encyclopedia' }, ctx.log);
      const all = encyclopediaDataset().questions;
      for (const c of CASES) {
        if (ctx.quick && c.key === '100m') continue;
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        const model = await CausalLM.load(dir);
        const tokenizer = await loadTokenizer(dir);
        const policy = new ModelPolicy('solver', model, tokenizer, undefined);
        const questions = sampleQuestions(all, ctx.quick ? Math.min(4, c.questions) : c.questions, 0);
        const bank = await SkillBank.open(join(root, `${c.key}-skills.json`), { embedder: new LexicalEmbedder() });
        try {
          await evaluateSolver({ policy, searcher }, questions.slice(0, 1), { ...c.settings, maxTurns: 1, maxTokensPerTurn: 4 }); // warm-up
          for (const mode of ['off', 'on'] as const) {
            ctx.log(`eval: ${c.key}, ${questions.length} questions, skills ${mode}`);
            const t = performance.now();
            const { records } = await evaluateSolver({ policy, searcher, ...(mode === 'on' ? { bank } : {}) }, questions, c.settings);
            const s = (performance.now() - t) / 1000;
            const turns = records.reduce((a, r) => a + r.turns, 0) / records.length;
            rows.push({
              case: `eval ${c.key}, skills ${mode} (${questions.length} encyclopedia questions, batch ${c.settings.batchSize}, ≤${c.settings.maxTurns} turns × ${c.settings.maxTokensPerTurn} tokens)`,
              engine: 'sesa/wasm',
              metric: 'questions',
              value: questions.length / s,
              unit: 'q/s',
              notes: `${s.toFixed(1)} s; ${turns.toFixed(1)} turns per question; random weights`,
            });
          }
        } finally {
          await bank.dispose();
          model.dispose();
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
