// One SESA training step, in the order of docs/method.md ("One step"):
//   propose → validate (rules, then the RAG check) → retrieve skills + solve → judge → rewards → skill utility
//   → failure queue → GRPO updates (solver, proposer) → consolidation, committed at the step boundary → metrics.
// Every arrow is a call to a role or an interface; the records that flow are plain data.
import type { TextGenerator } from '../llm/types.js';
import type { Passage } from '../search/types.js';
import type { CommitReport, Outcome, SkillBank } from '../skills/bank.js';
import { Rng } from '../util/rng.js';
import { yieldToEventLoop } from '../util/yield.js';
import type { AnswerJudge, Judgement } from '../agent/judge.js';
import { ragCheckMessages } from '../agent/prompts.js';
import { type ProposerRewardConfig, proposerReward, solverReward, successRate } from './rewards.js';
import type { AnswerSeed, ProposerRole, SolverRole } from '../agent/roles.js';
import type { Rollout } from '../agent/rollout.js';
import { type CardUse, cardUse } from './card-use.js';
import { localJudging, type RagItem, type StepJudging } from './step-judging.js';
import type { PolicyUpdater, Role, RoleUpdateMetrics, RolloutGroup } from './updater.js';
import { checkQuestion, type InvalidReason, type QuestionRules } from './validate.js';

/**
 * What the step does with the skill memory: record each rollout's outcome for its cards, queue failures, run
 * consolidation and commit at the step boundary. (Retrieval for the solver's prompts is the solver role's.)
 */
export type SkillMemory = Pick<
  SkillBank,
  'recordOutcome' | 'enqueueFailure' | 'startConsolidation' | 'commit' | 'readyChange' | 'pendingFailures' | 'cards' | 'version'
>;

export interface StepDeps {
  proposer: ProposerRole;
  solver: SolverRole;
  /** The solver's skill memory; undefined = no skills (the SSP recipe or --skills off). */
  skills: SkillMemory | undefined;
  /** Exact match first, then its semantic model (docs/method.md, "Judging answers"). */
  judge: AnswerJudge;
  /** Answers a question from given passages, for the RAG validity check (docs/method.md, "Validating questions"). */
  ragJudge: TextGenerator;
  updater: PolicyUpdater;
  /** The distiller of failure records into cards; undefined = no distillation (ablation). */
  distiller?: TextGenerator;
  /**
   * Who runs the RAG checks and judges the solver's answers: default this process, with `judge` and
   * `ragJudge`; with the step sharded, the worker of each item's seed (./step-judging.ts, docs/scale-out.md).
   */
  judging?: StepJudging;
  /** Told when each phase starts and ends (with its seconds), for progress lines; nothing depends on it. */
  onPhase?(step: number, phase: StepPhase, state: 'start' | 'end', seconds?: number): void;
}

/** The phases of a step, in order (their seconds are in StepMetrics.seconds). */
export type StepPhase = 'propose' | 'validate' | 'solve' | 'judge' | 'update' | 'consolidate';

export interface StepSettings {
  seedsPerStep: number;
  proposalsPerSeed: number;
  groupSize: number;
  reward: ProposerRewardConfig;
  /** The run seed: every random choice of step s derives from (seed, s), so a resumed run replays exactly. */
  seed: number;
  /** Blocks of passages of other seeds' rollouts mixed into the RAG check. */
  ragDistractorBlocks: number;
  /** The RAG check's answer budget (tokens). */
  ragMaxTokens: number;
  /** The rule checks of a question. */
  rules: QuestionRules;
  /** Characters of retrieved evidence kept in a failure record. */
  failureEvidenceChars: number;
  /** Which wrong answers are queued: of frontier questions only (0 < p̂ < 1, the paper), or all; default frontier. */
  queueFailures?: 'frontier' | 'all';
  /**
   * Which of a question's G solver rollouts get its retrieved cards: all (the paper), or half of them (the first
   * ⌊G/2⌋; the others are asked without cards), so that the group-relative advantage compares answering with
   * and without them (docs/method.md, "Card use"); default all.
   */
  cardsInGroup?: 'all' | 'half';
  /** Leave groups of two or more with all-equal rewards out of the updates (docs/method.md, "GRPO"). */
  skipUniformGroups: boolean;
  /** Optimizer updates of each role per step over the same groups (docs/method.md, "GRPO"); 1 if absent. */
  epochs?: Partial<Record<Role, number>>;
}

/** A group whose advantages are not all 0: one rollout (A = R), or rewards that differ. */
export function hasAdvantageSignal(group: RolloutGroup): boolean {
  return group.rewards.length < 2 || group.rewards.some((r) => r !== group.rewards[0]);
}

/** What happened to one proposal. */
export interface ProposalRecord {
  seedIndex: number;
  answer: string;
  hops: number;
  question?: string;
  invalid?: InvalidReason;
  /** Solver success rate of a valid question. */
  pHat?: number;
  reward: number;
  /** Solver outcomes of a valid question: 'correct' | 'wrong' | 'malformed' per rollout. */
  solverOutcomes?: Outcome[];
  skillIds?: string[];
}

export interface StepMetrics {
  step: number;
  seeds: number;
  proposals: number;
  /** Fraction of proposals that produced a <question>. */
  extractionRate: number;
  validityRate: number;
  invalidReasons: Partial<Record<InvalidReason, number>>;
  validQuestions: number;
  /** Proposals and valid questions by the hop count their seed asked for ("1", "2", ...). */
  validByHops: Record<string, { proposals: number; valid: number }>;
  solverRollouts: number;
  solverAccuracy: number;
  /** Count of valid questions per p̂ value ("0.00", "0.20", ...). */
  pHatHistogram: Record<string, number>;
  solverMeanReward: number;
  proposerMeanReward: number;
  solver?: RoleUpdateMetrics;
  proposer?: RoleUpdateMetrics;
  bankSize?: number;
  activeSkills?: number;
  bankVersion?: number;
  queueLength?: number;
  failuresQueued: number;
  consolidation?: { started: boolean; committed?: Pick<CommitReport, 'admitted' | 'evicted' | 'invalid' | 'consumed'> & { duplicates: number } };
  /** Whether the solver's rollouts followed the learned cards in their prompts, and what it earned (./card-use.ts). */
  cardUse?: CardUse;
  judgeUnparsed: number;
  /** RAG checks run, and how many of them got fewer distractor blocks than asked (too few other seeds). */
  ragChecks: number;
  ragChecksShortOfDistractors: number;
  seconds: Record<'propose' | 'validate' | 'solve' | 'judge' | 'update' | 'consolidate' | 'total', number>;
}

export interface StepResult {
  metrics: StepMetrics;
  proposals: ProposalRecord[];
  /** Each role's GRPO groups as judged (all of them, trained or not): the flat metrics read them (./flat-metrics.ts). */
  groups: Record<Role, RolloutGroup[]>;
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function allPassages(r: Rollout): Passage[] {
  return r.retrieved.flat();
}

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

export async function sesaStep(step: number, seedPool: readonly AnswerSeed[], deps: StepDeps, settings: StepSettings): Promise<StepResult> {
  const t0 = performance.now();
  const seconds = { propose: 0, validate: 0, solve: 0, judge: 0, update: 0, consolidate: 0, total: 0 };
  const clock = (phase: StepPhase, since: number): number => {
    const now = performance.now();
    seconds[phase] += (now - since) / 1000;
    deps.onPhase?.(step, phase, 'end', (now - since) / 1000);
    return now;
  };
  const begin = (phase: StepPhase): void => deps.onPhase?.(step, phase, 'start');
  const rng = Rng.derive(settings.seed, step);
  const rolloutSeed = (): number => rng.nextU32() & 0x7fffffff;
  const bank = deps.skills;
  const judging = deps.judging ?? localJudging(deps.judge, deps.ragJudge);
  const unparsedBefore = deps.judge.unparsedReplies;

  // 1. Propose: n_p proposals per seed.
  begin('propose');
  let t = performance.now();
  const seeds = pickSeeds(seedPool, settings.seedsPerStep, rng);
  const proposed = await deps.proposer.propose(seeds, settings.proposalsPerSeed, rolloutSeed());
  t = clock('propose', t);
  begin('validate');

  // 2. Extract and validate: the rule checks, then the RAG check on the survivors.
  const proposals: ProposalRecord[] = [];
  let ragChecks = 0;
  let ragShort = 0;
  const flat = proposed.flatMap((group, seedIndex) => group.map((rollout) => ({ rollout, seedIndex })));
  for (const { rollout, seedIndex } of flat) {
    const answerSeed = seeds[seedIndex] as AnswerSeed;
    const check = checkQuestion(rollout, answerSeed.answer, answerSeed.aliases ?? [], settings.rules);
    proposals.push({ seedIndex, answer: answerSeed.answer, hops: answerSeed.hops, ...(check.question !== undefined ? { question: check.question } : {}), ...(check.invalid ? { invalid: check.invalid } : {}), reward: 0 });
  }
  // The RAG checks' distractor blocks are drawn here, in global-index order, from the step's random stream;
  // the reader and the judge run where `judging` says (this process, or the seed's worker).
  const ragItems: RagItem[] = [];
  const ragOf: ProposalRecord[] = [];
  for (let i = 0; i < flat.length; i++) {
    const p = proposals[i] as ProposalRecord;
    if (p.invalid || p.question === undefined) continue;
    const own = allPassages((flat[i] as { rollout: Rollout }).rollout);
    // Distractors come only from other seeds' rollouts: a sibling proposal for the same answer would carry
    // the answer's own evidence and make the check easier than it should be.
    const others = flat.map((f) => ({ seedIndex: f.seedIndex, passages: allPassages(f.rollout) })).filter((o) => o.seedIndex !== p.seedIndex && o.passages.length > 0);
    const blocks: Passage[][] = [own];
    for (let k = 0; k < settings.ragDistractorBlocks && others.length > 0; k++) blocks.push(others.splice(rng.int(others.length), 1)[0]?.passages ?? []);
    ragChecks++;
    if (blocks.length - 1 < settings.ragDistractorBlocks) ragShort++;
    for (let k = blocks.length - 1; k > 0; k--) {
      const j = rng.int(k + 1);
      [blocks[k], blocks[j]] = [blocks[j] as Passage[], blocks[k] as Passage[]];
    }
    const golds = [p.answer, ...((seeds[p.seedIndex] as AnswerSeed).aliases ?? [])];
    ragItems.push({ shard: p.seedIndex, messages: ragCheckMessages(p.question, blocks.flat()), question: p.question, golds });
    ragOf.push(p);
  }
  await yieldToEventLoop();
  const ragPassed = await judging.ragCheck(ragItems, settings.ragMaxTokens);
  ragOf.forEach((p, k) => {
    if (!ragPassed[k]) p.invalid = 'rag-check-failed';
  });
  t = clock('validate', t);
  begin('solve');

  // 3. Solve each valid question G times, with the top-k skills retrieved for it (solver only).
  const valid = proposals.map((p, i) => ({ p, i })).filter(({ p }) => !p.invalid && p.question !== undefined);
  // A question's group is its seed's shard: with the step sharded over workers it runs where the seed's
  // proposals ran (docs/scale-out.md).
  const groups = await deps.solver.solve(
    valid.map(({ p }) => p.question as string),
    settings.groupSize,
    rolloutSeed(),
    valid.map(({ p }) => p.seedIndex),
    settings.cardsInGroup === 'half' ? Math.floor(settings.groupSize / 2) : settings.groupSize,
  );
  t = clock('solve', t);
  begin('judge');

  // 4-7. Judge, rewards, skill utility, failure queue. The verdicts come back in global-index order, and the
  // bank (one writer: this process) takes the outcomes and failures in that order.
  const verdicts = await judging.judge(
    valid.flatMap(({ p }, k) => {
      const group = groups[k] as (typeof groups)[number];
      const golds = [p.answer, ...((seeds[p.seedIndex] as AnswerSeed).aliases ?? [])];
      return group.rollouts.map((r) => ({ shard: p.seedIndex, question: group.question, golds, prediction: r.final }));
    }),
  );
  let nextVerdict = 0;
  const solverGroups: RolloutGroup[] = [];
  // Read before the commit below changes the bank: the cards as the prompts had them.
  const cardsThisStep = bank ? bank.cards : [];
  const usedSkills = new Set<string>();
  let failuresQueued = 0;
  for (let k = 0; k < valid.length; k++) {
    const { p } = valid[k] as { p: ProposalRecord };
    const group = groups[k] as (typeof groups)[number];
    const outcomes: Outcome[] = [];
    const rewards: number[] = [];
    for (let ri = 0; ri < group.rollouts.length; ri++) {
      const j = verdicts[nextVerdict++] as Judgement;
      outcomes.push(j.method === 'no-answer' ? 'malformed' : j.correct ? 'correct' : 'wrong');
      rewards.push(solverReward(j.correct));
    }
    const pHat = successRate(rewards);
    p.pHat = pHat;
    p.reward = proposerReward(pHat, settings.reward);
    p.solverOutcomes = outcomes;
    p.skillIds = group.skillIds;
    solverGroups.push({ rollouts: group.rollouts, rewards });
    if (bank) {
      for (const id of group.skillIds) usedSkills.add(id);
      // A card's utility counts the rollouts that had it in their prompt.
      outcomes.forEach((outcome, ri) => {
        if (ri < group.withCards) bank.recordOutcome(group.skillIds, outcome);
      });
      // Informative frontier failures: well-formed wrong answers of questions the group sometimes solves
      // (with queueFailures 'all', every well-formed wrong answer: bootstrap mining).
      if (settings.queueFailures === 'all' || (pHat > 0 && pHat < 1)) {
        group.rollouts.forEach((r, ri) => {
          if (outcomes[ri] !== 'wrong') return;
          const evidence = allPassages(r)
            .map((d) => `${d.title}: ${d.text}`)
            .join('\n')
            .slice(0, settings.failureEvidenceChars);
          bank.enqueueFailure({ question: group.question, target: p.answer, evidence, prediction: r.final ?? '', retrievedSkillIds: ri < group.withCards ? group.skillIds : [], queries: [...r.queries] }, step);
          failuresQueued++;
        });
      }
    }
  }
  for (const p of proposals) if (p.invalid) p.reward = settings.reward.invalidReward;
  const cardsUsed = bank ? cardUse(groups.map((g, k) => ({ skillIds: g.skillIds, withCards: g.withCards, rollouts: g.rollouts, rewards: (solverGroups[k] as RolloutGroup).rewards })), cardsThisStep) : undefined;
  t = clock('judge', t);
  begin('update');

  // 9 (start). Consolidation runs alongside the updates; it is committed below, at this step's boundary.
  const job = bank && deps.distiller ? bank.startConsolidation(step, deps.distiller) : null;

  // 8. GRPO updates: solver groups = the G rollouts of a question; proposer groups = the n_p proposals of a seed.
  const trained = (groups: RolloutGroup[]): RolloutGroup[] => (settings.skipUniformGroups ? groups.filter(hasAdvantageSignal) : groups);
  // Each role's groups go through `epochs` updates; the step reports the last one's metrics.
  const updateRole = async (role: Role, groups: RolloutGroup[]): Promise<RoleUpdateMetrics | undefined> => {
    let last: RoleUpdateMetrics | undefined;
    for (let epoch = 0; epoch < (settings.epochs?.[role] ?? 1); epoch++) last = await deps.updater.update(role, groups);
    return last;
  };
  // Each phase is long synchronous tensor work: signal handlers (Ctrl-C) are let in between phases too.
  await yieldToEventLoop();
  const solverUpdate = await updateRole('solver', trained(solverGroups));
  const proposerGroups: RolloutGroup[] = proposed.map((rollouts, seedIndex) => ({
    rollouts,
    rewards: proposals.filter((p) => p.seedIndex === seedIndex).map((p) => p.reward),
  }));
  await yieldToEventLoop();
  const proposerUpdate = await updateRole('proposer', trained(proposerGroups));
  t = clock('update', t);
  begin('consolidate');

  // 9 (commit). The step boundary: wait for the job, apply its change, persist stats and queue.
  let consolidation: StepMetrics['consolidation'];
  if (bank) {
    if (job) await job.done;
    const report = bank.commit(step, job ? bank.readyChange() : null);
    consolidation = {
      started: job !== null,
      ...(report.applied ? { committed: { admitted: report.admitted, evicted: report.evicted, invalid: report.invalid, consumed: report.consumed, duplicates: report.duplicates.length } } : {}),
    };
  }
  clock('consolidate', t);

  const solverRewards = solverGroups.flatMap((g) => g.rewards);
  const pHatHistogram: Record<string, number> = {};
  for (const p of proposals) if (p.pHat !== undefined) pHatHistogram[p.pHat.toFixed(2)] = (pHatHistogram[p.pHat.toFixed(2)] ?? 0) + 1;
  const invalidReasons: StepMetrics['invalidReasons'] = {};
  for (const p of proposals) if (p.invalid) invalidReasons[p.invalid] = (invalidReasons[p.invalid] ?? 0) + 1;
  const validByHops: StepMetrics['validByHops'] = {};
  for (const p of proposals) {
    const row = (validByHops[String(p.hops)] ??= { proposals: 0, valid: 0 });
    row.proposals++;
    if (!p.invalid) row.valid++;
  }
  seconds.total = (performance.now() - t0) / 1000;
  const metrics: StepMetrics = {
    step,
    seeds: seeds.length,
    proposals: proposals.length,
    extractionRate: mean(proposals.map((p) => (p.question !== undefined ? 1 : 0))),
    validityRate: mean(proposals.map((p) => (p.invalid ? 0 : 1))),
    invalidReasons,
    validQuestions: valid.length,
    validByHops,
    solverRollouts: solverRewards.length,
    solverAccuracy: mean(solverRewards),
    pHatHistogram,
    solverMeanReward: mean(solverRewards),
    proposerMeanReward: mean(proposals.map((p) => p.reward)),
    ...(solverUpdate ? { solver: solverUpdate } : {}),
    ...(proposerUpdate ? { proposer: proposerUpdate } : {}),
    ...(bank ? { bankSize: bank.cards.length, activeSkills: usedSkills.size, bankVersion: bank.version, queueLength: bank.pendingFailures().length } : {}),
    failuresQueued,
    ...(consolidation ? { consolidation } : {}),
    ...(cardsUsed ? { cardUse: cardsUsed } : {}),
    judgeUnparsed: deps.judge.unparsedReplies - unparsedBefore,
    ragChecks,
    ragChecksShortOfDistractors: ragShort,
    seconds,
  };
  return { metrics, proposals, groups: { solver: solverGroups, proposer: proposerGroups } };
}
