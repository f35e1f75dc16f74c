// The skill bank: cards, utility stats and the failure queue in one JSON file that this object owns.
//
// Life cycle (docs/method.md, "The skill bank"):
//   retrieve()          read-only top-k by cosine; the card set changes only in commit(), so every
//                       retrieval between two commits sees one bank version
//   recordOutcome()     utility counts (step 6), in memory until the next commit
//   enqueueFailure()    the pending queue (step 7), in memory until the next commit
//   startConsolidation() at most one asynchronous job (step 9); it works on a snapshot
//   readyChange()       the finished job's PendingChange, if any
//   commit(step, change) at a step boundary the caller chooses: admission, maintenance, version + 1, and one
//                       atomic write of the whole file (a killed process keeps the old or the new file)
//
// About 500 lines, kept in one file on purpose: these methods share the one in-memory state (cards, vectors,
// queue, the job in flight, the lock) and its invariant (the card set changes only in commit). The file format
// (bank-file.ts), top-k (top-k.ts), consolidation (consolidate.ts) and statistics (bank-stats.ts) are already
// their own modules.
import { existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { sweepStaleTemps, writeJsonAtomic } from '../util/atomic.js';
import { FileLock } from '../util/lock.js';
import type { TextGenerator } from '../llm/types.js';
import type { CardContent, SkillCard } from './card.js';
import { cardEmbeddingText, emptyStats } from './card.js';
import type { SkillBankConfig } from './config.js';
import { resolveConfig } from './config.js';
import type { AdmissionDecision, Eviction, PendingChange } from './consolidate.js';
import { admit, consolidationDue, distilledCardId, maintain, runConsolidation } from './consolidate.js';
import type { Embedder, EmbedderInfo } from './embedder.js';
import { EmbeddingCache, VectorIndex } from './embedder.js';
import type { FailureInput, FailureRecord } from './queue.js';
import { FailureQueue } from './queue.js';
import type { Rendered, TokenCounter } from './render.js';
import { renderCards } from './render.js';
import { seedCards } from './seeds.js';
import { BANK_FORMAT, BANK_FORMAT_VERSION, type BankCounters, type BankFile, BankFileError, cardsToJsonl, readBankFile, serialize, zeroCounters } from './bank-file.js';
import { type Retrieval, topKScored } from './top-k.js';




export type Outcome = 'correct' | 'wrong' | 'malformed';


export interface CommitReport {
  version: number;
  step: number;
  /** Whether a consolidation result was applied. */
  applied: boolean;
  admitted: string[];
  duplicates: Array<{ fromKey: string; nearest: string | null; maxCosine: number }>;
  invalid: number;
  failed: number;
  evicted: Eviction[];
  consumed: number;
}

export interface OpenOptions {
  embedder: Embedder;
  config?: Partial<SkillBankConfig>;
  /** Create the file (with the seed cards unless `seedCards` is false) when it does not exist. Default true. */
  create?: boolean;
  /** A new bank starts with the project's hand-written seed cards (./seeds.ts). Default true. */
  seedCards?: boolean;
  /**
   * More priming cards for a new bank, after the seed cards (memory priming; e.g. a model folder's
   * priming-cards.jsonl). Marked `seed`, so never evicted. Ignored when the bank file exists.
   */
  primingCards?: readonly SkillCard[];
  /** Accept a bank recorded with another embedder and re-embed its cards (recorded at the next commit). */
  reembed?: boolean;
  /** Overrides the recorded admission threshold (recorded at the next commit). */
  dedupThreshold?: number;
  /**
   * Take the bank's exclusive lock (`<path>.lock`) for as long as it is open, so a second writer is refused
   * instead of overwriting this one's commits. Default true; false only for read-only use (search).
   */
  lock?: boolean;
  /** Told when a stale lock (of a process that no longer runs) is taken over. */
  onStaleLock?: (message: string) => void;
}





/** The cards a new bank starts with: the seed cards, then the extra priming cards as `seed` cards with fresh stats; an id twice is an error. */
function primingSet(handWritten: readonly SkillCard[], extra: readonly SkillCard[]): SkillCard[] {
  const out = [...handWritten];
  const ids = new Set(handWritten.map((c) => c.id));
  for (const c of extra) {
    if (ids.has(c.id)) throw new Error(`memory priming: card id ${c.id} appears twice`);
    ids.add(c.id);
    // Mined cards (distilled from the model's own bootstrap runs) stay 'mined': like distilled cards they can
    // be evicted for hurting; every other priming card joins the hand-written seed cards, which never are.
    out.push({ ...c, source: c.source === 'mined' ? 'mined' : 'seed', stats: emptyStats(), createdStep: 0, bankVersion: 0 });
  }
  return out;
}



export interface ConsolidationJob {
  step: number;
  selected: number;
  /** Resolves when the job is done (it never rejects; a failure is reported by readyChange()). */
  done: Promise<void>;
}

export class SkillBank {
  readonly config: SkillBankConfig;
  private data: BankFile;
  private queue: FailureQueue;
  private vectors: Float32Array[] = [];
  /** Built lazily from `vectors`; dropped whenever they change. */
  private vectorIndex: VectorIndex | null = null;
  /** Bumped whenever the card set changes; a pending change computed on another revision is re-admitted. */
  private revision = 0;
  private readonly cache: EmbeddingCache;
  private job: { info: ConsolidationJob; result: PendingChange | null; error: Error | null; finished: boolean } | null = null;
  private lastError: Error | null = null;
  /** Changes already applied: committing one twice is a caller bug, refused rather than double-counted. */
  private readonly applied = new WeakSet<PendingChange>();
  /** Held from open() to dispose() unless opened without a lock. */
  private lock: FileLock | undefined;

  private constructor(
    readonly path: string,
    readonly embedder: Embedder,
    data: BankFile,
    config: SkillBankConfig,
  ) {
    this.data = data;
    this.config = config;
    this.queue = new FailureQueue(config.queueCapacity, data.queue);
    this.cache = new EmbeddingCache(embedder);
  }

  static async open(path: string, opts: OpenOptions): Promise<SkillBank> {
    // The lock is taken before the file is read, so what this process commits is based on the latest file.
    const lock = opts.lock === false ? undefined : FileLock.acquire(`${path}.lock`, `skill bank ${path}`, `skill bank writer (${process.argv.slice(2, 4).join(' ') || 'library'})`, opts.onStaleLock);
    if (lock) {
      // The lock holder is the one writer: temp files of the bank that a killed writer left are its to remove.
      const swept = sweepStaleTemps(dirname(path), (name) => name.startsWith(`.${basename(path)}.`));
      if (swept.length > 0) opts.onStaleLock?.(`skill bank ${path}: removed ${swept.length} temp file(s) left by an interrupted writer: ${swept.join(', ')}`);
    }
    try {
      const bank = await SkillBank.openUnlocked(path, opts);
      bank.lock = lock;
      return bank;
    } catch (err) {
      lock?.release();
      throw err;
    }
  }

  private static async openUnlocked(path: string, opts: OpenOptions): Promise<SkillBank> {
    const config = resolveConfig(opts.config);
    const info = opts.embedder.info;
    let data: BankFile;
    let created = false;
    if (existsSync(path)) {
      data = readBankFile(path);
      const rec = data.embedder;
      if (rec.name !== info.name || rec.model !== info.model || rec.dim !== info.dim) {
        if (!opts.reembed) {
          throw new BankFileError(
            path,
            'embedder',
            `recorded with ${rec.name} (${rec.model}, dim ${rec.dim}) but this run uses ${info.name} (${info.model}, dim ${info.dim}); ask to re-embed (--reembed) to switch`,
          );
        }
        data.embedder = { ...info };
      }
      if (opts.dedupThreshold !== undefined) data.embedder.dedupThreshold = opts.dedupThreshold;
    } else {
      if (opts.create === false) throw new BankFileError(path, '(file)', 'does not exist');
      created = true;
      data = {
        format: BANK_FORMAT,
        formatVersion: BANK_FORMAT_VERSION,
        version: 0,
        embedder: { ...info, ...(opts.dedupThreshold !== undefined ? { dedupThreshold: opts.dedupThreshold } : {}) },
        lastCommitStep: 0,
        lastConsolidationStep: null,
        counters: zeroCounters(),
        cards: primingSet(opts.seedCards === false ? [] : seedCards(), opts.primingCards ?? []),
        queue: [],
      };
    }
    const bank = new SkillBank(path, opts.embedder, data, config);
    await bank.refreshVectors();
    if (created) writeJsonAtomic(path, bank.toFileData());
    return bank;
  }

  // ---- read side --------------------------------------------------------------------------------------

  get version(): number {
    return this.data.version;
  }
  get embedderInfo(): EmbedderInfo {
    return { ...this.data.embedder };
  }
  get dedupThreshold(): number {
    return this.data.embedder.dedupThreshold;
  }
  get cards(): readonly SkillCard[] {
    return this.data.cards;
  }
  get counters(): Readonly<BankCounters> {
    return this.data.counters;
  }
  card(id: string): SkillCard | undefined {
    return this.data.cards.find((c) => c.id === id);
  }
  pendingFailures(): FailureRecord[] {
    return this.queue.all();
  }

  /**
   * Top-k cards by cosine to `query: question`, those scoring at least the config's minScore; ties broken by
   * id, so a bank version gives one answer.
   */
  async retrieve(question: string, k = this.config.topK): Promise<Retrieval[]> {
    const [r] = await this.retrieveMany([question], k);
    return r as Retrieval[];
  }

  async retrieveMany(questions: string[], k = this.config.topK): Promise<Retrieval[][]> {
    // Capture the card set before the await: a commit landing meanwhile must not mix two versions.
    const cards = this.data.cards;
    const index = this.index();
    const qv = await this.embedder.embed(questions, 'query');
    // No floor (−1, the default) keeps the top k exactly as they are, whatever their scores.
    const floor = this.config.minScore;
    return qv.map((q) => {
      const top = topKScored(cards, index.scores(q), k);
      return floor > -1 ? top.filter((r) => r.score >= floor) : top;
    });
  }

  /** The compact solver-prompt block for retrieved cards (docs/method.md, "The skill bank"). */
  render(cards: ReadonlyArray<SkillCard | Retrieval>, opts: { tokenBudget?: number; countTokens?: TokenCounter } = {}): Rendered {
    const list = cards.map((c) => ('card' in c ? c.card : c));
    return renderCards(list, { tokenBudget: opts.tokenBudget ?? this.config.renderTokenBudget, ...(opts.countTokens ? { countTokens: opts.countTokens } : {}) });
  }

  // ---- utility and failures (between commits; persisted at the next commit) ---------------------------

  /**
   * docs/method.md, "The skill bank", for one rollout: every retrieved card gets retrieved += 1; a correct answer adds
   * helpful, a well-formed wrong one adds hurt, a malformed one nothing. Returns ids no longer in the bank.
   */
  recordOutcome(skillIds: readonly string[], outcome: Outcome): string[] {
    const unknown: string[] = [];
    for (const id of new Set(skillIds)) {
      const c = this.card(id);
      if (!c) {
        unknown.push(id);
        continue;
      }
      c.stats.retrieved += 1;
      if (outcome === 'correct') c.stats.helpful += 1;
      else if (outcome === 'wrong') c.stats.hurt += 1;
    }
    return unknown;
  }

  /** docs/method.md, "The skill bank": the caller passes only informative frontier failures (0 < p̂ < 1, well-formed, wrong). */
  enqueueFailure(f: FailureInput, step: number): { key: string; dropped?: string } {
    const r = this.queue.add(f, step);
    if (r.dropped !== undefined) this.data.counters.queueDropped += 1;
    return r;
  }

  // ---- consolidation ----------------------------------------------------------------------------------

  consolidationDue(step: number): boolean {
    return consolidationDue(step, this.queue.size, this.config);
  }

  get consolidationInFlight(): boolean {
    return this.job !== null && !this.job.finished;
  }

  /** The error of the last consolidation that failed as a whole (e.g. the embedder broke), if any. */
  get lastConsolidationError(): Error | null {
    return this.lastError;
  }

  /**
   * Starts a consolidation if one is due and none is in flight or waiting to be committed. The job runs
   * on a snapshot; nothing in the bank changes until commit(step, readyChange()).
   */
  startConsolidation(step: number, distiller: TextGenerator): ConsolidationJob | null {
    if (this.job !== null || !this.consolidationDue(step)) return null;
    const selected = this.queue.select(this.config.maxSelected);
    const bank = this.data.cards.map((card, i) => ({ card: { ...card, stats: { ...card.stats } }, vector: this.vectors[i] as Float32Array }));
    const slot: { info: ConsolidationJob; result: PendingChange | null; error: Error | null; finished: boolean } = {
      info: { step, selected: selected.length, done: Promise.resolve() },
      result: null,
      error: null,
      finished: false,
    };
    slot.info.done = runConsolidation({
      step,
      baseRevision: this.revision,
      selected,
      bank,
      cache: this.cache,
      distiller,
      threshold: this.data.embedder.dedupThreshold,
      cfg: this.config,
    }).then(
      (r) => {
        slot.result = r;
        slot.finished = true;
      },
      (err: unknown) => {
        slot.error = err instanceof Error ? err : new Error(String(err));
        slot.finished = true;
      },
    );
    this.job = slot;
    return slot.info;
  }

  /** Waits for the job in flight, if any (for shutdown and tests). */
  async waitForConsolidation(): Promise<void> {
    if (this.job) await this.job.info.done;
  }

  /**
   * The finished job's change, handing it to the caller (who commits it at a step boundary of its choice);
   * null while none is finished. A job that failed as a whole frees the slot, keeps its records queued and
   * is reported by lastConsolidationError.
   */
  readyChange(): PendingChange | null {
    if (!this.job || !this.job.finished) return null;
    const { result, error } = this.job;
    this.job = null;
    if (error) {
      this.lastError = error;
      return null;
    }
    this.lastError = null;
    return result;
  }

  // ---- commit -------------------------------------------------------------------------------------------

  /**
   * The step boundary: applies `change` (admission, queue consumption, maintenance) if given, persists
   * stats and queue, increments the version and writes the file atomically. The in-memory bank switches to
   * the new state only after the write succeeded, so memory and disk never disagree.
   */
  commit(step: number, change: PendingChange | null = null): CommitReport {
    if (change && this.applied.has(change)) throw new Error(`skill bank ${this.path}: this consolidation result was already committed`);
    const threshold = this.data.embedder.dedupThreshold;
    const version = this.data.version + 1;
    let cards = this.data.cards;
    let vectors = this.vectors;
    const report: CommitReport = { version, step, applied: false, admitted: [], duplicates: [], invalid: 0, failed: 0, evicted: [], consumed: 0 };
    const counters = { ...this.data.counters, commits: this.data.counters.commits + 1 };
    let queueRecords = this.queue.all();
    if (change) {
      report.applied = true;
      const decisions: AdmissionDecision[] =
        change.baseRevision === this.revision
          ? change.decisions
          : admit(change.candidates, cards.map((c, i) => ({ id: c.id, vector: vectors[i] as Float32Array })), threshold);
      const taken = new Set(cards.map((c) => c.id));
      const added: SkillCard[] = [];
      const addedVecs: Float32Array[] = [];
      decisions.forEach((d, i) => {
        if (!d.admitted) {
          report.duplicates.push({ fromKey: d.fromKey, nearest: d.nearest, maxCosine: d.maxCosine });
          return;
        }
        const id = distilledCardId(d.content, taken);
        taken.add(id);
        added.push(newCard(id, d.content, 'distilled', step, version));
        addedVecs.push((change.candidates[i] as { vector: Float32Array }).vector);
        report.admitted.push(id);
      });
      const consumed = new Set(change.consumedKeys);
      queueRecords = queueRecords.filter((r) => !consumed.has(r.key));
      report.consumed = this.queue.size - queueRecords.length;
      report.invalid = change.outcomes.filter((o) => o.status === 'invalid').length;
      report.failed = change.outcomes.filter((o) => o.status === 'failed').length;
      const all = [...cards, ...added];
      const allVecs = [...vectors, ...addedVecs];
      const { kept, evicted } = maintain(all, this.config);
      const keep = new Set(kept.map((c) => c.id));
      cards = kept;
      vectors = all.map((c, i) => (keep.has(c.id) ? allVecs[i] : null)).filter((v): v is Float32Array => v !== null);
      report.evicted = evicted;
      counters.consolidations += 1;
      counters.distilled += change.outcomes.filter((o) => o.status === 'candidate').length;
      counters.invalid += report.invalid;
      counters.failed += report.failed;
      counters.admitted += report.admitted.length;
      counters.duplicates += report.duplicates.length;
      counters.evictedNegative += evicted.filter((e) => e.reason === 'negative-utility').length;
      counters.evictedCap += evicted.filter((e) => e.reason === 'over-cap').length;
    }
    const next: BankFile = {
      ...this.data,
      version,
      lastCommitStep: step,
      lastConsolidationStep: change ? change.startedStep : this.data.lastConsolidationStep,
      counters,
      cards,
      queue: queueRecords,
    };
    writeJsonAtomic(this.path, serialize(next));
    // The write succeeded: switch state in one synchronous block.
    if (change) this.applied.add(change);
    const cardsChanged = cards !== this.data.cards;
    this.data = next;
    if (change) this.queue.remove(change.consumedKeys);
    if (cardsChanged) {
      this.setVectors(vectors);
      this.cache.retain(cards.map((c) => ({ text: cardEmbeddingText(c), kind: 'query' as const })));
    }
    return report;
  }

  /**
   * Adds cards (from a JSONL export, or mined cards) and commits at once: an import is a step boundary.
   * Existing ids are an error unless `replace`. Imported cards keep their source and stats.
   */
  async importCards(incoming: readonly SkillCard[], opts: { replace?: boolean; step?: number } = {}): Promise<{ added: number; replaced: number; version: number }> {
    const seen = new Set<string>();
    for (const c of incoming) {
      if (seen.has(c.id)) throw new Error(`import: id ${c.id} appears twice`);
      seen.add(c.id);
      if (!opts.replace && this.card(c.id)) throw new Error(`import: id ${c.id} is already in the bank (use replace to overwrite)`);
    }
    const vecs = await this.cache.get(incoming.map((c) => cardEmbeddingText(c)), 'query');
    const byId = new Map(incoming.map((c, i) => [c.id, i]));
    let replaced = 0;
    const cards: SkillCard[] = [];
    const vectors: Float32Array[] = [];
    this.data.cards.forEach((c, i) => {
      const j = byId.get(c.id);
      if (j === undefined) {
        cards.push(c);
        vectors.push(this.vectors[i] as Float32Array);
      } else replaced++;
    });
    incoming.forEach((c, i) => {
      cards.push(structuredClone(c));
      vectors.push(vecs[i] as Float32Array);
    });
    const step = opts.step ?? this.data.lastCommitStep;
    const next: BankFile = {
      ...this.data,
      version: this.data.version + 1,
      lastCommitStep: step,
      counters: { ...this.data.counters, commits: this.data.counters.commits + 1, imported: this.data.counters.imported + incoming.length },
      cards,
      queue: this.queue.all(),
    };
    writeJsonAtomic(this.path, serialize(next));
    this.data = next;
    this.setVectors(vectors);
    return { added: incoming.length - replaced, replaced, version: next.version };
  }

  exportJsonl(): string {
    return cardsToJsonl(this.data.cards);
  }

  /** Writes the bank as it is in memory (stats and queue included) to another file, e.g. a checkpoint. */
  writeSnapshot(path: string): void {
    writeJsonAtomic(path, this.toFileData());
  }

  toFileData(): BankFile {
    return serialize({ ...this.data, queue: this.queue.all() });
  }

  async dispose(): Promise<void> {
    try {
      await this.waitForConsolidation();
      await this.embedder.dispose?.();
    } finally {
      this.lock?.release();
      this.lock = undefined;
    }
  }

  private async refreshVectors(): Promise<void> {
    this.setVectors(await this.cache.get(this.data.cards.map((c) => cardEmbeddingText(c)), 'query'));
  }

  private setVectors(v: Float32Array[]): void {
    this.vectors = v;
    this.vectorIndex = null;
    this.revision += 1;
  }

  private index(): VectorIndex {
    this.vectorIndex ??= new VectorIndex(this.vectors, this.data.embedder.dim);
    return this.vectorIndex;
  }
}

function newCard(id: string, content: CardContent, source: SkillCard['source'], step: number, version: number): SkillCard {
  return {
    id,
    category: content.category,
    source,
    description: content.description,
    triggers: [...content.triggers],
    avoid: [...content.avoid],
    queries: [...content.queries],
    stats: emptyStats(),
    createdStep: step,
    bankVersion: version,
  };
}






// ---- inspection -------------------------------------------------------------------------------------------



