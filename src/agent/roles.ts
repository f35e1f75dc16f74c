// The two trained roles. The proposer gets the policy and the search tool; the solver also gets the skill bank.
// The bank is handed to the solver role alone, so no proposer prompt can ever carry skill text.
import type { Policy } from '../model/policy.js';
import type { SkillBank } from '../skills/bank.js';
import { proposerMessages, solverMessages } from './prompts.js';
import { type Rollout, type RolloutConfig, type SearchTools } from './rollout.js';
import { localRunner, type RolloutRunner } from './runner.js';

/** An answer seed: what the proposer is asked to write a question for (the answer and the hops to reach it). */
export interface AnswerSeed {
  answer: string;
  hops: number;
  /** Other accepted spellings of the answer (count as gold for the solver). */
  aliases?: string[];
  /**
   * The training corpus it comes from, an index into the run's corpora (docs/method.md, "Training corpora"):
   * its proposals and their questions are searched there. Absent: the run's one corpus (0).
   */
  corpus?: number;
}

export type RolloutSettings = Omit<RolloutConfig, 'finalTag' | 'seed'>;

export class ProposerRole {
  private readonly runner: RolloutRunner;

  /** `runner`: who runs the rollouts (default: this process, with `policy` and `searcher`, one per corpus or one). */
  constructor(
    readonly policy: Policy,
    searcher: SearchTools,
    private readonly settings: RolloutSettings,
    runner?: RolloutRunner,
  ) {
    this.runner = runner ?? localRunner(policy, searcher);
  }

  /**
   * `perSeed` proposal rollouts for each seed, all in one batch. Result: [seed][proposal]. Seed i's rollouts
   * are shard i (they run together, on one worker when sharded), and search the seed's corpus.
   */
  async propose(seeds: readonly AnswerSeed[], perSeed: number, seed: number): Promise<Rollout[][]> {
    const requests = seeds.flatMap((s, i) =>
      Array.from({ length: perSeed }, (_, j) => ({
        id: `seed${i}/p${j}`,
        promptIds: this.policy.renderChat(proposerMessages(s.answer, s.hops)),
        shard: i,
        ...(s.corpus !== undefined ? { corpus: s.corpus } : {}),
      })),
    );
    const rollouts = await this.runner.run(requests, { ...this.settings, finalTag: 'question', seed });
    return seeds.map((_, i) => rollouts.slice(i * perSeed, (i + 1) * perSeed));
  }
}

export interface SolveGroup {
  question: string;
  /** Ids of the skill cards prepended to this question's prompts (empty with skills off). */
  skillIds: string[];
  /** The first `withCards` rollouts had the cards in their prompt, the others none (docs/method.md, "Card use"). */
  withCards: number;
  rollouts: Rollout[];
}

export class SolverRole {
  private readonly runner: RolloutRunner;

  /** `runner`: who runs the rollouts (default: this process, with `policy` and `searcher`, one per corpus or one). */
  constructor(
    readonly policy: Policy,
    searcher: SearchTools,
    /** undefined = skills off (the SSP baseline). */
    readonly bank: SkillBank | undefined,
    private readonly settings: RolloutSettings,
    runner?: RolloutRunner,
  ) {
    this.runner = runner ?? localRunner(policy, searcher);
  }

  /**
   * `groupSize` rollouts per question (docs/method.md, "One step"), each prompt prefixed with the top-k skills retrieved
   * for its question. All retrievals of the call use one bank version, and happen in this process (the bank's
   * one reader and writer). `shards[i]`: the step's seed index of question i (default i); a question's group
   * runs where its seed's proposals ran. `withCards` (default all `groupSize`): how many of a group's rollouts get
   * the cards; the rest are asked the question without them, so that the group's own rewards compare the two.
   * `corpora[i]`: the corpus question i is searched in (default 0; docs/method.md, "Training corpora").
   */
  async solve(questions: readonly string[], groupSize: number, seed: number, shards?: readonly number[], withCards = groupSize, corpora?: ReadonlyArray<number | undefined>): Promise<SolveGroup[]> {
    if (questions.length === 0) return [];
    if (!Number.isInteger(withCards) || withCards < 0 || withCards > groupSize) throw new Error(`withCards must be an integer in 0..${groupSize}, got ${withCards}`);
    const retrieved = this.bank ? await this.bank.retrieveMany([...questions]) : questions.map(() => []);
    const rendered = retrieved.map((r) => (this.bank && r.length > 0 ? this.bank.render(r) : { text: '', cardIds: [] as string[] }));
    const requests = questions.flatMap((q, i) => {
      const withText = this.policy.renderChat(solverMessages(q, rendered[i]?.text));
      const without = withCards < groupSize ? this.policy.renderChat(solverMessages(q, undefined)) : withText;
      const corpus = corpora?.[i];
      return Array.from({ length: groupSize }, (_, j) => ({ id: `q${i}/s${j}`, promptIds: [...(j < withCards ? withText : without)], shard: shards?.[i] ?? i, ...(corpus !== undefined ? { corpus } : {}) }));
    });
    const rollouts = await this.runner.run(requests, { ...this.settings, finalTag: 'answer', seed });
    return questions.map((question, i) => ({
      question,
      // The cards that made it into the prompt (the renderer may drop some to fit its token budget).
      skillIds: rendered[i]?.cardIds ?? [],
      withCards,
      rollouts: rollouts.slice(i * groupSize, (i + 1) * groupSize),
    }));
  }
}
