// Held-out accuracy in a world: greedy, one rollout per question, the solver's prompt and tool protocol exactly
// as in training (src/selfplay/roles.ts, with the bank's cards for SESA-On and none for SESA-Off), exact match
// against the golden answers (and token F1, as sesa-train eval scores). Only the model and the search tool act.
// See docs/world.md.
import type { HeldOutQuestion } from '../corpus/synthetic.js';
import type { Policy } from '../model/policy.js';
import type { Searcher } from '../search/types.js';
import { f1Score } from '../eval/score.js';
import { exactMatch } from '../selfplay/judge.js';
import { type RolloutSettings, SolverRole } from '../selfplay/roles.js';
import type { SkillBank } from '../skills/bank.js';

export interface WorldEvalResult {
  questions: number;
  accuracy: number;
  /** Mean token F1 of the final answers against the answer and its aliases (0 without an answer). */
  f1: number;
  byHops: Record<string, { n: number; accuracy: number; f1: number }>;
  /** Rollouts that ended with an answer tag. */
  answeredRate: number;
  meanTurns: number;
}

export interface WorldEvalOptions {
  settings: Omit<RolloutSettings, 'temperature'>;
  /** Questions per generation batch. */
  batchSize?: number;
  /** The bank for SESA-On; undefined = no cards (SESA-Off, base, SSP). */
  bank?: SkillBank;
  onProgress?: (done: number, total: number) => void;
}

export async function evalWorld(policy: Policy, searcher: Searcher, questions: readonly HeldOutQuestion[], opts: WorldEvalOptions): Promise<WorldEvalResult> {
  const solver = new SolverRole(policy, searcher, opts.bank, { ...opts.settings, temperature: 0 });
  const batch = opts.batchSize ?? 16;
  const correct: boolean[] = [];
  const f1: number[] = [];
  let answered = 0;
  let turns = 0;
  for (let i = 0; i < questions.length; i += batch) {
    const slice = questions.slice(i, i + batch);
    const groups = await solver.solve(slice.map((q) => q.question), 1, 0);
    groups.forEach((g, k) => {
      const r = g.rollouts[0];
      const q = slice[k] as HeldOutQuestion;
      correct.push(r?.final !== undefined && exactMatch(r.final, q.golden_answers));
      f1.push(r?.final !== undefined ? f1Score(r.final, q.golden_answers) : 0);
      if (r?.final !== undefined) answered++;
      turns += r?.turns ?? 0;
    });
    opts.onProgress?.(Math.min(i + batch, questions.length), questions.length);
  }
  const byHops: WorldEvalResult['byHops'] = {};
  for (const h of [...new Set(questions.map((q) => q.hops))].sort()) {
    const idx = questions.map((q, i) => (q.hops === h ? i : -1)).filter((i) => i >= 0);
    byHops[String(h)] = { n: idx.length, accuracy: idx.filter((i) => correct[i]).length / Math.max(1, idx.length), f1: idx.reduce((a, i) => a + (f1[i] as number), 0) / Math.max(1, idx.length) };
  }
  const n = questions.length;
  return {
    questions: n,
    accuracy: correct.filter(Boolean).length / Math.max(1, n),
    f1: f1.reduce((a, b) => a + b, 0) / Math.max(1, n),
    byHops,
    answeredRate: answered / Math.max(1, n),
    meanTurns: turns / Math.max(1, n),
  };
}
