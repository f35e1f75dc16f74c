// The card blocks of the warm start's solver transcripts (docs/world.md, "Card literacy"): the block a run's
// solver prompt carries, rendered exactly as the solver role renders it (the bank's top 3 for the question in
// the run's render budget, src/agent/roles.ts), from a bank of the cards the run's distiller writes
// (shapeCard in ./scripted-roles.ts) for question shapes of the training worlds, plus the model's priming cards.
// Each solver question gets one kind of block, drawn by the mix, of 1, 2 or 3 cards drawn by the sizes:
//   none         no block;
//   retrieved    the bank's top cards for the question, as a run retrieves them: some fit the question's shape;
//   random       cards of the bank drawn at random;
//   other-shape  the best-ranked cards for the question that were written for another shape (for a one-hop
//                question a multi-hop decomposition card first: the card that must not make it search on).
// The expert (./experts.ts) follows a card only where it fits the question's shape, so in the transcripts a
// fitting card changes what the expert does and every other block changes nothing.
import { rmSync } from 'node:fs';
import type { SynthFact } from '../corpus/synthetic/index.js';
import { SkillBank } from '../skills/bank.js';
import { type CardContent, contentId, emptyStats, type SkillCard, validateContent } from '../skills/card.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import type { Rng } from '../util/rng.js';
import { fittingCards, questionShape, shapeCard } from './scripted-roles.js';
import { randomChain } from './transcripts.js';
import type { World } from './world.js';

export const CARD_BLOCK_KINDS = ['none', 'retrieved', 'random', 'other-shape'] as const;
export type CardBlockKind = (typeof CARD_BLOCK_KINDS)[number];

/** Shares of the solver questions that get each kind of block (they need not sum to 1). */
export type CardBlockMix = Record<CardBlockKind, number>;

/**
 * The default mix (docs/world.md, "Card literacy", with the reasons): a fifth without cards, so the model keeps
 * answering without a block; two fifths retrieved, as a run shows them; the rest random or of another shape, so that
 * a block which does not fit is seen as often as one that does and is ignored.
 */
export const DEFAULT_CARD_BLOCK_MIX: CardBlockMix = { none: 0.2, retrieved: 0.4, random: 0.2, 'other-shape': 0.2 };

/** Cards in the block at most: the run's top k (src/skills/config.ts). */
const BLOCK_CARDS = 3;
/** Shares of the blocks (other than none) that hold 1, 2 and 3 cards. */
export type BlockSizeShares = readonly [number, number, number];
/**
 * The default sizes (docs/world.md, "Card literacy"): half the blocks hold the run's top 3, a quarter each 2 or 1
 * card. A run's block holds fewer than 3 where the render budget cuts it, the bank is small (an empty bank at the
 * start, the no-priming ablation) or a retrieval floor drops cards; a model that saw only blocks of 3 misread
 * one-hop passages behind a lone card it saw ignored in blocks of 3 (the two-hop control, measured).
 */
export const DEFAULT_BLOCK_SIZE_SHARES: BlockSizeShares = [0.25, 0.25, 0.5];
/** How deep other-shape blocks look in the question's ranking for cards of another shape. */
const OTHER_SHAPE_DEPTH = 12;

/** A mix as its flag writes it: `none,retrieved,random,other-shape` shares. */
export function cardBlockMixText(mix: CardBlockMix): string {
  return CARD_BLOCK_KINDS.map((k) => String(mix[k])).join(',');
}

/** A mix as `none,retrieved,random,other-shape` shares ("0.25,0.35,0.2,0.2"), checked. */
export function parseCardBlockMix(text: string, flag: string): CardBlockMix {
  const parts = text.split(',').map(Number);
  if (parts.length !== CARD_BLOCK_KINDS.length || parts.some((x) => !Number.isFinite(x) || x < 0) || parts.every((x) => x === 0)) {
    throw new Error(`${flag} must be ${CARD_BLOCK_KINDS.length} non-negative shares of ${CARD_BLOCK_KINDS.join(', ')} (e.g. 0.25,0.35,0.2,0.2), got ${text}`);
  }
  return Object.fromEntries(CARD_BLOCK_KINDS.map((k, i) => [k, parts[i] as number])) as CardBlockMix;
}

/** Block sizes as their flag writes them: shares of blocks of 1, 2 and 3 cards ("0.25,0.25,0.5"), checked. */
export function parseBlockSizeShares(text: string, flag: string): BlockSizeShares {
  const parts = text.split(',').map(Number);
  if (parts.length !== BLOCK_CARDS || parts.some((x) => !Number.isFinite(x) || x < 0) || parts.every((x) => x === 0)) {
    throw new Error(`${flag} must be ${BLOCK_CARDS} non-negative shares of blocks of 1, 2 and 3 cards (e.g. 0.25,0.25,0.5), got ${text}`);
  }
  return parts as unknown as BlockSizeShares;
}

function drawSize(shares: BlockSizeShares, rng: Rng): number {
  const total = shares.reduce((a, b) => a + b, 0);
  let u = rng.next() * total;
  for (let i = 0; i < shares.length; i++) {
    u -= shares[i] as number;
    if (u < 0) return i + 1;
  }
  return BLOCK_CARDS;
}

function drawKind(mix: CardBlockMix, rng: Rng): CardBlockKind {
  const total = CARD_BLOCK_KINDS.reduce((a, k) => a + mix[k], 0);
  let u = rng.next() * total;
  for (const k of CARD_BLOCK_KINDS) {
    u -= mix[k];
    if (u < 0) return k;
  }
  return 'none';
}

/**
 * Up to `count` distinct cards of the kinds the run's distiller writes (TemplateDistiller: shapeCard of the
 * question's wording and the failure it saw), for questions the generator words for random 1-, 2- and 3-hop
 * chains of the given training worlds: a multi-hop question's failure is an early answer (a decomposition card)
 * two times in three, else a misreading (relations); a one-hop question's a misreading or no name copied
 * (search-strategy). An early answer made fewer searches than links, as the distiller sees it.
 */
export function distillerShapeCards(worlds: readonly World[], count: number, rng: Rng): SkillCard[] {
  const cards = new Map<string, SkillCard>();
  for (let i = 0; cards.size < count && i < count * 20; i++) {
    const world = worlds[i % worlds.length] as World;
    const hops = 1 + rng.int(3);
    const path: SynthFact[] | undefined = randomChain(world, hops, rng);
    if (!path) continue;
    const question = world.phrase(path, rng);
    const mode = hops === 1 ? (rng.next() < 0.5 ? 'wrong-entity' : 'no-entity') : rng.next() < 2 / 3 ? 'stopped-early' : 'wrong-entity';
    const searches = mode === 'stopped-early' ? 1 + rng.int(hops - 1) : hops;
    const content: CardContent = validateContent(shapeCard(questionShape(question), mode, searches), 'distilled world card');
    const card: SkillCard = { id: contentId('d', content), ...content, source: 'distilled', stats: emptyStats(), createdStep: 0, bankVersion: 0 };
    cards.set(card.id, card);
  }
  return [...cards.values()];
}

export interface CardBlock {
  kind: CardBlockKind;
  /** The rendered block; undefined for `none` (or a bank with nothing to show). */
  text?: string;
}

export interface CardBlocks {
  /** The block for a solver question with `hops` links, its kind drawn from the mix with `rng`. */
  blockFor(question: string, hops: number, rng: Rng): Promise<CardBlock>;
  dispose(): Promise<void>;
}

/**
 * A bank at `bankPath` (replaced) holding `cards`, retrieved with the lexical embedder (the world run's) and
 * rendered in `renderTokenBudget` (the world run's), and the blocks drawn from it by `mix`.
 */
export async function cardBlocks(
  bankPath: string,
  cards: readonly SkillCard[],
  renderTokenBudget: number,
  mix: CardBlockMix,
  sizes: BlockSizeShares = DEFAULT_BLOCK_SIZE_SHARES,
): Promise<CardBlocks> {
  rmSync(bankPath, { force: true });
  const bank = await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), seedCards: false, config: { renderTokenBudget, topK: BLOCK_CARDS } });
  await bank.importCards(cards);
  const all = bank.cards;
  const render = (chosen: readonly SkillCard[]): string | undefined => {
    const text = bank.render(chosen).text;
    return text.length > 0 ? text : undefined;
  };
  const fitsQuestion = (question: string, card: SkillCard): boolean => fittingCards(question, render([card]) ?? '').size > 0;
  return {
    async blockFor(question, hops, rng) {
      const kind = drawKind(mix, rng);
      if (kind === 'none' || all.length === 0) return { kind };
      const size = drawSize(sizes, rng);
      if (kind === 'retrieved') return { kind, text: render((await bank.retrieve(question)).map((r) => r.card).slice(0, size)) };
      if (kind === 'random') {
        const picked = new Set<number>();
        while (picked.size < Math.min(size, all.length)) picked.add(rng.int(all.length));
        return { kind, text: render([...picked].map((i) => all[i] as SkillCard)) };
      }
      const near = (await bank.retrieve(question, OTHER_SHAPE_DEPTH)).map((r) => r.card).filter((c) => !fitsQuestion(question, c));
      let chosen = near.slice(0, size);
      if (hops === 1 && !chosen.some((c) => c.category === 'decomposition')) {
        const decomposition = near.find((c) => c.category === 'decomposition') ?? pick(all.filter((c) => c.category === 'decomposition'), rng);
        if (decomposition) chosen = [decomposition, ...chosen.filter((c) => c.id !== decomposition.id)].slice(0, size);
      }
      return { kind, text: render(chosen) };
    },
    dispose: () => bank.dispose(),
  };
}

function pick<T>(xs: readonly T[], rng: Rng): T | undefined {
  return xs.length === 0 ? undefined : xs[rng.int(xs.length)];
}
