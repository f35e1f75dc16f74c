// Dynamic skill routing and the gated reward (docs/recipes.md). Pure arithmetic, tested against worked
// examples: Laplace-smoothed outcome rates, a weighted composite clipped to [lo, hi], an exploration bonus
// that decays with the attempt count, normalized into sampling probabilities.
import type { Rng } from '../../util/rng.js';

export interface RoutingCounts {
  /** a: proposals made with the skill. */
  attempts: number;
  /** Proposals whose validity mask was 1. */
  verified: number;
  /** Proposals that passed the consistency check. */
  consistent: number;
  /** Verified proposals whose v_solve fell in the frontier band. */
  frontier: number;
}

export interface RoutingParams {
  weights: { verified: number; consistent: number; frontier: number };
  clip: [number, number];
  beta: number;
  tau: number;
}

/** r = (n + 1) / (a + 2). */
export function smoothedRate(n: number, a: number): number {
  if (!(n >= 0 && a >= 0 && n <= a)) throw new Error(`smoothedRate: need 0 ≤ n ≤ a, got ${n}/${a}`);
  return (n + 1) / (a + 2);
}

/** v_skill = clip(w_ver·r_ver + w_con·r_con + w_fd·r_fd, lo, hi). */
export function compositeScore(c: RoutingCounts, p: RoutingParams): number {
  const v = p.weights.verified * smoothedRate(c.verified, c.attempts) + p.weights.consistent * smoothedRate(c.consistent, c.attempts) + p.weights.frontier * smoothedRate(c.frontier, c.attempts);
  return Math.min(p.clip[1], Math.max(p.clip[0], v));
}

/** 1 + β·e^(−a/τ): an untried skill gets 1 + β, the bonus fading as attempts accumulate. */
export function explorationBonus(attempts: number, p: Pick<RoutingParams, 'beta' | 'tau'>): number {
  return 1 + p.beta * Math.exp(-attempts / p.tau);
}

/** σ: each skill's weight v_skill · bonus, normalized to sum to 1. */
export function routingDistribution(counts: readonly RoutingCounts[], p: RoutingParams): number[] {
  const w = counts.map((c) => compositeScore(c, p) * explorationBonus(c.attempts, p));
  const total = w.reduce((s, x) => s + x, 0);
  if (!(total > 0)) throw new Error('routing: no skill has positive weight');
  return w.map((x) => x / total);
}

/** Index drawn from a distribution. */
export function sampleIndex(probs: readonly number[], rng: Rng): number {
  let r = rng.next();
  for (let i = 0; i < probs.length; i++) {
    r -= probs[i] as number;
    if (r < 0) return i;
  }
  return probs.length - 1;
}

/** R = mask · (1 − 2|v_solve − 0.5|): 1 at v = 0.5, 0 at v ∈ {0, 1}, 0 for an invalid task. */
export function gatedReward(mask: 0 | 1, vSolve: number): number {
  if (!(vSolve >= 0 && vSolve <= 1)) throw new Error(`gatedReward: v_solve must be in [0, 1], got ${vSolve}`);
  return mask * (1 - 2 * Math.abs(vSolve - 0.5));
}
