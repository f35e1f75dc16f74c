// Evaluation questions (docs/evaluation.md): FlashRAG JSONL files (`{"id","question","golden_answers"}`), the
// benchmark names resolved in a data folder, and `encyclopedia`, the held-out questions of the embedded
// synthetic encyclopedia. Every line is checked before any question runs; a problem names the file, the line and the field.
import { statSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { generateSyntheticCorpus } from '../corpus/synthetic/index.js';
import { ENCYCLOPEDIA, RENAMED_DATA, RENAMED_DATA_WHY } from '../settings/train/search.js';
import { renamedValueProblem } from '../settings/table.js';
import { Rng } from '../util/rng.js';
import { echo } from '../util/text-file.js';
import { readTextFile, TextFileError } from '../util/text-file.js';

import type { EvalQuestion } from '../agent/environment.js';

export type { EvalQuestion };

export interface EvalDataset {
  name: string;
  /** The file it came from, or `encyclopedia`. */
  source: string;
  questions: EvalQuestion[];
}

/** The paper's seven benchmarks (docs/evaluation.md), as FlashRAG names them. */
export const BENCHMARK_NAMES = ['nq', 'triviaqa', 'popqa', 'hotpotqa', '2wikimultihopqa', 'musique', 'bamboogle'] as const;

/**
 * The embedded encyclopedia (`--corpus encyclopedia`, its held-out questions `--data encyclopedia`) is generated
 * with this seed whatever the run's seed, so every run and eval on it searches the same one. (Not the demo
 * world, src/world/world.ts: that one has 300 passages.)
 */
export const ENCYCLOPEDIA_SEED = 0;

export class DatasetError extends Error {
  constructor(
    readonly file: string,
    readonly where: string,
    problem: string,
  ) {
    super(`${file}${where ? `: ${where}` : ''}: ${problem}`);
    this.name = 'DatasetError';
  }
}

/** Where a benchmark name may live in a data folder: `NAME.jsonl`, or FlashRAG's `NAME/test.jsonl`, `NAME/dev.jsonl`. */
export function candidatePaths(dataDir: string, name: string): string[] {
  return [join(dataDir, `${name}.jsonl`), join(dataDir, name, 'test.jsonl'), join(dataDir, name, 'dev.jsonl')];
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Parses FlashRAG JSONL text; `dataset` is recorded on each question. Throws on the first bad line. */
export function parseDatasetText(text: string, file: string, dataset: string): EvalQuestion[] {
  const out: EvalQuestion[] = [];
  const seen = new Set<string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line.length === 0) return;
    const where = `line ${i + 1}`;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch (err) {
      throw new DatasetError(file, where, `not valid JSON (${(err as Error).message})`);
    }
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new DatasetError(file, where, 'expected a JSON object');
    const r = o as Record<string, unknown>;
    if (typeof r.id !== 'string' && typeof r.id !== 'number') throw new DatasetError(file, where, `field 'id' must be a string or number, got ${echo(r.id)}`);
    const id = String(r.id);
    if (seen.has(id)) throw new DatasetError(file, where, `field 'id': ${echo(id)} appears twice`);
    seen.add(id);
    if (typeof r.question !== 'string' || r.question.trim().length === 0) throw new DatasetError(file, where, `field 'question' must be a non-empty string`);
    const golden = r.golden_answers;
    if (!Array.isArray(golden) || golden.length === 0) throw new DatasetError(file, where, `field 'golden_answers' must be a non-empty list of strings, got ${echo(golden)}`);
    const answers = golden.map((g) => (typeof g === 'number' ? String(g) : g));
    if (!answers.every((g): g is string => typeof g === 'string' && g.trim().length > 0)) {
      throw new DatasetError(file, where, `field 'golden_answers' must hold non-empty strings, got ${echo(golden)}`);
    }
    out.push({ id, dataset, question: r.question, goldenAnswers: answers });
  });
  if (out.length === 0) throw new DatasetError(file, '', 'the dataset is empty (no question lines)');
  return out;
}

export function readDatasetFile(file: string, dataset = basename(file, extname(file))): EvalDataset {
  let text: string;
  try {
    text = readTextFile(file);
  } catch (err) {
    if (err instanceof TextFileError) throw err;
    throw new DatasetError(file, '', `cannot read (${(err as Error).message})`);
  }
  return { name: dataset, source: file, questions: parseDatasetText(text, file, dataset) };
}

/** The embedded encyclopedia's held-out questions (all of them; it is fixed by ENCYCLOPEDIA_SEED). */
export function encyclopediaDataset(): EvalDataset {
  const world = generateSyntheticCorpus({ seed: ENCYCLOPEDIA_SEED });
  return {
    name: ENCYCLOPEDIA,
    source: ENCYCLOPEDIA,
    questions: world.heldOut.map((q) => ({ id: q.id, dataset: ENCYCLOPEDIA, question: q.question, goldenAnswers: [...q.golden_answers] })),
  };
}

/**
 * One `--data` value: `encyclopedia`, a JSONL file, or a benchmark name looked up in `dataDir`. A name that
 * cannot be found is an error listing every place that was tried; the encyclopedia's old name is refused.
 */
export function resolveDataset(spec: string, dataDir: string | undefined): EvalDataset {
  const renamed = renamedValueProblem('data', spec, RENAMED_DATA, RENAMED_DATA_WHY);
  if (renamed !== undefined) throw new Error(`--data ${renamed}`);
  if (spec === ENCYCLOPEDIA) return encyclopediaDataset();
  if (isFile(spec)) return readDatasetFile(spec);
  const name = spec.toLowerCase();
  if ((BENCHMARK_NAMES as readonly string[]).includes(name)) {
    if (dataDir === undefined) throw new Error(`--data ${spec}: a benchmark name needs a data folder: pass --data-dir DIR or set $SESA_DATA`);
    const tried = candidatePaths(dataDir, name);
    const found = tried.find(isFile);
    if (!found) throw new Error(`--data ${spec}: not found in the data folder ${dataDir}; tried ${tried.join(', ')}`);
    return readDatasetFile(found, name);
  }
  if (extname(spec) !== '' || spec.includes('/')) throw new Error(`--data ${spec}: file not found`);
  throw new Error(`--data ${spec}: not a file and not a known dataset name (known: ${[...BENCHMARK_NAMES, ENCYCLOPEDIA].join(', ')})`);
}

/**
 * Resolves every `--data` value up front and reports all missing benchmark files at once, so a long
 * evaluation never stops at its fourth dataset for a missing file.
 */
export function resolveDatasets(specs: readonly string[], dataDir: string | undefined): EvalDataset[] {
  if (specs.length === 0) throw new Error('--data: give at least one dataset (a JSONL file, a benchmark name, or encyclopedia)');
  const missing: string[] = [];
  const out: EvalDataset[] = [];
  for (const spec of specs) {
    try {
      out.push(resolveDataset(spec, dataDir));
    } catch (err) {
      if (err instanceof DatasetError) throw err;
      missing.push((err as Error).message);
    }
  }
  if (missing.length > 0) throw new Error(missing.join('\n'));
  const names = new Set<string>();
  for (const d of out) {
    if (names.has(d.name)) throw new Error(`--data: the dataset ${d.name} is given twice`);
    names.add(d.name);
  }
  return out;
}

/**
 * At most `limit` questions, a seeded uniform sample without replacement, kept in file order; all of them
 * when the dataset is no larger (so `--limit 500` keeps all 125 of Bamboogle).
 */
export function sampleQuestions(questions: readonly EvalQuestion[], limit: number | undefined, seed: number): EvalQuestion[] {
  if (limit === undefined || limit >= questions.length) return [...questions];
  if (!Number.isInteger(limit) || limit <= 0) throw new Error(`--limit must be a positive integer, got ${limit}`);
  const rng = new Rng(seed);
  const idx = questions.map((_, i) => i);
  for (let i = 0; i < limit; i++) {
    const j = i + rng.int(idx.length - i);
    [idx[i], idx[j]] = [idx[j] as number, idx[i] as number];
  }
  return idx
    .slice(0, limit)
    .sort((a, b) => a - b)
    .map((i) => questions[i] as EvalQuestion);
}

/** `--data-dir`, else `$SESA_DATA`, else undefined. */
export function defaultDataDir(flag: string | undefined): string | undefined {
  if (flag !== undefined && flag !== '') return flag;
  const env = process.env.SESA_DATA;
  return env !== undefined && env !== '' ? env : undefined;
}
