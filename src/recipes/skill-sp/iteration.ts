// One Skill Self-Play iteration (docs/recipes.md): route proposer slots to skills (or the open stream), sample
// proposals, gate them by the validity mask, estimate v_solve from K solver rollouts, reward the proposer with
// mask·(1 − 2|v_solve − 0.5|) and the solver with correctness, update routing statistics, induce skills from
// successful open tasks, prune skills below γ, update both adapters by GRPO, and commit the library.
import type { ChatMessage } from '../../llm/types.js';
import type { Rollout } from '../../agent/rollout.js';
import type { PolicyUpdater, Role, RoleUpdateMetrics, RolloutGroup } from '../../selfplay/updater.js';
import type { Rng } from '../../util/rng.js';
import type { SkillSpConfig } from './config.js';
import type { SkillLibrary } from './library.js';
import { type Family, induceSkill, type SkillPackage, type SpTask, validate, type Validity } from './packages.js';
import { openProposerMessages, parseAnswer, parseProposal, skillProposerMessages, solverMessages } from './prompts.js';
import { gatedReward, routingDistribution, type RoutingParams, sampleIndex } from './routing.js';
import { gradeToolCalls } from './toolcall.js';
import { gradeZebra } from './zebra.js';

export interface SampledText {
  text: string;
  /** The token-level rollout, when the sampler is a model (what GRPO trains on). */
  rollout?: Rollout;
}

/** A role that turns chat prompts into sampled replies: the model with an adapter, or a scripted double. */
export interface TextSampler {
  sample(prompts: ChatMessage[][], opts: { maxNewTokens: number; temperature: number; seed: number }): Promise<SampledText[]>;
}

export interface SkillSpDeps {
  proposer: TextSampler;
  solver: TextSampler;
  library: SkillLibrary;
  /** GRPO of both adapters; absent = no weight updates. */
  updater?: PolicyUpdater;
}

export interface ProposalRecord {
  slot: number;
  stream: 'skill' | 'open';
  skillId?: string;
  family: Family;
  mask: 0 | 1;
  problems: string[];
  vSolve?: number;
  reward: number;
  frontier: boolean;
}

export interface IterationMetrics {
  iteration: number;
  proposals: number;
  skillStream: number;
  openStream: number;
  verified: number;
  validRate: number;
  /** Mean v_solve over verified tasks (the paper's diagnostic, ≈ 0.57 there). */
  meanVSolve: number | null;
  frontierRate: number;
  meanReward: number;
  solverAccuracy: number | null;
  newSkills: number;
  newSkillIds: string[];
  inductionRejected: string[];
  pruned: string[];
  librarySize: number;
  libraryVersion: number;
  /** σ at the start of the iteration: each skill's routing probability. */
  routing: Record<string, number>;
  proposerUpdate?: RoleUpdateMetrics;
  solverUpdate?: RoleUpdateMetrics;
  seconds: number;
}

/** Seconds of an iteration's phases: sampling the proposals, solving (sampling and grading), the GRPO updates. */
export interface IterationPhaseSeconds {
  propose: number;
  solve: number;
  update: number;
}

/** What one iteration gives: its metrics line, each proposal's record, both roles' GRPO groups and its phases' times. */
export interface IterationResult {
  metrics: IterationMetrics;
  proposals: ProposalRecord[];
  /** The groups of the model's rollouts (none for a scripted sampler), trained or not (--no-update). */
  groups: Record<Role, RolloutGroup[]>;
  phaseSeconds: IterationPhaseSeconds;
}

export function routingParams(c: SkillSpConfig): RoutingParams {
  return { weights: { verified: c.wVerified, consistent: c.wConsistent, frontier: c.wFrontier }, clip: [c.clipLow, c.clipHigh], beta: c.beta, tau: c.tau };
}

function mean(xs: number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length;
}

export function gradeAnswer(task: SpTask, text: string, maxCalls: number): boolean {
  const answer = parseAnswer(text, task.family);
  if (answer === undefined) return false;
  return task.family === 'zebra' ? gradeZebra(task.puzzle, task.solution, answer).correct : gradeToolCalls({ request: task.request, calls: task.calls }, answer, maxCalls).correct;
}

export async function skillSpIteration(iteration: number, deps: SkillSpDeps, c: SkillSpConfig, rng: Rng): Promise<IterationResult> {
  const started = performance.now();
  const lib = deps.library;
  const families = c.families.split(',').map((f) => f.trim()) as Family[];

  // 1. Route every slot: the open stream with probability α, else a skill drawn from σ.
  const probs = routingDistribution(lib.packages.map((p) => p.stats), routingParams(c));
  const routing = Object.fromEntries(lib.packages.map((p, i) => [p.id, probs[i] as number]));
  const slots = Array.from({ length: c.promptsPerIteration }, () => {
    if (rng.next() < c.alpha) return { stream: 'open' as const, family: families[rng.int(families.length)] as Family };
    const pkg = lib.packages[sampleIndex(probs, rng)] as SkillPackage;
    return { stream: 'skill' as const, family: pkg.family, pkg };
  });

  // 2. Proposals: n_p per slot, one batch.
  const proposerPrompts = slots.flatMap((s) => Array.from({ length: c.proposalsPerPrompt }, () => (s.stream === 'skill' ? skillProposerMessages(s.pkg) : openProposerMessages(s.family))));
  const proposed = await deps.proposer.sample(proposerPrompts, { maxNewTokens: c.proposerTokens, temperature: c.temperature, seed: c.seed * 7919 + iteration * 2 });
  const proposedAt = performance.now();

  // 3. The validity mask of each proposal.
  const checked = proposed.map((p, k) => {
    const slot = slots[Math.floor(k / c.proposalsPerPrompt)] as (typeof slots)[number];
    const parsed = parseProposal(p.text, slot.family);
    const validity: Validity = parsed.ok
      ? validate(parsed.value, slot.stream === 'skill' ? slot.pkg.validator : undefined, c.maxCalls)
      : { schema: [parsed.problem], contract: ['not checked'], consistency: ['not checked'], mask: 0 };
    return { slot, task: parsed.ok ? parsed.value : undefined, validity };
  });

  // 4. K solver rollouts per verified task, one batch; v_solve = share correct.
  const verifiedIdx = checked.map((x, k) => (x.validity.mask === 1 ? k : -1)).filter((k) => k >= 0);
  const solverPrompts = verifiedIdx.flatMap((k) => Array.from({ length: c.solverRollouts }, () => solverMessages(checked[k]?.task as SpTask)));
  const answers = solverPrompts.length > 0 ? await deps.solver.sample(solverPrompts, { maxNewTokens: c.solverTokens, temperature: c.temperature, seed: c.seed * 7919 + iteration * 2 + 1 }) : [];
  const solverGroups: RolloutGroup[] = [];
  const vSolve = new Map<number, number>();
  let solverCorrect = 0;
  verifiedIdx.forEach((k, j) => {
    const group = answers.slice(j * c.solverRollouts, (j + 1) * c.solverRollouts);
    const correct = group.map((a) => (gradeAnswer(checked[k]?.task as SpTask, a.text, c.maxCalls) ? 1 : 0));
    solverCorrect += correct.reduce((s: number, x) => s + x, 0);
    vSolve.set(k, correct.reduce((s: number, x) => s + x, 0) / correct.length);
    const rollouts = group.map((a) => a.rollout).filter((r): r is Rollout => r !== undefined);
    if (rollouts.length === group.length) solverGroups.push({ rollouts, rewards: correct });
  });
  const solvedAt = performance.now();

  // 5. Gated rewards, routing statistics, induction from the open stream.
  const records: ProposalRecord[] = [];
  const newSkillIds: string[] = [];
  const inductionRejected: string[] = [];
  checked.forEach((x, k) => {
    const v = vSolve.get(k);
    const mask = x.validity.mask;
    const reward = gatedReward(mask, v ?? 0);
    const frontier = mask === 1 && v !== undefined && v >= c.frontierLow && v <= c.frontierHigh;
    if (x.slot.stream === 'skill') {
      const s = x.slot.pkg.stats;
      s.attempts++;
      s.verified += mask;
      s.consistent += x.validity.schema.length === 0 && x.validity.consistency.length === 0 ? 1 : 0;
      s.frontier += frontier ? 1 : 0;
      s.rewardSum += reward;
      if (v !== undefined) {
        s.vSolveSum += v;
        s.solved++;
      }
    } else if (frontier && x.task) {
      const got = induceSkill(x.task, lib.packages, { id: `induced-${iteration}-${newSkillIds.length + 1}`, iteration, from: `iteration ${iteration} proposal ${k}`, noveltyMax: c.noveltyMax, maxCalls: c.maxCalls, clueTypes: c.inductionClueTypes });
      if (got.ok) {
        lib.packages.push(got.pkg);
        newSkillIds.push(got.pkg.id);
      } else inductionRejected.push(got.reason);
    }
    records.push({
      slot: Math.floor(k / c.proposalsPerPrompt),
      stream: x.slot.stream,
      ...(x.slot.stream === 'skill' ? { skillId: x.slot.pkg.id } : {}),
      family: x.slot.family,
      mask,
      problems: [...x.validity.schema, ...x.validity.contract, ...x.validity.consistency].filter((p) => p !== 'not checked').slice(0, 4),
      ...(v !== undefined ? { vSolve: v } : {}),
      reward,
      frontier,
    });
  });

  // 6. Pruning: skills whose expected (mean) gated reward fell below γ, never a family's last skill.
  const pruned: string[] = [];
  for (const p of [...lib.packages]) {
    const s = p.stats;
    if (p.source === 'seed' && !c.pruneSeeds) continue;
    if (s.attempts < c.pruneMinAttempts || s.rewardSum / s.attempts >= c.gamma) continue;
    if (lib.packages.filter((q) => q.family === p.family).length <= 1) continue;
    lib.packages = lib.packages.filter((q) => q.id !== p.id);
    pruned.push(p.id);
  }

  // 7. GRPO: the proposer's groups are the n_p proposals of one prompt; the solver's the K answers of one task.
  const proposerGroups: RolloutGroup[] = [];
  for (let s = 0; s < slots.length; s++) {
    const ks = Array.from({ length: c.proposalsPerPrompt }, (_, j) => s * c.proposalsPerPrompt + j);
    const rollouts = ks.map((k) => proposed[k]?.rollout).filter((r): r is Rollout => r !== undefined);
    if (rollouts.length === ks.length) proposerGroups.push({ rollouts, rewards: ks.map((k) => records[k]?.reward ?? 0) });
  }
  const updateStart = performance.now();
  let proposerUpdate: RoleUpdateMetrics | undefined;
  let solverUpdate: RoleUpdateMetrics | undefined;
  if (deps.updater) {
    if (proposerGroups.length > 0) proposerUpdate = await deps.updater.update('proposer', proposerGroups);
    if (solverGroups.length > 0) solverUpdate = await deps.updater.update('solver', solverGroups);
  }
  const updatedAt = performance.now();

  // A new version only when the skill set changed (induced or pruned skills), not for the statistics alone.
  const version = lib.commit(iteration, newSkillIds.length > 0 || pruned.length > 0);
  const verified = records.filter((r) => r.mask === 1);
  const metrics: IterationMetrics = {
    iteration,
    proposals: records.length,
    skillStream: records.filter((r) => r.stream === 'skill').length,
    openStream: records.filter((r) => r.stream === 'open').length,
    verified: verified.length,
    validRate: records.length === 0 ? 0 : verified.length / records.length,
    meanVSolve: mean(verified.map((r) => r.vSolve as number)),
    frontierRate: records.length === 0 ? 0 : records.filter((r) => r.frontier).length / records.length,
    meanReward: mean(records.map((r) => r.reward)) ?? 0,
    solverAccuracy: answers.length === 0 ? null : solverCorrect / answers.length,
    newSkills: newSkillIds.length,
    newSkillIds,
    inductionRejected,
    pruned,
    librarySize: lib.packages.length,
    libraryVersion: version,
    routing,
    ...(proposerUpdate ? { proposerUpdate } : {}),
    ...(solverUpdate ? { solverUpdate } : {}),
    seconds: (performance.now() - started) / 1000,
  };
  const phaseSeconds = { propose: (proposedAt - started) / 1000, solve: (solvedAt - proposedAt) / 1000, update: (updatedAt - updateStart) / 1000 };
  return { metrics, proposals: records, groups: { proposer: proposerGroups, solver: solverGroups }, phaseSeconds };
}
