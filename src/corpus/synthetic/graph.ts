// The world builder: the entity graph under construction (entities, functional facts indexed both ways, the
// one random stream every later phase draws from) and how text refers to an entity (passage mentions, the
// structured reference a question starts from). Named WorldBuilder, not World, so that it is not confused
// with src/world/world.ts, the runtime world built on a finished corpus.
import { Rng } from '../../util/rng.js';
import type { Relation } from '../questions.js';
import { chance, NameRegistry } from '../vocab.js';
import type { EntityKind, StartRef, SynthEntity, SynthFact } from './types.js';

/** An entity with the generator's private fields (stripped from the output). */
export interface Ent extends SynthEntity {
  article: boolean;
  /** Population, length, height, span ... for flavour sentences. */
  num: number;
  /** Pronoun pair for people. */
  he?: 'he' | 'she';
}

export class WorldBuilder {
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
