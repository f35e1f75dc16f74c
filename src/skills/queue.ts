// The pending failure queue (docs/method.md, "The skill bank"): informative frontier failures, at most `capacity` records,
// one record per question with a repeat count. Selection for consolidation (step 9) puts repeated failures
// and failures despite retrieved skills first.

export interface FailureInput {
  question: string;
  target: string;
  /** The retrieved passages the solver saw (trimmed by the caller or at prompt time). */
  evidence: string;
  prediction: string;
  retrievedSkillIds: string[];
  /** The search queries of the failed rollout, in order (absent in records written before they were kept). */
  queries?: string[];
}

export interface FailureRecord extends FailureInput {
  /** The normalized question: repeats of the same question share a record. */
  key: string;
  count: number;
  firstStep: number;
  lastStep: number;
}

export function questionKey(q: string): string {
  return q.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Priority tier: 3 = repeated and despite skills, 2 = repeated, 1 = despite skills, 0 = neither. */
export function priorityTier(r: FailureRecord): number {
  return (r.count >= 2 ? 2 : 0) + (r.retrievedSkillIds.length > 0 ? 1 : 0);
}

/**
 * Selection order (ours where the paper is silent; docs/method.md, "The skill bank"): tier desc, then count desc, then oldest first
 * (firstStep asc), then key, so the same queue always selects the same records.
 */
export function selectionOrder(a: FailureRecord, b: FailureRecord): number {
  return priorityTier(b) - priorityTier(a) || b.count - a.count || a.firstStep - b.firstStep || cmp(a.key, b.key);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class FailureQueue {
  private readonly records = new Map<string, FailureRecord>();

  constructor(
    readonly capacity: number,
    initial: FailureRecord[] = [],
  ) {
    for (const r of initial) this.records.set(r.key, { ...r, retrievedSkillIds: [...r.retrievedSkillIds], ...(r.queries ? { queries: [...r.queries] } : {}) });
  }

  get size(): number {
    return this.records.size;
  }

  all(): FailureRecord[] {
    return [...this.records.values()];
  }

  get(key: string): FailureRecord | undefined {
    return this.records.get(key);
  }

  /**
   * Adds a failure; a repeated question increments its count and keeps the latest attempt's details.
   * When full, a new question displaces the record least worth distilling: lowest tier, lowest count,
   * then the oldest (ours). Returns the key of the displaced record, if any.
   */
  add(f: FailureInput, step: number): { key: string; dropped?: string } {
    const key = questionKey(f.question);
    const old = this.records.get(key);
    if (old) {
      old.count += 1;
      old.lastStep = step;
      old.target = f.target;
      old.evidence = f.evidence;
      old.prediction = f.prediction;
      old.retrievedSkillIds = [...f.retrievedSkillIds];
      if (f.queries) old.queries = [...f.queries];
      else delete old.queries;
      return { key };
    }
    let dropped: string | undefined;
    if (this.capacity === 0) return { key, dropped: key };
    if (this.records.size >= this.capacity) {
      const victim = [...this.records.values()].sort(
        (a, b) => priorityTier(a) - priorityTier(b) || a.count - b.count || a.lastStep - b.lastStep || cmp(a.key, b.key),
      )[0] as FailureRecord;
      this.records.delete(victim.key);
      dropped = victim.key;
    }
    this.records.set(key, { ...f, retrievedSkillIds: [...f.retrievedSkillIds], ...(f.queries ? { queries: [...f.queries] } : {}), key, count: 1, firstStep: step, lastStep: step });
    return dropped === undefined ? { key } : { key, dropped };
  }

  select(max: number): FailureRecord[] {
    return this.all().sort(selectionOrder).slice(0, max).map((r) => ({ ...r, retrievedSkillIds: [...r.retrievedSkillIds], ...(r.queries ? { queries: [...r.queries] } : {}) }));
  }

  remove(keys: Iterable<string>): number {
    let n = 0;
    for (const k of keys) if (this.records.delete(k)) n++;
    return n;
  }
}

export function validateFailureRecord(v: unknown, where: string): FailureRecord {
  const p: string[] = [];
  if (typeof v !== 'object' || v === null) throw new Error(`${where}: not an object`);
  const o = v as Record<string, unknown>;
  for (const k of ['key', 'question', 'target', 'evidence', 'prediction'] as const) if (typeof o[k] !== 'string') p.push(`${k} must be a string`);
  if (!Array.isArray(o.retrievedSkillIds) || o.retrievedSkillIds.some((x) => typeof x !== 'string')) p.push('retrievedSkillIds must be an array of strings');
  if (o.queries !== undefined && (!Array.isArray(o.queries) || o.queries.some((x) => typeof x !== 'string'))) p.push('queries must be an array of strings');
  for (const k of ['count', 'firstStep', 'lastStep'] as const) {
    const x = o[k];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) p.push(`${k} must be a non-negative integer`);
  }
  if (typeof o.count === 'number' && o.count < 1) p.push('count must be ≥ 1');
  if (p.length > 0) throw new Error(`${where}: ${p.join('; ')}`);
  return o as unknown as FailureRecord;
}
