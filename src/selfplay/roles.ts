// The two trained roles. The proposer gets the policy and the search tool; the solver also gets the skill bank.
// The bank is handed to the solver role alone, so no proposer prompt can ever carry skill text.
import type { Policy } from '../model/policy.js';
import type { Searcher } from '../search/types.js';
import type { SkillBank } from '../skills/bank.js';
import { proposerMessages, solverMessages } from './prompts.js';
import { type Rollout, type RolloutConfig, runRollouts } from './rollout.js';

export interface AnswerSeed {
  answer: string;
  hops: number;
  /** Other accepted spellings of the answer (count as gold for the solver). */
  aliases?: string[];
}

export type RolloutSettings = Omit<RolloutConfig, 'finalTag' | 'seed'>;

export class ProposerRole {
  constructor(
    readonly policy: Policy,
    private readonly searcher: Searcher,
    private readonly settings: RolloutSettings,
  ) {}

  /** `perSeed` proposal rollouts for each seed, all in one batch. Result: [seed][proposal]. */
  async propose(seeds: readonly AnswerSeed[], perSeed: number, seed: number): Promise<Rollout[][]> {
    const requests = seeds.flatMap((s, i) =>
      Array.from({ length: perSeed }, (_, j) => ({ id: `seed${i}/p${j}`, promptIds: this.policy.renderChat(proposerMessages(s.answer, s.hops)) })),
    );
    const rollouts = await runRollouts(this.policy, this.searcher, requests, { ...this.settings, finalTag: 'question', seed });
    return seeds.map((_, i) => rollouts.slice(i * perSeed, (i + 1) * perSeed));
  }
}

export interface SolveGroup {
  question: string;
  /** Ids of the skill cards prepended to this question's prompts (empty with skills off). */
  skillIds: string[];
  rollouts: Rollout[];
}

export class SolverRole {
  constructor(
    readonly policy: Policy,
    private readonly searcher: Searcher,
    /** undefined = skills off (the SSP baseline). */
    readonly bank: SkillBank | undefined,
    private readonly settings: RolloutSettings,
  ) {}

  /**
   * `groupSize` rollouts per question (docs/method.md, "One step"), each prompt prefixed with the top-k skills retrieved
   * for its question. All retrievals of the call use one bank version.
   */
  async solve(questions: readonly string[], groupSize: number, seed: number): Promise<SolveGroup[]> {
    if (questions.length === 0) return [];
    const retrieved = this.bank ? await this.bank.retrieveMany([...questions]) : questions.map(() => []);
    const rendered = retrieved.map((r) => (this.bank && r.length > 0 ? this.bank.render(r) : { text: '', cardIds: [] as string[] }));
    const requests = questions.flatMap((q, i) =>
      Array.from({ length: groupSize }, (_, j) => ({ id: `q${i}/s${j}`, promptIds: this.policy.renderChat(solverMessages(q, rendered[i]?.text)) })),
    );
    const rollouts = await runRollouts(this.policy, this.searcher, requests, { ...this.settings, finalTag: 'answer', seed });
    return questions.map((question, i) => ({
      question,
      // The cards that made it into the prompt (the renderer may drop some to fit its token budget).
      skillIds: rendered[i]?.cardIds ?? [],
      rollouts: rollouts.slice(i * groupSize, (i + 1) * groupSize),
    }));
  }
}
