// What a report shows, read from disk (docs/report.md): a run folder (config.json, metrics.jsonl with step rows
// and `kind: "eval"` rows, skills.json) and any number of eval folders (settings.json, results.json). Bad files
// are errors naming the file and line; a run with no metrics yet is not an error (the report says so).
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { EvalResults } from '../eval/results.js';
import { readBankFile } from '../skills/bank-file.js';
import type { SkillCard } from '../skills/card.js';

/** The fields of a step row the report draws (a StepMetrics line; every field optional for older runs). */
export interface StepRow {
  step: number;
  extractionRate?: number;
  validityRate?: number;
  invalidReasons?: Record<string, number>;
  proposals?: number;
  validQuestions?: number;
  solverRollouts?: number;
  solverAccuracy?: number;
  pHatHistogram?: Record<string, number>;
  solverMeanReward?: number;
  proposerMeanReward?: number;
  solver?: UpdateRow;
  proposer?: UpdateRow;
  bankSize?: number;
  activeSkills?: number;
  /** Cards in the bank retrieved at least once (docs/method.md, "One step"). */
  activeCards?: number;
  /** The solver batch: its questions, those reused from the pool, those of resampling rounds, the slots left empty. */
  solverQuestions?: number;
  reusedQuestions?: number;
  resampledQuestions?: number;
  emptySlots?: number;
  /** Solver groups with a learning signal (0 < p̂ < 1). */
  informativeGroups?: number;
  /** The solver's accuracy on the step's own valid questions, and its rollouts. */
  validQuestionAccuracy?: number;
  validQuestionRollouts?: number;
  bankVersion?: number;
  queueLength?: number;
  consolidation?: { started?: boolean; committed?: { admitted?: number; evicted?: unknown[] | number; duplicates?: number } };
  seconds?: Record<string, number>;
}

export interface UpdateRow {
  loss?: number;
  kl?: number;
  clipFrac?: number;
  entropy?: number;
  gradNorm?: number;
}

/** A held-out evaluation during training (metrics.jsonl, `kind: "eval"`). */
export interface EvalRow {
  kind: 'eval';
  step: number;
  skills: 'on' | 'off';
  em: number;
  f1: number;
  questions: number;
  judged?: number | null;
}

export interface RunData {
  dir: string;
  config: Record<string, unknown> | null;
  steps: StepRow[];
  evals: EvalRow[];
  cards: SkillCard[];
  /** Why there are no cards: no bank file, or skills off. */
  bankNote?: string;
}

export interface EvalFolderData {
  dir: string;
  /** A short label: the folder name. */
  label: string;
  settings: Record<string, unknown> | null;
  results: EvalResults;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
}

export function readRun(dir: string): RunData {
  const configPath = join(dir, 'config.json');
  const metricsPath = join(dir, 'metrics.jsonl');
  if (!existsSync(configPath) && !existsSync(metricsPath)) throw new Error(`${dir} is not a run folder: neither config.json nor metrics.jsonl exists`);
  const config = existsSync(configPath) ? (readJson(configPath) as Record<string, unknown>) : null;
  const steps: StepRow[] = [];
  const evals: EvalRow[] = [];
  if (existsSync(metricsPath)) {
    readFileSync(metricsPath, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trim() === '') return;
        let o: Record<string, unknown>;
        try {
          o = JSON.parse(line) as Record<string, unknown>;
        } catch (err) {
          throw new Error(`${metricsPath}: line ${i + 1}: not valid JSON (${(err as Error).message})`);
        }
        if (typeof o.step !== 'number') throw new Error(`${metricsPath}: line ${i + 1}: field 'step' must be a number`);
        if (o.kind === 'eval') evals.push(o as unknown as EvalRow);
        else if (o.kind === undefined || o.kind === 'step') steps.push(o as unknown as StepRow);
      });
  }
  const bankPath = join(dir, 'skills.json');
  let cards: SkillCard[] = [];
  let bankNote: string | undefined;
  if (existsSync(bankPath)) cards = readBankFile(bankPath).cards;
  else bankNote = config && config.skills === false ? 'skills were off in this run' : 'no skills.json in the run folder';
  return { dir: resolve(dir), config, steps, evals, cards, ...(bankNote ? { bankNote } : {}) };
}

export function readEvalFolder(dir: string): EvalFolderData {
  const resultsPath = join(dir, 'results.json');
  if (!existsSync(resultsPath)) throw new Error(`--eval ${dir}: ${resultsPath} does not exist (run sesa-train eval --out ${dir} first)`);
  const results = readJson(resultsPath) as EvalResults;
  if (!Array.isArray(results.datasets) || typeof results.average !== 'object') throw new Error(`${resultsPath}: fields 'datasets' and 'average' are missing`);
  const settingsPath = join(dir, 'settings.json');
  const settings = existsSync(settingsPath) ? (readJson(settingsPath) as Record<string, unknown>) : null;
  return { dir: resolve(dir), label: basename(resolve(dir)), settings, results };
}
