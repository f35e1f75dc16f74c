// The pieces of the world's warm-start model (scripts/make-demo-model.ts runs them in order, see
// docs/world.md): the transcripts' skill cards, the tokenizer trained on the transcripts' own text, and the
// random-init Qwen3 folder that `sesa-train sft --full` trains.
import { rmSync } from 'node:fs';
import type { GrowShape } from '../checkpoint/grow.js';
import { makeTinyCheckpoint, type MakeTinyResult } from '../checkpoint/make-tiny.js';
import type { Relation } from '../corpus/questions.js';
import { SkillBank } from '../skills/bank.js';
import { type CardContent, contentId, emptyStats, type SkillCard, validateContent } from '../skills/card.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { seedCards } from '../skills/seeds.js';
import type { Rng } from '../util/rng.js';
import type { CardBlock } from './card-blocks.js';
import type { Transcript } from './experts.js';
import { cardFor } from './scripted-roles.js';
import { trainBpe, type TrainedBpe, writeWorldTokenizer } from './tokenizer.js';
import { randomChain } from './transcripts.js';
import type { World } from './world.js';

/** Token budget (in the bank's approximate tokens, characters / 4) of the cards in a world solver prompt. */
export const WORLD_CARD_BUDGET = 120;

/** The shipped model's shape: chosen by measured SFT speed on two cores (docs/world.md). */
export interface DemoModelSpec {
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  vocabSize: number;
  /** RoPE base: Qwen3's 10^6 leaves the low-frequency half of a 32-dim head nearly constant over a transcript, where the induction heads match content (./induction-init.ts). */
  ropeTheta: number;
  /** Mean QK-norm weight at init (see makeTinyCheckpoint's qkNormWeight): sharp attention, for copying names. */
  qkNormWeight: number;
}

export const DEMO_MODEL_SPEC: DemoModelSpec = { layers: 4, hidden: 128, heads: 4, kvHeads: 2, intermediate: 384, vocabSize: 2048, ropeTheta: 1_000_000, qkNormWeight: 2 };

/**
 * The shapes the warm start is grown to (scripts/warm-start.ts, docs/world.md "The card-literate warm start"),
 * named by their parameter count: each keeps head_dim 32 and two query heads per kv head, the seed's 1.44M
 * (6 layers, hidden 128) included as the baseline.
 */
export const WARM_START_SHAPES: Readonly<Record<string, GrowShape>> = {
  '1.4m': { layers: 6, hidden: 128, heads: 4, kvHeads: 2, intermediate: 384 },
  '3.9m': { layers: 8, hidden: 192, heads: 6, kvHeads: 3, intermediate: 576 },
  '6.8m': { layers: 8, hidden: 256, heads: 8, kvHeads: 4, intermediate: 768 },
  '22m': { layers: 12, hidden: 384, heads: 12, kvHeads: 6, intermediate: 1152 },
  '115m': { layers: 16, hidden: 768, heads: 24, kvHeads: 12, intermediate: 2304 },
};

/** A distilled-style card for a question shape and failure mode, as a bank card. */
function shapeCard(relations: Relation[], mode: 'stopped-early' | 'wrong-entity', startKind: string): SkillCard {
  const content: CardContent = validateContent(cardFor(relations, mode, startKind), 'world card');
  return { id: contentId('world', content), ...content, source: 'distilled', stats: emptyStats(), createdStep: 0, bankVersion: 0 };
}

/**
 * Up to `count` distinct cards for question shapes of the given (training) worlds, of the kinds the template
 * distiller writes: a random 2- or 3-hop chain's relations, two in three as a `decomposition` card
 * (stopped early), one in three as a `relations` card (wrong entity); with `oneHop`, one-hop chains, each a
 * `relations` card (a one-hop question has no entity to stop early at). They name no entity. The transcripts'
 * bank holds them; scripts/make-priming-cards.ts writes them as priming cards (docs/world.md).
 */
export function worldShapeCards(worlds: readonly World[], count: number, rng: Rng, opts: { oneHop?: boolean } = {}): SkillCard[] {
  const cards = new Map<string, SkillCard>();
  for (let i = 0; cards.size < count && i < count * 20; i++) {
    const world = worlds[i % worlds.length] as World;
    const path = randomChain(world, opts.oneHop ? 1 : 2 + (i % 2), rng);
    if (!path) continue;
    const mode = opts.oneHop || i % 3 === 2 ? 'wrong-entity' : 'stopped-early';
    const card = shapeCard(path.map((f) => f.relation), mode, world.entity((path[0] as (typeof path)[number]).subject).kind);
    cards.set(card.id, card);
  }
  return [...cards.values()];
}

/**
 * A bank for the transcripts' prompts: the seed cards plus template cards for question shapes of the
 * training worlds (the kind the template distiller writes), so that some prompts carry a decomposition card
 * whose advice the expert follows. Returns the function that renders a question's retrieved cards as the
 * solver role does, for a share `rate` of the questions (none for the rest), and a disposer.
 */
export async function transcriptCards(
  bankPath: string,
  worlds: readonly World[],
  rate: number,
  shapeCards: number,
  rng: Rng,
): Promise<{ cardsFor: (question: string, hops: number, rng: Rng) => Promise<CardBlock>; dispose: () => Promise<void> }> {
  rmSync(bankPath, { force: true });
  const bank = await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), seedCards: true, config: { renderTokenBudget: WORLD_CARD_BUDGET } });
  await bank.importCards(worldShapeCards(worlds, shapeCards, rng));
  return {
    cardsFor: async (question, _hops, r) => {
      if (r.next() >= rate) return { kind: 'none' };
      const rendered = bank.render(await bank.retrieve(question));
      return rendered.text.length > 0 ? { kind: 'retrieved', text: rendered.text } : { kind: 'none' };
    },
    dispose: () => bank.dispose(),
  };
}

/** Every text the model will read or write, for training the tokenizer: transcripts and all card text. */
export function tokenizerTexts(transcripts: readonly Transcript[]): string[] {
  const out = transcripts.flatMap((t) => t.messages.map((m) => m.content));
  for (const c of seedCards()) out.push([c.description, ...c.triggers, ...c.avoid, ...c.queries].join('\n'));
  return out;
}

export function trainWorldTokenizer(transcripts: readonly Transcript[], vocabSize: number): TrainedBpe {
  return trainBpe(tokenizerTexts(transcripts), { vocabSize });
}

/** A random-init Qwen3 folder with the world tokenizer (its chat specials take make-tiny's bos/eos ids). */
export function initDemoModel(dir: string, spec: DemoModelSpec, bpe: TrainedBpe, seed: number): MakeTinyResult {
  if (bpe.vocab.size !== spec.vocabSize) throw new Error(`demo model: the tokenizer has ${bpe.vocab.size} entries but the spec asks for ${spec.vocabSize}`);
  const made = makeTinyCheckpoint({
    out: dir, arch: 'qwen3', layers: spec.layers, hidden: spec.hidden, heads: spec.heads, kvHeads: spec.kvHeads,
    intermediate: spec.intermediate, vocab: spec.vocabSize, tie: true, seed, maxPositions: 2048, ropeTheta: spec.ropeTheta, qkNormWeight: spec.qkNormWeight,
  });
  writeWorldTokenizer(dir, bpe);
  return made;
}
