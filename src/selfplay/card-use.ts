// Whether the solver follows the cards in its prompt, and what following them earns (docs/method.md, "Card
// use"). A card prescribes as many searches as it has query templates (a decomposition card's
// `[entity]`, `[entity found at the previous link]` = two); a rollout follows a card when it made at least that
// many distinct searches. Per card category, over the (rollout, non-seed card) pairs of a step:
//   followed share     = followed pairs / pairs
//   reward             = mean solver reward of the followed pairs, and of the others
//   centered reward    = mean of R_i − mean(R of the rollout's group), the numerator of the GRPO advantage:
//                        positive when following earns more than the group's average, so the update favours it.
// Seed cards are left out: they are the same generic cards for every question.
// With the cards in half of each group (--cards-in-group half) the pairs are those of the rollouts that had the
// cards, and the groups also contrast their rollouts with and without cards:
//   with / without     = mean reward and mean centered reward of the rollouts with the cards, and of the others,
//                        over groups with a learned card: the centered reward with cards is the push GRPO gives
//                        to answering with them, against answering the same question without.
import type { SkillCard } from '../skills/card.js';
import type { Rollout } from '../agent/rollout.js';

export interface CardUseCounts {
  pairs: number;
  followed: number;
  /** Sums (divide by the counts for means). */
  rewardFollowed: number;
  rewardNotFollowed: number;
  centeredFollowed: number;
  centeredNotFollowed: number;
}

/** Rollouts of one side of split groups: how many, and their reward and centered reward summed. */
export interface CardSide {
  rollouts: number;
  reward: number;
  centered: number;
}

export interface CardUse {
  /** Questions solved with at least one card in the prompt, and with at least one non-seed card. */
  prompts: number;
  promptsWithLearned: number;
  byCategory: Record<string, CardUseCounts>;
  /** Groups with a learned card whose rollouts were split into with and without cards (absent: none was). */
  split?: { groups: number; with: CardSide; without: CardSide };
}

export interface CardUseGroup {
  skillIds: readonly string[];
  /** The first `withCards` rollouts had the cards (default all of them). */
  withCards?: number;
  rollouts: readonly Pick<Rollout, 'queries'>[];
  rewards: readonly number[];
}

function emptySplit(): NonNullable<CardUse['split']> {
  return { groups: 0, with: { rollouts: 0, reward: 0, centered: 0 }, without: { rollouts: 0, reward: 0, centered: 0 } };
}

export function emptyCardUse(): CardUse {
  return { prompts: 0, promptsWithLearned: 0, byCategory: {} };
}

/** Distinct searches of a rollout (case and spacing ignored). */
function distinctSearches(r: Pick<Rollout, 'queries'>): number {
  return new Set(r.queries.map((q) => q.toLowerCase().replace(/\s+/g, ' ').trim())).size;
}

export function cardUse(groups: readonly CardUseGroup[], cards: readonly SkillCard[], into: CardUse = emptyCardUse()): CardUse {
  const byId = new Map(cards.map((c) => [c.id, c]));
  for (const g of groups) {
    if (g.skillIds.length === 0) continue;
    into.prompts++;
    const learned = g.skillIds.map((id) => byId.get(id)).filter((c): c is SkillCard => c !== undefined && c.source !== 'seed');
    if (learned.length === 0) continue;
    into.promptsWithLearned++;
    const mean = g.rewards.reduce((a, b) => a + b, 0) / Math.max(1, g.rewards.length);
    const withCards = g.withCards ?? g.rollouts.length;
    if (withCards < g.rollouts.length) {
      const split = (into.split ??= emptySplit());
      split.groups++;
      g.rewards.forEach((reward, i) => {
        const side = i < withCards ? split.with : split.without;
        side.rollouts++;
        side.reward += reward;
        side.centered += reward - mean;
      });
    }
    g.rollouts.forEach((r, i) => {
      if (i >= withCards) return;
      const reward = g.rewards[i] ?? 0;
      const searches = distinctSearches(r);
      for (const c of learned) {
        const row = (into.byCategory[c.category] ??= { pairs: 0, followed: 0, rewardFollowed: 0, rewardNotFollowed: 0, centeredFollowed: 0, centeredNotFollowed: 0 });
        row.pairs++;
        if (searches >= Math.max(1, c.queries.length)) {
          row.followed++;
          row.rewardFollowed += reward;
          row.centeredFollowed += reward - mean;
        } else {
          row.rewardNotFollowed += reward;
          row.centeredNotFollowed += reward - mean;
        }
      }
    });
  }
  return into;
}

/** Adds one step's card use into a running total (for a run's summary). */
export function addCardUse(total: CardUse, step: CardUse): CardUse {
  total.prompts += step.prompts;
  total.promptsWithLearned += step.promptsWithLearned;
  for (const [cat, c] of Object.entries(step.byCategory)) {
    const t = (total.byCategory[cat] ??= { pairs: 0, followed: 0, rewardFollowed: 0, rewardNotFollowed: 0, centeredFollowed: 0, centeredNotFollowed: 0 });
    for (const k of Object.keys(c) as Array<keyof CardUseCounts>) t[k] += c[k];
  }
  if (step.split) {
    const t = (total.split ??= emptySplit());
    t.groups += step.split.groups;
    for (const side of ['with', 'without'] as const) for (const k of ['rollouts', 'reward', 'centered'] as const) t[side][k] += step.split[side][k];
  }
  return total;
}
