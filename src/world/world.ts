// One world: a generated encyclopedia (src/corpus/synthetic/) at a given seed and size, with the lookups the
// world's scripted parts need — how a question names its start entity, how a question's wording maps back to
// a chain of relations, which facts a passage states — and a BM25 search tool over its passages.
//
// Worlds differ only by seed: the same generator gives other names, facts and answers. The demo world is the
// one self-play and the held-out eval run in; the warm-start transcripts come from other seeds, so nothing of
// the demo world's held-out set (questions, answers, supporting passages) can be in them. See docs/world.md.
import { generateSyntheticCorpus, goldenAnswers, type HeldOutQuestion, type SynthEntity, type SynthFact, type SyntheticCorpus } from '../corpus/synthetic/index.js';
import { capitalize, fill, type Relation, WORDING, wordings } from '../corpus/questions.js';
import { Bm25Index } from '../search/bm25-index.js';
import { parseContents } from '../search/corpus.js';
import type { Passage } from '../search/types.js';
import type { Rng } from '../util/rng.js';

export interface WorldOptions {
  seed: number;
  /** Passages in the encyclopedia (the generator's minimum is 300). */
  passages: number;
}

/**
 * The demo world: the one `npx sesa-train` (`--model demo`, the demo world's warm-start model) plays in; seed
 * 0, the generator's smallest size. Not the encyclopedia of `--corpus encyclopedia` (ENCYCLOPEDIA_SEED,
 * src/eval/dataset.ts), which is generated at seed 0 too but with 2,400 passages.
 */
export const DEMO_WORLD: WorldOptions = { seed: 0, passages: 300 };
/** A world no warm-start transcript and no self-play step ever saw: the check that search was learned. */
export const FRESH_WORLD: WorldOptions = { seed: 7919, passages: 300 };
/**
 * The evaluation worlds (src/world/eval-worlds.ts, docs/world.md "The evaluation worlds"): nothing trains in
 * them. Fixed on 2026-12-04 before any model was evaluated on them.
 */
export const EVAL_WORLD_SEEDS: readonly number[] = [104729, 130363, 155921, 181081, 206699, 232171];
/** Seeds of the worlds the warm-start transcripts come from (never the demo, fresh or an evaluation world). */
export function trainingWorldSeeds(count: number): number[] {
  const out: number[] = [];
  for (let s = 1; out.length < count; s++) if (s !== DEMO_WORLD.seed && s !== FRESH_WORLD.seed && !EVAL_WORLD_SEEDS.includes(s)) out.push(s);
  return out;
}

/** A question parsed back into its start entity and relation chain (innermost relation first). */
export interface ParsedQuestion {
  start: string;
  relations: Relation[];
}

/** A wording "… the <noun> of {x}…" (one or two words of noun). */
const GENITIVE_WORDING = /\bthe [\w-]+( [\w-]+)? of \{x\}/;

/** Prefix the proposer puts on a question too short for the validity rule of ten words (docs/method.md, "Validating questions"). */
export const LONG_FORM_PREFIX = 'According to the documents in the collection, ';

function lower(s: string): string {
  return s.toLowerCase().replace(/\s+/g, ' ').trim();
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A question template as a matcher with one capture for `{x}`. */
function templateRegex(template: string): RegExp {
  const [head, tail] = template.split('{x}') as [string, string];
  const part = (t: string): string => escapeRegex(t.toLowerCase().replace(/\s+/g, ' '));
  return new RegExp(`^${part(head)}(.+?)${part(tail)}$`);
}

/** A question that asks for its noun phrase's referent: "who is NP?", "which town was NP?" (lowercased). */
const COPULAR_QUESTION = /^(?:who|what|where|which(?: [\w-]+){0,3}) (?:is|was) (.+?) ?\?$/;

const Q_TEMPLATES: Array<{ relation: Relation; re: RegExp }> = [];
const NP_TEMPLATES: Array<{ relation: Relation; re: RegExp }> = [];
for (const [relation, w] of Object.entries(WORDING) as Array<[Relation, (typeof WORDING)[Relation]]>) {
  for (const q of w.q) Q_TEMPLATES.push({ relation, re: templateRegex(q) });
  for (const np of w.np) NP_TEMPLATES.push({ relation, re: templateRegex(np) });
}

export class World {
  readonly options: WorldOptions;
  readonly synth: SyntheticCorpus;
  readonly passages: Passage[];
  private readonly entityById = new Map<string, SynthEntity>();
  private readonly passageById = new Map<string, Passage>();
  private readonly outgoing = new Map<string, Map<Relation, SynthFact>>();
  private readonly incoming = new Map<string, SynthFact[]>();
  /** Lowercased reference text → the entities it may name (more than one = ambiguous). */
  private readonly refs = new Map<string, Set<string>>();
  private index?: Bm25Index;

  constructor(options: WorldOptions) {
    this.options = options;
    this.synth = generateSyntheticCorpus({ seed: options.seed, passages: options.passages });
    this.passages = this.synth.corpus.map((row) => ({ id: row.id, ...parseContents(row.contents) }));
    for (const p of this.passages) this.passageById.set(p.id, p);
    for (const e of this.synth.entities) this.entityById.set(e.id, e);
    for (const f of this.synth.facts) {
      let m = this.outgoing.get(f.subject);
      if (!m) this.outgoing.set(f.subject, (m = new Map()));
      m.set(f.relation, f);
      const inc = this.incoming.get(f.object) ?? [];
      inc.push(f);
      this.incoming.set(f.object, inc);
    }
    for (const e of this.synth.entities) for (const text of this.refTexts(e)) this.addRef(text, e.id);
  }

  get heldOut(): HeldOutQuestion[] {
    return this.synth.heldOut;
  }

  entity(id: string): SynthEntity {
    const e = this.entityById.get(id);
    if (!e) throw new Error(`world ${this.options.seed}: unknown entity ${id}`);
    return e;
  }

  passage(id: string): Passage | undefined {
    return this.passageById.get(id);
  }

  golden(entityId: string): string[] {
    return goldenAnswers(this.entity(entityId));
  }

  /** The fact (subject, relation, ·), if the subject has that relation. */
  fact(subject: string, relation: Relation): SynthFact | undefined {
    return this.outgoing.get(subject)?.get(relation);
  }

  /** Facts pointing at an entity. */
  factsInto(object: string): SynthFact[] {
    return this.incoming.get(object) ?? [];
  }

  /** The province of a town (namesake towns are told apart by it). */
  regionName(townId: string): string | undefined {
    const f = this.fact(townId, 'in_region');
    return f ? this.entity(f.object).name : undefined;
  }

  /** Every text by which a question or passage may name an entity, as the generator writes them. */
  refTexts(e: SynthEntity): string[] {
    const out = [e.name, `the ${e.type} ${e.name}`, `the ${e.kind} ${e.name}`];
    if (!/^the /i.test(e.name)) out.push(`the ${e.name}`);
    if (e.kind === 'town') {
      out.push(`the town of ${e.name}`);
      const region = this.regionName(e.id);
      if (region) out.push(`the town of ${e.name} in ${region}`, `${e.name} (${region})`);
    }
    if (e.kind === 'region') out.push(`the province of ${e.name}`);
    return out;
  }

  private addRef(text: string, id: string): void {
    const key = lower(text);
    const set = this.refs.get(key) ?? new Set();
    set.add(id);
    this.refs.set(key, set);
  }

  /** The entity a reference text names, when it names exactly one. */
  resolveRef(text: string): string | undefined {
    const set = this.refs.get(lower(text));
    return set && set.size === 1 ? [...set][0] : undefined;
  }

  /**
   * How a question names an entity so that the name singles it out: the disambiguated form for namesakes,
   * the typed form ("the opera X") for works, else the name (typed at random, as the generator does).
   */
  reference(e: SynthEntity, rng: Rng | 'canonical'): string {
    const candidates = [e.name, `the ${e.type} ${e.name}`, `the ${e.kind} ${e.name}`];
    if (!/^the /i.test(e.name)) candidates.push(`the ${e.name}`);
    if (e.kind === 'town') {
      const region = this.regionName(e.id);
      candidates.unshift(`the town of ${e.name}`);
      if (region) candidates.push(`the town of ${e.name} in ${region}`);
    }
    const unique = candidates.filter((c) => this.resolveRef(c) === e.id);
    if (unique.length === 0) throw new Error(`world ${this.options.seed}: no unambiguous reference for ${e.id} (${e.name})`);
    return unique[rng === 'canonical' ? 0 : rng.int(unique.length)] as string;
  }

  /** The words to search for an entity: its reference without a leading article (BM25 drops it anyway). */
  searchQuery(e: SynthEntity): string {
    for (const c of [e.name, `${e.type} ${e.name}`, `${e.kind} ${e.name}`]) if (this.resolveRef(c) === e.id || this.resolveRef(`the ${c}`) === e.id) return c;
    const region = e.kind === 'town' ? this.regionName(e.id) : undefined;
    return region ? `${e.name} ${region}` : e.name;
  }

  /**
   * The question for a chain of facts (first fact's subject = start entity; last fact's object = answer),
   * worded with the generator's templates: nested noun phrases, then the last relation as the question.
   * 'canonical' gives one phrasing per chain: the first reference, and for each relation the first wording
   * of the form "the <noun> of {x}" (the form the experts' thoughts use), else its first wording.
   */
  phrase(path: readonly SynthFact[], rng: Rng | 'canonical'): string {
    if (path.length === 0) throw new Error('phrase: empty chain');
    const pick = (ws: readonly string[]): string =>
      (rng === 'canonical' ? (ws.find((w) => GENITIVE_WORDING.test(w)) ?? ws[0]) : ws[rng.int(ws.length)]) as string;
    let x = this.reference(this.entity((path[0] as SynthFact).subject), rng);
    path.slice(0, -1).forEach((f, i) => {
      x = fill(pick(wordings(f.relation, 'np', i > 0)), x);
    });
    const last = path[path.length - 1] as SynthFact;
    return capitalize(fill(pick(wordings(last.relation, 'q', path.length > 1)), x));
  }

  /** Parses a question of the world's grammar back into its start entity and relations; undefined if it is not one. */
  parseQuestion(question: string): ParsedQuestion | undefined {
    let q = lower(question);
    const prefix = lower(LONG_FORM_PREFIX);
    if (q.startsWith(prefix)) q = q.slice(prefix.length).trim();
    for (const { relation, re } of Q_TEMPLATES) {
      const m = re.exec(q);
      if (!m) continue;
      const inner = this.parsePhrase((m[1] as string).trim());
      if (inner) return { start: inner.start, relations: [...inner.relations, relation] };
    }
    // "Who/What/Which … is <noun phrase>?" asks for what the noun phrase names, whatever the wh-word: a reader
    // takes "Who is the best-known work of X?" as a question about that work.
    const copular = COPULAR_QUESTION.exec(q);
    const inner = copular ? this.parsePhrase((copular[1] as string).trim()) : undefined;
    return inner && inner.relations.length > 0 ? inner : undefined;
  }

  private parsePhrase(x: string): ParsedQuestion | undefined {
    const start = this.resolveRef(x);
    if (start) return { start, relations: [] };
    for (const { relation, re } of NP_TEMPLATES) {
      const m = re.exec(x);
      if (!m) continue;
      const inner = this.parsePhrase((m[1] as string).trim());
      if (inner) return { start: inner.start, relations: [...inner.relations, relation] };
    }
    return undefined;
  }

  /**
   * Follows a parsed chain through the facts, using only facts stated in `passageIds` when given. The
   * entities visited, start first; undefined when a link is missing.
   */
  follow(parsed: ParsedQuestion, passageIds?: ReadonlySet<string>): string[] | undefined {
    const chain = [parsed.start];
    let cur = parsed.start;
    for (const r of parsed.relations) {
      const f = this.fact(cur, r);
      if (!f || (passageIds && !passageIds.has(f.passageId))) return undefined;
      cur = f.object;
      chain.push(cur);
    }
    return chain;
  }

  /** The BM25 index over the world's passages (built once). */
  async searcher(): Promise<Bm25Index> {
    this.index ??= await Bm25Index.fromPassages(this.passages, { cacheDir: null }, `world ${this.options.seed}`);
    return this.index;
  }
}
