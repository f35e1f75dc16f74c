// The evaluation output folder (docs/evaluation.md):
//   settings.json      what was evaluated (model, adapter, skills, data, sampling, limits)
//   predictions.jsonl  one line per scored question, rewritten atomically after every batch
//   results.json       a row per dataset and the equal-weight average
//   results.md         the same as a Markdown table
// A killed evaluation run again with the same settings and --out continues where it stopped: questions
// already in predictions.jsonl are skipped, so none is scored twice. Other settings in the same folder are
// refused rather than mixed in. One process at a time writes a folder (a `.lock` file with the owner's pid and
// host, as a run folder has): a second eval into it is refused while the first runs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { FileLock } from '../util/lock.js';
import type { EvalQuestion } from './dataset.js';
import { type EvalResults, resultsMarkdown } from './results.js';
import type { PredictionRecord } from './runner.js';

/** The settings that decide what the predictions mean; a folder holds predictions of one set of them. */
export type EvalIdentity = Record<string, string | number | boolean | null | string[]>;

export function questionKey(q: { dataset: string; id: string }): string {
  return `${q.dataset}\u0000${q.id}`;
}

export class EvalFolder {
  readonly settingsPath: string;
  readonly predictionsPath: string;
  readonly resultsJsonPath: string;
  readonly resultsMdPath: string;
  private lines: string[] = [];
  private readonly recordsList: PredictionRecord[] = [];
  private readonly keys = new Set<string>();
  private lock: FileLock | undefined;

  private constructor(readonly dir: string) {
    this.settingsPath = join(dir, 'settings.json');
    this.predictionsPath = join(dir, 'predictions.jsonl');
    this.resultsJsonPath = join(dir, 'results.json');
    this.resultsMdPath = join(dir, 'results.md');
  }

  /**
   * Opens (or creates) the folder and takes its lock until release() (or the process's exit); an existing
   * folder must record the same identity.
   */
  static open(dir: string, identity: EvalIdentity, onStaleLock?: (message: string) => void): EvalFolder {
    const f = new EvalFolder(dir);
    ensureDir(dir);
    f.lock = FileLock.acquire(join(dir, '.lock'), `eval folder ${dir}`, 'evaluation', onStaleLock);
    try {
      f.load(identity);
    } catch (err) {
      f.release();
      throw err;
    }
    return f;
  }

  /** Lets another process write the folder. */
  release(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  private load(identity: EvalIdentity): void {
    if (existsSync(this.predictionsPath)) {
      readFileSync(this.predictionsPath, 'utf8')
        .split('\n')
        .forEach((raw, i) => {
          if (raw.trim() === '') return;
          let r: PredictionRecord;
          try {
            r = JSON.parse(raw) as PredictionRecord;
          } catch (err) {
            throw new Error(`${this.predictionsPath}: line ${i + 1}: not valid JSON (${(err as Error).message})`);
          }
          if (typeof r.id !== 'string' || typeof r.dataset !== 'string') throw new Error(`${this.predictionsPath}: line ${i + 1}: fields 'id' and 'dataset' must be strings`);
          const key = questionKey(r);
          if (this.keys.has(key)) throw new Error(`${this.predictionsPath}: line ${i + 1}: question ${r.dataset}/${r.id} appears twice`);
          this.keys.add(key);
          this.lines.push(raw);
          this.recordsList.push(r);
        });
    }
    // Settings only bind a folder that holds predictions: one left by a run that failed before its first
    // question (a wrong adapter path, say) is simply taken over.
    if (existsSync(this.settingsPath) && this.recordsList.length > 0) {
      let saved: EvalIdentity;
      try {
        saved = JSON.parse(readFileSync(this.settingsPath, 'utf8')) as EvalIdentity;
      } catch (err) {
        throw new Error(`${this.settingsPath}: not valid JSON (${(err as Error).message})`);
      }
      const keys = new Set([...Object.keys(saved), ...Object.keys(identity)]);
      for (const k of keys) {
        if (JSON.stringify(saved[k] ?? null) !== JSON.stringify(identity[k] ?? null)) {
          throw new Error(
            `${this.dir} holds an evaluation with other settings (${k}: ${JSON.stringify(saved[k] ?? null)} there, ${JSON.stringify(identity[k] ?? null)} now); ` +
              'choose another --out, or rerun with the same settings to continue it',
          );
        }
      }
    } else {
      writeJsonAtomic(this.settingsPath, identity);
    }
  }

  get records(): readonly PredictionRecord[] {
    return this.recordsList;
  }

  has(q: { dataset: string; id: string }): boolean {
    return this.keys.has(questionKey(q));
  }

  /** The questions not scored yet, in the given order. */
  pending(questions: readonly EvalQuestion[]): EvalQuestion[] {
    return questions.filter((q) => !this.has(q));
  }

  /** Adds records and rewrites predictions.jsonl atomically (a kill leaves the old or the new file). */
  append(records: readonly PredictionRecord[]): void {
    for (const r of records) {
      const key = questionKey(r);
      if (this.keys.has(key)) throw new Error(`${this.predictionsPath}: question ${r.dataset}/${r.id} would be scored twice`);
      this.keys.add(key);
      this.lines.push(JSON.stringify(r));
      this.recordsList.push(r);
    }
    writeFileAtomic(this.predictionsPath, this.lines.length === 0 ? '' : `${this.lines.join('\n')}\n`);
  }

  writeResults(results: EvalResults, title: string, extra: Record<string, unknown> = {}): void {
    writeJsonAtomic(this.resultsJsonPath, { ...extra, ...results });
    writeFileAtomic(this.resultsMdPath, resultsMarkdown(results, title));
  }
}
