// The evaluation runner (docs/evaluation.md): one greedy rollout per question with exactly the solver's
// training-time prompt, tool protocol and skill retrieval (it drives the training SolverRole with group size
// 1 at temperature 0), then EM and F1 against the golden answers, and a judge verdict when a judge is given.
//
// This is the narrow entry point the trainer's held-out curve and the demo world call:
//   evaluateSolver({ policy, searcher, bank?, judge? }, questions, settings) → { records, results }
import type { TextGenerator } from '../llm/types.js';
import type { Policy } from '../model/policy.js';
import type { Searcher } from '../search/types.js';
import { parseVerdict } from '../agent/judge.js';
import { semanticJudgeMessages } from '../agent/prompts.js';
import { SolverRole } from '../agent/roles.js';
import type { SkillBank } from '../skills/bank.js';
import type { EvalQuestion, EvalSet } from '../agent/environment.js';
import { aggregateResults, type EvalResults } from './results.js';
import { exactMatchScore, f1Score } from './score.js';

/** One line of predictions.jsonl. */
export interface PredictionRecord {
  id: string;
  dataset: string;
  question: string;
  golden_answers: string[];
  /** Search steps the question needs, where the dataset knows it. */
  hops?: number;
  /** The last `<answer>…</answer>`; null when the rollout gave none. */
  prediction: string | null;
  /** How the rollout ended: final (an answer), eos, max-turns or budget. */
  outcome: string;
  turns: number;
  queries: string[];
  /** Ids of the passages each query retrieved, one list per query. */
  retrieved: string[][];
  /** Ids of the skill cards in the prompt (empty with skills off). */
  skills: string[];
  em: number;
  f1: number;
  /** EM, else the judge's verdict; null without a judge. */
  judged: boolean | null;
}

/** What is evaluated: a solver policy with its search tool, and optionally a skill bank and a judge. */
export interface SolverUnderTest {
  policy: Policy;
  searcher: Searcher;
  /** Skills on: the top-k cards retrieved per question are prepended, as in training. Absent: skills off. */
  bank?: SkillBank;
  /** A semantic judge for answers that do not match exactly (reply Correct or Wrong). */
  judge?: TextGenerator;
}

export interface EvalSettings {
  /** Docs/evaluation.md: at most 10 turns. */
  maxTurns: number;
  maxTokensPerTurn: number;
  maxResponseTokens: number;
  /** Questions generated together in one batch. */
  batchSize: number;
  /** k, passages a search returns (the run's --passages-per-query). */
  passagesPerQuery: number;
}

export type { EvalSet };

export interface EvalHooks {
  /** After each batch, with that batch's records (in question order). */
  onBatch?(records: PredictionRecord[]): void;
  /** Polled between batches: true stops early (the records so far are returned). */
  shouldStop?(): boolean;
}

export interface EvalOutcome {
  records: PredictionRecord[];
  results: EvalResults;
}

export function checkEvalSettings(s: EvalSettings): void {
  for (const k of ['maxTurns', 'maxTokensPerTurn', 'maxResponseTokens', 'batchSize', 'passagesPerQuery'] as const) {
    if (!Number.isInteger(s[k]) || s[k] <= 0) throw new Error(`eval: ${k} must be a positive integer, got ${s[k]}`);
  }
}

async function judgeVerdict(judge: TextGenerator | undefined, q: EvalQuestion, prediction: string | null, em: number): Promise<boolean | null> {
  if (!judge) return null;
  if (em === 1) return true;
  if (prediction === null || prediction.trim() === '') return false;
  const reply = await judge.complete(semanticJudgeMessages(q.question, q.goldenAnswers, prediction), { maxTokens: 8, temperature: 0 });
  return parseVerdict(reply) === true;
}

/** Evaluates `questions` in batches; greedy, one rollout each. */
export async function evaluateSolver(solver: SolverUnderTest, questions: readonly EvalQuestion[], settings: EvalSettings, hooks: EvalHooks = {}): Promise<EvalOutcome> {
  checkEvalSettings(settings);
  const role = new SolverRole(solver.policy, solver.searcher, solver.bank, {
    maxTurns: settings.maxTurns,
    maxTokensPerTurn: settings.maxTokensPerTurn,
    maxResponseTokens: settings.maxResponseTokens,
    temperature: 0,
    passagesPerQuery: settings.passagesPerQuery,
  });
  const records: PredictionRecord[] = [];
  for (let start = 0; start < questions.length; start += settings.batchSize) {
    if (hooks.shouldStop?.()) break;
    const batch = questions.slice(start, start + settings.batchSize);
    // Group size 1, seed 0: greedy decoding ignores the seed.
    const groups = await role.solve(
      batch.map((q) => q.question),
      1,
      0,
    );
    const out: PredictionRecord[] = [];
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i] as EvalQuestion;
      const group = groups[i];
      const r = group?.rollouts[0];
      if (!group || !r) throw new Error(`eval: no rollout came back for question ${q.id}`);
      const prediction = r.final ?? null;
      const em = prediction === null ? 0 : exactMatchScore(prediction, q.goldenAnswers);
      const f1 = prediction === null ? 0 : f1Score(prediction, q.goldenAnswers);
      out.push({
        id: q.id,
        dataset: q.dataset,
        question: q.question,
        golden_answers: q.goldenAnswers,
        ...(q.hops !== undefined ? { hops: q.hops } : {}),
        prediction,
        outcome: r.outcome,
        turns: r.turns,
        queries: r.queries,
        retrieved: r.retrieved.map((ps) => ps.map((p) => p.id)),
        skills: group.skillIds,
        em,
        f1,
        judged: await judgeVerdict(solver.judge, q, prediction, em),
      });
    }
    records.push(...out);
    hooks.onBatch?.(out);
  }
  return { records, results: aggregateResults(records) };
}

/**
 * Evaluates several sets, each against its own search tool, in order; the records of all of them and the
 * results aggregated per dataset and on average. `hooks.onBatch` sees every batch of every set.
 */
export async function evaluateSets(solver: Omit<SolverUnderTest, 'searcher'>, sets: readonly EvalSet[], settings: EvalSettings, hooks: EvalHooks = {}): Promise<EvalOutcome> {
  const records: PredictionRecord[] = [];
  for (const set of sets) {
    if (hooks.shouldStop?.()) break;
    const out = await evaluateSolver({ ...solver, searcher: set.searcher }, set.questions, settings, hooks);
    records.push(...out.records);
  }
  return { records, results: aggregateResults(records) };
}
