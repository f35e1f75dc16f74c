// Which answer seeds a step proposes for (docs/method.md, "One step" and "Training corpora"): drawn from the
// pool with a random stream of (seed, step), without replacement (with replacement only when the pool is
// smaller than the draw). Where the seeds come from several corpora (the generated world's training worlds),
// step s proposes in one of them, each in turn, or (`across`, --step-corpora all) draws from all of them; with
// a hop mix (--hop-mix 1,1,1) each hop count gets its share of the step's seeds, as the papers' seed pool holds
// a third each of 1-, 2- and 3-hop answers.
import type { AnswerSeed } from '../agent/roles.js';
import type { Rng } from '../util/rng.js';

/** Picks `n` seeds for a step without replacement (with replacement only when the pool is smaller). */
export function pickSeeds(pool: readonly AnswerSeed[], n: number, rng: Rng): AnswerSeed[] {
  if (pool.length === 0) throw new Error('no answer seeds to propose from');
  const order = pool.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return Array.from({ length: n }, (_, k) => pool[order[k % order.length] as number] as AnswerSeed);
}

/** The corpora the pool's seeds name, ascending (empty when none names one: the run's one corpus). */
export function corporaOf(pool: readonly AnswerSeed[]): number[] {
  return [...new Set(pool.flatMap((s) => (s.corpus !== undefined ? [s.corpus] : [])))].sort((a, b) => a - b);
}

/** The corpus step `step` proposes in: the pool's corpora in turn, from the first at step 1; undefined with one. */
export function stepCorpus(pool: readonly AnswerSeed[], step: number): number | undefined {
  const corpora = corporaOf(pool);
  return corpora.length === 0 ? undefined : corpora[(((step - 1) % corpora.length) + corpora.length) % corpora.length];
}

/**
 * How many of `n` seeds each hop count gets under `weights` (weights[h − 1] for h hops): the largest-remainder
 * split of n in proportion to the weights, ties to the fewer hops.
 */
export function hopQuotas(n: number, weights: readonly number[]): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (n * w) / total);
  const quotas = exact.map(Math.floor);
  const order = exact.map((x, h) => ({ h, frac: x - Math.floor(x) })).sort((a, b) => b.frac - a.frac || a.h - b.h);
  for (let k = 0, left = n - quotas.reduce((a, b) => a + b, 0); k < left; k++) {
    const h = (order[k % order.length] as { h: number }).h;
    quotas[h] = (quotas[h] as number) + 1;
  }
  return quotas;
}

/** Why the pool cannot give a hop mix's seeds (a hop count with a share but no seed, in some corpus), or undefined. */
export function hopMixProblem(pool: readonly AnswerSeed[], weights: readonly number[] | undefined): string | undefined {
  if (!weights) return undefined;
  const corpora = corporaOf(pool);
  for (const corpus of corpora.length === 0 ? [undefined] : corpora) {
    const mine = pool.filter((s) => s.corpus === corpus);
    const missing = weights.flatMap((w, i) => (w > 0 && !mine.some((s) => s.hops === i + 1) ? [i + 1] : []));
    if (missing.length > 0) {
      return `--hop-mix ${weights.join(',')} asks for ${missing.join(' and ')}-hop answer seeds, but ${corpus === undefined ? 'the pool' : `corpus ${corpus}`} has none (--max-hops and --min-hops change the hop counts seeds ask for)`;
    }
  }
  return undefined;
}

/**
 * The `n` seeds of step `step`: of the step's corpus (stepCorpus), or of every corpus with `across`, and under a
 * hop mix each hop count's quota drawn from that hop's seeds, then shuffled together. Without corpora or a hop
 * mix this is pickSeeds over the whole pool, the same draw as before either existed.
 */
export function drawStepSeeds(pool: readonly AnswerSeed[], n: number, rng: Rng, step: number, hopMix?: readonly number[], across = false): AnswerSeed[] {
  const corpus = across ? undefined : stepCorpus(pool, step);
  const from = corpus === undefined ? pool : pool.filter((s) => s.corpus === corpus);
  if (!hopMix) return pickSeeds(from, n, rng);
  const problem = hopMixProblem(from, hopMix);
  if (problem) throw new Error(problem);
  const quotas = hopQuotas(n, hopMix);
  const drawn = quotas.flatMap((q, i) =>
    q === 0
      ? []
      : pickSeeds(
          from.filter((s) => s.hops === i + 1),
          q,
          rng,
        ),
  );
  for (let i = drawn.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [drawn[i], drawn[j]] = [drawn[j] as AnswerSeed, drawn[i] as AnswerSeed];
  }
  return drawn;
}
