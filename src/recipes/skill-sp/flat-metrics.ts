// A Skill Self-Play iteration's metrics under the trainer's flat names (docs/recipes.md, "Run metrics"),
// written beside the nested ones in metrics.jsonl and to TensorBoard: the recipe updates the same two roles
// as the trainer, so each role's rollouts, rewards, advantages and update get the names of
// src/selfplay/flat-metrics.ts (verl's, behind the role); an iteration is the recipe's step
// (`training/global_step`); what only this recipe has is under `skill_sp/`.
import { finiteMetrics, type FlatMetrics, flatRoleMetrics, flatTokenMetrics } from '../../selfplay/flat-metrics.js';
import type { Role } from '../../selfplay/updater.js';
import type { IterationResult } from './iteration.js';

/** The recipe runs in one process: throughput is per that one worker (verl's is per GPU). */
const WORKERS = 1;

const ROLES: readonly Role[] = ['solver', 'proposer'];

/**
 * The flat metrics of one iteration. The advantages are those the recipe's GRPO update computes (GRPO with
 * the kernel's default ε: the recipe has no --advantage setting). Only finite numbers: no `skill_sp/mean_v_solve`
 * without a verified task, no `skill_sp/solver_accuracy` without a solver answer.
 */
export function flatIterationMetrics(r: Pick<IterationResult, 'metrics' | 'groups' | 'phaseSeconds'>): FlatMetrics {
  const m = r.metrics;
  const out: FlatMetrics = { 'training/global_step': m.iteration };
  const updates = { proposer: m.proposerUpdate, solver: m.solverUpdate };
  for (const role of ROLES) Object.assign(out, flatRoleMetrics(role, r.groups[role], updates[role], {}));
  Object.assign(out, flatTokenMetrics(ROLES.flatMap((role) => r.groups[role].flatMap((g) => g.rollouts)), m.seconds, WORKERS));
  out['timing_s/step'] = m.seconds;
  for (const [phase, s] of Object.entries(r.phaseSeconds)) out[`timing_s/${phase}`] = s;
  out['skill_sp/proposals'] = m.proposals;
  out['skill_sp/open_stream_ratio'] = m.proposals === 0 ? Number.NaN : m.openStream / m.proposals;
  out['skill_sp/verified'] = m.verified;
  out['skill_sp/valid_ratio'] = m.validRate;
  if (m.meanVSolve !== null) out['skill_sp/mean_v_solve'] = m.meanVSolve;
  out['skill_sp/frontier_ratio'] = m.frontierRate;
  out['skill_sp/mean_reward'] = m.meanReward;
  if (m.solverAccuracy !== null) out['skill_sp/solver_accuracy'] = m.solverAccuracy;
  out['skill_sp/new_skills'] = m.newSkills;
  out['skill_sp/rejected_inductions'] = m.inductionRejected.length;
  out['skill_sp/pruned_skills'] = m.pruned.length;
  out['skill_sp/library_size'] = m.librarySize;
  out['skill_sp/library_version'] = m.libraryVersion;
  return finiteMetrics(out);
}
