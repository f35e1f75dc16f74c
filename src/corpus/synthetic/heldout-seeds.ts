// Held-out questions and answer seeds. Held-out questions walk a random chain of facts backwards from an answer
// (as the proposer does), are phrased from the relations' wordings and never name the answer or a bridging
// entity; their answers are distinct. Answer seeds are the entities reachable by a 1-, 2- or 3-hop chain whose
// answers are disjoint from the held-out ones, balanced over hop counts (docs/method.md, "One step").
import { capitalize, fill, wordings } from '../questions.js';
import { pick, shuffle } from '../vocab.js';
import type { Ent, WorldBuilder } from './graph.js';
import type { Passage } from './passages.js';
import type { HeldOutQuestion, StartRef, SynthAnswerSeed, SynthEntity, SynthFact } from './types.js';

/** The strings a correct answer may take: the name, its alias, and the bare root of generic names. */
export function goldenAnswers(e: SynthEntity): string[] {
  const out = [e.name];
  if (e.alias) out.push(e.alias);
  const bare = e.kind === 'river' ? e.name.replace(/ River$/, '')
    : e.kind === 'water' ? e.name.replace(/^Lake |^Gulf of | Sea$/g, '')
      : e.kind === 'mountain' ? e.name.replace(/^Mount | Peak$/g, '') : e.name;
  if (bare !== e.name) out.push(bare);
  return out;
}

/** A random chain of `hops` facts ending at `answer`, built backwards as the proposer does; distinct entities. */
function backChain(w: WorldBuilder, answer: Ent, hops: number): SynthFact[] | null {
  for (let attempt = 0; attempt < 8; attempt++) {
    const path: SynthFact[] = [];
    const seen = new Set([answer.id]);
    let cur = answer.id;
    for (let k = 0; k < hops; k++) {
      const cands = (w.inc.get(cur) ?? []).filter((f) => !seen.has(f.subject));
      if (cands.length === 0) break;
      const f = pick(w.rng, cands);
      path.unshift(f);
      seen.add(f.subject);
      cur = f.subject;
    }
    if (path.length === hops) return path;
  }
  return null;
}

/** Whether some chain of exactly `hops` distinct entities ends at `id` (exhaustive, for seeds). */
function reachable(w: WorldBuilder, id: string, hops: number, seen: Set<string>): boolean {
  if (hops === 0) return true;
  for (const f of w.inc.get(id) ?? []) {
    if (seen.has(f.subject)) continue;
    seen.add(f.subject);
    const ok = reachable(w, f.subject, hops - 1, seen);
    seen.delete(f.subject);
    if (ok) return true;
  }
  return false;
}

function phrase(w: WorldBuilder, path: SynthFact[]): { question: string; start: StartRef } {
  const first = path[0] as SynthFact;
  const last = path[path.length - 1] as SynthFact;
  const { text, start } = w.ref(w.ent(first.subject));
  let x = text;
  path.slice(0, -1).forEach((f, i) => {
    x = fill(pick(w.rng, wordings(f.relation, 'np', i > 0)), x);
  });
  return { question: capitalize(fill(pick(w.rng, wordings(last.relation, 'q', path.length > 1)), x)), start };
}

/** True when the question names the answer or a bridging entity (by name or alias). */
function leaks(w: WorldBuilder, question: string, path: SynthFact[]): boolean {
  const q = question.toLowerCase();
  return path.some((f) => goldenAnswers(w.ent(f.object)).some((s) => q.includes(s.toLowerCase())));
}

function normalize(s: string): string {
  return s.toLowerCase().replace(/[^\p{L}\p{N} ]/gu, ' ').replace(/\b(a|an|the)\b/g, ' ').replace(/\s+/g, ' ').trim();
}

export function makeHeldOut(w: WorldBuilder, perHop: number, idFor: (p: Passage) => string, passageOf: Map<SynthFact, Passage>): HeldOutQuestion[] {
  const out: HeldOutQuestion[] = [];
  const count = [0, 0, 0];
  const usedAnswers = new Set<string>();
  const candidates = shuffle(w.rng, w.ents.filter((e) => (w.inc.get(e.id)?.length ?? 0) > 0));
  for (const answer of candidates) {
    if (count.every((c) => c >= perHop)) break;
    const golden = goldenAnswers(answer);
    if (golden.some((g) => usedAnswers.has(normalize(g)))) continue;
    // Fill the hop count that lags most, falling back to the others.
    const order = [1, 2, 3].filter((h) => (count[h - 1] ?? 0) < perHop).sort((a, z) => (count[a - 1] ?? 0) - (count[z - 1] ?? 0));
    for (const hops of order) {
      let made: HeldOutQuestion | null = null;
      for (let attempt = 0; attempt < 4 && !made; attempt++) {
        const path = backChain(w, answer, hops);
        if (!path) break;
        const { question, start } = phrase(w, path);
        if (leaks(w, question, path)) continue;
        made = {
          id: `synthetic-${String(out.length).padStart(4, '0')}`,
          question,
          golden_answers: golden,
          hops: hops as 1 | 2 | 3,
          supporting_ids: path.map((f) => idFor(passageOf.get(f) as Passage)),
          chain: [path[0]?.subject as string, ...path.map((f) => f.object)],
          relations: path.map((f) => f.relation),
          start,
        };
      }
      if (made) {
        out.push(made);
        count[hops - 1] = (count[hops - 1] ?? 0) + 1;
        for (const g of golden) usedAnswers.add(normalize(g));
        break;
      }
    }
  }
  return out;
}

export function makeSeeds(w: WorldBuilder, heldOut: HeldOutQuestion[]): SynthAnswerSeed[] {
  const taken = new Set(heldOut.flatMap((q) => q.golden_answers.map(normalize)));
  const seen = new Set<string>();
  const count = [0, 0, 0];
  const seeds: SynthAnswerSeed[] = [];
  for (const e of shuffle(w.rng, [...w.ents])) {
    const key = normalize(e.name);
    if (seen.has(key) || goldenAnswers(e).some((g) => taken.has(normalize(g)))) continue;
    const feasible = [1, 2, 3].filter((h) => reachable(w, e.id, h, new Set([e.id])));
    if (feasible.length === 0) continue;
    // Balance the hop counts: each answer goes to its least-used feasible hop count.
    const hops = feasible.reduce((best, h) => ((count[h - 1] ?? 0) < (count[best - 1] ?? 0) ? h : best));
    count[hops - 1] = (count[hops - 1] ?? 0) + 1;
    seen.add(key);
    seeds.push({ answer: e.name, hops: hops as 1 | 2 | 3, entityId: e.id, kind: e.kind });
  }
  return seeds;
}
