// The solver batch of one step (docs/method.md, "The solver batch and the reuse pool"): the slots, the valid
// proposals in their own slots, the empty ones filled from the reuse pool, and the resampling rounds that add
// pooled questions while too few groups carry a learning signal (--min-informative-groups). Solving and
// judging are the step's (./step.ts); this module only decides which questions are asked.
import type { AnswerSeed } from '../agent/roles.js';
import { Rng } from '../util/rng.js';
import { type PooledQuestion, questionKey, type ReusePool } from './reuse-pool.js';
import type { ProposalRecord, StepSettings } from './step.js';

/** One question of the solver batch: a valid proposal's, or one drawn from the pool. */
export interface SolverItem {
  question: string;
  answer: string;
  aliases: string[];
  hops: number;
  corpus: number | undefined;
  /** The step's seed index whose slot it fills (the shard it runs on with the step sharded). */
  shard: number;
  /** The valid proposal it is, or undefined for a question from the pool. */
  proposal?: ProposalRecord;
}

/** The stream label of the reuse draws: (seed, step) gives them a stream of their own, so reuse changes no other draw. */
const REUSE_STREAM = 0x52455553;
/** The stream of the resampling rounds' draws and rollouts (off, they draw nothing: no other draw changes). */
const RESAMPLE_STREAM = 0x5245534d;

function fromPool(q: PooledQuestion, shard: number): SolverItem {
  return { question: q.question, answer: q.answer, aliases: q.aliases ?? [], hops: q.hops, corpus: q.corpus, shard };
}

/**
 * One slot per proposal (or --solver-batch slots), in proposal order; a valid proposal fills its own, and an
 * empty slot takes a question reused from the pool (its own draw, from a stream of its own) while the pool has
 * one at most the threshold. `pool` undefined: no reuse.
 */
export function firstBatch(
  step: number,
  proposals: readonly ProposalRecord[],
  seeds: readonly AnswerSeed[],
  pool: ReusePool | undefined,
  settings: Pick<StepSettings, 'seed' | 'solverBatch' | 'reuse'>,
): { items: SolverItem[]; reused: PooledQuestion[]; slots: number } {
  const isValid = (p: ProposalRecord): boolean => !p.invalid && p.question !== undefined;
  const slots = settings.solverBatch !== undefined && settings.solverBatch > 0 ? settings.solverBatch : proposals.length;
  const toFill = Math.max(0, slots - proposals.filter(isValid).length);
  const reuseRng = Rng.derive((settings.seed ^ REUSE_STREAM) >>> 0, step);
  // --reuse-by-hops: each empty slot asks for its seed's hop count (slots past one per proposal for any).
  const slotHops = (): Array<number | undefined> => {
    const failed = proposals.filter((p) => !isValid(p)).map((p): number | undefined => p.hops);
    return Array.from({ length: toFill }, (_, k) => failed[k]);
  };
  const reuse = settings.reuse;
  const reused = pool && reuse ? (reuse.byHops ? pool.drawByHops(slotHops(), reuse.threshold, reuseRng) : pool.draw(toFill, reuse.threshold, reuseRng)) : [];
  const items: SolverItem[] = [];
  let nextReused = 0;
  for (const p of proposals) {
    if (isValid(p)) {
      const seed = seeds[p.seedIndex] as AnswerSeed;
      items.push({ question: p.question as string, answer: p.answer, aliases: seed.aliases ?? [], hops: p.hops, corpus: seed.corpus, shard: p.seedIndex, proposal: p });
    } else if (nextReused < reused.length) items.push(fromPool(reused[nextReused++] as PooledQuestion, p.seedIndex));
  }
  // Slots beyond one per proposal (--solver-batch above seeds × n_p).
  for (let k = 0; nextReused < reused.length; k++) items.push(fromPool(reused[nextReused++] as PooledQuestion, k % seeds.length));
  return { items, reused, slots };
}

/**
 * The resampling rounds (settings.resample): while `informative()` is below the minimum, draw up to `slots`
 * distinct pooled questions not yet in `items`, append them, and have `solve` run them (with a rollout seed from
 * the rounds' own stream); at most `rounds` rounds, fewer when the pool has nothing left to give. Returns the
 * rounds run. Off (no `resample`, or no pool): none.
 */
export async function resampleRounds(
  step: number,
  items: SolverItem[],
  slots: number,
  shards: number,
  pool: ReusePool | undefined,
  settings: Pick<StepSettings, 'seed' | 'reuse' | 'resample'>,
  informative: () => number,
  solve: (batch: readonly SolverItem[], rolloutSeed: number) => Promise<void>,
): Promise<number> {
  const { resample, reuse } = settings;
  if (!resample || !reuse || !pool) return 0;
  const rng = Rng.derive((settings.seed ^ RESAMPLE_STREAM) >>> 0, step);
  let rounds = 0;
  while (rounds < resample.rounds && informative() < resample.minGroups) {
    const more = pool.drawDistinct(slots, reuse.threshold, rng, new Set(items.map(questionKey)));
    if (more.length === 0) break;
    const batch = more.map((q, k) => fromPool(q, k % shards));
    items.push(...batch);
    rounds++;
    await solve(batch, rng.nextU32() & 0x7fffffff);
  }
  return rounds;
}
