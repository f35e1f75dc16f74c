// The embedded corpus: a synthetic encyclopedia of fictional people, places, organizations and works,
// deterministic from a seed. It exists so that `sesa-train` runs offline with a corpus whose facts no model
// has memorized, and whose questions have checkable, unique answers:
// - every relation is functional from its subject (one birthplace, one author, ...), so a question that
//   names its start entity unambiguously and walks relations forward has exactly one answer;
// - every fact is stated in its subject's passage with the object's name, so an n-hop question is answered
//   by n retrievals along `supporting_ids`;
// - namesakes (two people, towns or works with the same name, told apart by occupation, province or kind)
//   and near-names ("Upper X"/"Lower X") make retrieval and disambiguation matter, as in real multi-hop QA.
// Outputs are the corpus rows (wiki-18 format), answer seeds with hop counts for the proposer (docs/method.md, "One step"),
// and held-out FlashRAG QA pairs whose answers are disjoint from the seeds'.
//
// This folder: ./types.ts (the output's shapes), ./graph.ts (the world builder: entity graph and mentions),
// ./graph-build.ts (the phases that fill the graph), ./passages.ts (the passages' text), ./heldout-seeds.ts
// (held-out questions and answer seeds), ./english.ts (small text helpers); this file runs them in order and
// writes the files.
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../../util/atomic.js';
import { shuffle } from '../vocab.js';
import { WorldBuilder } from './graph.js';
import { buildEntityGraph, plan } from './graph-build.js';
import { makeHeldOut, makeSeeds } from './heldout-seeds.js';
import { type Passage, writePassages } from './passages.js';
import type { SynthEntity, SynthFact, SyntheticCorpus, SyntheticCorpusOptions } from './types.js';

export { RELATIONS, type Relation } from '../questions.js';
export { goldenAnswers } from './heldout-seeds.js';
export type {
  CorpusRow, EntityKind, HeldOutQuestion, StartRef, SynthAnswerSeed, SynthEntity, SynthFact, SyntheticCorpus,
  SyntheticCorpusOptions, SyntheticCorpusStats,
} from './types.js';

export function generateSyntheticCorpus(opts: SyntheticCorpusOptions): SyntheticCorpus {
  const n = opts.passages ?? 2400;
  if (!Number.isInteger(n) || n < 300) throw new Error(`synthetic corpus: passages must be an integer ≥ 300, got ${n}`);
  if (!Number.isInteger(opts.seed)) throw new Error(`synthetic corpus: seed must be an integer, got ${opts.seed}`);
  const perHop = opts.heldOutPerHop ?? Math.round(n / 16);
  const c = plan(n);
  const w = new WorldBuilder(opts.seed);
  buildEntityGraph(w, c);

  // Shuffle so that ids say nothing about kinds, then number the passages in that order.
  const passages = shuffle(w.rng, writePassages(w, c.histories));
  const ids = new Map<Passage, string>();
  const passageOf = new Map<SynthFact, Passage>();
  const titles = new Set<string>();
  passages.forEach((p, i) => {
    const id = String(i);
    ids.set(p, id);
    p.entity.passageIds.push(id);
    if (titles.has(p.title)) throw new Error(`duplicate title ${p.title}`);
    titles.add(p.title);
    for (const s of p.sentences) {
      for (const f of s.facts) {
        f.passageId = id;
        passageOf.set(f, p);
      }
    }
  });
  for (const f of w.facts) if (!f.passageId) throw new Error(`fact ${f.subject} ${f.relation} is stated nowhere`);
  // An entity's title is that of its main passage (histories are secondary and titled "History of ...").
  for (const p of passages) if (!p.title.startsWith('History of ')) p.entity.title = p.title;

  const corpus = passages.map((p) => ({
    id: ids.get(p) as string,
    contents: `"${p.title}"\n${p.sentences.map((s) => s.text).join(' ')}`,
  }));
  const heldOut = makeHeldOut(w, perHop, (p) => ids.get(p) as string, passageOf);
  const seeds = makeSeeds(w, heldOut);

  const byHops = (xs: { hops: number }[]) => ({
    '1': xs.filter((x) => x.hops === 1).length, '2': xs.filter((x) => x.hops === 2).length, '3': xs.filter((x) => x.hops === 3).length,
  });
  const byKind: Record<string, number> = {};
  for (const e of w.ents) byKind[e.kind] = (byKind[e.kind] ?? 0) + 1;
  const nameCount = new Map<string, number>();
  for (const e of w.ents) nameCount.set(e.name, (nameCount.get(e.name) ?? 0) + 1);
  const words = corpus.reduce((a, r) => a + r.contents.split(/\s+/).length, 0);
  const entities: SynthEntity[] = w.ents.map(({ article: _a, num: _n, he: _h, ...rest }) => rest);
  return {
    corpus,
    seeds,
    heldOut,
    entities,
    facts: w.facts,
    stats: {
      seed: opts.seed,
      passages: corpus.length,
      entities: w.ents.length,
      byKind,
      facts: w.facts.length,
      aliases: w.ents.filter((e) => e.alias).length,
      namesakeGroups: [...nameCount.values()].filter((v) => v > 1).length,
      meanWordsPerPassage: Math.round((words / corpus.length) * 10) / 10,
      seeds: { total: seeds.length, byHops: byHops(seeds) },
      heldOut: { total: heldOut.length, byHops: byHops(heldOut) },
    },
  };
}

function jsonl(rows: readonly unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** Writes corpus.jsonl, seeds.jsonl, heldout.jsonl and stats.json into `dir`, each atomically. */
export function writeSyntheticCorpus(dir: string, opts: SyntheticCorpusOptions): SyntheticCorpus {
  const out = generateSyntheticCorpus(opts);
  writeFileAtomic(join(dir, 'corpus.jsonl'), jsonl(out.corpus));
  writeFileAtomic(join(dir, 'seeds.jsonl'), jsonl(out.seeds));
  writeFileAtomic(join(dir, 'heldout.jsonl'), jsonl(out.heldOut));
  writeJsonAtomic(join(dir, 'stats.json'), out.stats);
  return out;
}
