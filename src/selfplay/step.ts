// One SESA training step, in the order of docs/method.md ("One step"):
//   propose → validate (rules, then the RAG check) → the solver batch (valid questions, topped up from the reuse
//   pool) → retrieve skills + solve → judge (→ resampling rounds from the pool, when asked) → rewards → skill
//   utility → failure queue → the reuse pool → GRPO updates (solver, proposer) → consolidation, committed at the
//   step boundary → metrics.
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
import { type Rollout, type SearchTools, searcherOf } from '../agent/rollout.js';
import { type CardUse, cardUse } from './card-use.js';
import { localJudging, type RagItem, type StepJudging } from './step-judging.js';
import type { PolicyUpdater, Role, RoleUpdateMetrics, RolloutGroup } from './updater.js';
import { checkQuestion, type InvalidReason, type QuestionRules } from './validate.js';
import type { PooledQuestion, ReusePool } from './reuse-pool.js';
import { firstBatch, resampleRounds, type SolverItem } from './solver-batch.js';
import { drawStepSeeds, pickSeeds, stepCorpus } from './seed-draw.js';

export { pickSeeds };

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
  /** One RAG reader per training corpus where they differ (the world's scripted readers); else `ragJudge` reads all. */
  ragJudges?: readonly TextGenerator[];
  /**
   * The reuse pool (docs/method.md, "The solver batch and the reuse pool"); with `settings.reuse` its questions
   * fill the solver batch's empty slots. Undefined: no reuse (every empty slot stays empty).
   */
  reusePool?: ReusePool;
  /**
   * The search tool of each training corpus, for the hop check (`settings.hopCheck`: one search for the question
   * itself); required with it, unused without.
   */
  searchers?: SearchTools;
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
  /**
   * The hop check (ours; docs/method.md, "Validating questions"): a valid question of a seed of two or more hops
   * that the RAG reader answers from the top `passages` of one search for the question itself is invalid
   * (`answerable-in-one-search`). Absent: off (SSP).
   */
  hopCheck?: { passages: number };
  /**
   * The first-search check (ours; docs/method.md, "Validating questions"): a valid question of a seed of two or
   * more hops that the RAG reader answers from the passages of the proposer's first search alone is invalid
   * (`answerable-from-first-search`). Absent: off (SSP).
   */
  firstSearchCheck?: boolean;
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
  /** The proposer's GRPO group: each seed's proposals (default, as SSP) or the whole step's (docs/method.md, "GRPO"). */
  proposerBaseline?: 'seed' | 'step';
  /** Leave groups of two or more with all-equal rewards out of the updates (docs/method.md, "GRPO"). */
  skipUniformGroups: boolean;
  /** Optimizer updates of each role per step over the same groups (docs/method.md, "GRPO"); 1 if absent. */
  epochs?: Partial<Record<Role, number>>;
  /**
   * With several training corpora: a step's seeds from one corpus, each in turn (absent or 'one'), or from all of
   * them, each in its own (docs/method.md, "Training corpora").
   */
  stepCorpora?: 'one' | 'all';
  /** Shares of 1-, 2-, 3-, … hop seeds in each step's draw (docs/method.md, "One step"); absent: the pool as it comes. */
  hopMix?: readonly number[];
  /**
   * Questions in the solver batch (docs/method.md, "The solver batch and the reuse pool"): the valid ones, topped
   * up to this many from the reuse pool; 0 or absent: one per proposal (seeds × n_p), as SSP.
   */
  solverBatch?: number;
  /** SSP's extraction_failure = reuse: the pool's threshold on p̂ and its clear interval; absent: no reuse. */
  reuse?: { threshold: number; clearEvery: number; byHops?: boolean };
  /**
   * DAPO's dynamic sampling from the reuse pool (docs/method.md, "The solver batch and the reuse pool"): while
   * the batch has fewer than `minGroups` groups with 0 < p̂ < 1, another round solves up to one batch more of
   * pooled questions not yet in the step, at most `rounds` rounds. Absent: off (SSP).
   */
  resample?: { minGroups: number; rounds: number };
  /**
   * How card utility is counted (docs/method.md, "Card use"): per rollout with the cards (outcome, the paper), or
   * per split group by the sign of (reward with cards − reward without) (counterfactual, ours); default outcome.
   */
  cardUtility?: 'outcome' | 'counterfactual';
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
  /** Questions the solver was given: the valid ones, those reused from the pool and those of resampling rounds (docs/method.md, "The solver batch and the reuse pool"). */
  solverQuestions: number;
  /** Of them, questions reused from the pool. */
  reusedQuestions: number;
  /** Of them, questions drawn from the pool by resampling rounds (`resample`), and the rounds run. */
  resampledQuestions: number;
  resampleRounds: number;
  /** Solver groups with a learning signal (0 < p̂ < 1) in the whole batch. */
  informativeGroups: number;
  /** Slots of the solver batch that stayed empty (SSP's dummy questions): no valid question and nothing to reuse. */
  emptySlots: number;
  /** Questions in the reuse pool after this step's were added (with reuse on). */
  reusePool?: number;
  /** Whether the pool was emptied before this step (its number a multiple of the clear interval). */
  reusePoolCleared?: boolean;
  /** The training corpus (world) this step proposed in, when the run has several (docs/method.md, "Training corpora"). */
  corpus?: number;
  solverRollouts: number;
  /** Share of correct solver rollouts over the whole solver batch (valid and reused questions). */
  solverAccuracy: number;
  /** Share of correct solver rollouts on this step's valid questions alone (the proposer's new questions). */
  validQuestionAccuracy: number;
  validQuestionRollouts: number;
  /** Count of valid questions per p̂ value ("0.00", "0.20", ...). */
  pHatHistogram: Record<string, number>;
  solverMeanReward: number;
  proposerMeanReward: number;
  solver?: RoleUpdateMetrics;
  proposer?: RoleUpdateMetrics;
  bankSize?: number;
  /** Cards retrieved for this step's questions. */
  activeSkills?: number;
  /** Cards in the bank after the step that have been retrieved at least once (the paper's active skills). */
  activeCards?: number;
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
  /** Questions the hop check read (valid so far, of a seed of two or more hops); 0 without it. */
  hopChecks: number;
  /** Questions the first-search check read (0 with it off). */
  firstSearchChecks: number;
  seconds: Record<'propose' | 'validate' | 'solve' | 'judge' | 'update' | 'consolidate' | 'total', number>;
}

export interface StepResult {
  metrics: StepMetrics;
  proposals: ProposalRecord[];
  /** The questions reused from the pool this step, as the pool held them (p̂ and step of their last solve). */
  reused: PooledQuestion[];
  /** Each role's GRPO groups as judged (all of them, trained or not): the flat metrics read them (./flat-metrics.ts). */
  groups: Record<Role, RolloutGroup[]>;
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function allPassages(r: Rollout): Passage[] {
  return r.retrieved.flat();
}

export async function sesaStep(step: number, seedPool: readonly AnswerSeed[], deps: StepDeps, settings: StepSettings): Promise<StepResult> {
  const t0 = performance.now();
  const seconds = { propose: 0, validate: 0, solve: 0, judge: 0, update: 0, consolidate: 0, total: 0 };
  const clock = (phase: StepPhase, since: number): number => {
    const now = performance.now();
    seconds[phase] += (now - since) / 1000;
    deps.onPhase?.(step, phase, 'end', seconds[phase]);
    return now;
  };
  const begin = (phase: StepPhase): void => deps.onPhase?.(step, phase, 'start');
  const rng = Rng.derive(settings.seed, step);
  const rolloutSeed = (): number => rng.nextU32() & 0x7fffffff;
  const bank = deps.skills;
  const judging = deps.judging ?? localJudging(deps.judge, deps.ragJudge, deps.ragJudges);
  const unparsedBefore = deps.judge.unparsedReplies;
  const pool = settings.reuse ? deps.reusePool : undefined;
  const poolCleared = pool && settings.reuse ? pool.beginStep(step, settings.reuse.clearEvery) : undefined;

  // 1. Propose: n_p proposals per seed, in the step's corpus, in the hop mix.
  begin('propose');
  let t = performance.now();
  const across = settings.stepCorpora === 'all';
  const seeds = drawStepSeeds(seedPool, settings.seedsPerStep, rng, step, settings.hopMix, across);
  const corpus = across ? undefined : stepCorpus(seedPool, step);
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
  const corpusOfSeed = (seedIndex: number): number | undefined => (seeds[seedIndex] as AnswerSeed).corpus;
  const retrieved = flat.map((f) => ({ seedIndex: f.seedIndex, passages: allPassages(f.rollout) }));
  for (let i = 0; i < flat.length; i++) {
    const p = proposals[i] as ProposalRecord;
    if (p.invalid || p.question === undefined) continue;
    // Distractors come only from other seeds' rollouts: a sibling proposal for the same answer would carry
    // the answer's own evidence and make the check easier than it should be. They are of the question's
    // corpus (another world's passages are no distractors), which every seed of a one-corpus step shares.
    const others = retrieved.filter((o) => o.seedIndex !== p.seedIndex && o.passages.length > 0 && corpusOfSeed(o.seedIndex) === corpusOfSeed(p.seedIndex));
    const blocks: Passage[][] = [(retrieved[i] as { passages: Passage[] }).passages];
    for (let k = 0; k < settings.ragDistractorBlocks && others.length > 0; k++) blocks.push(others.splice(rng.int(others.length), 1)[0]?.passages ?? []);
    ragChecks++;
    if (blocks.length - 1 < settings.ragDistractorBlocks) ragShort++;
    for (let k = blocks.length - 1; k > 0; k--) {
      const j = rng.int(k + 1);
      [blocks[k], blocks[j]] = [blocks[j] as Passage[], blocks[k] as Passage[]];
    }
    ragItems.push(ragItemOf(p, seeds, blocks.flat()));
    ragOf.push(p);
  }
  await yieldToEventLoop();
  const ragPassed = await judging.ragCheck(ragItems, settings.ragMaxTokens);
  ragOf.forEach((p, k) => {
    if (!ragPassed[k]) p.invalid = 'rag-check-failed';
  });
  const hopChecks = settings.hopCheck ? await checkHops(proposals, seeds, settings.hopCheck.passages, deps, judging, settings.ragMaxTokens) : 0;
  const firstSearchChecks = settings.firstSearchCheck ? await checkFirstSearch(proposals, flat.map((f) => f.rollout), seeds, judging, settings.ragMaxTokens) : 0;
  t = clock('validate', t);
  begin('solve');

  // 3-4. The solver batch (./solver-batch.ts; docs/method.md, "The solver batch and the reuse pool"): the valid
  // questions in their slots, the empty ones reused from the pool. Each question is solved G times in its
  // corpus, with the top-k skills retrieved for it (solver only), and judged; then, with --min-informative-groups,
  // rounds of pooled questions while too few groups carry a signal.
  const valid = proposals.filter((p) => !p.invalid && p.question !== undefined);
  const { items, reused, slots } = firstBatch(step, proposals, seeds, pool, settings);
  // A question's group is its slot's shard: with the step sharded over workers it runs where the seed's
  // proposals ran (docs/scale-out.md).
  const groups: Awaited<ReturnType<SolverRole['solve']>> = [];
  /** Each group's verdicts, one per rollout, in the order of `groups`. */
  const verdicts: Judgement[][] = [];
  // Phases as they run: solve, judge, and for each resampling round solve and judge again; the judge phase's
  // last end comes after the bookkeeping below.
  let solveCalls = 0;
  const solveAndJudge = async (batch: readonly SolverItem[], seed: number): Promise<void> => {
    if (solveCalls++ > 0) {
      deps.onPhase?.(step, 'judge', 'end', seconds.judge);
      begin('solve');
    }
    let since = performance.now();
    const solvedGroups = await deps.solver.solve(
      batch.map((it) => it.question),
      settings.groupSize,
      seed,
      batch.map((it) => it.shard),
      settings.cardsInGroup === 'half' ? Math.floor(settings.groupSize / 2) : settings.groupSize,
      batch.some((it) => it.corpus !== undefined) ? batch.map((it) => it.corpus) : undefined,
    );
    seconds.solve += (performance.now() - since) / 1000;
    deps.onPhase?.(step, 'solve', 'end', seconds.solve);
    begin('judge');
    since = performance.now();
    // The verdicts come back in global-index order: each group's are the next `rollouts.length`.
    const flat = await judging.judge(
      batch.flatMap((it, k) => {
        const group = solvedGroups[k] as (typeof solvedGroups)[number];
        const golds = [it.answer, ...it.aliases];
        return group.rollouts.map((r) => ({ shard: it.shard, question: group.question, golds, prediction: r.final }));
      }),
    );
    seconds.judge += (performance.now() - since) / 1000;
    let next = 0;
    for (const g of solvedGroups) verdicts.push(flat.slice(next, (next += g.rollouts.length)));
    groups.push(...solvedGroups);
  };
  await solveAndJudge(items, rolloutSeed());
  const firstRound = items.length;
  // Resampling rounds (settings.resample): more pooled questions while too few groups carry a signal; everything
  // after (rewards, the bank, the pool, the updates) takes all rounds' groups in order.
  const rewardsOf = (k: number): number[] => (verdicts[k] as Judgement[]).map((j) => solverReward(j.correct));
  const informative = (): number => groups.filter((g, k) => hasAdvantageSignal({ rollouts: g.rollouts, rewards: rewardsOf(k) })).length;
  const rounds = await resampleRounds(step, items, slots, seeds.length, pool, settings, informative, solveAndJudge);
  t = performance.now();

  // 5-9. Rewards, skill utility, failure queue, the reuse pool, over every round's groups in order; the bank
  // (one writer: this process) takes the outcomes and failures in that order.
  const solverGroups: RolloutGroup[] = [];
  // Read before the commit below changes the bank: the cards as the prompts had them.
  const cardsThisStep = bank ? bank.cards : [];
  const usedSkills = new Set<string>();
  let failuresQueued = 0;
  const solved: PooledQuestion[] = [];
  for (let k = 0; k < items.length; k++) {
    const it = items[k] as SolverItem;
    const p = it.proposal;
    const group = groups[k] as (typeof groups)[number];
    const outcomes: Outcome[] = (verdicts[k] as Judgement[]).map((j) => (j.method === 'no-answer' ? 'malformed' : j.correct ? 'correct' : 'wrong'));
    const rewards = rewardsOf(k);
    const pHat = successRate(rewards);
    // Only a valid proposal's own question rewards its proposer; a reused question rewards no one.
    if (p) {
      p.pHat = pHat;
      p.reward = proposerReward(pHat, settings.reward);
      p.solverOutcomes = outcomes;
      p.skillIds = group.skillIds;
    }
    solved.push({ question: it.question, answer: it.answer, ...(it.aliases.length > 0 ? { aliases: it.aliases } : {}), hops: it.hops, ...(it.corpus !== undefined ? { corpus: it.corpus } : {}), successRate: pHat, step });
    solverGroups.push({ rollouts: group.rollouts, rewards });
    if (bank) {
      for (const id of group.skillIds) usedSkills.add(id);
      if (settings.cardUtility === 'counterfactual') {
        // Per split group (docs/method.md, "Card use"): helpful when the rollouts with the cards earned more
        // than those without, hurt when less, retrieved either way.
        if (group.withCards > 0 && group.withCards < rewards.length && group.skillIds.length > 0) {
          const diff = mean(rewards.slice(0, group.withCards)) - mean(rewards.slice(group.withCards));
          bank.recordOutcome(group.skillIds, diff > 0 ? 'correct' : diff < 0 ? 'wrong' : 'malformed');
        }
      } else {
        // A card's utility counts the rollouts that had it in their prompt.
        outcomes.forEach((outcome, ri) => {
          if (ri < group.withCards) bank.recordOutcome(group.skillIds, outcome);
        });
      }
      // Informative frontier failures: well-formed wrong answers of questions the group sometimes solves
      // (with queueFailures 'all', every well-formed wrong answer: bootstrap mining).
      if (settings.queueFailures === 'all' || (pHat > 0 && pHat < 1)) {
        group.rollouts.forEach((r, ri) => {
          if (outcomes[ri] !== 'wrong') return;
          const evidence = allPassages(r)
            .map((d) => `${d.title}: ${d.text}`)
            .join('\n')
            .slice(0, settings.failureEvidenceChars);
          bank.enqueueFailure({ question: group.question, target: it.answer, evidence, prediction: r.final ?? '', retrievedSkillIds: ri < group.withCards ? group.skillIds : [], queries: [...r.queries] }, step);
          failuresQueued++;
        });
      }
    }
  }
  for (const p of proposals) if (p.invalid) p.reward = settings.reward.invalidReward;
  // The pool takes every question solved this step, with its p̂ (SSP adds a reused question again).
  pool?.add(solved);
  const cardsUsed = bank ? cardUse(groups.map((g, k) => ({ skillIds: g.skillIds, withCards: g.withCards, rollouts: g.rollouts, rewards: (solverGroups[k] as RolloutGroup).rewards })), cardsThisStep) : undefined;
  t = clock('judge', t);
  begin('update');

  // 11 (start). Consolidation runs alongside the updates; it is committed below, at this step's boundary.
  const job = bank && deps.distiller ? bank.startConsolidation(step, deps.distiller) : null;

  // 10. GRPO updates: solver groups = the G rollouts of a question of the batch; proposer groups = the n_p
  // proposals of a seed.
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
  const perSeed: RolloutGroup[] = proposed.map((rollouts, seedIndex) => ({
    rollouts,
    rewards: proposals.filter((p) => p.seedIndex === seedIndex).map((p) => p.reward),
  }));
  // --proposer-baseline step: the step's proposals as one group (docs/method.md, "GRPO").
  const proposerGroups: RolloutGroup[] = settings.proposerBaseline === 'step' ? [{ rollouts: perSeed.flatMap((g) => g.rollouts), rewards: perSeed.flatMap((g) => g.rewards) }] : perSeed;
  await yieldToEventLoop();
  const proposerUpdate = await updateRole('proposer', trained(proposerGroups));
  t = clock('update', t);
  begin('consolidate');

  // 11 (commit). The step boundary: wait for the job, apply its change, persist stats and queue.
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
  const validRewards = solverGroups.flatMap((g, k) => ((items[k] as SolverItem).proposal ? g.rewards : []));
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
    solverQuestions: items.length,
    reusedQuestions: reused.length,
    resampledQuestions: items.length - firstRound,
    resampleRounds: rounds,
    informativeGroups: solverGroups.filter(hasAdvantageSignal).length,
    emptySlots: Math.max(0, slots - firstRound),
    ...(pool ? { reusePool: pool.size, reusePoolCleared: poolCleared === true } : {}),
    ...(corpus !== undefined ? { corpus } : {}),
    solverRollouts: solverRewards.length,
    solverAccuracy: mean(solverRewards),
    validQuestionAccuracy: mean(validRewards),
    validQuestionRollouts: validRewards.length,
    pHatHistogram,
    solverMeanReward: mean(solverRewards),
    proposerMeanReward: mean(proposals.map((p) => p.reward)),
    ...(solverUpdate ? { solver: solverUpdate } : {}),
    ...(proposerUpdate ? { proposer: proposerUpdate } : {}),
    ...(bank
      ? { bankSize: bank.cards.length, activeSkills: usedSkills.size, activeCards: bank.cards.filter((c) => c.stats.retrieved > 0).length, bankVersion: bank.version, queueLength: bank.pendingFailures().length }
      : {}),
    failuresQueued,
    ...(consolidation ? { consolidation } : {}),
    ...(cardsUsed ? { cardUse: cardsUsed } : {}),
    judgeUnparsed: deps.judge.unparsedReplies - unparsedBefore,
    ragChecks,
    ragChecksShortOfDistractors: ragShort,
    hopChecks,
    firstSearchChecks,
    seconds,
  };
  return { metrics, proposals, reused, groups: { solver: solverGroups, proposer: proposerGroups } };
}

/**
 * The hop check (docs/method.md, "Validating questions"): each question still valid whose seed asked for two or
 * more hops is searched once, as it stands, in its seed's corpus (one batch per corpus, in proposal order), and
 * the RAG reader answers it from those passages alone, judged as the RAG check is; a question it answers needs
 * no second search and is marked `answerable-in-one-search`. Returns how many questions it read.
 */
async function checkHops(
  proposals: readonly ProposalRecord[],
  seeds: readonly AnswerSeed[],
  passages: number,
  deps: StepDeps,
  judging: StepJudging,
  maxTokens: number,
): Promise<number> {
  if (!deps.searchers) throw new Error('the hop check (--hop-check) needs the search tools in the step (StepDeps.searchers)');
  const checked = proposals.filter((p) => !p.invalid && p.question !== undefined && p.hops >= 2);
  const corpusOf = (p: ProposalRecord): number | undefined => (seeds[p.seedIndex] as AnswerSeed).corpus;
  const found = new Map<ProposalRecord, Passage[]>();
  for (const corpus of new Set(checked.map(corpusOf))) {
    const mine = checked.filter((p) => corpusOf(p) === corpus);
    const results = await searcherOf(deps.searchers, corpus).search(mine.map((p) => p.question as string), passages);
    mine.forEach((p, k) => found.set(p, results[k] ?? []));
  }
  const items = checked.map((p) => ragItemOf(p, seeds, found.get(p) ?? []));
  await yieldToEventLoop();
  const answered = await judging.ragCheck(items, maxTokens);
  checked.forEach((p, k) => {
    if (answered[k]) p.invalid = 'answerable-in-one-search';
  });
  return checked.length;
}

/**
 * The first-search check (docs/method.md, "Validating questions"): each question still valid whose seed asked for
 * two or more hops is read by the RAG reader from the passages of its proposal's first search alone (what the
 * search for its answer returned), judged as the RAG check is; a question it answers does not need its further
 * hops and is marked `answerable-from-first-search`. `rollouts[i]` is proposal i's. Returns how many it read.
 */
async function checkFirstSearch(proposals: readonly ProposalRecord[], rollouts: readonly Rollout[], seeds: readonly AnswerSeed[], judging: StepJudging, maxTokens: number): Promise<number> {
  const checked = proposals.map((p, i) => ({ p, i })).filter(({ p }) => !p.invalid && p.question !== undefined && p.hops >= 2);
  const items = checked.map(({ p, i }) => ragItemOf(p, seeds, (rollouts[i] as Rollout).retrieved[0] ?? []));
  await yieldToEventLoop();
  const answered = await judging.ragCheck(items, maxTokens);
  checked.forEach(({ p }, k) => {
    if (answered[k]) p.invalid = 'answerable-from-first-search';
  });
  return checked.length;
}

/** A RAG reading of proposal `p`'s question from `documents`: judged against its seed's answer and aliases, in its seed's corpus. */
function ragItemOf(p: ProposalRecord, seeds: readonly AnswerSeed[], documents: Passage[]): RagItem {
  const seed = seeds[p.seedIndex] as AnswerSeed;
  const question = p.question as string;
  return { shard: p.seedIndex, messages: ragCheckMessages(question, documents), question, golds: [p.answer, ...(seed.aliases ?? [])], ...(seed.corpus !== undefined ? { corpus: seed.corpus } : {}) };
}
