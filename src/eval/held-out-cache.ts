// The held-out eval at step 0, kept for the next run that would compute it again (docs/evaluation.md, "The step-0
// cache"). Before any update the solver is the warm start, and the eval is greedy: two runs that differ only in
// what they train (seed, learning rates, rewards, steps) compute the same predictions at step 0. An entry is
// keyed by the digest of everything those predictions depend on, as the caller lists it (`inputs`: the
// program's sources, the model's files, the adapter, the bank, the questions, the search tools' contents, the
// settings that reach the eval, the backend and the machine); the inputs are stored beside the result, for a
// person to read. An entry that cannot be read or does not match is reported and computed again; a failed
// write is reported and changes nothing else.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeJsonAtomic } from '../util/atomic.js';
import type { HeldOutEval } from './held-out.js';

const FORMAT = 1;

/** JSON with every object's keys sorted, so that equal inputs give one digest whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** The sha256 of `inputs` (canonical JSON). */
export function heldOutCacheDigest(inputs: Record<string, unknown>): string {
  return createHash('sha256').update(canonical(inputs)).digest('hex');
}

/** The entry's file in `dir`. */
export function heldOutCacheFile(dir: string, digest: string): string {
  return join(dir, `step0-${digest.slice(0, 32)}.json`);
}

interface Entry {
  format: number;
  digest: string;
  inputs: Record<string, unknown>;
  createdAt: string;
  evals: HeldOutEval[];
}

/** The cached evals of `digest` in `file`; undefined (with a warning when the file exists but is unusable) otherwise. */
export function readHeldOutCache(file: string, digest: string, warn: (line: string) => void): HeldOutEval[] | undefined {
  if (!existsSync(file)) return undefined;
  let entry: Partial<Entry>;
  try {
    entry = JSON.parse(readFileSync(file, 'utf8')) as Partial<Entry>;
  } catch (err) {
    warn(`held-out cache: ${file} cannot be read (${(err as Error).message}); computing the eval again`);
    return undefined;
  }
  const problem =
    entry.format !== FORMAT
      ? `format ${String(entry.format)}, expected ${FORMAT}`
      : entry.digest !== digest
        ? 'its digest is not the one asked for'
        : !Array.isArray(entry.evals) || entry.evals.length === 0 || !entry.evals.every((e) => e?.row?.kind === 'eval' && e.row.step === 0 && Array.isArray(e.records) && e.records.length === e.row.questions)
          ? "field 'evals' is not a list of step-0 eval rows with their predictions"
          : undefined;
  if (problem !== undefined) {
    warn(`held-out cache: ${file} is unusable (${problem}); computing the eval again`);
    return undefined;
  }
  return entry.evals as HeldOutEval[];
}

/** Writes the entry atomically; a failure is reported through `warn` and is otherwise harmless. */
export function writeHeldOutCache(file: string, digest: string, inputs: Record<string, unknown>, evals: readonly HeldOutEval[], warn: (line: string) => void): void {
  const entry: Entry = { format: FORMAT, digest, inputs, createdAt: new Date().toISOString(), evals: [...evals] };
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeJsonAtomic(file, entry);
  } catch (err) {
    warn(`held-out cache: could not write ${file} (${(err as Error).message}); the next run computes the eval again`);
  }
}
