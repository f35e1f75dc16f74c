// Building the entity graph, phase by phase: how many entities of each kind a size asks for (plan), then
// people (namesakes, teachers, marriages), geography (provinces, waters, mountains, rivers, towns, capitals,
// founders, birthplaces), organizations and works, each adding functional facts. The phases draw from the
// builder's one random stream in a fixed order, so a seed and size give the same graph (test/corpus-synthetic-digest.test.ts).
import { capitalize } from '../questions.js';
import {
  chance, intIn, PAINT_TIME, pick, TITLE_ADJ, TITLE_NOUN, TOWN_SUFFIX,
} from '../vocab.js';
import { an } from './english.js';
import type { Ent, WorldBuilder } from './graph.js';

const OCCUPATIONS: ReadonlyArray<readonly [string, number]> = [
  ['novelist', 0.22], ['composer', 0.16], ['painter', 0.14], ['engineer', 0.09], ['explorer', 0.09],
  ['merchant', 0.16], ['scholar', 0.14],
];

const BRIDGE_FORM = ['stone arch', 'cast-iron', 'timber trestle', 'suspension', 'brick arch', 'swing'];
const FESTIVAL_TYPE = ['Music', 'Lantern', 'Harvest', 'River', 'Choral', 'Kite', 'Book'];
const ORG_TYPES = ['shipping company', 'publishing house', 'orchestra', 'learned society'] as const;

export interface Counts {
  regions: number; waters: number; mountains: number; rivers: number; towns: number; universities: number;
  museums: number; otherOrgs: number; novels: number; compositions: number; paintings: number; bridges: number;
  festivals: number; persons: number; histories: number;
}

export function plan(passages: number): Counts {
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

function buildPeople(w: WorldBuilder, count: number): void {
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

function buildGeography(w: WorldBuilder, c: Counts): void {
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
function townBy(w: WorldBuilder, towns: Ent[], year: number): Ent {
  for (let k = 0; k < 40; k++) {
    const t = pick(w.rng, towns);
    if (t.year < year) return t;
  }
  return towns.find((t) => t.year < year) ?? (towns[0] as Ent);
}

function activeYear(w: WorldBuilder, p: Ent, from: number, to: number): number {
  const end = p.endYear ?? p.year + 60;
  return Math.min(end, p.year + intIn(w.rng, from, to));
}

function buildOrganizations(w: WorldBuilder, c: Counts): void {
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

function workTitle(w: WorldBuilder, kind: 'novel' | 'painting'): string {
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

function buildWorks(w: WorldBuilder, c: Counts): void {
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

/** All four phases, in the order whose random draws the pinned digests fix. */
export function buildEntityGraph(w: WorldBuilder, c: Counts): void {
  buildPeople(w, c.persons);
  buildGeography(w, c);
  buildOrganizations(w, c);
  buildWorks(w, c);
}
