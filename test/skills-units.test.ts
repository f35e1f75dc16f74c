// Unit checks: the lexical embedder and its calibrated threshold, distiller-output parsing, card
// validation, the schedule and the config.
import { describe, expect, it } from 'vitest';
import { cardEmbeddingText, validateCard } from '../src/skills/card.js';
import { DEDUP_THRESHOLDS, resolveConfig, DEFAULT_SKILL_BANK_CONFIG } from '../src/skills/config.js';
import { consolidationDue, firstJsonObject, parseDistilledCard } from '../src/skills/consolidate.js';
import { VectorIndex, dot, l2normalize } from '../src/skills/embedder.js';
import { topKScored } from '../src/skills/top-k.js';
import { Rng } from '../src/util/rng.js';
import { LexicalEmbedder, tokenize } from '../src/skills/lexical.js';
import { seedCards } from '../src/skills/seeds.js';
import { CARD_A, CARD_A_REWORDED, json } from './skills-helpers.js';

describe('lexical embedder', () => {
  const e = new LexicalEmbedder();

  it('is deterministic, unit-norm, accent- and case-insensitive', async () => {
    const [a, b, c] = await e.embed(['Café Müller, directed by X', 'cafe muller directed by x', 'something else entirely'], 'query');
    expect(Array.from(a!)).toEqual(Array.from((await new LexicalEmbedder().embed(['Café Müller, directed by X'], 'passage'))[0]!));
    expect(Math.abs(Math.hypot(...a!) - 1)).toBeLessThan(1e-6);
    expect(dot(a!, b!)).toBeCloseTo(1, 5);
    expect(dot(a!, c!)).toBeLessThan(0.3);
    expect(tokenize("Don't STOP—Ünïcode 42")).toEqual(['don', 't', 'stop', 'unicode', '42']);
    expect(Array.from((await e.embed([''], 'query'))[0]!).every((x) => x === 0)).toBe(true);
  });

  it('calibration: the 0.8 threshold separates light rewordings from distinct seed cards', async () => {
    expect(DEDUP_THRESHOLDS.lexical).toBe(0.8);
    const seeds = seedCards();
    const v = await e.embed(seeds.map(cardEmbeddingText), 'query');
    let max = -1;
    for (let i = 0; i < v.length; i++) for (let j = i + 1; j < v.length; j++) max = Math.max(max, dot(v[i]!, v[j]!));
    expect(max).toBeLessThan(0.5); // distinct strategies sit far below the threshold
    const [a, r] = await e.embed([cardEmbeddingText(CARD_A), cardEmbeddingText(CARD_A_REWORDED)], 'query');
    expect(dot(a!, r!)).toBeGreaterThan(0.9);
    const s0 = seeds[0]!;
    const [x, y] = await e.embed([cardEmbeddingText(s0), cardEmbeddingText({ ...s0, triggers: s0.triggers.slice(0, 4) })], 'query');
    expect(dot(x!, y!)).toBeGreaterThan(DEDUP_THRESHOLDS.lexical);
  });
});

describe('distiller output parsing', () => {
  it('accepts the card inside prose, fences and think blocks, coercing only the unambiguous', () => {
    const p = parseDistilledCard(`<think>{not this}</think>Sure.\n\`\`\`json\n${json(CARD_A)}\n\`\`\`\nDone {}`);
    expect(p).toEqual({ ok: true, content: CARD_A });
    const loose = parseDistilledCard(
      JSON.stringify({ category: 'Dates & Numbers', description: '  Check   both dates explicitly before comparing.  ', triggers: 'older; younger', avoid: 'guessing', query_templates: ['[a] born'] }),
    );
    expect(loose).toEqual({
      ok: true,
      content: { category: 'dates-numbers', description: 'Check both dates explicitly before comparing.', triggers: ['older', 'younger'], avoid: ['guessing'], queries: ['[a] born'] },
    });
    const withBraces = parseDistilledCard(`{"category":"x","description":"Use {curly} text in a description safely.","triggers":["a}b"],"avoid":[],"queries":[]}`);
    expect(withBraces.ok).toBe(true);
  });

  it('rejects whole cards that are missing fields, truncated or of the wrong shape', () => {
    expect(parseDistilledCard('no json here')).toEqual({ ok: false, error: 'no complete JSON object in the reply' });
    expect(parseDistilledCard(json(CARD_A).slice(0, 80))).toEqual({ ok: false, error: 'no complete JSON object in the reply' });
    const noTrig = parseDistilledCard(JSON.stringify({ ...CARD_A, triggers: [] }));
    expect(noTrig).toEqual({ ok: false, error: 'triggers must have 1–16 entries, got 0' });
    const shortDesc = parseDistilledCard(JSON.stringify({ ...CARD_A, description: 'short' }));
    expect(shortDesc.ok).toBe(false);
    const numbers = parseDistilledCard(JSON.stringify({ ...CARD_A, triggers: [1, 2] }));
    expect(numbers).toEqual({ ok: false, error: 'triggers[0] must be a non-empty string of at most 300 characters; triggers[1] must be a non-empty string of at most 300 characters' });
    expect(firstJsonObject('[1,2] {"a":1}')).toEqual({ a: 1 });
  });
});

describe('card validation', () => {
  it('names every bad field', () => {
    expect(() => validateCard({ id: 'bad id!', source: 'seed' }, 'f.jsonl:3')).toThrow(
      /^f\.jsonl:3 \(card bad id!\): id must match .*; category must be a lowercase slug .*; description must be a string .*; triggers must be an array of strings; avoid must be an array of strings; queries must be an array of strings; stats must be an object .*; createdStep must be a non-negative integer, got undefined; bankVersion must be a non-negative integer, got undefined$/,
    );
    const ok = { ...seedCards()[0]! };
    expect(validateCard(ok, 'x')).toEqual(ok);
  });
});

describe('schedule and config', () => {
  it('consolidates every 10 steps with at least 20 pending', () => {
    const cfg = resolveConfig();
    expect(cfg).toEqual({ ...DEFAULT_SKILL_BANK_CONFIG });
    expect([consolidationDue(10, 20, cfg), consolidationDue(10, 19, cfg), consolidationDue(15, 30, cfg), consolidationDue(0, 30, cfg), consolidationDue(30, 300, cfg)]).toEqual([
      true,
      false,
      false,
      false,
      true,
    ]);
    expect(cfg).toMatchObject({ topK: 3, queueCapacity: 300, consolidateEvery: 10, minPending: 20, maxSelected: 30, evictMinRetrieved: 3, maxCards: 800 });
    expect(() => resolveConfig({ topK: 0 })).toThrow('topK must be ≥ 1');
    expect(() => resolveConfig({ maxCards: 1.5 })).toThrow('maxCards must be a non-negative integer');
  });
});

describe('vector index and top-k', () => {
  it('gives the same cosines as plain dot products, dense and sparse', async () => {
    const rng = new Rng(3);
    const dense = Array.from({ length: 7 }, () => l2normalize(Float32Array.from({ length: 13 }, () => rng.normal())));
    const sparse = await new LexicalEmbedder({ dim: 256 }).embed(['river country', 'born in prague', 'the film', 'x'], 'query');
    for (const vs of [dense, sparse]) {
      const q = vs[1]!;
      const got = new VectorIndex(vs).scores(q);
      vs.forEach((v, i) => expect(got[i]).toBeCloseTo(dot(v, q), 6));
    }
  });

  it('orders by score, then id, and returns at most k', () => {
    const card = (id: string) => ({ ...seedCards()[0]!, id });
    const cards = ['e', 'b', 'd', 'a', 'c'].map(card);
    const scores = Float32Array.from([0.5, 0.9, 0.5, 0.5, 0.1]);
    expect(topKScored(cards, scores, 3).map((r) => r.card.id)).toEqual(['b', 'a', 'd']);
    expect(topKScored(cards, scores, 10).map((r) => r.card.id)).toEqual(['b', 'a', 'd', 'e', 'c']);
    expect(topKScored(cards, scores, 1).map((r) => [r.card.id, r.score])).toEqual([['b', scores[1]]]);
  });
});
