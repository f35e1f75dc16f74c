// The embedded synthetic corpus: deterministic, large enough, and every held-out question answerable
// along its supporting passages with exactly one answer in the fact graph.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  generateSyntheticCorpus, writeSyntheticCorpus, type SynthEntity, type SynthFact,
} from '../src/corpus/synthetic/index.js';

const r = generateSyntheticCorpus({ seed: 7 });
const byId = new Map(r.entities.map((e) => [e.id, e]));
const passage = new Map(r.corpus.map((row) => [row.id, row.contents]));
const ent = (id: string): SynthEntity => {
  const e = byId.get(id);
  if (!e) throw new Error(`no entity ${id}`);
  return e;
};
const text = (id: string): string => {
  const t = passage.get(id);
  if (t === undefined) throw new Error(`no passage ${id}`);
  return t;
};
const titleOf = (contents: string): string => /^"(.*)"\n/.exec(contents)?.[1] ?? '';
const norm = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N} ]/gu, ' ').replace(/\b(a|an|the)\b/g, ' ').replace(/\s+/g, ' ').trim();

describe('synthetic corpus', () => {
  it('is deterministic in the seed', () => {
    const again = generateSyntheticCorpus({ seed: 7 });
    expect(JSON.stringify([again.corpus, again.seeds, again.heldOut, again.stats]))
      .toBe(JSON.stringify([r.corpus, r.seeds, r.heldOut, r.stats]));
    const other = generateSyntheticCorpus({ seed: 8 });
    expect(other.corpus.map((x) => x.contents).join('\n')).not.toBe(r.corpus.map((x) => x.contents).join('\n'));
    expect(other.heldOut.map((q) => q.question)).not.toEqual(r.heldOut.map((q) => q.question));
  });

  it('has at least 2,000 passages in the wiki-18 format with unique ids and titles, 2-5 sentences each', () => {
    expect(r.corpus.length).toBe(2400);
    expect(r.stats.passages).toBe(2400);
    expect(new Set(r.corpus.map((x) => x.id)).size).toBe(r.corpus.length);
    const titles = r.corpus.map((x) => titleOf(x.contents));
    expect(titles.every((t) => t.length > 0)).toBe(true);
    expect(new Set(titles).size).toBe(titles.length);
    for (const row of r.corpus) {
      const body = row.contents.slice(row.contents.indexOf('\n') + 1);
      const sentences = body.split(/(?<=[.?!])\s+(?=[A-Z])/).length;
      expect(sentences, row.contents).toBeGreaterThanOrEqual(2);
      expect(sentences, row.contents).toBeLessThanOrEqual(5);
    }
    // Large towns get a second passage.
    expect(titles.filter((t) => t.startsWith('History of ')).length).toBeGreaterThan(20);
  });

  it('keeps every relation functional and states every fact in a passage of its subject naming the object', () => {
    const seen = new Set<string>();
    const bad: string[] = [];
    for (const f of r.facts) {
      const key = `${f.subject} ${f.relation}`;
      if (seen.has(key)) bad.push(`not functional: ${key}`);
      seen.add(key);
      if (!ent(f.subject).passageIds.includes(f.passageId)) bad.push(`not in its subject's passage: ${key}`);
      if (!text(f.passageId).includes(ent(f.object).name)) bad.push(`object not named: ${key}`);
    }
    expect(bad).toEqual([]);
    expect(r.facts.length).toBe(r.stats.facts);
  });

  it('stays consistent at other sizes and seeds', () => {
    for (const seed of [0, 1, 2]) {
      const small = generateSyntheticCorpus({ seed, passages: 300 });
      expect(small.corpus).toHaveLength(300);
      expect(new Set(small.corpus.map((x) => titleOf(x.contents))).size).toBe(300);
      for (const h of [1, 2, 3]) expect(small.heldOut.filter((q) => q.hops === h).length).toBeGreaterThan(10);
      for (const q of small.heldOut) {
        const last = small.corpus.find((x) => x.id === q.supporting_ids[q.hops - 1]);
        expect(last?.contents).toContain(q.golden_answers[0]);
        expect(q.question.toLowerCase()).not.toContain((q.golden_answers[0] as string).toLowerCase());
      }
    }
  });

  it('gives every held-out question a supporting chain that reaches the answer', () => {
    for (const q of r.heldOut) {
      expect(q.supporting_ids).toHaveLength(q.hops);
      expect(q.chain).toHaveLength(q.hops + 1);
      expect(q.relations).toHaveLength(q.hops);
      q.supporting_ids.forEach((pid, i) => {
        // Hop i is read in a passage of entity i, which names entity i+1 (the last one is the answer).
        expect(ent(q.chain[i] as string).passageIds).toContain(pid);
        expect(text(pid), q.question).toContain(ent(q.chain[i + 1] as string).name);
      });
      expect(text(q.supporting_ids[q.hops - 1] as string)).toContain(q.golden_answers[0]);
      expect(ent(q.chain[q.hops] as string).name).toBe(q.golden_answers[0]);
      const question = q.question.toLowerCase();
      for (const g of q.golden_answers) expect(question, q.question).not.toContain(g.toLowerCase());
      for (const id of q.chain.slice(1)) expect(question, q.question).not.toContain(ent(id).name.toLowerCase());
      expect(q.question).toContain(q.start.name);
      if (q.start.region) expect(q.question).toContain(q.start.region);
      expect(q.question.endsWith('?')).toBe(true);
      expect(q.id).toMatch(/^synthetic-\d{4}$/);
    }
  });

  it('has 1-, 2- and 3-hop questions in reasonable numbers, with distinct answers', () => {
    for (const h of [1, 2, 3] as const) expect(r.heldOut.filter((q) => q.hops === h).length).toBeGreaterThanOrEqual(100);
    const answers = r.heldOut.map((q) => norm(q.golden_answers[0] as string));
    expect(new Set(answers).size).toBe(answers.length);
    expect(r.stats.heldOut.total).toBe(r.heldOut.length);
  });

  it('makes every held-out answer unique: a brute-force scan of the graph finds exactly one', () => {
    const regionName = (e: SynthEntity): string | undefined => {
      const f = r.facts.find((x) => x.subject === e.id && x.relation === 'in_region');
      return f ? ent(f.object).name : undefined;
    };
    for (const q of r.heldOut) {
      const s = q.start;
      const starts = r.entities.filter((e) => e.name === s.name && e.kind === s.kind
        && (s.type === undefined || e.type === s.type) && (s.region === undefined || regionName(e) === s.region));
      expect(starts.map((e) => e.id), q.question).toEqual([q.chain[0]]);
      let current = new Set(starts.map((e) => e.id));
      for (const rel of q.relations) {
        const next = new Set<string>();
        for (const f of r.facts as SynthFact[]) if (f.relation === rel && current.has(f.subject)) next.add(f.object);
        current = next;
      }
      expect([...current], q.question).toEqual([q.chain[q.hops]]);
    }
  });

  it('gives the proposer answer seeds of every hop count, found in the corpus and disjoint from held-out answers', () => {
    expect(r.seeds.length).toBeGreaterThan(500);
    for (const h of [1, 2, 3] as const) expect(r.seeds.filter((s) => s.hops === h).length).toBeGreaterThanOrEqual(100);
    const all = r.corpus.map((x) => x.contents).join('\n');
    const held = new Set(r.heldOut.flatMap((q) => q.golden_answers.map(norm)));
    for (const s of r.seeds) {
      expect(all.includes(s.answer), s.answer).toBe(true);
      expect(held.has(norm(s.answer)), s.answer).toBe(false);
      expect(ent(s.entityId).name).toBe(s.answer);
      expect(ent(s.entityId).kind).toBe(s.kind);
      // A seed of n hops has at least one incoming fact: the proposer can start its backward search there.
      expect(r.facts.some((f) => f.object === s.entityId)).toBe(true);
    }
    expect(new Set(r.seeds.map((s) => s.answer)).size).toBe(r.seeds.length);
  });

  it('shares names only between deliberate namesakes, which differ in their disambiguator', () => {
    const groups = new Map<string, SynthEntity[]>();
    for (const e of r.entities) groups.set(e.name, [...(groups.get(e.name) ?? []), e]);
    const regionOf = (e: SynthEntity) => r.facts.find((f) => f.subject === e.id && f.relation === 'in_region')?.object;
    let namesakes = 0;
    for (const [name, g] of groups) {
      if (g.length === 1) continue;
      namesakes++;
      expect(g.every((e) => e.namesake), name).toBe(true);
      const key = (e: SynthEntity) => (e.kind === 'person' ? `person:${e.type}` : e.kind === 'town' ? `town:${regionOf(e)}` : e.kind);
      expect(new Set(g.map(key)).size, name).toBe(g.length);
      const kinds = new Set(g.map((e) => (e.kind === 'novel' || e.kind === 'painting' ? 'work' : e.kind)));
      expect(kinds.size, name).toBe(1);
    }
    expect(namesakes).toBeGreaterThanOrEqual(20);
    expect(r.stats.namesakeGroups).toBe(namesakes);
    // Aliases appear in their entity's passage, are unique, and are golden answers.
    const aliased = r.entities.filter((e) => e.alias);
    expect(aliased.length).toBeGreaterThan(30);
    for (const e of aliased) expect(e.passageIds.some((p) => text(p).includes(e.alias as string)), e.name).toBe(true);
    expect(new Set(aliased.map((e) => e.alias)).size).toBe(aliased.length);
    for (const q of r.heldOut) {
      const alias = ent(q.chain[q.hops] as string).alias;
      if (alias) expect(q.golden_answers).toContain(alias);
    }
    expect(r.heldOut.some((q) => q.golden_answers.length > 1)).toBe(true);
  });

  it('writes the four files atomically and rejects bad options', () => {
    const dir = mkdtempSync(join(tmpdir(), 'synth-corpus-'));
    try {
      const out = writeSyntheticCorpus(dir, { seed: 3, passages: 400 });
      const lines = (f: string) => readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const corpus = lines('corpus.jsonl');
      expect(corpus).toHaveLength(400);
      expect(Object.keys(corpus[0] ?? {}).sort()).toEqual(['contents', 'id']);
      expect(lines('seeds.jsonl')).toHaveLength(out.seeds.length);
      const held = lines('heldout.jsonl');
      expect(held).toHaveLength(out.heldOut.length);
      expect(held[0]).toMatchObject({ id: expect.any(String), question: expect.any(String), golden_answers: expect.any(Array) });
      expect(JSON.parse(readFileSync(join(dir, 'stats.json'), 'utf8'))).toEqual(out.stats);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => generateSyntheticCorpus({ seed: 1, passages: 100 })).toThrow(/passages/);
    expect(() => generateSyntheticCorpus({ seed: 1.5 })).toThrow(/seed/);
  });
});
