// A step's metrics under flat, conventional names (docs/usage.md, "Run metrics"), written beside the nested
// ones in metrics.jsonl and to TensorBoard: verl's name where verl logs the same quantity, each behind the role
// it belongs to (this trainer updates two policies, the solver and the proposer; verl one actor), so
// `solver/actor/pg_clipfrac` is verl's `actor/pg_clipfrac` for the solver's update. Names verl does not have are
// TRL's (`frac_reward_zero_std`) or this project's (`sesa/…`, and the few marked so in docs/usage.md).
import { groupAdvantagesArray } from '../../kernels/group-advantage.js';
import type { Rollout } from '../agent/rollout.js';
import type { StepMetrics } from './step.js';
import type { AdvantageSettings, Role, RoleUpdateMetrics, RolloutGroup } from './updater.js';

/** The ε of the group std when a run gives none (the kernel's own default; docs/options.md, --advantage-eps). */
const DEFAULT_ADVANTAGE_EPS = 1e-6;

export type FlatMetrics = Record<string, number>;

const ROLES: readonly Role[] = ['solver', 'proposer'];

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The population standard deviation (verl's and TRL's reward std over a batch). */
function std(xs: readonly number[]): number {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
}

/** `prefix/mean`, `/max`, `/min` of a non-empty list (nothing for an empty one). */
function spread(out: FlatMetrics, prefix: string, xs: readonly number[]): void {
  if (xs.length === 0) return;
  out[`${prefix}/mean`] = mean(xs);
  out[`${prefix}/max`] = Math.max(...xs);
  out[`${prefix}/min`] = Math.min(...xs);
}

/** Each rollout's advantage as the update computes it (docs/method.md, "GRPO"), group by group. */
function advantages(groups: readonly RolloutGroup[], settings: AdvantageSettings): number[] {
  return groups.flatMap((g) => {
    const out = new Float32Array(g.rewards.length);
    groupAdvantagesArray(g.rewards, 1, g.rewards.length, { mode: settings.mode ?? 'grpo', eps: settings.eps ?? DEFAULT_ADVANTAGE_EPS }, out);
    return Array.from(out);
  });
}

/** One role's rollouts, rewards, advantages and update (`role/…`). */
function roleMetrics(out: FlatMetrics, role: Role, groups: readonly RolloutGroup[], update: RoleUpdateMetrics | undefined, settings: AdvantageSettings): void {
  const p = (name: string): string => `${role}/${name}`;
  const rollouts: Rollout[] = groups.flatMap((g) => g.rollouts);
  const rewards = groups.flatMap((g) => g.rewards);
  if (rollouts.length > 0) {
    spread(out, p('response_length'), rollouts.map((r) => r.responseIds.length));
    // verl: the share of responses that reached the response budget (here: the rollout ended on --max-response-tokens).
    out[p('response_length/clip_ratio')] = rollouts.filter((r) => r.outcome === 'budget').length / rollouts.length;
    spread(out, p('prompt_length'), rollouts.map((r) => r.promptIds.length));
  }
  if (rewards.length > 0) {
    spread(out, p('critic/score'), rewards);
    out[p('critic/score/std')] = std(rewards);
    spread(out, p('critic/advantages'), advantages(groups, settings));
  }
  // TRL's frac_reward_zero_std: groups (of two or more) whose rewards are all equal, so every advantage is 0.
  const multi = groups.filter((g) => g.rewards.length >= 2);
  if (multi.length > 0) out[p('frac_reward_zero_std')] = multi.filter((g) => g.rewards.every((r) => r === g.rewards[0])).length / multi.length;
  if (update) {
    out[p('actor/pg_loss')] = update.pgLoss;
    out[p('actor/kl_loss')] = update.kl;
    out[p('actor/pg_clipfrac')] = update.clipFrac;
    out[p('actor/entropy')] = update.entropy;
    out[p('actor/grad_norm')] = update.gradNorm;
    out[p('actor/lr')] = update.lr;
    out[p('actor/loss')] = update.loss;
    out[p('actor/update_tokens_per_s')] = update.tokensPerSecond;
  }
}

/**
 * One role's flat metrics (`role/…`): its rollouts' response and prompt lengths, rewards (score), advantages,
 * the share of all-equal groups and its update. Also for the recipes that update the same two roles
 * (docs/recipes.md, "Run metrics").
 */
export function flatRoleMetrics(role: Role, groups: readonly RolloutGroup[], update: RoleUpdateMetrics | undefined, settings: AdvantageSettings): FlatMetrics {
  const out: FlatMetrics = {};
  roleMetrics(out, role, groups, update, settings);
  return out;
}

/**
 * `perf/total_num_tokens` (prompt and response tokens of `rollouts`) and `perf/throughput` (those tokens per
 * second of `seconds`, per worker, as verl's is per GPU).
 */
export function flatTokenMetrics(rollouts: readonly Rollout[], seconds: number, workers: number): FlatMetrics {
  const tokens = rollouts.reduce((n, r) => n + r.promptIds.length + r.responseIds.length, 0);
  return { 'perf/total_num_tokens': tokens, ...(seconds > 0 ? { 'perf/throughput': tokens / seconds / workers } : {}) };
}

/** `m` without the names whose value is not a finite number (nothing TensorBoard cannot plot). */
export function finiteMetrics(m: FlatMetrics): FlatMetrics {
  return Object.fromEntries(Object.entries(m).filter(([, v]) => Number.isFinite(v)));
}

/**
 * The flat metrics of one step: per role its response and prompt lengths, rewards (score), advantages, the
 * share of all-equal groups and its update; per step the time of each phase, the tokens and tokens per second
 * (per worker, as verl's perf/throughput is per GPU), and SESA's own rates. Only finite numbers.
 */
export function flatStepMetrics(m: StepMetrics, groups: Readonly<Record<Role, RolloutGroup[]>>, opts: { advantage: AdvantageSettings; workers: number }): FlatMetrics {
  const out: FlatMetrics = { 'training/global_step': m.step };
  for (const role of ROLES) Object.assign(out, flatRoleMetrics(role, groups[role], m[role], opts.advantage));
  Object.assign(out, flatTokenMetrics(ROLES.flatMap((r) => groups[r].flatMap((g) => g.rollouts)), m.seconds.total, opts.workers));
  out['timing_s/step'] = m.seconds.total;
  for (const [phase, s] of Object.entries(m.seconds)) if (phase !== 'total') out[`timing_s/${phase}`] = s;
  out['sesa/solver_accuracy'] = m.solverAccuracy;
  out['sesa/question_extraction_ratio'] = m.extractionRate;
  out['sesa/question_valid_ratio'] = m.validityRate;
  if (m.bankSize !== undefined) out['sesa/bank_size'] = m.bankSize;
  if (m.queueLength !== undefined) out['sesa/failure_queue_length'] = m.queueLength;
  return finiteMetrics(out);
}

/** The flat metrics of a held-out eval row (metrics.jsonl `kind: "eval"`): `eval/skills_on/em`, `…/f1`. */
export function flatEvalMetrics(row: { skills: 'on' | 'off'; em: number; f1: number }): FlatMetrics {
  return { [`eval/skills_${row.skills}/em`]: row.em, [`eval/skills_${row.skills}/f1`]: row.f1 };
}
