// The passages' text: one passage per entity (two for the towns with a history), 2-5 sentences, each sentence
// carrying the facts it states so that every fact lands in a passage of its subject naming its object.
// Essential sentences (facts, aliases) always stay; flavour sentences pad or are dropped.
import { capitalize } from '../questions.js';
import { chance, intIn, pick } from '../vocab.js';
import { an, century, list } from './english.js';
import type { Ent, WorldBuilder } from './graph.js';
import type { SynthFact } from './types.js';

export interface Sentence {
  text: string;
  facts: SynthFact[];
  essential: boolean;
}

export interface Passage {
  entity: Ent;
  title: string;
  sentences: Sentence[];
}

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

class PassageBuilder {
  readonly sentences: Sentence[] = [];
  constructor(readonly w: WorldBuilder, readonly entity: Ent, readonly title: string) {}

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

function firstFew(w: WorldBuilder, items: Ent[], n = 3): string {
  return list(items.slice(0, n).map((e) => w.mention(e)));
}

function personPassage(w: WorldBuilder, p: Ent): Passage {
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

function townPassages(w: WorldBuilder, t: Ent, history: boolean): Passage[] {
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

function regionPassage(w: WorldBuilder, r: Ent): Passage {
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

function waterPassage(w: WorldBuilder, e: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, e, e.name);
  const m = w.mention(e);
  b.say(e.type === 'lake' ? `${m} is a freshwater lake covering about ${e.num} square kilometres.`
    : e.type === 'sea' ? `${m} is a shallow inland sea.` : `${m} is a wide gulf opening to the ocean.`);
  const rivers = w.subjects(e, 'flows_into');
  if (rivers.length > 0) b.say(`Rivers that flow into it include ${firstFew(w, rivers)}.`);
  return b.finish(() => `Its shores are known for ${pick(rng, ['reed beds', 'salt pans', 'fishing villages', 'migrating geese'])}.`);
}

function mountainPassage(w: WorldBuilder, e: Ent): Passage {
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

function riverPassage(w: WorldBuilder, e: Ent): Passage {
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

function organizationPassage(w: WorldBuilder, o: Ent): Passage {
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

function novelPassage(w: WorldBuilder, n: Ent): Passage {
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

function compositionPassage(w: WorldBuilder, c: Ent): Passage {
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

function paintingPassage(w: WorldBuilder, p: Ent): Passage {
  const { rng } = w;
  const b = new PassageBuilder(w, p, p.namesake ? `${p.name} (painting)` : p.name);
  const pf = w.factOf(p, 'painter');
  b.say(`${p.name} is ${an(p.type)} painting by ${w.mention(w.ent(pf.object))}, completed in ${p.year}.`, [pf]);
  const museum = w.obj(p, 'held_by');
  if (museum) b.say(`It ${chance(rng, 0.5) ? 'hangs in' : 'is held by'} ${w.mention(museum)}.`, [w.factOf(p, 'held_by')]);
  return b.finish(() => `It shows ${pick(rng, SCENE)}.`);
}

function bridgePassage(w: WorldBuilder, e: Ent): Passage {
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

function festivalPassage(w: WorldBuilder, f: Ent): Passage {
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

export function writePassages(w: WorldBuilder, histories: number): Passage[] {
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
