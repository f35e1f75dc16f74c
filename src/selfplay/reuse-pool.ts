// The reuse pool (docs/method.md, "The solver batch and the reuse pool"), as SSP's released trainer keeps it
// (extraction_failure.strategy = reuse): every question the solver solved, with its success rate p̂ of that
// step, is added at the end of the step (a question solved again is added again); a slot of the solver batch
// that no valid proposal fills takes a question drawn uniformly from those whose p̂ is at most the threshold,
// each slot its own draw; the pool is emptied before every step whose number is a multiple of the clear
// interval. It is part of a checkpoint (reuse-pool.json), so a resumed run draws from the same pool.
import type { Rng } from '../util/rng.js';

/** One solved question, as the pool keeps it. */
export interface PooledQuestion {
  question: string;
  /** The answer its proposer was asked for, and the other accepted spellings. */
  answer: string;
  aliases?: string[];
  /** The hop count its seed asked for. */
  hops: number;
  /** The training corpus it was proposed in (docs/method.md, "Training corpora"); absent: the one corpus. */
  corpus?: number;
  /** The solver group's success rate when it was solved. */
  successRate: number;
  /** The step it was solved at. */
  step: number;
}

export interface ReusePoolFile {
  version: 1;
  questions: PooledQuestion[];
}

/** What makes two pooled questions the same for a resampling draw: the text, in its corpus. */
export function questionKey(q: { question: string; corpus?: number | undefined }): string {
  return `${q.corpus ?? ''}\u0000${q.question}`;
}

export class ReusePool {
  private questions: PooledQuestion[];

  constructor(questions: readonly PooledQuestion[] = []) {
    this.questions = questions.map((q) => ({ ...q }));
  }

  get size(): number {
    return this.questions.length;
  }

  /** The pool as it stands, oldest first (a copy). */
  entries(): PooledQuestion[] {
    return this.questions.map((q) => ({ ...q }));
  }

  /** Before step `step`: empties the pool when the step's number is a multiple of `clearEvery`; true when it did. */
  beginStep(step: number, clearEvery: number): boolean {
    if (step % clearEvery !== 0 || this.questions.length === 0) return false;
    this.questions = [];
    return true;
  }

  /** Questions whose success rate is at most `threshold`. */
  eligible(threshold: number): PooledQuestion[] {
    return this.questions.filter((q) => q.successRate <= threshold);
  }

  /**
   * `n` questions for empty slots, each drawn uniformly and independently (so one can come twice) from the
   * eligible ones; none when no question is eligible.
   */
  draw(n: number, threshold: number, rng: Rng): PooledQuestion[] {
    const from = this.eligible(threshold);
    if (from.length === 0) return [];
    return Array.from({ length: n }, () => ({ ...(from[rng.int(from.length)] as PooledQuestion) }));
  }

  /**
   * One question per entry of `hops` (the hop count each empty slot's seed asked for; undefined: any), each
   * drawn uniformly from the eligible questions of that hop count, or from all eligible ones where the pool has
   * none of it (the `--reuse-by-hops` departure from SSP: docs/method.md, "The solver batch and the reuse pool").
   * None when no question is eligible.
   */
  drawByHops(hops: ReadonlyArray<number | undefined>, threshold: number, rng: Rng): PooledQuestion[] {
    const from = this.eligible(threshold);
    if (from.length === 0) return [];
    return hops.map((h) => {
      const same = h === undefined ? [] : from.filter((q) => q.hops === h);
      const pick = same.length > 0 ? same : from;
      return { ...(pick[rng.int(pick.length)] as PooledQuestion) };
    });
  }

  /**
   * Up to `n` distinct eligible questions, none of whose `questionKey` (text and corpus) is in `exclude`, drawn
   * uniformly without replacement (a question the pool holds twice counts once): a resampling round's draw
   * (`--min-informative-groups`, docs/method.md, "The solver batch and the reuse pool").
   */
  drawDistinct(n: number, threshold: number, rng: Rng, exclude: ReadonlySet<string>): PooledQuestion[] {
    const seen = new Set(exclude);
    const from: PooledQuestion[] = [];
    for (const q of this.eligible(threshold)) {
      const key = questionKey(q);
      if (seen.has(key)) continue;
      seen.add(key);
      from.push(q);
    }
    const picked: PooledQuestion[] = [];
    while (picked.length < n && from.length > 0) picked.push({ ...(from.splice(rng.int(from.length), 1)[0] as PooledQuestion) });
    return picked;
  }

  /** Adds the questions solved this step, in the order given. */
  add(questions: readonly PooledQuestion[]): void {
    this.questions.push(...questions.map((q) => ({ ...q })));
  }

  toFile(): ReusePoolFile {
    return { version: 1, questions: this.entries() };
  }

  /** A pool read back from its file; a malformed one is an error naming `file`. */
  static fromFile(raw: unknown, file: string): ReusePool {
    const o = raw as Partial<ReusePoolFile> | null;
    if (!o || o.version !== 1 || !Array.isArray(o.questions)) throw new Error(`${file}: not a reuse pool (expected {"version":1,"questions":[…]})`);
    o.questions.forEach((q, i) => {
      const bad = (what: string): never => {
        throw new Error(`${file}: question ${i}: ${what}`);
      };
      if (typeof q?.question !== 'string' || typeof q.answer !== 'string') bad("fields 'question' and 'answer' must be strings");
      if (!Number.isInteger(q.hops) || q.hops < 1) bad("field 'hops' must be a positive integer");
      if (typeof q.successRate !== 'number' || !(q.successRate >= 0 && q.successRate <= 1)) bad("field 'successRate' must be in [0, 1]");
      if (!Number.isInteger(q.step)) bad("field 'step' must be an integer");
      if (q.corpus !== undefined && !(Number.isInteger(q.corpus) && q.corpus >= 0)) bad("field 'corpus' must be a non-negative integer");
      if (q.aliases !== undefined && !(Array.isArray(q.aliases) && q.aliases.every((a) => typeof a === 'string'))) bad("field 'aliases' must be a list of strings");
    });
    return new ReusePool(o.questions);
  }
}
