// ZebraLogic-style puzzles (docs/recipes.md): houses in a row, attributes whose values are each in exactly one
// house, and clues of seven types. An exact solver counts solutions (up to a cap), which proves uniqueness;
// a generator adds true clues to a random solution until the solver finds exactly one solution, then drops
// every clue that is not needed; a checker grades an answer against the hidden solution.
import type { Rng } from '../../util/rng.js';

export const CLUE_TYPES = ['found_at', 'not_at', 'same_house', 'not_same_house', 'directly_left_of', 'left_of', 'next_to'] as const;
export type ClueType = (typeof CLUE_TYPES)[number];

/** A value of an attribute: [attribute, value]. */
export type Ref = [string, string];

export type Clue =
  | { type: 'found_at' | 'not_at'; x: Ref; house: number }
  | { type: 'same_house' | 'not_same_house' | 'directly_left_of' | 'left_of' | 'next_to'; x: Ref; y: Ref };

export interface ZebraPuzzle {
  houses: number;
  /** Attribute → its values (as many as houses), in the order they are listed to the solver. */
  attributes: Record<string, string[]>;
  clues: Clue[];
}

/** Attribute → the value in house 1, 2, ... (index 0 = house 1). */
export type ZebraSolution = Record<string, string[]>;

const UNARY = new Set<ClueType>(['found_at', 'not_at']);

/** Houses are numbered from 1; `a`, `b` are 0-based positions. */
function holds(type: ClueType, a: number, b: number): boolean {
  switch (type) {
    case 'found_at':
    case 'same_house':
      return a === b;
    case 'not_at':
    case 'not_same_house':
      return a !== b;
    case 'directly_left_of':
      return a + 1 === b;
    case 'left_of':
      return a < b;
    case 'next_to':
      return Math.abs(a - b) === 1;
  }
}

/** Every problem with a puzzle's structure (empty = well-formed). */
export function puzzleProblems(p: ZebraPuzzle): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(p.houses) || p.houses < 2 || p.houses > 8) problems.push(`houses must be an integer in 2..8, got ${p.houses}`);
  const attrs = Object.entries(p.attributes ?? {});
  if (attrs.length < 2 || attrs.length > 8) problems.push(`2 to 8 attributes are needed, got ${attrs.length}`);
  for (const [a, vs] of attrs) {
    if (!Array.isArray(vs) || vs.length !== p.houses) problems.push(`attribute ${a} must list exactly ${p.houses} values`);
    else if (new Set(vs).size !== vs.length || vs.some((v) => typeof v !== 'string' || v.trim() === '')) problems.push(`attribute ${a} must list distinct non-empty values`);
  }
  if (!Array.isArray(p.clues) || p.clues.length === 0 || p.clues.length > 200) problems.push('clues must be an array of 1 to 200 clues');
  const known = (r: unknown): boolean => Array.isArray(r) && r.length === 2 && (p.attributes[r[0] as string] ?? []).includes(r[1] as string);
  (Array.isArray(p.clues) ? p.clues : []).forEach((c, i) => {
    if (typeof c !== 'object' || c === null || !CLUE_TYPES.includes(c.type)) problems.push(`clues[${i}].type must be one of ${CLUE_TYPES.join(', ')}`);
    else if (!known(c.x)) problems.push(`clues[${i}].x must be [attribute, value] of the puzzle`);
    else if (UNARY.has(c.type)) {
      const h = (c as { house: number }).house;
      if (!Number.isInteger(h) || h < 1 || h > p.houses) problems.push(`clues[${i}].house must be in 1..${p.houses}`);
    } else if (!known((c as { y: Ref }).y)) problems.push(`clues[${i}].y must be [attribute, value] of the puzzle`);
    else if ((c as { y: Ref }).y[0] === c.x[0] && (c as { y: Ref }).y[1] === c.x[1]) problems.push(`clues[${i}] relates a value to itself`);
  });
  return problems;
}

/** Problems with a solution's shape: every attribute a permutation of its values. */
export function solutionProblems(p: ZebraPuzzle, s: unknown): string[] {
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return ['the solution must be an object of attribute → values by house'];
  const sol = s as Record<string, unknown>;
  const problems: string[] = [];
  for (const [a, vs] of Object.entries(p.attributes)) {
    const got = sol[a];
    if (!Array.isArray(got) || got.length !== p.houses || [...got].map(String).sort().join('\u0000') !== [...vs].sort().join('\u0000')) {
      problems.push(`solution.${a} must list the values ${vs.join(', ')} in house order`);
    }
  }
  for (const a of Object.keys(sol)) if (!(a in p.attributes)) problems.push(`solution has an unknown attribute ${a}`);
  return problems;
}

function position(s: ZebraSolution, r: Ref): number {
  return (s[r[0]] ?? []).indexOf(r[1]);
}

/** Whether `s` (a well-formed solution) satisfies every clue. */
export function satisfies(p: ZebraPuzzle, s: ZebraSolution): boolean {
  return p.clues.every((c) => (UNARY.has(c.type) ? holds(c.type, position(s, c.x), (c as { house: number }).house - 1) : holds(c.type, position(s, c.x), position(s, (c as { y: Ref }).y))));
}

/**
 * Counts solutions up to `cap`: (attribute, value) → house, domains as bitmasks, the variable with the fewest
 * houses left placed first, and each placement filtering the domains of the values it constrains (its own
 * attribute's other values, and the other side of every clue it is in). Returns the count (≤ cap) and the
 * first solution found.
 */
export function countSolutions(p: ZebraPuzzle, cap = 2): { count: number; first?: ZebraSolution } {
  const attrs = Object.keys(p.attributes);
  const H = p.houses;
  const vars: Ref[] = attrs.flatMap((a) => (p.attributes[a] as string[]).map((v) => [a, v] as Ref));
  const index = new Map(vars.map((r, i) => [`${r[0]}\u0000${r[1]}`, i]));
  const idx = (r: Ref): number => index.get(`${r[0]}\u0000${r[1]}`) as number;
  const full = (1 << H) - 1;
  const start: number[] = vars.map(() => full);
  // links[i]: for each clue between i and j, the mask of j's houses allowed when i is in house h.
  const links: Array<Array<{ other: number; allowed: number[] }>> = vars.map(() => []);
  const maskWhere = (f: (b: number) => boolean): number => {
    let m = 0;
    for (let b = 0; b < H; b++) if (f(b)) m |= 1 << b;
    return m;
  };
  for (const c of p.clues) {
    const i = idx(c.x);
    if (UNARY.has(c.type)) {
      const h = (c as { house: number }).house - 1;
      start[i] = (start[i] as number) & maskWhere((a) => holds(c.type, a, h));
      continue;
    }
    const j = idx((c as { y: Ref }).y);
    links[i]?.push({ other: j, allowed: Array.from({ length: H }, (_, a) => maskWhere((b) => holds(c.type, a, b))) });
    links[j]?.push({ other: i, allowed: Array.from({ length: H }, (_, b) => maskWhere((a) => holds(c.type, a, b))) });
  }
  // Values of one attribute are in different houses: an all-different link to each sibling.
  const attrOf = vars.map((r) => attrs.indexOf(r[0]));
  const siblings = vars.map((_, i) => vars.map((__, j) => j).filter((j) => j !== i && attrOf[j] === attrOf[i]));
  const pos = new Array<number>(vars.length).fill(-1);
  let count = 0;
  let first: ZebraSolution | undefined;
  const search = (domains: number[], placed: number): void => {
    if (count >= cap) return;
    if (placed === vars.length) {
      count++;
      if (!first) {
        first = Object.fromEntries(attrs.map((a) => [a, new Array<string>(H).fill('')]));
        vars.forEach((r, i) => (((first as ZebraSolution)[r[0]] as string[])[pos[i] as number] = r[1]));
      }
      return;
    }
    let k = -1;
    let best = H + 1;
    for (let i = 0; i < vars.length; i++) {
      if (pos[i] !== -1) continue;
      const n = popcount(domains[i] as number);
      if (n < best) {
        best = n;
        k = i;
        if (n <= 1) break;
      }
    }
    if (best === 0) return;
    let m = domains[k] as number;
    while (m !== 0 && count < cap) {
      const h = 31 - Math.clz32(m & -m);
      m &= m - 1;
      const next = domains.slice();
      next[k] = 1 << h;
      let ok = true;
      for (const j of siblings[k] as number[]) {
        if (pos[j] !== -1) continue;
        next[j] = (next[j] as number) & ~(1 << h);
        if (next[j] === 0) ok = false;
      }
      for (const l of links[k] as Array<{ other: number; allowed: number[] }>) {
        next[l.other] = (next[l.other] as number) & (l.allowed[h] as number);
        if (next[l.other] === 0) ok = false;
      }
      if (!ok) continue;
      pos[k] = h;
      search(next, placed + 1);
      pos[k] = -1;
    }
  };
  search(start, 0);
  return first ? { count, first } : { count };
}

function popcount(x: number): number {
  let n = 0;
  for (let v = x; v !== 0; v &= v - 1) n++;
  return n;
}

export interface ZebraShape {
  houses: [number, number];
  attributes: [number, number];
  /** Clue types the finished puzzle must contain (the generator seeds one of each). */
  requiredClueTypes?: ClueType[];
}

const ATTRIBUTE_POOL: Record<string, string[]> = {
  Name: ['Alice', 'Bob', 'Carol', 'David', 'Eve', 'Frank', 'Grace', 'Hugo'],
  Pet: ['cat', 'dog', 'bird', 'fish', 'horse', 'rabbit', 'turtle', 'hamster'],
  Drink: ['tea', 'coffee', 'milk', 'juice', 'water', 'cocoa', 'soda', 'lemonade'],
  Hobby: ['chess', 'golf', 'painting', 'reading', 'cooking', 'hiking', 'gardening', 'fishing'],
  Color: ['red', 'green', 'blue', 'yellow', 'white', 'black', 'orange', 'purple'],
  Nationality: ['German', 'Japanese', 'Brazilian', 'Indian', 'French', 'Swedish', 'Kenyan', 'Mexican'],
  Sport: ['tennis', 'soccer', 'badminton', 'volleyball', 'cycling', 'rowing', 'boxing', 'skiing'],
};

function shuffle<T>(xs: T[], rng: Rng): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

const between = (rng: Rng, [lo, hi]: [number, number]): number => lo + rng.int(hi - lo + 1);

/** A random clue of `type` that is true of `s`, or undefined when none exists (e.g. no room to the left). */
function randomTrueClue(type: ClueType, s: ZebraSolution, H: number, rng: Rng): Clue | undefined {
  const attrs = Object.keys(s);
  const at = (a: string, h: number): Ref => [a, (s[a] as string[])[h] as string];
  const pickAttr = (): string => attrs[rng.int(attrs.length)] as string;
  const twoAttrs = (): [string, string] => {
    const [a, b] = shuffle(attrs, rng) as [string, string];
    return [a, b];
  };
  const h = rng.int(H);
  switch (type) {
    case 'found_at':
      return { type, x: at(pickAttr(), h), house: h + 1 };
    case 'not_at': {
      const other = (h + 1 + rng.int(H - 1)) % H;
      return { type, x: at(pickAttr(), h), house: other + 1 };
    }
    case 'same_house': {
      const [a, b] = twoAttrs();
      return { type, x: at(a, h), y: at(b, h) };
    }
    case 'not_same_house': {
      const [a, b] = twoAttrs();
      return { type, x: at(a, h), y: at(b, (h + 1 + rng.int(H - 1)) % H) };
    }
    case 'directly_left_of':
    case 'next_to': {
      if (h === H - 1) return undefined;
      const x = at(pickAttr(), h);
      const y = at(pickAttr(), h + 1);
      return type === 'next_to' && rng.next() < 0.5 ? { type, x: y, y: x } : { type, x, y };
    }
    case 'left_of': {
      if (h === H - 1) return undefined;
      return { type, x: at(pickAttr(), h), y: at(pickAttr(), h + 1 + rng.int(H - 1 - h)) };
    }
  }
}

/** Picks clue types: relational ones more often than placements, so puzzles need reasoning. */
const TYPE_WEIGHTS: Record<ClueType, number> = { found_at: 1, not_at: 1.5, same_house: 3, not_same_house: 1.5, directly_left_of: 2, left_of: 1.5, next_to: 2 };

function weightedType(rng: Rng): ClueType {
  const total = CLUE_TYPES.reduce((s, t) => s + TYPE_WEIGHTS[t], 0);
  let r = rng.next() * total;
  for (const t of CLUE_TYPES) {
    r -= TYPE_WEIGHTS[t];
    if (r < 0) return t;
  }
  return 'same_house';
}

/**
 * A puzzle with exactly one solution (proved by countSolutions) and that solution. Clues are added at random
 * until the solution is unique, then each clue that uniqueness does not need is dropped (required clue types
 * keep one representative each).
 */
export function generateZebra(shape: ZebraShape, rng: Rng): { puzzle: ZebraPuzzle; solution: ZebraSolution } {
  const H = between(rng, shape.houses);
  const A = between(rng, shape.attributes);
  const names = shuffle(Object.keys(ATTRIBUTE_POOL), rng).slice(0, A);
  const attributes: Record<string, string[]> = {};
  const solution: ZebraSolution = {};
  for (const n of names) {
    const values = shuffle(ATTRIBUTE_POOL[n] as string[], rng).slice(0, H);
    attributes[n] = [...values].sort();
    solution[n] = values;
  }
  const clues: Clue[] = [];
  const seen = new Set<string>();
  const add = (c: Clue | undefined): void => {
    if (!c) return;
    const key = JSON.stringify(c);
    if (seen.has(key)) return;
    seen.add(key);
    clues.push(c);
  };
  const required = shape.requiredClueTypes ?? [];
  for (const t of required) for (let tries = 0; tries < 20 && !clues.some((c) => c.type === t); tries++) add(randomTrueClue(t, solution, H, rng));
  const puzzle: ZebraPuzzle = { houses: H, attributes, clues };
  for (let guard = 0; countSolutions(puzzle).count > 1; guard++) {
    // Placements always make progress, so a long run of uninformative clues still ends.
    add(randomTrueClue(guard > 80 ? 'found_at' : weightedType(rng), solution, H, rng));
  }
  for (const c of shuffle([...clues], rng)) {
    if (required.includes(c.type) && clues.filter((d) => d.type === c.type).length === 1) continue;
    const at = clues.indexOf(c);
    clues.splice(at, 1);
    if (countSolutions(puzzle).count !== 1) clues.splice(at, 0, c);
  }
  return { puzzle, solution };
}

function refText(r: Ref): string {
  return `the ${r[0].toLowerCase()} ${r[1]}`;
}

export function clueText(c: Clue): string {
  switch (c.type) {
    case 'found_at':
      return `${refText(c.x)} is in house ${c.house}.`;
    case 'not_at':
      return `${refText(c.x)} is not in house ${c.house}.`;
    case 'same_house':
      return `${refText(c.x)} is in the same house as ${refText(c.y)}.`;
    case 'not_same_house':
      return `${refText(c.x)} is not in the same house as ${refText(c.y)}.`;
    case 'directly_left_of':
      return `${refText(c.x)} is directly left of ${refText(c.y)}.`;
    case 'left_of':
      return `${refText(c.x)} is somewhere left of ${refText(c.y)}.`;
    case 'next_to':
      return `${refText(c.x)} is next to ${refText(c.y)}.`;
  }
}

/** The puzzle as the solver reads it. */
export function renderZebra(p: ZebraPuzzle): string {
  const lines = [
    `There are ${p.houses} houses in a row, numbered 1 to ${p.houses} from left to right. Each house has exactly one value of each attribute, and each value is in exactly one house:`,
    ...Object.entries(p.attributes).map(([a, vs]) => `- ${a}: ${vs.join(', ')}`),
    'Clues:',
    ...p.clues.map((c, i) => `${i + 1}. ${clueText(c).replace(/^the/, 'The')}`),
  ];
  return lines.join('\n');
}

/** Grid and cell accuracy of an answer against the hidden solution; a malformed answer scores 0. */
export function gradeZebra(p: ZebraPuzzle, solution: ZebraSolution, answer: unknown): { correct: boolean; cellAccuracy: number } {
  if (solutionProblems(p, answer).length > 0) return { correct: false, cellAccuracy: 0 };
  const a = answer as ZebraSolution;
  let right = 0;
  let total = 0;
  for (const [attr, vs] of Object.entries(solution)) {
    vs.forEach((v, h) => {
      total++;
      if (String((a[attr] as unknown[])[h]) === v) right++;
    });
  }
  return { correct: right === total, cellAccuracy: total === 0 ? 0 : right / total };
}
