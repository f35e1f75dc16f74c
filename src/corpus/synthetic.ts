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
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { Rng } from '../util/rng.js';
import { capitalize, fill, wordings, type Relation } from './questions.js';
import {
  chance, intIn, NameRegistry, PAINT_TIME, pick, shuffle, TITLE_ADJ, TITLE_NOUN, TOWN_SUFFIX,
} from './vocab.js';

export { RELATIONS, type Relation } from './questions.js';

export type EntityKind =
  | 'person' | 'town' | 'region' | 'water' | 'mountain' | 'river' | 'organization'
  | 'novel' | 'composition' | 'painting' | 'bridge' | 'festival';

export interface SynthEntity {
  id: string;
  kind: EntityKind;
  /** Finer type: occupation for people, opera/symphony/... for compositions, lake/sea/gulf, university/... */
  type: string;
  name: string;
  /** Alternate name stated in the entity's passage; also a golden answer. */
  alias?: string;
  /** Passage title, unique across the corpus (namesakes get a qualifier, as on Wikipedia). */
  title: string;
  /** Shares its name with another entity on purpose; always referred to with its disambiguator. */
  namesake: boolean;
  /** Birth, founding, publication, completion or first-ascent year. */
  year: number;
  /** Death year for people. */
  endYear?: number;
  passageIds: string[];
}

export interface SynthFact {
  subject: string;
  relation: Relation;
  object: string;
  /** The passage (of the subject) that states the fact and names the object. */
  passageId: string;
}

export interface CorpusRow {
  id: string;
  contents: string;
}

export interface AnswerSeed {
  answer: string;
  hops: 1 | 2 | 3;
  entityId: string;
  kind: string;
}

/** How a question names its start entity: enough to single it out among namesakes. */
export interface StartRef {
  name: string;
  kind: EntityKind;
  /** Present for namesake people (occupation) and compositions. */
  type?: string;
  /** Present for namesake towns: the province's name. */
  region?: string;
}

export interface HeldOutQuestion {
  id: string;
  question: string;
  golden_answers: string[];
  hops: 1 | 2 | 3;
  /** One passage per hop, in order: each names the next entity of the chain; the last names the answer. */
  supporting_ids: string[];
  /** Entity ids from the start entity to the answer (hops + 1 of them). */
  chain: string[];
  relations: Relation[];
  start: StartRef;
}

export interface SyntheticCorpusStats {
  seed: number;
  passages: number;
  entities: number;
  byKind: Record<string, number>;
  facts: number;
  aliases: number;
  namesakeGroups: number;
  meanWordsPerPassage: number;
  seeds: { total: number; byHops: Record<'1' | '2' | '3', number> };
  heldOut: { total: number; byHops: Record<'1' | '2' | '3', number> };
}

export interface SyntheticCorpus {
  corpus: CorpusRow[];
  seeds: AnswerSeed[];
  heldOut: HeldOutQuestion[];
  stats: SyntheticCorpusStats;
  /** The fact graph behind the text, for checks and debugging. */
  entities: SynthEntity[];
  facts: SynthFact[];
}

export interface SyntheticCorpusOptions {
  seed: number;
  /** Number of passages (default 2,400; at least 300). */
  passages?: number;
  /** Held-out questions per hop count (default passages / 16). */
  heldOutPerHop?: number;
}

interface Ent extends SynthEntity {
  article: boolean;
  /** Population, length, height, span ... for flavour sentences. */
  num: number;
  /** Pronoun pair for people. */
  he?: 'he' | 'she';
}

interface Sentence {
  text: string;
  facts: SynthFact[];
  essential: boolean;
}

interface Passage {
  entity: Ent;
  title: string;
  sentences: Sentence[];
}

const OCCUPATIONS: ReadonlyArray<readonly [string, number]> = [
  ['novelist', 0.22], ['composer', 0.16], ['painter', 0.14], ['engineer', 0.09], ['explorer', 0.09],
  ['merchant', 0.16], ['scholar', 0.14],
];

const PERSON_ADJ = ['', '', 'celebrated ', 'prolific ', 'self-taught ', 'influential ', 'little-known ', 'itinerant '];
const QUALITY: Record<string, readonly string[]> = {
  novelist: ['spare prose', 'intricate plots', 'sympathetic portraits of river people', 'dry humour'],
  composer: ['long melodic lines', 'bold orchestration', 'use of folk dances', 'choral writing'],
  painter: ['muted palette', 'studies of winter light', 'large harbour scenes', 'careful draughtsmanship'],
  engineer: ['economical designs', 'use of cast iron', 'long-span arches', 'careful surveys'],
  explorer: ['detailed field notebooks', 'accurate maps', 'winter expeditions', 'river surveys'],
  merchant: ['shrewd trading', 'patronage of the arts', 'charitable foundations', 'grain contracts'],
  scholar: ['studies of old charters', 'work on plant classification', 'lectures on astronomy', 'grammars'],
};
const TOWN_SIZE = ['small', 'market', 'hill', 'fishing', 'cathedral', 'mill', 'garrison', 'harbour'];
const INDUSTRY = ['weaving', 'salt works', 'boatbuilding', 'orchards', 'slate quarries', 'glassmaking', 'the wool trade'];
const FEATURE = ['abbey', 'toll bridge', 'grain market', 'shipyards', 'castle mound', 'fairground'];
const PRODUCT = ['cider', 'slate', 'sheep farming', 'river mills', 'apple orchards', 'peat', 'linen'];
const PLOT_WHO = ['a lockkeeper\'s daughter', 'two estranged brothers', 'a travelling surveyor', 'an ageing ferryman',
  'a young bookbinder', 'a widowed innkeeper', 'a disgraced mapmaker', 'three sisters'];
const PLOT_WHAT = ['searches for a lost ledger', 'returns home after a long war', 'inherits a failing mill',
  'tries to stop a flood', 'uncovers a forged will', 'spends a winter snowed in', 'rebuilds a burned library'];
const ENSEMBLE = ['full orchestra', 'strings and harp', 'choir and organ', 'chamber orchestra', 'brass and timpani'];
const SCENE = ['fishing boats drawn up on a beach', 'a market square in the rain', 'a frozen millpond',
  'reapers resting at noon', 'a lamplit harbour', 'a storm over marshland'];
const BRIDGE_FORM = ['stone arch', 'cast-iron', 'timber trestle', 'suspension', 'brick arch', 'swing'];
const FESTIVAL_TYPE = ['Music', 'Lantern', 'Harvest', 'River', 'Choral', 'Kite', 'Book'];
const ORG_TYPES = ['shipping company', 'publishing house', 'orchestra', 'learned society'] as const;

function an(phrase: string): string {
  // "a university", "a one-act opera": the sound decides, not the letter.
  return /^[aeiou]/i.test(phrase) && !/^(uni|use|eu|one)/i.test(phrase) ? `an ${phrase}` : `a ${phrase}`;
}

function list(items: string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function century(year: number): string {
  const c = Math.floor(year / 100) + 1;
  const suffix = c % 10 === 1 && c !== 11 ? 'st' : c % 10 === 2 && c !== 12 ? 'nd' : c % 10 === 3 && c !== 13 ? 'rd' : 'th';
  return `${c}${suffix}`;
}

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

class World {
  readonly rng: Rng;
  readonly names: NameRegistry;
  readonly ents: Ent[] = [];
  readonly facts: SynthFact[] = [];
  private readonly out = new Map<string, Map<Relation, SynthFact>>();
  readonly inc = new Map<string, SynthFact[]>();
  private readonly byId = new Map<string, Ent>();
  private readonly counters = new Map<string, number>();

  constructor(seed: number) {
    this.rng = new Rng(seed);
    this.names = new NameRegistry(this.rng);
  }

  add(kind: EntityKind, type: string, name: string, year: number, article = false): Ent {
    const n = this.counters.get(kind) ?? 0;
    this.counters.set(kind, n + 1);
    const e: Ent = {
      id: `${kind}-${String(n).padStart(4, '0')}`, kind, type, name, title: name, namesake: false, year,
      passageIds: [], article, num: 0,
    };
    this.ents.push(e);
    this.byId.set(e.id, e);
    return e;
  }

  ent(id: string): Ent {
    const e = this.byId.get(id);
    if (!e) throw new Error(`unknown entity ${id}`);
    return e;
  }

  fact(s: Ent, relation: Relation, o: Ent): void {
    let m = this.out.get(s.id);
    if (!m) this.out.set(s.id, (m = new Map()));
    // Functional relations are what make chained questions unique; a second object is a generator bug.
    if (m.has(relation)) throw new Error(`${s.id} already has ${relation}`);
    const f: SynthFact = { subject: s.id, relation, object: o.id, passageId: '' };
    m.set(relation, f);
    this.facts.push(f);
    const inc = this.inc.get(o.id);
    if (inc) inc.push(f);
    else this.inc.set(o.id, [f]);
  }

  obj(s: Ent, relation: Relation): Ent | undefined {
    const f = this.out.get(s.id)?.get(relation);
    return f ? this.ent(f.object) : undefined;
  }

  factOf(s: Ent, relation: Relation): SynthFact {
    const f = this.out.get(s.id)?.get(relation);
    if (!f) throw new Error(`${s.id} has no ${relation}`);
    return f;
  }

  /** Subjects pointing at `o` through `relation`. */
  subjects(o: Ent, relation: Relation): Ent[] {
    return (this.inc.get(o.id) ?? []).filter((f) => f.relation === relation).map((f) => this.ent(f.subject));
  }

  of(kind: EntityKind, type?: string): Ent[] {
    return this.ents.filter((e) => e.kind === kind && (type === undefined || e.type === type));
  }

  /** The noun that names an entity's type in running text ("the opera X", "the painter X"). */
  typeNoun(e: Ent): string {
    return e.kind === 'composition' ? e.type : e.kind === 'person' ? e.type : e.kind;
  }

  /** How passages mention an entity: namesakes always carry their disambiguator. */
  mention(e: Ent, typed = false): string {
    switch (e.kind) {
      case 'person':
        return typed || e.namesake ? `the ${e.type} ${e.name}` : e.name;
      case 'town':
        // Parenthesized rather than "X, Province", which reads as two items inside lists.
        return e.namesake ? `${e.name} (${this.regionOf(e).name})` : e.name;
      case 'novel':
      case 'painting':
      case 'composition':
        if (e.article) return `the ${e.name}`;
        return typed || e.namesake ? `the ${this.typeNoun(e)} ${e.name}` : e.name;
      default:
        return e.article ? `the ${e.name}` : e.name;
    }
  }

  regionOf(town: Ent): Ent {
    const r = this.obj(town, 'in_region');
    if (!r) throw new Error(`${town.id} has no province`);
    return r;
  }

  /** How a question names its start entity, and the structured reference that singles it out. */
  ref(e: Ent): { text: string; start: StartRef } {
    const start: StartRef = { name: e.name, kind: e.kind };
    const rng = this.rng;
    switch (e.kind) {
      case 'person':
        if (e.namesake) start.type = e.type;
        return { text: this.mention(e, e.namesake || chance(rng, 0.5)), start };
      case 'town':
        if (e.namesake) {
          start.region = this.regionOf(e).name;
          return { text: `the town of ${e.name} in ${start.region}`, start };
        }
        return { text: chance(rng, 0.3) ? `the town of ${e.name}` : e.name, start };
      case 'region':
        return { text: chance(rng, 0.5) ? `the province of ${e.name}` : e.name, start };
      case 'composition':
        start.type = e.type;
        return { text: this.mention(e, true), start };
      case 'novel':
      case 'painting':
        return { text: this.mention(e, true), start };
      default:
        return { text: this.mention(e), start };
    }
  }
}

interface Counts {
  regions: number; waters: number; mountains: number; rivers: number; towns: number; universities: number;
  museums: number; otherOrgs: number; novels: number; compositions: number; paintings: number; bridges: number;
  festivals: number; persons: number; histories: number;
}

function plan(passages: number): Counts {
  const histories = Math.round(passages * 0.03);
  const e = passages - histories;
  const c = {
    regions: Math.max(4, Math.round(e * 0.006)),
    waters: Math.max(3, Math.round(e * 0.006)),
    mountains: Math.max(4, Math.round(e * 0.018)),
    rivers: Math.max(6, Math.round(e * 0.03)),
    towns: Math.max(24, Math.round(e * 0.12)),
    universities: Math.max(3, Math.round(e * 0.014)),
    museums: Math.max(3, Math.round(e * 0.012)),
    otherOrgs: Math.max(4, Math.round(e * 0.045)),
    novels: Math.round(e * 0.11),
    compositions: Math.round(e * 0.07),
    paintings: Math.round(e * 0.06),
    bridges: Math.round(e * 0.04),
    festivals: Math.round(e * 0.035),
  };
  const used = Object.values(c).reduce((a, b) => a + b, 0);
  return { ...c, persons: e - used, histories };
}

function buildPeople(w: World, count: number): void {
  const { rng, names } = w;
  let made = 0;
  OCCUPATIONS.forEach(([occ, share], i) => {
    const n = i === OCCUPATIONS.length - 1 ? count - made : Math.round(count * share);
    for (let k = 0; k < n; k++) {
      const birth = intIn(rng, 1560, 1920);
      const p = w.add('person', occ, names.person(), birth);
      p.endYear = Math.min(2015, birth + intIn(rng, 38, 92));
      p.he = chance(rng, 0.5) ? 'he' : 'she';
    }
    made += n;
  });
  const people = w.of('person');
  // Namesakes: same name, different occupation, so that the occupation disambiguates.
  const pairs = Math.round(people.length * 0.05);
  for (let i = 0, guard = 0; i < pairs && guard < pairs * 50; guard++) {
    const a = pick(rng, people);
    const b = pick(rng, people);
    if (a === b || a.namesake || b.namesake || a.type === b.type) continue;
    b.name = a.name;
    a.namesake = b.namesake = true;
    i++;
  }
  // Teachers: an older person of the same occupation.
  for (const p of people) {
    if (!chance(rng, 0.4)) continue;
    const cands = people.filter((q) => q.type === p.type && q.year <= p.year - 15 && q.year >= p.year - 50);
    if (cands.length > 0) w.fact(p, 'teacher', pick(rng, cands));
  }
  // Marriages between near contemporaries: a symmetric pair of functional facts.
  const married = new Set<Ent>();
  for (const p of people) {
    if (married.has(p) || !chance(rng, 0.25)) continue;
    for (let k = 0; k < 20; k++) {
      const q = pick(rng, people);
      if (q === p || married.has(q) || Math.abs(q.year - p.year) > 12 || q.name === p.name) continue;
      w.fact(p, 'spouse', q);
      w.fact(q, 'spouse', p);
      married.add(p).add(q);
      break;
    }
  }
  for (const p of people) if (p.type === 'novelist' && chance(rng, 0.3)) p.alias = names.person();
}

function buildGeography(w: World, c: Counts): void {
  const { rng, names } = w;
  const explorers = w.of('person', 'explorer');
  for (let i = 0; i < c.regions; i++) {
    const r = w.add('region', 'province', names.named((x) => x), 0);
    if (chance(rng, 0.25)) r.alias = names.named((x) => `${x} March`);
  }
  const regions = w.of('region');
  for (let i = 0; i < c.waters; i++) {
    const type = pick(rng, ['lake', 'lake', 'sea', 'gulf'] as const);
    const name = names.named((x) => (type === 'lake' ? `Lake ${x}` : type === 'sea' ? `${x} Sea` : `Gulf of ${x}`));
    const water = w.add('water', type, name, 0, type !== 'lake');
    water.num = intIn(rng, 20, 9000);
  }
  for (let i = 0; i < c.mountains; i++) {
    const m = w.add('mountain', 'mountain', names.named((x) => (chance(rng, 0.6) ? `Mount ${x}` : `${x} Peak`)), 0);
    m.num = intIn(rng, 900, 4800);
    w.fact(m, 'in_region', pick(rng, regions));
    if (chance(rng, 0.6)) {
      const p = pick(rng, explorers);
      m.year = Math.min(p.endYear ?? p.year + 40, p.year + intIn(rng, 20, 45));
      w.fact(m, 'first_climbed_by', p);
    }
  }
  const mountains = w.of('mountain');
  const waters = w.of('water');
  for (let i = 0; i < c.rivers; i++) {
    const r = w.add('river', 'river', names.named((x) => `${x} River`), 0, true);
    r.num = intIn(rng, 30, 900);
    w.fact(r, 'rises_on', pick(rng, mountains));
    w.fact(r, 'flows_into', pick(rng, waters));
    if (chance(rng, 0.65)) {
      const p = pick(rng, explorers);
      r.year = Math.min(p.endYear ?? p.year + 40, p.year + intIn(rng, 22, 50));
      w.fact(r, 'charted_by', p);
    }
    if (chance(rng, 0.25)) r.alias = names.named((x) => x);
  }
  const rivers = w.of('river');

  // Towns; "Upper X"/"Lower X" pairs share a province and a river: near-names with near-identical facts.
  const pairs = Math.round(c.towns * 0.03);
  let made = 0;
  for (let i = 0; i < pairs; i++) {
    const region = pick(rng, regions);
    const river = pick(rng, rivers);
    const root = names.root();
    for (const side of ['Upper', 'Lower']) {
      const name = `${side} ${root}`;
      names.claim(name);
      const t = w.add('town', 'town', name, 0);
      w.fact(t, 'in_region', region);
      w.fact(t, 'located_on', river);
      made++;
    }
  }
  for (let i = made; i < c.towns; i++) {
    const t = w.add('town', 'town', names.named((x) => (chance(rng, 0.5) ? x + pick(rng, TOWN_SUFFIX) : x)), 0);
    // The first towns cover every province, so that each has a capital.
    w.fact(t, 'in_region', i - made < regions.length ? (regions[i - made] as Ent) : pick(rng, regions));
    if (chance(rng, 0.75)) w.fact(t, 'located_on', pick(rng, rivers));
  }
  const towns = w.of('town');
  for (const t of towns) {
    t.num = intIn(rng, 800, 90_000);
    t.year = intIn(rng, 850, 1550);
  }
  // Namesake towns in different provinces (the province disambiguates).
  const namesakes = Math.round(towns.length * 0.04);
  for (let i = 0, guard = 0; i < namesakes && guard < namesakes * 50; guard++) {
    const a = pick(rng, towns);
    const b = pick(rng, towns);
    if (a === b || a.namesake || b.namesake || a.name.includes(' ') || b.name.includes(' ')) continue;
    if (w.regionOf(a) === w.regionOf(b)) continue;
    b.name = a.name;
    a.namesake = b.namesake = true;
    i++;
  }
  for (const t of towns) if (!t.namesake && !t.name.includes(' ') && chance(rng, 0.12)) t.alias = names.named((x) => x);
  for (const r of regions) w.fact(r, 'capital', pick(rng, towns.filter((t) => w.regionOf(t) === r)));
  // Founders: early merchants and explorers; a town is founded a few decades after its founder's birth.
  const founders = w.ents.filter((p) => p.kind === 'person' && (p.type === 'merchant' || p.type === 'explorer') && p.year <= 1720);
  for (const t of towns) {
    if (founders.length === 0 || !chance(rng, 0.3)) continue;
    const f = pick(rng, founders);
    t.year = Math.min(f.endYear ?? f.year + 40, f.year + intIn(rng, 25, 50));
    w.fact(t, 'founded_by', f);
  }
  // Birthplaces: a town that already existed, never the one the person founded.
  for (const p of w.of('person')) {
    let town: Ent | undefined;
    for (let k = 0; k < 40 && !town; k++) {
      const t = pick(rng, towns);
      if (t.year < p.year && w.obj(t, 'founded_by') !== p) town = t;
    }
    town ??= towns.find((t) => t.year < p.year && w.obj(t, 'founded_by') !== p) ?? (towns[0] as Ent);
    w.fact(p, 'born_in', town);
  }
}

/** A town that existed by `year` (falls back to any town). */
function townBy(w: World, towns: Ent[], year: number): Ent {
  for (let k = 0; k < 40; k++) {
    const t = pick(w.rng, towns);
    if (t.year < year) return t;
  }
  return towns.find((t) => t.year < year) ?? (towns[0] as Ent);
}

function activeYear(w: World, p: Ent, from: number, to: number): number {
  const end = p.endYear ?? p.year + 60;
  return Math.min(end, p.year + intIn(w.rng, from, to));
}

function buildOrganizations(w: World, c: Counts): void {
  const { rng, names } = w;
  const towns = w.of('town');
  const byOcc = (occ: string[]) => w.ents.filter((p) => p.kind === 'person' && occ.includes(p.type));
  const make = (type: string, name: string, article: boolean, founders: Ent[], p: number): void => {
    const o = w.add('organization', type, name, intIn(rng, 1480, 1950), article);
    if (founders.length > 0 && chance(rng, p)) {
      const f = pick(rng, founders);
      o.year = activeYear(w, f, 28, 55);
      w.fact(o, 'founded_by', f);
    }
    w.fact(o, 'headquartered_in', townBy(w, towns, o.year));
  };
  for (let i = 0; i < c.universities; i++) {
    const form = rng.int(3);
    const name = names.named((x) => (form === 0 ? `${x} College` : form === 1 ? `Royal Academy of ${x}` : `${x} Institute`));
    make('university', name, form !== 0, byOcc(['scholar']), 0.8);
  }
  for (let i = 0; i < c.museums; i++) {
    const name = names.named((x) => (chance(rng, 0.5) ? `${x} Gallery` : `Museum of ${x}`));
    make('museum', name, true, byOcc(['merchant', 'painter']), 0.75);
  }
  for (let i = 0; i < c.otherOrgs; i++) {
    const type = pick(rng, ORG_TYPES);
    const spec = {
      'shipping company': [(x: string) => `${x} Shipping Company`, ['merchant']],
      'publishing house': [(x: string) => `${x} Press`, ['merchant', 'novelist']],
      orchestra: [(x: string) => `${x} Philharmonic`, ['composer']],
      'learned society': [(x: string) => (chance(rng, 0.5) ? `${x} Society of Naturalists` : `${x} Geographical Society`), ['explorer', 'scholar']],
    } as const;
    const [namer, occ] = spec[type];
    make(type, names.named(namer), true, byOcc([...occ]), 0.7);
  }
  const universities = w.of('organization', 'university');
  for (const p of w.of('person')) {
    if (!chance(rng, 0.55)) continue;
    const cands = universities.filter((u) => u.year <= p.year + 18);
    if (cands.length > 0) w.fact(p, 'educated_at', pick(rng, cands));
  }
}

function workTitle(w: World, kind: 'novel' | 'painting'): string {
  const { rng, names } = w;
  for (let k = 0; k < 200; k++) {
    const r = rng.next();
    let t: string;
    if (kind === 'novel') {
      t = r < 0.45 ? `The ${pick(rng, TITLE_ADJ)} ${pick(rng, TITLE_NOUN)}`
        : r < 0.85 ? `The ${pick(rng, TITLE_NOUN)} of ${names.root()}` : `${capitalize(an(pick(rng, TITLE_NOUN)))} for ${names.root()}`;
    } else {
      t = r < 0.45 ? `${pick(rng, TITLE_NOUN)} at ${pick(rng, PAINT_TIME)}`
        : r < 0.7 ? `The ${pick(rng, TITLE_ADJ)} ${pick(rng, TITLE_NOUN)}` : `View of ${names.root()}`;
    }
    if (names.claim(t)) return t;
  }
  return names.named((x) => `The ${x} ${kind === 'novel' ? 'Chronicle' : 'Study'}`);
}

function buildWorks(w: World, c: Counts): void {
  const { rng, names } = w;
  const towns = w.of('town');
  const novelists = w.of('person', 'novelist');
  for (let i = 0; i < c.novels; i++) {
    const a = pick(rng, novelists);
    const n = w.add('novel', 'novel', workTitle(w, 'novel'), activeYear(w, a, 22, 80));
    w.fact(n, 'author', a);
    if (chance(rng, 0.65)) w.fact(n, 'set_in', townBy(w, towns, n.year));
  }
  const novels = w.of('novel').sort((x, y) => x.year - y.year);
  const composers = w.of('person', 'composer');
  for (let i = 0; i < c.compositions; i++) {
    const type = pick(rng, ['opera', 'opera', 'opera', 'symphony', 'symphony', 'concerto', 'cantata'] as const);
    let name: string;
    if (type === 'opera') name = chance(rng, 0.5) ? names.named((x) => x) : names.named((x) => `The ${pick(rng, TITLE_NOUN)} of ${x}`);
    else if (type === 'symphony') name = names.named((x) => `${x} Symphony`);
    else if (type === 'cantata') name = names.named((x) => `Cantata of ${x}`);
    else {
      const adj = `${pick(rng, TITLE_ADJ)} Concerto`;
      name = names.claim(adj) ? adj : names.named((x) => `${x} Concerto`);
    }
    const cm = pick(rng, composers);
    const comp = w.add('composition', type, name, activeYear(w, cm, 20, 75), type !== 'opera');
    w.fact(comp, 'composer', cm);
    if (chance(rng, 0.7)) w.fact(comp, 'premiered_in', townBy(w, towns, comp.year));
    if (type === 'opera' && chance(rng, 0.55)) {
      const earlier = novels.filter((n) => n.year < comp.year);
      if (earlier.length > 0) w.fact(comp, 'based_on', pick(rng, earlier));
    }
  }
  const painters = w.of('person', 'painter');
  const museums = w.of('organization', 'museum');
  const paintingNamesakes = Math.round(c.paintings * 0.06);
  for (let i = 0; i < c.paintings; i++) {
    let title: string;
    let twin: Ent | undefined;
    if (i < paintingNamesakes) {
      // A painting sharing a novel's title: the kind ("the painting"/"the novel") disambiguates.
      twin = novels.find((n) => !n.namesake && n.name.startsWith('The ') && chance(rng, 0.2));
    }
    if (twin) title = twin.name;
    else title = workTitle(w, 'painting');
    const p = pick(rng, painters);
    const painting = w.add('painting', pick(rng, ['oil', 'oil', 'tempera', 'watercolour']), title, activeYear(w, p, 18, 70));
    if (twin) twin.namesake = painting.namesake = true;
    w.fact(painting, 'painter', p);
    if (chance(rng, 0.7)) w.fact(painting, 'held_by', pick(rng, museums));
  }
  const engineers = w.of('person', 'engineer');
  const riverTowns = towns.filter((t) => w.obj(t, 'located_on'));
  const rivers = w.of('river');
  for (let i = 0; i < c.bridges; i++) {
    const e = pick(rng, engineers);
    const b = w.add('bridge', pick(rng, BRIDGE_FORM), names.named((x) => `${x} Bridge`), activeYear(w, e, 25, 60), true);
    b.num = intIn(rng, 18, 420);
    w.fact(b, 'designer', e);
    if (riverTowns.length > 0 && chance(rng, 0.8)) {
      // A town bridge crosses the river the town stands on, so the two facts agree.
      const t = townBy(w, riverTowns, b.year);
      w.fact(b, 'crosses', w.obj(t, 'located_on') as Ent);
      w.fact(b, 'located_in', t);
    } else {
      w.fact(b, 'crosses', pick(rng, rivers));
    }
  }
  // A best-known work makes works reachable as answers ("the best-known work of X").
  for (const p of w.of('person')) {
    const works = [...w.subjects(p, 'author'), ...w.subjects(p, 'composer'), ...w.subjects(p, 'painter'), ...w.subjects(p, 'designer')];
    if (works.length > 0 && chance(rng, 0.6)) w.fact(p, 'best_known_for', pick(rng, works));
  }
  const artists = w.ents.filter((p) => p.kind === 'person' && ['composer', 'novelist', 'painter'].includes(p.type));
  for (let i = 0; i < c.festivals; i++) {
    const type = pick(rng, FESTIVAL_TYPE);
    const t = pick(rng, towns);
    const f = w.add('festival', type.toLowerCase(), names.named((x) => `${x} ${type} Festival`), intIn(rng, 1700, 2000), true);
    w.fact(f, 'held_in', t);
    if (chance(rng, 0.7)) {
      const natives = w.subjects(t, 'born_in').filter((p) => artists.includes(p));
      const p = natives.length > 0 && chance(rng, 0.6) ? pick(rng, natives) : pick(rng, artists);
      f.year = Math.min(2010, (p.endYear ?? p.year + 60) + intIn(rng, 5, 60));
      w.fact(f, 'honours', p);
    }
  }
}

// ---------------------------------------------------------------- passages

class PassageBuilder {
  readonly sentences: Sentence[] = [];
  constructor(readonly w: World, readonly entity: Ent, readonly title: string) {}

  say(text: string, facts: SynthFact[] = [], essential = facts.length > 0): void {
    this.sentences.push({ text: capitalize(text), facts, essential });
  }

  /** 2-5 sentences: pad with flavour, then drop optional sentences from the end. */
  finish(filler: () => string): Passage {
    while (this.sentences.length < 2) this.say(filler(), [], false);
    for (let i = this.sentences.length - 1; i >= 0 && this.sentences.length > 5; i--) {
      if (!(this.sentences[i] as Sentence).essential) this.sentences.splice(i, 1);
    }
    if (this.sentences.length > 5) throw new Error(`${this.entity.id}: too many essential sentences`);
    return { entity: this.entity, title: this.title, sentences: this.sentences };
  }
}

function firstFew(w: World, items: Ent[], n = 3): string {
  return list(items.slice(0, n).map((e) => w.mention(e)));
}

function personPassage(w: World, p: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, p, p.namesake ? `${p.name} (${p.type})` : p.name);
  const He = p.he === 'she' ? 'She' : 'He';
  const he = He.toLowerCase();
  const His = p.he === 'she' ? 'Her' : 'His';
  const occ = pick(rng, PERSON_ADJ) + p.type;
  const town = w.factOf(p, 'born_in');
  const t = w.mention(w.ent(town.object));
  // The parenthesized-dates form is skipped for namesake towns, which carry parentheses of their own.
  const v = w.ent(town.object).namesake ? 2 * rng.int(2) : rng.int(3);
  b.say(v === 0 ? `${p.name} (${p.year}–${p.endYear}) was ${an(occ)} born in ${t}.`
    : v === 1 ? `${p.name} (born ${p.year} in ${t}; died ${p.endYear}) was ${an(occ)}.`
      : `${p.name} was ${an(occ)}, born in ${t} in ${p.year}, who died in ${p.endYear}.`, [town]);
  const uni = w.obj(p, 'educated_at');
  const tch = w.obj(p, 'teacher');
  if (uni && tch) {
    const facts = [w.factOf(p, 'educated_at'), w.factOf(p, 'teacher')];
    b.say(chance(rng, 0.5) ? `${He} studied at ${w.mention(uni)}, where ${he} trained under ${w.mention(tch)}.`
      : `After studying at ${w.mention(uni)}, ${he} became a pupil of ${w.mention(tch)}.`, facts);
  } else if (uni) {
    b.say(`${He} ${chance(rng, 0.5) ? 'was educated' : 'studied'} at ${w.mention(uni)}.`, [w.factOf(p, 'educated_at')]);
  } else if (tch) {
    b.say(`${He} ${chance(rng, 0.5) ? 'trained under' : 'was a pupil of'} ${w.mention(tch)}.`, [w.factOf(p, 'teacher')]);
  }
  if (p.alias) b.say(`${He} ${chance(rng, 0.5) ? 'wrote under the pen name' : 'also published as'} ${p.alias}.`, [], true);
  const best = w.obj(p, 'best_known_for');
  if (best) {
    b.say(chance(rng, 0.5) ? `${He} is best known for ${w.mention(best, true)}.`
      : `${His} best-known work is ${w.mention(best, true)}.`, [w.factOf(p, 'best_known_for')]);
  }
  const spouse = w.obj(p, 'spouse');
  if (spouse) b.say(chance(rng, 0.5) ? `${He} married ${w.mention(spouse)}.` : `${His} spouse was ${w.mention(spouse)}.`, [w.factOf(p, 'spouse')]);
  // Works and foundations (inverse facts): optional, so that not every multi-hop chain collapses into one passage.
  if (chance(rng, 0.7)) {
    const works = [...w.subjects(p, 'author'), ...w.subjects(p, 'composer'), ...w.subjects(p, 'painter')].filter((x) => x !== best);
    if (works.length > 0) b.say(`${His} ${p.type === 'composer' ? 'works' : p.type === 'painter' ? 'paintings' : 'novels'} include ${firstFew(w, works)}.`);
    const bridges = w.subjects(p, 'designer').filter((x) => x !== best);
    if (bridges.length > 0) b.say(`${He} designed ${firstFew(w, bridges, 2)}.`);
    const rivers = w.subjects(p, 'charted_by');
    if (rivers.length > 0) b.say(`${He} was the first to chart ${firstFew(w, rivers, 2)}.`);
    const peaks = w.subjects(p, 'first_climbed_by');
    if (peaks.length > 0) b.say(`${He} made the first ascent of ${firstFew(w, peaks, 2)}.`);
    const founded = w.subjects(p, 'founded_by');
    if (founded.length > 0) b.say(`${He} founded ${firstFew(w, founded, 2)}.`);
  }
  if (chance(rng, 0.4)) b.say(`${His} work was noted for its ${pick(rng, QUALITY[p.type] ?? ['craft'])}.`, [], false);
  return b.finish(() => `${His} work was noted for its ${pick(rng, QUALITY[p.type] ?? ['craft'])}.`);
}

function townPassages(w: World, t: Ent, history: boolean): Passage[] {
  const { rng } = w;
  const title = t.namesake ? `${t.name}, ${w.regionOf(t).name}` : t.name;
  const b = new PassageBuilder(w, t, title);
  const region = w.factOf(t, 'in_region');
  const r = w.mention(w.ent(region.object));
  const river = w.obj(t, 'located_on');
  const size = pick(rng, TOWN_SIZE);
  if (river) {
    const facts = [region, w.factOf(t, 'located_on')];
    const v = rng.int(3);
    b.say(v === 0 ? `${t.name} is ${an(size)} town in the province of ${r}, on ${w.mention(river)}.`
      : v === 1 ? `${t.name} is ${an(size)} town on the banks of ${w.mention(river)}, in the province of ${r}.`
        : `Lying on ${w.mention(river)}, ${t.name} is ${an(size)} town in ${r} province.`, facts);
  } else {
    b.say(`${t.name} is ${an(size)} town in the province of ${r}.`, [region]);
  }
  const founder = w.obj(t, 'founded_by');
  if (!history) {
    if (founder) {
      b.say(chance(rng, 0.5) ? `It was founded in ${t.year} by ${w.mention(founder)}.`
        : `${w.mention(founder)} founded the town in ${t.year}.`, [w.factOf(t, 'founded_by')]);
    } else if (chance(rng, 0.5)) {
      b.say(`It is first recorded in ${t.year}.`, [], false);
    }
  }
  if (t.alias) b.say(chance(rng, 0.5) ? `It was formerly known as ${t.alias}.` : `Until the ${century(t.year + 300)} century it was called ${t.alias}.`, [], true);
  const capitalOf = w.subjects(t, 'capital')[0];
  if (capitalOf) b.say(`It is the capital of ${w.mention(capitalOf)}.`);
  const filler = () => (chance(rng, 0.5) ? `The town has about ${t.num.toLocaleString('en-US')} inhabitants.`
    : `Its economy rests on ${pick(rng, INDUSTRY)}.`);
  if (chance(rng, 0.5)) b.say(filler(), [], false);
  const out = [b.finish(filler)];
  if (history) {
    const h = new PassageBuilder(w, t, `History of ${title}`);
    if (founder) h.say(`${t.name} was founded in ${t.year} by ${w.mention(founder)}.`, [w.factOf(t, 'founded_by')]);
    else h.say(`${t.name} is first recorded in ${t.year}.`, [], true);
    const natives = w.subjects(t, 'born_in');
    if (natives.length > 0) h.say(`Notable people born in the town include ${firstFew(w, natives)}.`);
    const fest = w.subjects(t, 'held_in')[0];
    if (fest) h.say(`Since ${fest.year} the town has hosted ${w.mention(fest)}.`);
    out.push(h.finish(() => `In the ${century(t.year + intIn(rng, 100, 400))} century the town grew around its ${pick(rng, FEATURE)}.`));
  }
  return out;
}

function regionPassage(w: World, r: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, r, r.name);
  const cap = w.factOf(r, 'capital');
  const c = w.mention(w.ent(cap.object));
  b.say(chance(rng, 0.5) ? `${r.name} is ${an(pick(rng, ['inland', 'coastal', 'upland', 'lowland']))} province whose capital is ${c}.`
    : `${r.name} is a province with its capital at ${c}.`, [cap]);
  if (r.alias) b.say(`It was historically known as ${r.alias}.`, [], true);
  const peaks = w.subjects(r, 'in_region').filter((e) => e.kind === 'mountain').sort((a, z) => z.num - a.num);
  if (peaks[0]) b.say(`Its highest peak is ${w.mention(peaks[0])}.`);
  const towns = w.subjects(r, 'in_region').filter((e) => e.kind === 'town' && e.id !== cap.object);
  if (towns.length > 0) b.say(`Other towns in the province include ${firstFew(w, towns)}.`);
  return b.finish(() => `The province is known for its ${pick(rng, PRODUCT)}.`);
}

function waterPassage(w: World, e: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, e, e.name);
  const m = w.mention(e);
  b.say(e.type === 'lake' ? `${m} is a freshwater lake covering about ${e.num} square kilometres.`
    : e.type === 'sea' ? `${m} is a shallow inland sea.` : `${m} is a wide gulf opening to the ocean.`);
  const rivers = w.subjects(e, 'flows_into');
  if (rivers.length > 0) b.say(`Rivers that flow into it include ${firstFew(w, rivers)}.`);
  return b.finish(() => `Its shores are known for ${pick(rng, ['reed beds', 'salt pans', 'fishing villages', 'migrating geese'])}.`);
}

function mountainPassage(w: World, e: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, e, e.name);
  const reg = w.factOf(e, 'in_region');
  b.say(`${e.name} is a mountain in the province of ${w.mention(w.ent(reg.object))}, rising to ${e.num} metres.`, [reg]);
  const climber = w.obj(e, 'first_climbed_by');
  if (climber) {
    b.say(chance(rng, 0.5) ? `It was first climbed by ${w.mention(climber)} in ${e.year}.`
      : `The first recorded ascent was made in ${e.year} by ${w.mention(climber)}.`, [w.factOf(e, 'first_climbed_by')]);
  }
  const rivers = w.subjects(e, 'rises_on');
  if (rivers.length > 0) b.say(`${firstFew(w, rivers, 2)} ${rivers.length > 1 ? 'rise' : 'rises'} on its slopes.`);
  return b.finish(() => `Its upper slopes are ${pick(rng, ['bare scree', 'covered in pine forest', 'snow-capped for most of the year'])}.`);
}

function riverPassage(w: World, e: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, e, e.name);
  const m = w.mention(e);
  const src = w.factOf(e, 'rises_on');
  const mouth = w.factOf(e, 'flows_into');
  const s = w.mention(w.ent(src.object));
  const d = w.mention(w.ent(mouth.object));
  if (chance(rng, 0.5)) {
    b.say(`${m} is a river about ${e.num} kilometres long that rises on ${s} and flows into ${d}.`, [src, mouth]);
  } else {
    b.say(`${m} rises on ${s}.`, [src]);
    b.say(`After about ${e.num} kilometres it flows into ${d}.`, [mouth]);
  }
  const charter = w.obj(e, 'charted_by');
  if (charter) b.say(`Its course was first charted by ${w.mention(charter)} in ${e.year}.`, [w.factOf(e, 'charted_by')]);
  if (e.alias) b.say(`In its upper reaches it is known as the ${e.alias}.`, [], true);
  const towns = w.subjects(e, 'located_on');
  if (towns.length > 0) b.say(`Towns on its banks include ${firstFew(w, towns)}.`);
  return b.finish(() => `It is navigable by ${pick(rng, ['barges', 'small boats', 'rafts'])} for much of its length.`);
}

function organizationPassage(w: World, o: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, o, o.name);
  const desc = { university: 'university', museum: 'art museum', 'shipping company': 'shipping company',
    'publishing house': 'publishing house', orchestra: 'orchestra', 'learned society': 'learned society' }[o.type] ?? o.type;
  const hq = w.factOf(o, 'headquartered_in');
  const t = w.mention(w.ent(hq.object));
  const f = w.obj(o, 'founded_by');
  const m = w.mention(o);
  if (f) {
    const facts = [hq, w.factOf(o, 'founded_by')];
    b.say(chance(rng, 0.5) ? `${m} is ${an(desc)} in ${t}, founded in ${o.year} by ${w.mention(f)}.`
      : `Founded by ${w.mention(f)} in ${o.year}, ${m} is ${an(desc)} based in ${t}.`, facts);
  } else {
    b.say(`${m} is ${an(desc)} in ${t}, established in ${o.year}.`, [hq]);
  }
  const held = w.subjects(o, 'held_by');
  if (held.length > 0) b.say(`Its collection includes ${firstFew(w, held)}.`);
  const alumni = w.subjects(o, 'educated_at');
  if (alumni.length > 0 && chance(rng, 0.6)) b.say(`Its alumni include ${firstFew(w, alumni, 2)}.`);
  return b.finish(() => `It is known for its ${pick(rng, ['archives', 'public lectures', 'annual reports', 'library', 'touring programme'])}.`);
}

function novelPassage(w: World, n: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, n, n.namesake ? `${n.name} (novel)` : n.name);
  const a = w.factOf(n, 'author');
  const am = w.mention(w.ent(a.object));
  b.say(chance(rng, 0.5) ? `${n.name} is a novel by ${am}, first published in ${n.year}.`
    : `Published in ${n.year}, ${n.name} is a novel by ${am}.`, [a]);
  const setting = w.obj(n, 'set_in');
  if (setting) b.say(`${chance(rng, 0.5) ? 'The story is set in' : 'It takes place in'} ${w.mention(setting)}.`, [w.factOf(n, 'set_in')]);
  const plot = () => `It follows ${pick(rng, PLOT_WHO)} who ${pick(rng, PLOT_WHAT)}.`;
  if (chance(rng, 0.7)) b.say(plot(), [], false);
  const opera = w.subjects(n, 'based_on')[0];
  if (opera) b.say(`It was adapted as ${w.mention(opera, true)}.`);
  return b.finish(plot);
}

function compositionPassage(w: World, c: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, c, c.name);
  const comp = w.factOf(c, 'composer');
  const cm = w.mention(w.ent(comp.object));
  const m = w.mention(c);
  const town = w.obj(c, 'premiered_in');
  if (town) b.say(`${m} is ${an(c.type)} by ${cm}, first performed in ${w.mention(town)} in ${c.year}.`, [comp, w.factOf(c, 'premiered_in')]);
  else b.say(`${m} is ${an(c.type)} by ${cm}, written in ${c.year}.`, [comp]);
  const novel = w.obj(c, 'based_on');
  if (novel) b.say(`Its libretto is based on ${w.mention(novel, true)}.`, [w.factOf(c, 'based_on')]);
  const filler = () => (c.type === 'opera' ? `It is in ${intIn(rng, 2, 5)} acts.`
    : c.type === 'symphony' ? `It is in ${intIn(rng, 3, 5)} movements.` : `It is scored for ${pick(rng, ENSEMBLE)}.`);
  if (chance(rng, 0.6)) b.say(filler(), [], false);
  return b.finish(filler);
}

function paintingPassage(w: World, p: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, p, p.namesake ? `${p.name} (painting)` : p.name);
  const pf = w.factOf(p, 'painter');
  b.say(`${p.name} is ${an(p.type)} painting by ${w.mention(w.ent(pf.object))}, completed in ${p.year}.`, [pf]);
  const museum = w.obj(p, 'held_by');
  if (museum) b.say(`It ${chance(rng, 0.5) ? 'hangs in' : 'is held by'} ${w.mention(museum)}.`, [w.factOf(p, 'held_by')]);
  return b.finish(() => `It shows ${pick(rng, SCENE)}.`);
}

function bridgePassage(w: World, e: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, e, e.name);
  const m = w.mention(e);
  const cr = w.factOf(e, 'crosses');
  const river = w.mention(w.ent(cr.object));
  const town = w.obj(e, 'located_in');
  if (town) b.say(`${m} is ${an(e.type)} bridge that crosses ${river} at ${w.mention(town)}.`, [cr, w.factOf(e, 'located_in')]);
  else b.say(`${m} is ${an(e.type)} bridge across ${river}.`, [cr]);
  const d = w.factOf(e, 'designer');
  b.say(`It was designed by ${w.mention(w.ent(d.object))} and completed in ${e.year}.`, [d]);
  return b.finish(() => `Its main span is ${e.num} metres long.`);
}

function festivalPassage(w: World, f: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, f, f.name);
  const h = w.factOf(f, 'held_in');
  b.say(`${w.mention(f)} is an annual ${f.type} festival held in ${w.mention(w.ent(h.object))}.`, [h]);
  const p = w.obj(f, 'honours');
  if (p) {
    b.say(chance(rng, 0.5) ? `It was established in ${f.year} in honour of ${w.mention(p)}.`
      : `It was founded in ${f.year} to commemorate ${w.mention(p)}.`, [w.factOf(f, 'honours')]);
  } else {
    b.say(`It was first held in ${f.year}.`, [], false);
  }
  return b.finish(() => `It draws visitors for ${pick(rng, ['its night processions', 'open-air concerts', 'a market of local crafts', 'boat races'])}.`);
}

function writePassages(w: World, histories: number): Passage[] {
  const towns = w.of('town');
  // Histories go to the towns with most to tell, so that their founding facts sit in a second passage.
  const withHistory = new Set(
    [...towns].sort((a, z) => (w.inc.get(z.id)?.length ?? 0) - (w.inc.get(a.id)?.length ?? 0)).slice(0, histories).map((t) => t.id),
  );
  const out: Passage[] = [];
  for (const e of w.ents) {
    switch (e.kind) {
      case 'person': out.push(personPassage(w, e)); break;
      case 'town': out.push(...townPassages(w, e, withHistory.has(e.id))); break;
      case 'region': out.push(regionPassage(w, e)); break;
      case 'water': out.push(waterPassage(w, e)); break;
      case 'mountain': out.push(mountainPassage(w, e)); break;
      case 'river': out.push(riverPassage(w, e)); break;
      case 'organization': out.push(organizationPassage(w, e)); break;
      case 'novel': out.push(novelPassage(w, e)); break;
      case 'composition': out.push(compositionPassage(w, e)); break;
      case 'painting': out.push(paintingPassage(w, e)); break;
      case 'bridge': out.push(bridgePassage(w, e)); break;
      case 'festival': out.push(festivalPassage(w, e)); break;
    }
  }
  return out;
}

// ---------------------------------------------------------------- questions and seeds

/** A random chain of `hops` facts ending at `answer`, built backwards as the proposer does; distinct entities. */
function backChain(w: World, answer: Ent, hops: number): SynthFact[] | null {
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
function reachable(w: World, id: string, hops: number, seen: Set<string>): boolean {
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

function phrase(w: World, path: SynthFact[]): { question: string; start: StartRef } {
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
function leaks(w: World, question: string, path: SynthFact[]): boolean {
  const q = question.toLowerCase();
  return path.some((f) => goldenAnswers(w.ent(f.object)).some((s) => q.includes(s.toLowerCase())));
}

function normalize(s: string): string {
  return s.toLowerCase().replace(/[^\p{L}\p{N} ]/gu, ' ').replace(/\b(a|an|the)\b/g, ' ').replace(/\s+/g, ' ').trim();
}

function makeHeldOut(w: World, perHop: number, idFor: (p: Passage) => string, passageOf: Map<SynthFact, Passage>): HeldOutQuestion[] {
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

function makeSeeds(w: World, heldOut: HeldOutQuestion[]): AnswerSeed[] {
  const taken = new Set(heldOut.flatMap((q) => q.golden_answers.map(normalize)));
  const seen = new Set<string>();
  const count = [0, 0, 0];
  const seeds: AnswerSeed[] = [];
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

// ---------------------------------------------------------------- entry points

export function generateSyntheticCorpus(opts: SyntheticCorpusOptions): SyntheticCorpus {
  const n = opts.passages ?? 2400;
  if (!Number.isInteger(n) || n < 300) throw new Error(`synthetic corpus: passages must be an integer ≥ 300, got ${n}`);
  if (!Number.isInteger(opts.seed)) throw new Error(`synthetic corpus: seed must be an integer, got ${opts.seed}`);
  const perHop = opts.heldOutPerHop ?? Math.round(n / 16);
  const c = plan(n);
  const w = new World(opts.seed);
  buildPeople(w, c.persons);
  buildGeography(w, c);
  buildOrganizations(w, c);
  buildWorks(w, c);

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
