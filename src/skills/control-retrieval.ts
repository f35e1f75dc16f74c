// Retrieval controls for measuring what a card block does (docs/world.md, "What the cards cost" and "Card
// literacy"): the bank's retrieval replaced, for an evaluation only, by a fixed rule, so that the effect of a
// block's presence can be told from the effect of what it says. Both patch `retrieveMany` of one open bank (the
// solver role retrieves through it); nothing is written to the bank.
import type { SkillBank } from './bank.js';
import type { SkillCard } from './card.js';
import { fnv1a } from './lexical.js';
import type { Retrieval } from './top-k.js';
import { Rng } from '../util/rng.js';

/** The stream of the random control's draws, derived per question text so a question draws the same cards in every run. */
const RANDOM_CARDS_STREAM = 0x52414e44;

/** The bank retrieves k distinct cards drawn at random, whatever the question (a fixed draw per question text). */
export function retrieveAtRandom(bank: SkillBank): void {
  bank.retrieveMany = async (questions: string[], k = bank.config.topK): Promise<Retrieval[][]> =>
    questions.map((q) => {
      const rng = Rng.derive(fnv1a(q), RANDOM_CARDS_STREAM);
      const pool = [...bank.cards];
      const picked: Retrieval[] = [];
      while (picked.length < k && pool.length > 0) picked.push({ card: pool.splice(rng.int(pool.length), 1)[0] as SkillCard, score: 0 });
      return picked;
    });
}

/**
 * The bank retrieves, for each question, only the best-ranked of its cards that `accept` takes (e.g. a
 * decomposition card of two or more links for a one-hop question: the card that must not make it search on),
 * among its top `depth`; none when no card there qualifies.
 */
export function retrieveOnly(bank: SkillBank, accept: (card: SkillCard) => boolean, depth: number): void {
  const ranked = bank.retrieveMany.bind(bank);
  bank.retrieveMany = async (questions: string[]): Promise<Retrieval[][]> => (await ranked(questions, depth)).map((top) => top.filter((r) => accept(r.card)).slice(0, 1));
}
