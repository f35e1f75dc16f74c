// Every number of the skill bank in one place, with the defaults of docs/method.md ("The skill bank"). The values the
// paper does not give are marked "ours".

export interface SkillBankConfig {
  /** Cards retrieved per question (docs/method.md, "The skill bank"). */
  topK: number;
  /**
   * Of the top k, only cards whose cosine to the question is at least this are given (ours; −1, the default,
   * gives the top k whatever their score, as the paper). The one setting here that is not a whole number.
   */
  minScore: number;
  /** Failure-queue capacity (docs/method.md, "The skill bank"). */
  queueCapacity: number;
  /** Consolidate every N steps (docs/method.md, "The skill bank")... */
  consolidateEvery: number;
  /** ...when at least this many failure records are pending... */
  minPending: number;
  /** ...selecting at most this many. */
  maxSelected: number;
  /** Eviction: a non-seed card retrieved at least this many times with helpful − hurt < 0 goes. */
  evictMinRetrieved: number;
  /** Bank cap; over it, the lowest-scoring non-seed cards go (docs/method.md, "The skill bank"). */
  maxCards: number;
  /** Token budget for the rendered cards in the solver prompt (ours). */
  renderTokenBudget: number;
  /** Characters of retrieved evidence put into a distillation prompt (ours). */
  distillEvidenceChars: number;
  /** Distiller calls run at most this many at a time (ours). */
  distillConcurrency: number;
  /** Per distiller call (ours). */
  distillMaxTokens: number;
}

export const DEFAULT_SKILL_BANK_CONFIG: Readonly<SkillBankConfig> = Object.freeze({
  topK: 3,
  minScore: -1,
  queueCapacity: 300,
  consolidateEvery: 10,
  minPending: 20,
  maxSelected: 30,
  evictMinRetrieved: 3,
  maxCards: 800,
  renderTokenBudget: 600,
  distillEvidenceChars: 1500,
  distillConcurrency: 4,
  distillMaxTokens: 700,
});

/**
 * Dedup (admission) thresholds per embedder: a candidate is admitted only if its cosine to every bank card
 * and every card admitted in the same round is ≤ this (docs/method.md, "The skill bank"). 0.93 is the paper's value for
 * E5-base-v2. The lexical one is ours, calibrated in test/skills-units.test.ts: light rewordings of a
 * card score above it, distinct seed cards well below.
 */
export const DEDUP_THRESHOLDS = Object.freeze({ e5: 0.93, lexical: 0.8 });

export function resolveConfig(partial: Partial<SkillBankConfig> = {}): SkillBankConfig {
  const cfg = { ...DEFAULT_SKILL_BANK_CONFIG, ...Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined)) };
  for (const [k, v] of Object.entries(cfg)) {
    if (k === 'minScore') {
      if (typeof v !== 'number' || !(v >= -1 && v <= 1)) throw new Error(`skill bank config: minScore must be a cosine in [-1, 1], got ${String(v)}`);
      continue;
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`skill bank config: ${k} must be a non-negative integer, got ${String(v)}`);
  }
  if (cfg.topK < 1) throw new Error('skill bank config: topK must be ≥ 1');
  if (cfg.maxSelected < 1) throw new Error('skill bank config: maxSelected must be ≥ 1');
  if (cfg.consolidateEvery < 1) throw new Error('skill bank config: consolidateEvery must be ≥ 1');
  return cfg as SkillBankConfig;
}
