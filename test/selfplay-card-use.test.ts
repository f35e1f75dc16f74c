// Card use (src/selfplay/card-use.ts, docs/method.md "Card use"): a rollout follows a learned card when it made
// at least as many distinct searches as the card has query templates; seed cards are left out; rewards and
// group-centered rewards are summed per category.
import { describe, expect, it } from 'vitest';
import { addCardUse, cardUse, emptyCardUse } from '../src/selfplay/card-use.js';
import { emptyStats, type SkillCard } from '../src/skills/card.js';

const card = (id: string, category: string, source: SkillCard['source'], queries: string[]): SkillCard => ({
  id,
  category,
  description: 'd',
  triggers: [],
  avoid: [],
  queries,
  source,
  stats: emptyStats(),
  createdStep: 0,
  bankVersion: 0,
});

describe('cardUse', () => {
  const cards = [card('dec', 'decomposition', 'distilled', ['[entity]', '[entity found at the previous link]']), card('seed', 'aliases', 'seed', ['[x]']), card('st', 'search-strategy', 'mined', ['[entity]'])];

  it('counts followed pairs, their rewards and centered rewards per category', () => {
    const use = cardUse(
      [
        // Two rollouts search twice (one with a repeat that does not count), one once, one never.
        { skillIds: ['dec', 'seed'], rollouts: [{ queries: ['a', 'b'] }, { queries: ['a', 'A '] }, { queries: ['a'] }, { queries: ['x', 'y', 'z'] }], rewards: [1, 0, 0, 1] },
        { skillIds: ['seed'], rollouts: [{ queries: ['a'] }], rewards: [1] },
        { skillIds: [], rollouts: [{ queries: [] }], rewards: [0] },
      ],
      cards,
    );
    expect(use.prompts).toBe(2);
    expect(use.promptsWithLearned).toBe(1);
    expect(Object.keys(use.byCategory)).toEqual(['decomposition']);
    const d = use.byCategory.decomposition;
    // Group mean 0.5: followed rollouts 0 and 3 (+0.5 each), not followed 1 and 2 (−0.5 each).
    expect(d).toEqual({ pairs: 4, followed: 2, rewardFollowed: 2, rewardNotFollowed: 0, centeredFollowed: 1, centeredNotFollowed: -1 });
  });

  it('with the cards in part of a group: pairs of the rollouts that had them, and the two sides contrasted', () => {
    const use = cardUse(
      [
        // Rollouts 0 and 1 had the cards (0 follows the decomposition card), 2 and 3 did not; group mean 0.5.
        { skillIds: ['dec'], withCards: 2, rollouts: [{ queries: ['a', 'b'] }, { queries: ['a'] }, { queries: ['a', 'b'] }, { queries: ['a'] }], rewards: [1, 1, 0, 0] },
        // A split group with seed cards only has no learned card: not counted.
        { skillIds: ['seed'], withCards: 1, rollouts: [{ queries: ['a'] }, { queries: ['a'] }], rewards: [1, 0] },
      ],
      cards,
    );
    expect(use.byCategory.decomposition).toEqual({ pairs: 2, followed: 1, rewardFollowed: 1, rewardNotFollowed: 1, centeredFollowed: 0.5, centeredNotFollowed: 0.5 });
    expect(use.split).toEqual({ groups: 1, with: { rollouts: 2, reward: 2, centered: 1 }, without: { rollouts: 2, reward: 0, centered: -1 } });
    const total = addCardUse(addCardUse(emptyCardUse(), use), use);
    expect(total.split).toEqual({ groups: 2, with: { rollouts: 4, reward: 4, centered: 2 }, without: { rollouts: 4, reward: 0, centered: -2 } });
  });

  it('adds steps into a run total', () => {
    const one = cardUse([{ skillIds: ['st'], rollouts: [{ queries: [] }, { queries: ['q'] }], rewards: [0, 1] }], cards);
    const total = addCardUse(addCardUse(emptyCardUse(), one), one);
    expect(total.prompts).toBe(2);
    expect(total.byCategory['search-strategy']).toEqual({ pairs: 4, followed: 2, rewardFollowed: 2, rewardNotFollowed: 0, centeredFollowed: 1, centeredNotFollowed: -1 });
  });
});
