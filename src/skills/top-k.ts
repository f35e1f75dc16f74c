// Top-k retrieval over card vectors (docs/method.md, "The skill bank"): the k best by cosine, ties broken by
// card id, so the same bank version always retrieves the same cards.
import type { SkillCard } from './card.js';
import { VectorIndex } from './embedder.js';

export interface Retrieval {
  card: SkillCard;
  score: number;
}

/** Top-k by score, ties broken by id (docs/method.md, "The skill bank": deterministic for a bank version). */
export function topKScored(cards: readonly SkillCard[], scores: Float32Array, k: number): Retrieval[] {
  const better = (a: number, b: number): boolean => {
    const sa = scores[a] as number;
    const sb = scores[b] as number;
    return sa > sb || (sa === sb && (cards[a] as SkillCard).id < (cards[b] as SkillCard).id);
  };
  // k is small (3): keep a sorted list of the best k indices instead of sorting everything.
  const best: number[] = [];
  for (let i = 0; i < cards.length; i++) {
    if (best.length === k && !better(i, best[k - 1] as number)) continue;
    let at = best.length === k ? k - 1 : best.length;
    best[at] = i;
    while (at > 0 && better(i, best[at - 1] as number)) {
      best[at] = best[at - 1] as number;
      best[--at] = i;
    }
  }
  return best.map((i) => ({ card: cards[i] as SkillCard, score: scores[i] as number }));
}

export function topK(cards: readonly SkillCard[], vectors: readonly Float32Array[], q: Float32Array, k: number): Retrieval[] {
  return topKScored(cards, new VectorIndex(vectors, q.length).scores(q), k);
}

