// Watching the roles that answer over the network or in process (judge, distiller) and the search tool, so
// that a failing one is never silent: calls are counted per step, a step with failed or unusable replies
// gets a warning with the counts, and a role that fails on every call for K consecutive steps stops the run
// with a clear error. Searches that return nothing are counted and warned about the same way.
import type { ChatMessage, CompleteOptions, TextGenerator } from '../llm/types.js';
import { SearchR1Error } from '../search/searchr1-client.js';
import type { Passage, Searcher } from '../search/types.js';
import { parseVerdict } from '../agent/judge.js';
import { lastTagContent } from '../agent/rollout.js';

export interface CallCounts {
  calls: number;
  /** Calls that threw (endpoint errors after retries). */
  failed: number;
  /** Replies that came back but could not be used (no verdict, no card). */
  unusable: number;
  lastError?: string;
}

/** A TextGenerator that counts its calls, failures and (with `usable`) unusable replies. */
export class CountingTextGenerator implements TextGenerator {
  readonly name: string;
  private counts: CallCounts = { calls: 0, failed: 0, unusable: 0 };

  constructor(
    readonly inner: TextGenerator,
    private readonly usable?: (reply: string) => boolean,
  ) {
    this.name = inner.name;
  }

  async complete(messages: ChatMessage[], opts?: CompleteOptions): Promise<string> {
    this.counts.calls++;
    try {
      const reply = await this.inner.complete(messages, opts);
      if (this.usable && !this.usable(reply)) this.counts.unusable++;
      return reply;
    } catch (err) {
      this.counts.failed++;
      this.counts.lastError = (err as Error).message;
      throw err;
    }
  }

  /** Adds calls made elsewhere (a step worker's, docs/scale-out.md) to the counts since the last take(). */
  add(counts: CallCounts): void {
    this.counts.calls += counts.calls;
    this.counts.failed += counts.failed;
    this.counts.unusable += counts.unusable;
    if (counts.lastError !== undefined) this.counts.lastError = counts.lastError;
  }

  /** The counts since the last call, and starts counting afresh. */
  take(): CallCounts {
    const c = this.counts;
    this.counts = { calls: 0, failed: 0, unusable: 0 };
    return c;
  }
}

export interface SearchCounts {
  queries: number;
  /** Queries that returned no passage with any text (failed ones included). */
  empty: number;
  /** Queries whose retrieval-server request failed after its retries (an error, or a reply that is not a result). */
  failed: number;
  lastError?: string;
}

/**
 * A Searcher that counts queries, empty results and failed requests. A retrieval server that fails after its
 * retries (HTTP errors, timeouts, a malformed reply) gives each query of the batch no passages, like a search
 * that found nothing, and the failure is counted: the role watch warns about it and stops the run when every
 * search fails for --stop-after-failed-steps steps. Any other error (a bug in a local index) ends the step.
 */
export class CountingSearcher implements Searcher {
  /** The counts, shared with the siblings (the search tools of other corpora; docs/method.md, "Training corpora"). */
  private readonly tally: { counts: SearchCounts };

  constructor(
    readonly inner: Searcher,
    tally?: { counts: SearchCounts },
  ) {
    this.tally = tally ?? { counts: { queries: 0, empty: 0, failed: 0 } };
  }

  /** A counting tool over another corpus's searcher whose searches count with this one's. */
  sibling(inner: Searcher): CountingSearcher {
    return new CountingSearcher(inner, this.tally);
  }

  private get counts(): SearchCounts {
    return this.tally.counts;
  }

  describe(): string {
    return this.inner.describe();
  }

  get contentDigest(): string | undefined {
    return this.inner.contentDigest;
  }

  async search(queries: string[], k: number): Promise<Passage[][]> {
    let lists: Passage[][];
    try {
      lists = await this.inner.search(queries, k);
    } catch (err) {
      if (!(err instanceof SearchR1Error)) throw err;
      this.counts.failed += queries.length;
      this.counts.lastError = err.message;
      lists = queries.map(() => []);
    }
    this.counts.queries += queries.length;
    this.counts.empty += lists.filter((l) => !l.some((p) => p.text.trim().length > 0)).length;
    return lists;
  }

  /** Adds searches made elsewhere (a step worker's, docs/scale-out.md) to this step's counts. */
  add(counts: SearchCounts): void {
    this.counts.queries += counts.queries;
    this.counts.empty += counts.empty;
    this.counts.failed += counts.failed ?? 0;
    if (counts.lastError !== undefined) this.counts.lastError = counts.lastError;
  }

  take(): SearchCounts {
    const c = this.counts;
    this.tally.counts = { queries: 0, empty: 0, failed: 0 };
    return c;
  }
}

export class RoleFailureError extends Error {
  /**
   * The counts and warnings of the step that ended the run (RoleWatch.endStep sets them), so the trainer can
   * still record that step in metrics.jsonl and print its warnings before it checkpoints and stops.
   */
  stepCalls?: StepCalls;
  /** The step's warnings made before the stop (RoleHealth.check sets them). */
  warnings: string[] = [];

  constructor(message: string) {
    super(message);
    this.name = 'RoleFailureError';
  }
}

export interface RoleStep {
  role: string;
  counts: CallCounts;
  /** The flag that points the role at its endpoint, for the error's advice (e.g. --judge-url). */
  flag?: string;
  /** Whether unusable replies count as failures toward the stop (true for an endpoint, false in process). */
  unusableIsFailure: boolean;
}

/** Fraction of a step's searches that may come back empty before the step is warned about. */
export const EMPTY_SEARCH_WARN_FRACTION = 0.5;

export class RoleHealth {
  private readonly streaks = new Map<string, { steps: number; first: number }>();

  /** `stopAfter`: consecutive all-failed steps of one role that stop the run. */
  constructor(private readonly stopAfter: number) {
    if (!Number.isInteger(stopAfter) || stopAfter < 1) throw new Error(`stopAfter must be a positive integer, got ${stopAfter}`);
  }

  /**
   * The warnings for `step`; throws a RoleFailureError when a role has now failed on every call for
   * `stopAfter` consecutive steps in which it was called (steps without calls neither count nor reset).
   */
  check(step: number, roles: readonly RoleStep[], search?: SearchCounts): string[] {
    const warnings: string[] = [];
    // Every role's warning is made before a stop is raised, so the error carries the whole step's warnings.
    let stop: RoleFailureError | undefined;
    for (const { role, counts, flag, unusableIsFailure } of roles) {
      if (counts.calls === 0) continue;
      const parts: string[] = [];
      if (counts.failed > 0) parts.push(`${counts.failed} of ${counts.calls} calls failed (last: ${counts.lastError ?? 'unknown error'})`);
      if (counts.unusable > 0) parts.push(`${counts.unusable} of ${counts.calls} replies unusable`);
      if (parts.length > 0) warnings.push(`step ${step}: ${role}: ${parts.join('; ')}`);
      const bad = counts.failed + (unusableIsFailure ? counts.unusable : 0);
      if (bad < counts.calls) {
        this.streaks.delete(role);
        continue;
      }
      const s = this.streaks.get(role) ?? { steps: 0, first: step };
      s.steps++;
      this.streaks.set(role, s);
      if (s.steps >= this.stopAfter && stop === undefined) {
        const what = counts.failed === counts.calls ? `failed on every call` : `failed or replied unusably on every call`;
        stop = new RoleFailureError(
          `${role} ${what} for ${s.steps} consecutive steps (${s.first}–${step}); last error: ${counts.lastError ?? 'none (replies unusable)'}. ` +
            `Check ${flag ?? `the ${role}`}, or change --stop-after-failed-steps (now ${this.stopAfter})`,
        );
      }
    }
    if (search && search.queries > 0 && search.empty - search.failed > (search.queries - search.failed) * EMPTY_SEARCH_WARN_FRACTION) {
      warnings.push(`step ${step}: search: ${search.empty - search.failed} of ${search.queries - search.failed} searches returned no passage with text`);
    }
    if (stop) {
      stop.warnings = warnings;
      throw stop;
    }
    return warnings;
  }
}

/** The bank's side of the distiller's work: replies dropped as invalid, and a job that failed as a whole. */
export interface DistillerBankView {
  readonly counters: { readonly invalid: number };
  readonly lastConsolidationError: Error | null;
}

export interface RoleWatchOptions {
  judge: TextGenerator;
  /** Set when the judge is an endpoint (--judge-url); unusable replies then count toward the stop. */
  judgeUrl?: string;
  distiller?: TextGenerator;
  distillerUrl?: string;
  searcher: Searcher;
  /** Set when the searcher is a retrieval server (--retriever-url), for the error's advice. */
  retrieverUrl?: string;
  bank?: DistillerBankView;
  /** Consecutive all-failed steps of one role that stop the run. */
  stopAfter: number;
}

export interface StepCalls {
  calls: { judge: CallCounts; distiller?: CallCounts };
  searches: SearchCounts;
  warnings: string[];
}

/** A judge reply is usable when it holds a verdict (semantic match) or an <answer> (the RAG check). */
export function usableJudgeReply(reply: string): boolean {
  return parseVerdict(reply) !== undefined || lastTagContent(reply, 'answer') !== undefined;
}

/**
 * The trainer's watch over its roles: hand `judge`, `distiller` and `searcher` to the step in place of the
 * originals, call beginStep() before and endStep() after each step.
 */
export class RoleWatch {
  readonly judge: CountingTextGenerator;
  readonly distiller: CountingTextGenerator | undefined;
  readonly searcher: CountingSearcher;
  private readonly health: RoleHealth;
  private invalidBefore = 0;

  constructor(private readonly opts: RoleWatchOptions) {
    this.judge = new CountingTextGenerator(opts.judge, usableJudgeReply);
    this.distiller = opts.distiller ? new CountingTextGenerator(opts.distiller) : undefined;
    this.searcher = new CountingSearcher(opts.searcher);
    this.health = new RoleHealth(opts.stopAfter);
  }

  beginStep(): void {
    this.invalidBefore = this.opts.bank?.counters.invalid ?? 0;
    this.judge.take();
    this.distiller?.take();
    this.searcher.take();
  }

  /** This step's counts and warnings; throws a RoleFailureError when a role has failed for too long. */
  endStep(step: number): StepCalls {
    const judge = this.judge.take();
    const distiller = this.distiller?.take();
    if (distiller) distiller.unusable = (this.opts.bank?.counters.invalid ?? 0) - this.invalidBefore;
    const searches = this.searcher.take();
    // Failed searches are a role of their own: counted per query, they stop the run like a failing judge.
    const search: RoleStep = {
      role: 'search',
      counts: { calls: searches.queries, failed: searches.failed, unusable: 0, ...(searches.lastError !== undefined ? { lastError: searches.lastError } : {}) },
      unusableIsFailure: false,
      ...(this.opts.retrieverUrl ? { flag: `--retriever-url ${this.opts.retrieverUrl}` } : {}),
    };
    const roles: RoleStep[] = [search, { role: 'judge', counts: judge, unusableIsFailure: this.opts.judgeUrl !== undefined, ...(this.opts.judgeUrl ? { flag: `--judge-url ${this.opts.judgeUrl}` } : {}) }];
    if (distiller) {
      roles.push({ role: 'distiller', counts: distiller, unusableIsFailure: this.opts.distillerUrl !== undefined, ...(this.opts.distillerUrl ? { flag: `--distiller-url ${this.opts.distillerUrl}` } : {}) });
    }
    const warnings: string[] = [];
    const jobError = this.opts.bank?.lastConsolidationError;
    if (this.distiller && jobError) warnings.push(`step ${step}: consolidation failed as a whole (its records stay queued): ${jobError.message}`);
    const calls = { judge, ...(distiller ? { distiller } : {}) };
    try {
      warnings.push(...this.health.check(step, roles, searches));
    } catch (err) {
      if (err instanceof RoleFailureError) err.stepCalls = { calls, searches, warnings: [...warnings, ...err.warnings] };
      throw err;
    }
    return { calls, searches, warnings };
  }
}
