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
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { sweepStaleTemps, writeJsonAtomic } from '../util/atomic.js';
import { FileLock } from '../util/lock.js';
import type { TextGenerator } from '../llm/types.js';
import type { CardContent, SkillCard } from './card.js';
import { cardEmbeddingText, cardScore, emptyStats, validateCard } from './card.js';
import type { SkillBankConfig } from './config.js';
import { resolveConfig } from './config.js';
import type { AdmissionDecision, Eviction, PendingChange } from './consolidate.js';
import { admit, consolidationDue, distilledCardId, maintain, runConsolidation } from './consolidate.js';
import type { Embedder, EmbedderInfo } from './embedder.js';
import { EmbeddingCache, VectorIndex } from './embedder.js';
import type { FailureInput, FailureRecord } from './queue.js';
import { FailureQueue, priorityTier, validateFailureRecord } from './queue.js';
import type { Rendered, TokenCounter } from './render.js';
import { renderCards } from './render.js';
import { seedCards } from './seeds.js';
import { echo } from '../util/text-file.js';

export const BANK_FORMAT = 'sesa-skill-bank';
export const BANK_FORMAT_VERSION = 1;

export interface BankCounters {
  commits: number;
  consolidations: number;
  /** Distiller replies that parsed into a valid card. */
  distilled: number;
  /** Distiller replies dropped as invalid. */
  invalid: number;
  /** Distiller calls that failed (endpoint errors); their records stay queued. */
  failed: number;
  admitted: number;
  duplicates: number;
  evictedNegative: number;
  evictedCap: number;
  imported: number;
  /** Failure records displaced because the queue was full. */
  queueDropped: number;
}

export interface BankFile {
  format: typeof BANK_FORMAT;
  formatVersion: number;
  version: number;
  embedder: EmbedderInfo;
  lastCommitStep: number;
  lastConsolidationStep: number | null;
  counters: BankCounters;
  cards: SkillCard[];
  queue: FailureRecord[];
}

export type Outcome = 'correct' | 'wrong' | 'malformed';

export interface Retrieval {
  card: SkillCard;
  score: number;
}

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
  /** Create the file (with the seed cards unless `seeds` is false) when it does not exist. Default true. */
  create?: boolean;
  seeds?: boolean;
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

export class BankFileError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    problem: string,
  ) {
    super(`skill bank ${file}: ${field}: ${problem}`);
    this.name = 'BankFileError';
  }
}

function zeroCounters(): BankCounters {
  return { commits: 0, consolidations: 0, distilled: 0, invalid: 0, failed: 0, admitted: 0, duplicates: 0, evictedNegative: 0, evictedCap: 0, imported: 0, queueDropped: 0 };
}

/** Reads and validates a bank file without loading an embedder (for inspection). Never repairs anything. */
export function readBankFile(path: string): BankFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new BankFileError(path, '(file)', `cannot read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new BankFileError(path, '(file)', `not valid JSON, the file is damaged (${(err as Error).message}); it was left as it is`);
  }
  return validateBankFile(raw, path);
}

export function validateBankFile(raw: unknown, path: string): BankFile {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BankFileError(path, '(root)', 'not a JSON object');
  const o = raw as Record<string, unknown>;
  if (o.format !== BANK_FORMAT) throw new BankFileError(path, 'format', `expected "${BANK_FORMAT}", got ${echo(o.format)}`);
  if (o.formatVersion !== BANK_FORMAT_VERSION) throw new BankFileError(path, 'formatVersion', `expected ${BANK_FORMAT_VERSION}, got ${echo(o.formatVersion)}`);
  const count = (field: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new BankFileError(path, field, `must be a non-negative integer, got ${echo(v)}`);
    return v;
  };
  count('version', o.version);
  count('lastCommitStep', o.lastCommitStep);
  if (o.lastConsolidationStep !== null) count('lastConsolidationStep', o.lastConsolidationStep);
  const e = o.embedder as Record<string, unknown> | undefined;
  if (typeof e !== 'object' || e === null) throw new BankFileError(path, 'embedder', 'missing');
  if (e.name !== 'e5' && e.name !== 'lexical') throw new BankFileError(path, 'embedder.name', `must be e5 or lexical, got ${echo(e.name)}`);
  if (typeof e.model !== 'string' || e.model.length === 0) throw new BankFileError(path, 'embedder.model', 'must be a non-empty string');
  count('embedder.dim', e.dim);
  if (typeof e.dedupThreshold !== 'number' || !(e.dedupThreshold > -1 && e.dedupThreshold <= 1)) {
    throw new BankFileError(path, 'embedder.dedupThreshold', `must be a number in (-1, 1], got ${echo(e.dedupThreshold)}`);
  }
  const counters = zeroCounters();
  if (typeof o.counters !== 'object' || o.counters === null) throw new BankFileError(path, 'counters', 'missing');
  for (const k of Object.keys(counters) as Array<keyof BankCounters>) counters[k] = count(`counters.${k}`, (o.counters as Record<string, unknown>)[k]);
  if (!Array.isArray(o.cards)) throw new BankFileError(path, 'cards', 'must be an array');
  const ids = new Set<string>();
  const cards = o.cards.map((c, i) => {
    let card: SkillCard;
    try {
      card = validateCard(c, `cards[${i}]`);
    } catch (err) {
      throw new BankFileError(path, `cards[${i}]`, (err as Error).message.replace(/^cards\[\d+\]( \(card [^)]*\))?: /, ''));
    }
    if (ids.has(card.id)) throw new BankFileError(path, `cards[${i}].id`, `duplicate id ${card.id}`);
    ids.add(card.id);
    return card;
  });
  if (!Array.isArray(o.queue)) throw new BankFileError(path, 'queue', 'must be an array');
  const keys = new Set<string>();
  const queue = o.queue.map((r, i) => {
    let rec: FailureRecord;
    try {
      rec = validateFailureRecord(r, `queue[${i}]`);
    } catch (err) {
      throw new BankFileError(path, `queue[${i}]`, (err as Error).message.replace(/^queue\[\d+\]: /, ''));
    }
    if (keys.has(rec.key)) throw new BankFileError(path, `queue[${i}].key`, `duplicate question key ${echo(rec.key)}`);
    keys.add(rec.key);
    return rec;
  });
  return {
    format: BANK_FORMAT,
    formatVersion: BANK_FORMAT_VERSION,
    version: o.version as number,
    embedder: { name: e.name, model: e.model, dim: e.dim as number, dedupThreshold: e.dedupThreshold },
    lastCommitStep: o.lastCommitStep as number,
    lastConsolidationStep: (o.lastConsolidationStep as number | null) ?? null,
    counters,
    cards,
    queue,
  };
}

/** The cards a new bank starts with: the seed cards, then the extra priming cards as `seed` cards with fresh stats; an id twice is an error. */
function primingSet(seeds: readonly SkillCard[], extra: readonly SkillCard[]): SkillCard[] {
  const out = [...seeds];
  const ids = new Set(seeds.map((c) => c.id));
  for (const c of extra) {
    if (ids.has(c.id)) throw new Error(`memory priming: card id ${c.id} appears twice`);
    ids.add(c.id);
    // Mined cards (distilled from the model's own bootstrap runs) stay 'mined': like distilled cards they can
    // be evicted for hurting; every other priming card joins the hand-written seed cards, which never are.
    out.push({ ...c, source: c.source === 'mined' ? 'mined' : 'seed', stats: emptyStats(), createdStep: 0, bankVersion: 0 });
  }
  return out;
}

/** One card per line; the stats travel with it, so an export/import round trip is lossless. */
export function cardsToJsonl(cards: readonly SkillCard[]): string {
  return cards.map((c) => JSON.stringify(c)).join('\n') + (cards.length > 0 ? '\n' : '');
}

/** Parses JSONL cards; a bad line is an error naming the file and the line. */
export function cardsFromJsonl(text: string, source: string): SkillCard[] {
  const out: SkillCard[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim().length === 0) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: not valid JSON (${(err as Error).message})`);
    }
    out.push(validateCard(v, `${source}:${i + 1}`));
  });
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
        cards: primingSet(opts.seeds === false ? [] : seedCards(), opts.primingCards ?? []),
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

  /** Top-k cards by cosine to `query: question`; ties broken by id, so a bank version gives one answer. */
  async retrieve(question: string, k = this.config.topK): Promise<Retrieval[]> {
    const [r] = await this.retrieveMany([question], k);
    return r as Retrieval[];
  }

  async retrieveMany(questions: string[], k = this.config.topK): Promise<Retrieval[][]> {
    // Capture the card set before the await: a commit landing meanwhile must not mix two versions.
    const cards = this.data.cards;
    const index = this.index();
    const qv = await this.embedder.embed(questions, 'query');
    return qv.map((q) => topKScored(cards, index.scores(q), k));
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

/**
 * The bank as its file holds it: a fresh copy with every object's keys in one fixed order (the schema's), so
 * the same content always gives the same bytes, whether a card was built in this process, primed from the seed
 * cards or read back from a file on --resume (docs/method.md, "The run folder, checkpoints and resume").
 */
function serialize(d: BankFile): BankFile {
  const counters = zeroCounters();
  for (const k of Object.keys(counters) as Array<keyof BankCounters>) counters[k] = d.counters[k];
  return {
    format: d.format,
    formatVersion: d.formatVersion,
    version: d.version,
    embedder: { name: d.embedder.name, model: d.embedder.model, dim: d.embedder.dim, dedupThreshold: d.embedder.dedupThreshold },
    lastCommitStep: d.lastCommitStep,
    lastConsolidationStep: d.lastConsolidationStep,
    counters,
    cards: d.cards.map(canonicalCard),
    queue: d.queue.map(canonicalRecord),
  };
}

function canonicalCard(c: SkillCard): SkillCard {
  return {
    id: c.id,
    category: c.category,
    source: c.source,
    description: c.description,
    triggers: [...c.triggers],
    avoid: [...c.avoid],
    queries: [...c.queries],
    stats: { retrieved: c.stats.retrieved, helpful: c.stats.helpful, hurt: c.stats.hurt },
    createdStep: c.createdStep,
    bankVersion: c.bankVersion,
  };
}

function canonicalRecord(r: FailureRecord): FailureRecord {
  return {
    key: r.key,
    question: r.question,
    target: r.target,
    evidence: r.evidence,
    prediction: r.prediction,
    retrievedSkillIds: [...r.retrievedSkillIds],
    count: r.count,
    firstStep: r.firstStep,
    lastStep: r.lastStep,
  };
}

/** Top-k by score, ties broken by id (docs/method.md, "The skill bank": deterministic for a bank version). */
export function topKScored(cards: readonly SkillCard[], scores: Float32Array, k: number): Retrieval[] {
  const better = (a: number, b: number): boolean => {
    const sa = scores[a] as number;
    const sb = scores[b] as number;
    return sa > sb || (sa === sb && (cards[a] as SkillCard).id < (cards[b] as SkillCard).id);
  };
  // k is small (3): keep a sorted list of the best k indices instead of sorting everything.
  const best: number[] = [];
  for (let i = 0; i < cards.length; i++) {
    if (best.length === k && !better(i, best[k - 1] as number)) continue;
    let at = best.length === k ? k - 1 : best.length;
    best[at] = i;
    while (at > 0 && better(i, best[at - 1] as number)) {
      best[at] = best[at - 1] as number;
      best[--at] = i;
    }
  }
  return best.map((i) => ({ card: cards[i] as SkillCard, score: scores[i] as number }));
}

export function topK(cards: readonly SkillCard[], vectors: readonly Float32Array[], q: Float32Array, k: number): Retrieval[] {
  return topKScored(cards, new VectorIndex(vectors, q.length).scores(q), k);
}

// ---- inspection -------------------------------------------------------------------------------------------

export interface BankStats {
  file: string;
  version: number;
  embedder: EmbedderInfo;
  lastCommitStep: number;
  lastConsolidationStep: number | null;
  cards: { total: number; seed: number; mined: number; distilled: number; neverRetrieved: number };
  categories: Record<string, number>;
  usage: { retrieved: number; helpful: number; hurt: number };
  mostHelpful: Array<{ id: string; helpful: number; hurt: number; retrieved: number; score: number }>;
  mostHurtful: Array<{ id: string; helpful: number; hurt: number; retrieved: number; score: number }>;
  queue: { pending: number; repeated: number; despiteSkills: number; capacity: number };
  counters: BankCounters;
}

export function bankStats(d: BankFile, file: string, queueCapacity: number, top = 5): BankStats {
  const by = (s: SkillCard['source']): number => d.cards.filter((c) => c.source === s).length;
  // A Map: a category is any slug, `constructor` included.
  const categories = new Map<string, number>();
  for (const c of d.cards) categories.set(c.category, (categories.get(c.category) ?? 0) + 1);
  const row = (c: SkillCard): BankStats['mostHelpful'][number] => ({ id: c.id, helpful: c.stats.helpful, hurt: c.stats.hurt, retrieved: c.stats.retrieved, score: round(cardScore(c.stats)) });
  const used = d.cards.filter((c) => c.stats.retrieved > 0);
  const net = (c: SkillCard): number => c.stats.helpful - c.stats.hurt;
  const idCmp = (a: SkillCard, b: SkillCard): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return {
    file,
    version: d.version,
    embedder: d.embedder,
    lastCommitStep: d.lastCommitStep,
    lastConsolidationStep: d.lastConsolidationStep,
    cards: { total: d.cards.length, seed: by('seed'), mined: by('mined'), distilled: by('distilled'), neverRetrieved: d.cards.length - used.length },
    categories: Object.fromEntries([...categories.entries()].sort(([a], [b]) => (a < b ? -1 : 1))),
    usage: {
      retrieved: d.cards.reduce((s, c) => s + c.stats.retrieved, 0),
      helpful: d.cards.reduce((s, c) => s + c.stats.helpful, 0),
      hurt: d.cards.reduce((s, c) => s + c.stats.hurt, 0),
    },
    mostHelpful: [...used].filter((c) => net(c) > 0).sort((a, b) => net(b) - net(a) || idCmp(a, b)).slice(0, top).map(row),
    mostHurtful: [...used].filter((c) => net(c) < 0).sort((a, b) => net(a) - net(b) || idCmp(a, b)).slice(0, top).map(row),
    queue: {
      pending: d.queue.length,
      repeated: d.queue.filter((r) => r.count >= 2).length,
      despiteSkills: d.queue.filter((r) => priorityTier(r) % 2 === 1).length,
      capacity: queueCapacity,
    },
    counters: d.counters,
  };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
