// Memory priming beyond the seed cards (docs/method.md, "The skill bank"; docs/world.md, "Memory priming in
// the world"): a new bank takes the priming cards after the seed cards, marked seed with fresh stats; the
// run finds a model folder's own priming-cards.jsonl or the file --priming-cards names; the world's shape
// cards name no entity and are the same for the same seed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPrimingCards, MODEL_PRIMING_FILE, primedBankOptions } from '../src/selfplay/priming.js';
import { cardsToJsonl, readBankFile } from '../src/skills/bank-file.js';
import { SkillBank } from '../src/skills/bank.js';
import type { SkillCard } from '../src/skills/card.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { seedCards } from '../src/skills/seeds.js';
import { Rng } from '../src/util/rng.js';
import { worldShapeCards } from '../src/world/demo-model.js';
import { DEMO_WORLD, FRESH_WORLD, trainingWorldSeeds, World } from '../src/world/world.js';
import { tempDir } from './skills-helpers.js';

const trainingWorlds = (n: number): World[] => trainingWorldSeeds(n).map((seed) => new World({ seed, passages: DEMO_WORLD.passages }));

describe('memory priming', () => {
  it('starts a new bank from the seed cards and then the priming cards, as seed cards with fresh stats', async () => {
    const shapes = worldShapeCards(trainingWorlds(2), 6, new Rng(3));
    expect(shapes).toHaveLength(6);
    const used = shapes.map((c) => ({ ...c, stats: { retrieved: 5, helpful: 1, hurt: 3 }, createdStep: 9, bankVersion: 4 }));
    const path = join(tempDir(), 'bank.json');
    const bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), primingCards: used });
    const seeds = seedCards();
    expect(bank.cards.map((c) => c.id)).toEqual([...seeds.map((c) => c.id), ...shapes.map((c) => c.id)]);
    for (const c of bank.cards.slice(seeds.length)) {
      expect(c.source).toBe('seed');
      expect(c.stats).toEqual({ retrieved: 0, helpful: 0, hurt: 0 });
      expect([c.createdStep, c.bankVersion]).toEqual([0, 0]);
    }
    expect(readBankFile(path).cards).toHaveLength(seeds.length + 6);
    await bank.dispose();
    // An existing bank is opened as it is: priming applies to a new bank only.
    const again = await SkillBank.open(path, { embedder: new LexicalEmbedder(), primingCards: worldShapeCards(trainingWorlds(2), 9, new Rng(4)) });
    expect(again.cards).toHaveLength(seeds.length + 6);
    await again.dispose();
    // Without the seed cards the priming cards stand alone; an id twice is refused.
    const alone = await SkillBank.open(join(tempDir(), 'alone.json'), { embedder: new LexicalEmbedder(), seedCards: false, primingCards: shapes });
    expect(alone.cards.map((c) => c.id)).toEqual(shapes.map((c) => c.id));
    await alone.dispose();
    await expect(SkillBank.open(join(tempDir(), 'twice.json'), { embedder: new LexicalEmbedder(), primingCards: [shapes[0] as SkillCard, shapes[0] as SkillCard] })).rejects.toThrow(
      `memory priming: card id ${shapes[0]?.id} appears twice`,
    );
  });

  it("reads --priming-cards, else the model folder's priming-cards.jsonl, else none, and says which", () => {
    const shapes = worldShapeCards(trainingWorlds(2), 4, new Rng(5));
    const modelDir = tempDir();
    const lines: string[] = [];
    const log = (l: string): void => void lines.push(l);
    expect(loadPrimingCards(undefined, modelDir, log)).toEqual([]);
    expect(lines.pop()).toBe('memory priming: the seed cards');
    writeFileSync(join(modelDir, MODEL_PRIMING_FILE), cardsToJsonl(shapes));
    expect(loadPrimingCards(undefined, modelDir, log).map((c) => c.id)).toEqual(shapes.map((c) => c.id));
    expect(lines.pop()).toBe(`memory priming: the seed cards and 4 cards from ${join(modelDir, MODEL_PRIMING_FILE)} (the model folder's own)`);
    const other = join(tempDir(), 'other.jsonl');
    writeFileSync(other, cardsToJsonl(shapes.slice(0, 2)));
    expect(loadPrimingCards(other, modelDir, log)).toHaveLength(2);
    expect(lines.pop()).toBe(`memory priming: the seed cards and 2 cards from ${other}`);
    expect(() => loadPrimingCards(join(modelDir, 'missing.jsonl'), modelDir, log)).toThrow(`--priming-cards ${join(modelDir, 'missing.jsonl')}: no such file`);
    // The run's bank options: --no-priming reads no file and starts empty; --priming takes the folder's cards.
    expect(primedBankOptions({ priming: false, seedCards: true }, modelDir, log)).toEqual({ seedCards: false, primingCards: [] });
    expect(primedBankOptions({ priming: true, seedCards: true }, modelDir, log).primingCards.map((c) => c.id)).toEqual(shapes.map((c) => c.id));
    // --no-seed-cards: the priming cards alone, and the log says so.
    const alone = primedBankOptions({ priming: true, seedCards: false }, modelDir, log);
    expect(alone.seedCards).toBe(false);
    expect(alone.primingCards.map((c) => c.id)).toEqual(shapes.map((c) => c.id));
    expect(lines.pop()).toBe(`memory priming: 4 cards from ${join(modelDir, MODEL_PRIMING_FILE)} (the model folder's own)`);
    const bad = join(tempDir(), 'bad.jsonl');
    writeFileSync(bad, `${JSON.stringify(shapes[0])}\n{"id": 3}\n`);
    expect(() => loadPrimingCards(bad, modelDir, log)).toThrow(`${bad}:2`);
  });

  it('writes world shape cards that name no entity of any world, the same for the same seed', () => {
    const worlds = trainingWorlds(4);
    const cards = worldShapeCards(worlds, 30, new Rng(7));
    expect(cards).toHaveLength(30);
    expect(new Set(cards.map((c) => c.id)).size).toBe(30);
    expect(worldShapeCards(worlds, 30, new Rng(7))).toEqual(cards);
    expect(new Set(cards.map((c) => c.category))).toEqual(new Set(['decomposition', 'relations']));
    // One-hop shapes: relations cards of one link ("For the <noun> of [kind], …"), a finite set.
    const oneHop = worldShapeCards(worlds, 500, new Rng(7), { oneHop: true });
    expect(oneHop.length).toBeGreaterThan(10);
    expect(oneHop.length).toBeLessThan(500);
    for (const c of oneHop) {
      expect(c.category).toBe('relations');
      expect(c.description).toMatch(/^For the [a-z -]+ of \[[a-z ]+\], read each link/);
      expect(c.description.match(/ of /g)).toHaveLength(1);
    }
    const names = [...worlds, new World(DEMO_WORLD), new World(FRESH_WORLD)].flatMap((w) => w.synth.entities.map((e) => e.name.toLowerCase()));
    for (const c of [...cards, ...oneHop]) {
      const text = [c.description, ...c.triggers, ...c.avoid, ...c.queries].join(' ').toLowerCase();
      expect(names.filter((n) => text.includes(n))).toEqual([]);
    }
  });
});
