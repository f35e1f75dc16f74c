// The card-literate warm start's data (src/world/card-blocks.ts, src/world/transcripts.ts): the bank's cards are
// the run's distiller's kind and name no entity; each kind of block is what it says (retrieved = the run's own
// top 3 rendered as the solver role renders it, random, other-shape with no fitting card and a multi-hop
// decomposition card for a one-hop question, none); the transcripts carry the block verbatim in the solver
// prompt; and the proposer's multi-hop questions kept with proposerNeedsHops are not answered from their first
// search, while a one-hop wording for a two-hop seed is.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SynthFact } from '../src/corpus/synthetic/index.js';
import { SkillBank } from '../src/skills/bank.js';
import { validateContent } from '../src/skills/card.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { Rng } from '../src/util/rng.js';
import { cardBlocks, type CardBlockKind, distillerShapeCards, parseBlockSizeShares, parseCardBlockMix } from '../src/world/card-blocks.js';
import { DEFAULT_EXPERT_RATES, expertPropose } from '../src/world/experts.js';
import { promptCardBlock, promptQuestion, turnWindows } from '../src/world/exercises.js';
import { fittingCards, WorldRagReader } from '../src/world/scripted-roles.js';
import { answeredFromFirstSearch, buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS, randomChain } from '../src/world/transcripts.js';
import { trainingWorldSeeds, World } from '../src/world/world.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-card-blocks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const BUDGET = 250;
let worlds: World[];
beforeAll(() => {
  worlds = trainingWorldSeeds(2).map((seed) => new World({ seed, passages: 300 }));
});

function only(kind: CardBlockKind): Record<CardBlockKind, number> {
  return { none: 0, retrieved: 0, random: 0, 'other-shape': 0, [kind]: 1 };
}

function questionsOf(world: World, n: number, hops: number, rng: Rng): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n && i < n * 10; i++) {
    const path = randomChain(world, hops, rng);
    if (path) out.push(world.phrase(path, rng));
  }
  return out;
}

describe('distillerShapeCards', () => {
  it("writes valid cards of the distiller's three kinds that name no entity of the worlds", () => {
    const cards = distillerShapeCards(worlds, 120, new Rng(3));
    expect(cards.length).toBeGreaterThan(100);
    for (const c of cards) validateContent(c, c.id);
    expect(new Set(cards.map((c) => c.category))).toEqual(new Set(['decomposition', 'relations', 'search-strategy']));
    const names = worlds.flatMap((w) => w.synth.entities.map((e) => e.name)).filter((n) => n.length > 5);
    const text = cards.map((c) => [c.description, ...c.triggers, ...c.queries].join(' ')).join('\n');
    expect(names.filter((n) => text.includes(n))).toEqual([]);
  });
});

describe('cardBlocks', () => {
  it('retrieved: the bank\'s top 3 rendered exactly as a run renders them', async () => {
    const cards = distillerShapeCards(worlds, 200, new Rng(4));
    const blocks = await cardBlocks(join(root, 'b1.json'), cards, BUDGET, only('retrieved'), [0, 0, 1]);
    const ref = await SkillBank.open(join(root, 'ref.json'), { embedder: new LexicalEmbedder(), seedCards: false, config: { renderTokenBudget: BUDGET, topK: 3 } });
    await ref.importCards(cards);
    const rng = new Rng(5);
    let fits = 0;
    for (const q of questionsOf(worlds[0] as World, 30, 2, new Rng(6))) {
      const b = await blocks.blockFor(q, 2, rng);
      expect(b.kind).toBe('retrieved');
      expect(b.text).toBe(ref.render(await ref.retrieve(q)).text);
      if (fittingCards(q, b.text ?? '').size > 0) fits++;
    }
    // The bank holds cards of many of the worlds' question shapes: some retrieved blocks fit.
    expect(fits).toBeGreaterThan(3);
    await blocks.dispose();
    await ref.dispose();
  });

  it('random: three distinct cards of the bank; none: no text', async () => {
    const cards = distillerShapeCards(worlds, 60, new Rng(7));
    const random = await cardBlocks(join(root, 'b2.json'), cards, 10_000, only('random'), [0, 0, 1]);
    const rng = new Rng(8);
    const q = questionsOf(worlds[1] as World, 1, 2, new Rng(9))[0] as string;
    const a = await random.blockFor(q, 2, rng);
    const b = await random.blockFor(q, 2, rng);
    expect((a.text?.match(/^\d+\. \[/gm) ?? []).length).toBe(3);
    expect(a.text).not.toBe(b.text);
    await random.dispose();
    const none = await cardBlocks(join(root, 'b3.json'), cards, BUDGET, only('none'));
    expect(await none.blockFor(q, 2, rng)).toEqual({ kind: 'none' });
    await none.dispose();
  });

  it("other-shape: no card fits the question; a one-hop question's block has a multi-hop decomposition card", async () => {
    const cards = distillerShapeCards(worlds, 300, new Rng(10));
    const blocks = await cardBlocks(join(root, 'b4.json'), cards, BUDGET, only('other-shape'));
    const rng = new Rng(11);
    for (const hops of [1, 2, 3]) {
      for (const q of questionsOf(worlds[0] as World, 15, hops, new Rng(12 + hops))) {
        const b = await blocks.blockFor(q, hops, rng);
        expect(fittingCards(q, b.text ?? ''), q).toEqual(new Set());
        if (hops === 1) expect(b.text).toMatch(/\[decomposition\] A question asking for .* has [2-9] links/);
      }
    }
    await blocks.dispose();
  });

  it('block sizes: blocks of 1, 2 and 3 cards by their shares, a retrieved block the top of the ranking, a lone other-shape card of a one-hop question a decomposition card', async () => {
    const cards = distillerShapeCards(worlds, 300, new Rng(30));
    const countCards = (text: string | undefined): number => (text?.match(/^\d+\. \[/gm) ?? []).length;
    const ref = await SkillBank.open(join(root, 'ref-sizes.json'), { embedder: new LexicalEmbedder(), seedCards: false, config: { renderTokenBudget: 10_000, topK: 3 } });
    await ref.importCards(cards);
    const mixed = await cardBlocks(join(root, 'b6.json'), cards, 10_000, only('retrieved'), [0.25, 0.25, 0.5]);
    const rng = new Rng(31);
    const sizes = [0, 0, 0, 0];
    for (const q of questionsOf(worlds[0] as World, 200, 2, new Rng(32))) {
      const b = await mixed.blockFor(q, 2, rng);
      const n = countCards(b.text);
      sizes[n] = (sizes[n] ?? 0) + 1;
      // The first n of the ranking, rendered as a run renders them.
      expect(b.text).toBe(ref.render((await ref.retrieve(q)).slice(0, n)).text);
    }
    await mixed.dispose();
    await ref.dispose();
    expect(sizes[0]).toBe(0);
    // 200 draws at 0.25 / 0.25 / 0.5: each share within ±0.1.
    expect(Math.abs((sizes[1] as number) / 200 - 0.25)).toBeLessThan(0.1);
    expect(Math.abs((sizes[2] as number) / 200 - 0.25)).toBeLessThan(0.1);
    expect(Math.abs((sizes[3] as number) / 200 - 0.5)).toBeLessThan(0.1);
    const lone = await cardBlocks(join(root, 'b7.json'), cards, BUDGET, only('other-shape'), [1, 0, 0]);
    for (const q of questionsOf(worlds[0] as World, 15, 1, new Rng(33))) {
      const b = await lone.blockFor(q, 1, rng);
      expect(countCards(b.text), q).toBe(1);
      expect(b.text).toMatch(/\[decomposition\] A question asking for .* has [2-9] links/);
    }
    await lone.dispose();
    expect(parseBlockSizeShares('0.25,0.25,0.5', '--block-sizes')).toEqual([0.25, 0.25, 0.5]);
    expect(() => parseBlockSizeShares('1,1', '--block-sizes')).toThrow(/--block-sizes must be 3 non-negative shares of blocks of 1, 2 and 3 cards/);
    expect(() => parseBlockSizeShares('0,0,0', '--block-sizes')).toThrow(/--block-sizes/);
  });

  it('parseCardBlockMix names the flag and the kinds when the mix is wrong', () => {
    expect(parseCardBlockMix('0.2,0.4,0.2,0.2', '--card-mix')).toEqual({ none: 0.2, retrieved: 0.4, random: 0.2, 'other-shape': 0.2 });
    expect(() => parseCardBlockMix('0.5,0.5', '--card-mix')).toThrow(/--card-mix must be 4 non-negative shares of none, retrieved, random, other-shape/);
    expect(() => parseCardBlockMix('0,0,0,0', '--card-mix')).toThrow(/--card-mix/);
  });
});

describe('buildTranscripts with card blocks and proposerNeedsHops', () => {
  it('each solver prompt carries its block verbatim, counted by kind and by what the expert did', async () => {
    const cards = distillerShapeCards(worlds, 200, new Rng(20));
    const blocks = await cardBlocks(join(root, 'b5.json'), cards, BUDGET, parseCardBlockMix('1,1,1,1', 'mix'));
    const seen: string[] = [];
    const set = await buildTranscripts({
      ...DEFAULT_TRANSCRIPT_OPTIONS,
      worldSeeds: trainingWorldSeeds(1),
      solverPerWorld: 40,
      proposerPerWorld: 0,
      rates: DEFAULT_EXPERT_RATES,
      cardsFor: async (q, hops, rng) => {
        const b = await blocks.blockFor(q, hops, rng);
        seen.push(b.text ?? '');
        return b;
      },
    });
    await blocks.dispose();
    const solvers = set.transcripts.filter((t) => t.meta.role === 'solver');
    expect(solvers.length).toBe(40);
    for (const t of solvers) {
      expect(t.meta.cardBlock).toBeDefined();
      const prompt = t.messages[0]?.content ?? '';
      if (t.meta.cardBlock === 'none') expect(prompt).not.toContain('Strategies from past');
      else expect(seen.filter((s) => s.length > 0).some((s) => prompt.startsWith(`${s.trim()}\n\n`))).toBe(true);
    }
    expect(Object.values(set.stats.byCardBlock).reduce((a, b) => a + b, 0)).toBe(40);
    // Copy windows: with keepCards an episode's windows open with its block, then its question; without, the question alone.
    for (const t of solvers.slice(0, 10)) {
      const block = promptCardBlock(t.messages[0]?.content ?? '');
      const question = `Question: ${promptQuestion(t.messages[0]?.content ?? '')}`;
      expect(block.length > 0).toBe(t.meta.cardBlock !== 'none' && (t.messages[0]?.content ?? '').startsWith('Strategies'));
      for (const w of turnWindows(t, true)) expect(w.messages[0]?.content).toBe(block.length > 0 ? `${block}\n\n${question}` : question);
      for (const w of turnWindows(t)) expect(w.messages[0]?.content).toBe(question);
    }
  });

  it("a one-hop wording of a two-hop seed is answered from the first search; the kept multi-hop questions are not", async () => {
    const world = worlds[0] as World;
    const searcher = await world.searcher();
    const reader = new WorldRagReader(world);
    const rng = new Rng(30);
    let checked = 0;
    for (let i = 0; i < 200 && checked < 5; i++) {
      const path = randomChain(world, 2, rng);
      if (!path) continue;
      const target = (path[1] as SynthFact).object;
      const t = await expertPropose(world, searcher, target, 2, { ...DEFAULT_EXPERT_RATES, oneSearchRate: 0, shortFormRate: 0 }, rng, 'canonical');
      if (!t?.meta.correct) continue;
      // The question about the answer's neighbour, from the fact the first search found ("the X of Y" = target).
      const first = t.messages.find((m) => m.role === 'tool')?.content ?? '';
      const neighbour = world.factsInto(target).find((f) => first.includes(`"${world.passage(f.passageId)?.title ?? '\u0000'}"`));
      if (!neighbour) continue;
      const oneHop = { ...t, meta: { ...t.meta, final: world.phrase([neighbour], 'canonical') } };
      expect(await answeredFromFirstSearch(reader, world, oneHop, target)).toBe(true);
      // A two-hop question is answered from the first search too when that search happened to return the
      // start entity's passage as well (the check asks what the searches returned, not only the wording).
      if (await answeredFromFirstSearch(reader, world, t, target)) continue;
      checked++;
    }
    expect(checked).toBe(5);
    const set = await buildTranscripts({ ...DEFAULT_TRANSCRIPT_OPTIONS, worldSeeds: trainingWorldSeeds(2), solverPerWorld: 0, proposerPerWorld: 30, rates: DEFAULT_EXPERT_RATES, proposerStyle: 'canonical', proposerNeedsHops: true, proposerHopMix: [0, 1, 0] });
    let kept = 0;
    for (const t of set.transcripts.filter((x) => x.meta.role === 'proposer')) {
      const w = worlds.find((x) => x.options.seed === t.meta.world) as World;
      const target = w.synth.entities.find((e) => e.name === t.meta.answer)?.id as string;
      expect(await answeredFromFirstSearch(new WorldRagReader(w), w, t, target)).toBe(false);
      kept++;
    }
    expect(kept).toBe(60);
  });
});
