// `eval --score FILE.jsonl` (docs/evaluation.md): scores predictions made by any system with our metric code.
// Lines: {"id","prediction","golden_answers"} with an optional "dataset" (default: the file's base name).
import { basename, extname } from 'node:path';
import { aggregateResults, type EvalResults } from './results.js';
import { exactMatchScore, f1Score } from './score.js';
import { echo } from '../util/text-file.js';
import { readTextFile, TextFileError } from '../util/text-file.js';

export interface ScoredLine {
  id: string;
  dataset: string;
  prediction: string | null;
  golden_answers: string[];
  em: number;
  f1: number;
}

export function scorePredictionsText(text: string, file: string): ScoredLine[] {
  const fallbackDataset = basename(file, extname(file));
  const out: ScoredLine[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const where = `${file}: line ${i + 1}`;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`${where}: not valid JSON (${(err as Error).message})`);
    }
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(`${where}: expected a JSON object`);
    if (typeof o.id !== 'string' && typeof o.id !== 'number') throw new Error(`${where}: field 'id' must be a string or number`);
    if (o.prediction !== null && typeof o.prediction !== 'string') throw new Error(`${where}: field 'prediction' must be a string (or null for no answer), got ${echo(o.prediction)}`);
    const golden = o.golden_answers;
    if (!Array.isArray(golden) || golden.length === 0 || !golden.every((g) => typeof g === 'string' || typeof g === 'number')) {
      throw new Error(`${where}: field 'golden_answers' must be a non-empty list of strings, got ${echo(golden)}`);
    }
    if (o.dataset !== undefined && typeof o.dataset !== 'string') throw new Error(`${where}: field 'dataset' must be a string`);
    const answers = golden.map(String);
    const prediction = o.prediction as string | null;
    out.push({
      id: String(o.id),
      dataset: (o.dataset as string | undefined) ?? fallbackDataset,
      prediction,
      golden_answers: answers,
      em: prediction === null ? 0 : exactMatchScore(prediction, answers),
      f1: prediction === null ? 0 : f1Score(prediction, answers),
    });
  });
  if (out.length === 0) throw new Error(`${file}: no prediction lines`);
  return out;
}

export function scorePredictionsFile(file: string): { lines: ScoredLine[]; results: EvalResults } {
  let text: string;
  try {
    text = readTextFile(file);
  } catch (err) {
    if (err instanceof TextFileError) throw err;
    throw new Error(`--score ${file}: cannot read (${(err as Error).message})`);
  }
  const lines = scorePredictionsText(text, file);
  return { lines, results: aggregateResults(lines) };
}
