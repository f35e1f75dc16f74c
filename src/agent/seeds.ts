// Answer seeds for the proposer (docs/method.md, "One step"): a target answer and a hop count. From a JSONL file, or
// derived from a corpus when none is given.
import { existsSync } from 'node:fs';
import type { Passage } from '../search/types.js';
import type { AnswerSeed } from './roles.js';
import { readTextFile } from '../util/text-file.js';

/** Answer seeds from a JSONL file of {"answer": string, "hops": number, "aliases"?: string[]}. */
export function readSeedsFile(file: string): AnswerSeed[] {
  if (!existsSync(file)) throw new Error(`--seeds ${file}: file not found`);
  const seeds: AnswerSeed[] = [];
  readTextFile(file)
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let row: { answer?: unknown; hops?: unknown; aliases?: unknown };
      try {
        row = JSON.parse(line) as typeof row;
      } catch (err) {
        throw new Error(`${file}:${i + 1}: not valid JSON (${(err as Error).message})`);
      }
      if (typeof row.answer !== 'string' || row.answer.trim() === '') throw new Error(`${file}:${i + 1}: field 'answer' must be a non-empty string`);
      const hops = row.hops ?? 1;
      if (typeof hops !== 'number' || !Number.isInteger(hops) || hops < 1) throw new Error(`${file}:${i + 1}: field 'hops' must be a positive integer`);
      if (row.aliases !== undefined && !(Array.isArray(row.aliases) && row.aliases.every((a) => typeof a === 'string'))) {
        throw new Error(`${file}:${i + 1}: field 'aliases' must be a list of strings`);
      }
      seeds.push({ answer: row.answer, hops, ...(row.aliases ? { aliases: row.aliases as string[] } : {}) });
    });
  if (seeds.length === 0) throw new Error(`--seeds ${file}: no seeds in the file`);
  return seeds;
}

/** A passage title longer than this many words is not used as an answer seed. */
export const MAX_SEED_TITLE_WORDS = 8;

/**
 * Seeds from a corpus's own entities: each distinct passage title of at most 8 words is an answer, with hop
 * counts 1, 2, 3 in turn (ours: the papers draw seeds from QA data, which an arbitrary corpus lacks).
 */
export function seedsFromPassages(passages: readonly Passage[]): AnswerSeed[] {
  const seen = new Set<string>();
  const seeds: AnswerSeed[] = [];
  for (const p of passages) {
    const title = p.title.trim();
    const key = title.toLowerCase();
    if (title === '' || seen.has(key) || title.split(/\s+/).length > MAX_SEED_TITLE_WORDS) continue;
    seen.add(key);
    seeds.push({ answer: title, hops: 1 + (seeds.length % 3) });
  }
  if (seeds.length === 0) throw new Error('the corpus has no titled passages to use as answer seeds; give --seeds FILE');
  return seeds;
}

/**
 * `--max-hops N`: each seed asks for at most N hops. Any answer reachable by a chain of k hops is the end of
 * that chain's last hop, so a shorter question about it exists whenever the longer one does.
 */
export function capHops(seeds: readonly AnswerSeed[], maxHops: number | undefined): AnswerSeed[] {
  return maxHops === undefined ? [...seeds] : seeds.map((s) => (s.hops > maxHops ? { ...s, hops: maxHops } : s));
}

/**
 * `--min-hops N`: each seed asks for at least N hops. A seed's hop count is the length of one chain the data
 * knows into it; a longer chain exists whenever the chain's start entity is itself the object of a fact, which
 * the proposer finds by searching (and an invalid question is rejected as any other).
 */
export function floorHops(seeds: readonly AnswerSeed[], minHops: number | undefined): AnswerSeed[] {
  return minHops === undefined ? [...seeds] : seeds.map((s) => (s.hops < minHops ? { ...s, hops: minHops } : s));
}
