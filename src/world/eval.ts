// Held-out accuracy in a world: the evaluation of `sesa-train eval` and of the trainer's held-out curve
// (src/eval/runner.ts: greedy, one rollout per question, the solver's prompt and tool protocol exactly as in
// training, with the bank's cards for SESA-On and none for SESA-Off), summarized by hop count. Only the model
// and the search tool act. See docs/world.md.
import type { HeldOutQuestion } from '../corpus/synthetic/index.js';
import { evaluateSolver, type PredictionRecord } from '../eval/runner.js';
import type { Policy } from '../model/policy.js';
import type { Searcher } from '../search/types.js';
import type { RolloutSettings } from '../agent/roles.js';
import type { SkillBank } from '../skills/bank.js';
import { asEvalQuestions } from './eval-worlds.js';

export interface WorldEvalResult {
  questions: number;
  accuracy: number;
  /** Mean token F1 of the final answers against the answer and its aliases (0 without an answer). */
  f1: number;
  byHops: Record<string, { n: number; accuracy: number; f1: number }>;
  /** Rollouts that ended with an answer tag. */
  answeredRate: number;
  meanTurns: number;
  /** Each question's exact match (0 or 1), in the order the questions were given: for paired intervals. */
  em: number[];
}

export interface WorldEvalOptions {
  settings: Omit<RolloutSettings, 'temperature'>;
  /** Questions per generation batch. */
  batchSize?: number;
  /** The bank for SESA-On; undefined = no cards (SESA-Off, base, SSP). */
  bank?: SkillBank;
  onProgress?: (done: number, total: number) => void;
}

/** The summary of a world eval's predictions (each record with its question's hop count). */
export function summarizeWorldEval(records: readonly PredictionRecord[]): WorldEvalResult {
  const n = records.length;
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const byHops: WorldEvalResult['byHops'] = {};
  for (const h of [...new Set(records.map((r) => r.hops ?? 0))].sort()) {
    const rs = records.filter((r) => (r.hops ?? 0) === h);
    byHops[String(h)] = { n: rs.length, accuracy: mean(rs.map((r) => r.em)), f1: mean(rs.map((r) => r.f1)) };
  }
  return {
    questions: n,
    accuracy: mean(records.map((r) => r.em)),
    f1: mean(records.map((r) => r.f1)),
    byHops,
    answeredRate: records.filter((r) => r.prediction !== null).length / Math.max(1, n),
    meanTurns: mean(records.map((r) => r.turns)),
    em: records.map((r) => r.em),
  };
}

export async function evalWorld(policy: Policy, searcher: Searcher, questions: readonly HeldOutQuestion[], opts: WorldEvalOptions, seed = 0): Promise<WorldEvalResult> {
  const total = questions.length;
  let done = 0;
  const { records } = await evaluateSolver({ policy, searcher, ...(opts.bank ? { bank: opts.bank } : {}) }, asEvalQuestions(seed, questions), { ...opts.settings, batchSize: opts.batchSize ?? 16 }, {
    onBatch: (rs) => {
      done += rs.length;
      opts.onProgress?.(done, total);
    },
  });
  return summarizeWorldEval(records);
}
