// Word tables for the synthetic encyclopedia. Every name is assembled from invented syllables so that the
// corpus is plainly fictional and no fact in it can be answered from a model's pretraining memory: the
// solver must search. A registry keeps every name and root unique unless a namesake is made on purpose.
import type { Rng } from '../util/rng.js';

export function pick<T>(rng: Rng, items: readonly T[]): T {
  const v = items[rng.int(items.length)];
  if (v === undefined) throw new Error('pick from an empty list');
  return v;
}

export function chance(rng: Rng, p: number): boolean {
  return rng.next() < p;
}

/** Uniform integer in [lo, hi]. */
export function intIn(rng: Rng, lo: number, hi: number): number {
  return hi <= lo ? lo : lo + rng.int(hi - lo + 1);
}

export function shuffle<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const a = items[i] as T;
    items[i] = items[j] as T;
    items[j] = a;
  }
  return items;
}

// Place-like roots: PRE + (INNER) + END, e.g. "Kesteria", "Valund", "Drevimar".
const ROOT_PRE = [
  'Al', 'Bel', 'Cor', 'Dar', 'El', 'Fal', 'Gor', 'Hal', 'Is', 'Jor', 'Kal', 'Lor', 'Mar', 'Nor', 'Or', 'Pel',
  'Quar', 'Ros', 'Sar', 'Tal', 'Ul', 'Val', 'Wes', 'Yr', 'Zan', 'Bry', 'Cal', 'Dun', 'Esk', 'Fen', 'Gal', 'Hes',
  'Ivr', 'Kest', 'Lun', 'Mor', 'Ness', 'Oth', 'Pry', 'Rav', 'Sel', 'Thar', 'Ver', 'Wyl', 'Zel', 'Brin', 'Cael',
  'Drev', 'Ferr', 'Grim', 'Hald', 'Ost', 'Tov', 'Umb', 'Vask', 'Yst',
] as const;
const ROOT_INNER = ['an', 'er', 'ol', 'is', 'um', 'ev', 'ar', 'im', 'od', 'ul', 'en', 'ith'] as const;
const ROOT_END = [
  'a', 'en', 'or', 'is', 'ane', 'ith', 'ow', 'ar', 'ell', 'ion', 'ara', 'eth', 'und', 'ive', 'oth', 'ia', 'ey',
  'ur', 'esk', 'ent', 'avel', 'ine', 'ost', 'imar', 'onde', 'ira', 'ulm', 'essa', 'ay', 'orn',
] as const;
// Real words or well-known names the tables can spell; skipped so that nothing reads as real-world.
const ROOT_BLOCK = new Set([
  'galen', 'ellen', 'corey', 'moray', 'dara', 'mara', 'nora', 'sara', 'isis', 'orion', 'alia', 'calla', 'fenris',
  'gala', 'pelor', 'marine', 'marion', 'salon', 'talon', 'valor', 'morow', 'moray', 'dunen', 'helen', 'elia',
  'ostend', 'orient', 'vera', 'yara', 'zelda', 'ulla', 'ella', 'ellor', 'calor', 'lorene', 'marane', 'talent',
  'maris', 'malia', 'norway', 'galway', 'delay', 'fenor', 'grima', 'kalis', 'sarah', 'selena', 'ferris', 'morena',
]);

const GIVEN_PRE = [
  'Ad', 'Bri', 'Cas', 'Del', 'Ede', 'Fio', 'Gil', 'Hen', 'Ilo', 'Jas', 'Kir', 'Lis', 'Mab', 'Nev', 'Ost', 'Per',
  'Rho', 'Sab', 'Tib', 'Una', 'Vel', 'Wil', 'Yse', 'Zef', 'Aud', 'Cor', 'Emm', 'Ios', 'Lev', 'Orr',
] as const;
const GIVEN_END = ['ric', 'ela', 'an', 'wen', 'ora', 'ius', 'elle', 'ine', 'bert', 'mund', 'isa', 'ard', 'eth', 'olde'] as const;
const FAMILY_PRE = [
  'Ash', 'Bram', 'Corr', 'Dal', 'Ev', 'Fair', 'Grey', 'Holl', 'Ing', 'Jess', 'Kell', 'Lang', 'Merr', 'Nash', 'Orm',
  'Pell', 'Quin', 'Rook', 'Strand', 'Tarr', 'Upp', 'Vand', 'Wick', 'Yarr', 'Thorn', 'Brack', 'Mosk', 'Ferl',
] as const;
const FAMILY_END = [
  'ester', 'worth', 'mere', 'ard', 'ing', 'ell', 'ridge', 'well', 'cott', 'acre', 'holt', 'gale', 'stone', 'aby',
  'ovic', 'ander', 'ström', 'erin',
] as const;
// Combinations that spell real given names, places or common surnames: skipped so full names read as invented.
const GIVEN_BLOCK = new Set([
  'delan', 'bribert', 'emmine', 'henric', 'lisa', 'lisela', 'adric', 'persius', 'orrwen', 'casius', 'adela', 'adelle',
  'adine', 'adan', 'adora', 'brian', 'brielle', 'brine', 'delbert', 'gilbert', 'kiran', 'mabelle', 'sabine', 'wilbert',
  'corine', 'corelle', 'levine', 'nevine', 'coran', 'corwen', 'gilan', 'henan', 'levan', 'fiora', 'nevan', 'saban',
  'sabela', 'ysela', 'velma', 'audine', 'emman', 'wilard', 'delora', 'gilard',
]);
const FAMILY_BLOCK = new Set([
  'ashworth', 'ashwell', 'grayling', 'merrell', 'pellwell', 'wickard', 'dalton', 'holloway', 'thornaby', 'hollander',
  'evander', 'bramwell', 'langridge', 'langworth', 'langstone', 'ashridge', 'tarring', 'greystone', 'pelling',
  'kelling', 'holling', 'fairing', 'wicking', 'tarrell', 'yarrell', 'quinell', 'everin', 'thornwell', 'moskovic',
]);

export const TOWN_SUFFIX = ['holm', 'wick', 'stead', 'mere', 'ford', 'bury', 'haven', 'by', 'thorpe', 'gate', 'dale', 'minster'] as const;

export const TITLE_ADJ = [
  'Glass', 'Silent', 'Amber', 'Hollow', 'Winter', 'Crimson', 'Last', 'Salt', 'Iron', 'Paper', 'Sleeping', 'Distant',
  'Painted', 'Ashen', 'Copper', 'Quiet', 'Drowned', 'Seventh', 'Borrowed', 'Lantern-lit', 'Unfinished', 'Wandering',
  'Northern', 'Velvet', 'Broken', 'Patient', 'Tidal', 'Forgotten', 'Golden', 'Restless',
] as const;
export const TITLE_NOUN = [
  'Orchard', 'Harbour', 'Lantern', 'Ferryman', 'Cartographer', 'Meadow', 'Tower', 'Garden', 'Bell', 'Archive',
  'Weaver', 'Mirror', 'Tide', 'Compass', 'Orchid', 'Clockmaker', 'Pilgrim', 'Vineyard', 'Lighthouse', 'Granary',
  'Lockkeeper', 'Glassblower', 'Chandler', 'Heron', 'Quarry', 'Observatory', 'Saltmarsh', 'Beekeeper', 'Ropewalk',
  'Almanac',
] as const;
export const PAINT_TIME = ['Dusk', 'Dawn', 'Noon', 'Low Tide', 'First Frost', 'Midsummer', 'Vespers', 'Thaw', 'Harvest'] as const;

/** Keeps names unique: a name or root is handed out once unless `claim(name, true)` reuses it on purpose. */
export class NameRegistry {
  private readonly names = new Set<string>();
  private readonly roots = new Set<string>();
  private readonly givens: string[] = [];
  private readonly families: string[] = [];

  constructor(private readonly rng: Rng) {
    for (const a of GIVEN_PRE) for (const b of GIVEN_END) {
      const g = a.endsWith(b[0] ?? '') ? a + b.slice(1) : a + b;
      if (!GIVEN_BLOCK.has(g.toLowerCase())) this.givens.push(g);
    }
    for (const a of FAMILY_PRE) for (const b of FAMILY_END) {
      const f = a + (a.endsWith(b[0] ?? '') ? b.slice(1) : b);
      if (!FAMILY_BLOCK.has(f.toLowerCase())) this.families.push(f);
    }
  }

  has(name: string): boolean {
    return this.names.has(name.toLowerCase());
  }

  /** Registers a name; false when it is taken. */
  claim(name: string): boolean {
    const k = name.toLowerCase();
    if (this.names.has(k)) return false;
    this.names.add(k);
    return true;
  }

  /** A fresh place-like root, never handed out before (also never equal to a taken name). */
  root(): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const pre = pick(this.rng, ROOT_PRE);
      const inner = chance(this.rng, 0.45) ? pick(this.rng, ROOT_INNER) : '';
      let end: string = pick(this.rng, ROOT_END);
      // Avoid doubled vowels at the joint ("Ulaa") which read as typos.
      const left = pre + inner;
      if (/[aeiou]$/i.test(left) && /^[aeiou]/.test(end)) end = end.slice(1) || 'n';
      const r = left + end;
      const k = r.toLowerCase();
      // Repeated syllables ("Ulululm") read as stutters, not names.
      if (r.length < 4 || r.length > 10 || /(..)\1/.test(k) || ROOT_BLOCK.has(k) || this.roots.has(k) || this.names.has(k)) continue;
      this.roots.add(k);
      return r;
    }
    throw new Error('name tables exhausted');
  }

  /** A unique name built as `make(root)`, claimed in the registry. */
  named(make: (root: string) => string): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const n = make(this.root());
      if (this.claim(n)) return n;
    }
    throw new Error('name tables exhausted');
  }

  /** A fresh "Given Family" person name. */
  person(): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const n = `${pick(this.rng, this.givens)} ${pick(this.rng, this.families)}`;
      if (this.claim(n)) return n;
    }
    throw new Error('name tables exhausted');
  }
}
