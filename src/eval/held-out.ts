// The held-out curve during training (docs/evaluation.md): the same evaluation as `sesa-train eval`, run on
// the solver adapter as it is at a step, with the skill bank on and off, summarized as metrics rows
// (`kind: "eval"`) that the run's metrics.jsonl and `sesa-train report` understand.
import { existsSync, readFileSync } from 'node:fs';
import type { Policy } from '../model/policy.js';
import type { SkillBank } from '../skills/bank.js';
import { type EvalQuestion, resolveDataset, sampleQuestions } from './dataset.js';
import { pairedBootstrap } from './bootstrap.js';
import type { DatasetResult } from './results.js';
import { type EvalSet, type EvalSettings, evaluateSets, type PredictionRecord } from './runner.js';

export interface HeldOutRow {
  kind: 'eval';
  step: number;
  skills: 'on' | 'off';
  questions: number;
  em: number;
  f1: number;
  judged: number | null;
  datasets: DatasetResult[];
  /** Seconds the eval took (where it was computed). */
  seconds: number;
  /** The step-0 cache entry it was read from, when it was not computed by this run (src/eval/held-out-cache.ts). */
  cachedFrom?: string;
}

/** The held-out questions for a run: `--eval-data` (a file, a benchmark name in $SESA_DATA, or encyclopedia), sampled. */
export function heldOutQuestions(data: string, limit: number, dataDir: string | undefined): EvalQuestion[] {
  return sampleQuestions(resolveDataset(data, dataDir).questions, limit, 0);
}

/** One mode's row and its per-question predictions. */
export interface HeldOutEval {
  row: HeldOutRow;
  records: PredictionRecord[];
}

/**
 * Evaluates the solver with skills on (when there is a bank) and off, over every set; one row per mode.
 * `onBatch` is told the questions done of each mode, 0 at its start and then after every batch (progress lines).
 */
export async function heldOutRows(
  step: number,
  solver: { policy: Policy; bank?: SkillBank },
  sets: readonly EvalSet[],
  settings: EvalSettings,
  onBatch?: (skills: 'on' | 'off', done: number, total: number) => void,
): Promise<HeldOutEval[]> {
  const modes: Array<{ skills: 'on' | 'off'; bank?: SkillBank }> = solver.bank ? [{ skills: 'on', bank: solver.bank }, { skills: 'off' }] : [{ skills: 'off' }];
  const out: HeldOutEval[] = [];
  for (const mode of modes) {
    const t0 = performance.now();
    const total = sets.reduce((n, set) => n + set.questions.length, 0);
    let done = 0;
    onBatch?.(mode.skills, 0, total);
    const hooks = onBatch ? { onBatch: (batch: readonly unknown[]) => onBatch(mode.skills, (done += batch.length), total) } : {};
    const { records, results } = await evaluateSets({ policy: solver.policy, ...(mode.bank ? { bank: mode.bank } : {}) }, sets, settings, hooks);
    out.push({
      row: {
        kind: 'eval',
        step,
        skills: mode.skills,
        questions: results.average.questions,
        em: results.average.em,
        f1: results.average.f1,
        judged: results.average.judged,
        datasets: results.datasets,
        seconds: (performance.now() - t0) / 1000,
      },
      records,
    });
  }
  return out;
}

/** The gain of a paired comparison, as the run summary gives it. */
export interface PairedGainSummary {
  gain: number;
  low: number;
  high: number;
  questions: number;
}

/**
 * The paired gain between two held-out evals' predictions (docs/evaluation.md, "Intervals"), question by
 * question; undefined when a file is missing (an eval of a run made before they were written) or the two
 * did not score the same questions.
 */
export function pairedGainOfFiles(firstFile: string, lastFile: string): PairedGainSummary | undefined {
  if (!existsSync(firstFile) || !existsSync(lastFile)) return undefined;
  const a = readPredictionScores(firstFile);
  const b = readPredictionScores(lastFile);
  const keys = [...a.keys()];
  if (keys.length === 0 || keys.length !== b.size || !keys.every((k) => b.has(k))) return undefined;
  const g = pairedBootstrap([{ a: keys.map((k) => a.get(k) as number), b: keys.map((k) => b.get(k) as number) }]);
  return { gain: g.gain, low: g.low, high: g.high, questions: g.questions };
}

/**
 * The per-question EM of a predictions file (one JSON record a line, as an eval writes it), keyed by dataset and
 * id, in the file's order.
 */
export function readPredictionScores(file: string): Map<string, number> {
  const scores = new Map<string, number>();
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((l, i) => {
      if (l.trim() === '') return;
      const r = JSON.parse(l) as { dataset?: unknown; id?: unknown; em?: unknown };
      if (typeof r.id !== 'string' || typeof r.em !== 'number') throw new Error(`${file}:${i + 1}: a prediction needs a string "id" and a numeric "em"`);
      const key = `${String(r.dataset)}\u0000${r.id}`;
      if (scores.has(key)) throw new Error(`${file}:${i + 1}: question "${r.id}" (dataset ${String(r.dataset)}) is scored twice`);
      scores.set(key, r.em);
    });
  return scores;
}
