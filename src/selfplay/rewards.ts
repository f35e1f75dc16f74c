// Rewards (docs/method.md, "Rewards").
import { TRAIN_DEFAULTS } from '../settings/train.js';

export interface ProposerRewardConfig {
  /** λ: the penalty when the solver group is all right or all wrong. */
  lambda: number;
  /** r_invalid: reward of an invalid question (default −1). */
  invalidReward: number;
  /** Frontier shaping on (4·p̂·(1−p̂), −λ at the endpoints) or off (the ablation: 1 − p̂). */
  frontier: boolean;
}

/** The defaults of the configuration table. */
export const PROPOSER_REWARD_DEFAULTS: ProposerRewardConfig = { lambda: TRAIN_DEFAULTS.lambda, invalidReward: TRAIN_DEFAULTS.invalidReward, frontier: TRAIN_DEFAULTS.frontier };

/** p̂ = (1/G) Σ 1{r_s > 0}. */
export function successRate(solverRewards: readonly number[]): number {
  if (solverRewards.length === 0) throw new Error('successRate: empty solver group');
  return solverRewards.filter((r) => r > 0).length / solverRewards.length;
}

/** Proposer reward of a valid question from its solver group's p̂ (with G = 5: −λ, 0.64 or 0.96). */
export function proposerReward(pHat: number, cfg: ProposerRewardConfig): number {
  if (!cfg.frontier) return 1 - pHat;
  if (pHat === 0 || pHat === 1) return -cfg.lambda;
  return 4 * pHat * (1 - pHat);
}

/** Solver reward: 1 for a correct answer, else 0 (on the terminal token). */
export function solverReward(correct: boolean): number {
  return correct ? 1 : 0;
}
