// Skill packages (docs/recipes.md): generation hints, examples, a programmatic validator (a declarative spec
// that code checks), and routing statistics. Seeds for both task families; induction of a new package from a
// successful open-stream task, with integrity and novelty checks.
import { Rng } from '../../util/rng.js';
import { generateToolTask, type ToolCall, toolValidity } from './toolcall.js';
import { CLUE_TYPES, type ClueType, countSolutions, generateZebra, puzzleProblems, satisfies, solutionProblems, type ZebraPuzzle, type ZebraSolution } from './zebra.js';
import type { RoutingCounts } from './routing.js';

export type Family = 'zebra' | 'toolcall';
export const FAMILIES: Family[] = ['zebra', 'toolcall'];

export type SpTask = { family: 'zebra'; puzzle: ZebraPuzzle; solution: ZebraSolution } | { family: 'toolcall'; request: string; calls: ToolCall[] };

export type ValidatorSpec =
  | { family: 'zebra'; houses: [number, number]; attributes: [number, number]; requiredClueTypes: ClueType[] }
  | { family: 'toolcall'; allowedFunctions: string[]; requiredFunctions: string[]; calls: [number, number] };

export interface SkillStats extends RoutingCounts {
  rewardSum: number;
  vSolveSum: number;
  /** Verified proposals whose v_solve was measured. */
  solved: number;
}

export interface SkillPackage {
  id: string;
  family: Family;
  name: string;
  description: string;
  hints: string[];
  examples: SpTask[];
  validator: ValidatorSpec;
  stats: SkillStats;
  source: 'seed' | 'induced';
  createdIteration: number;
  /** The open-stream task's proposal index that induced it. */
  inducedFrom?: string;
}

export const emptyStats = (): SkillStats => ({ attempts: 0, verified: 0, consistent: 0, frontier: 0, rewardSum: 0, vSolveSum: 0, solved: 0 });

export interface Validity {
  schema: string[];
  contract: string[];
  consistency: string[];
  mask: 0 | 1;
}

/** Problems of a task against a package's validator spec (part of the contract check). */
export function specProblems(spec: ValidatorSpec, task: SpTask): string[] {
  if (spec.family !== task.family) return [`the skill is for ${spec.family} tasks, not ${task.family}`];
  const inRange = (n: number, [lo, hi]: [number, number]): boolean => n >= lo && n <= hi;
  if (spec.family === 'zebra' && task.family === 'zebra') {
    const out: string[] = [];
    const A = Object.keys(task.puzzle.attributes).length;
    if (!inRange(task.puzzle.houses, spec.houses)) out.push(`the skill wants ${spec.houses[0]}–${spec.houses[1]} houses, got ${task.puzzle.houses}`);
    if (!inRange(A, spec.attributes)) out.push(`the skill wants ${spec.attributes[0]}–${spec.attributes[1]} attributes, got ${A}`);
    for (const t of spec.requiredClueTypes) if (!task.puzzle.clues.some((c) => c.type === t)) out.push(`the skill wants a ${t} clue`);
    return out;
  }
  if (spec.family === 'toolcall' && task.family === 'toolcall') {
    const out: string[] = [];
    const used = task.calls.map((c) => c.name);
    for (const n of used) if (!spec.allowedFunctions.includes(n)) out.push(`the skill does not use ${n}`);
    for (const n of spec.requiredFunctions) if (!used.includes(n)) out.push(`the skill wants a call to ${n}`);
    if (!inRange(task.calls.length, spec.calls)) out.push(`the skill wants ${spec.calls[0]}–${spec.calls[1]} calls, got ${task.calls.length}`);
    return out;
  }
  return [];
}

/**
 * The validity mask (schema, contract, consistency). Zebra: a well-formed puzzle and solution; the solution
 * satisfies every clue (and the skill's spec); the exact solver proves it the only solution. Tool call: a
 * well-formed request and calls; the calls execute in the sandbox (and fit the spec); every argument value is
 * grounded in the request.
 */
export function validate(task: SpTask, spec: ValidatorSpec | undefined, maxCalls: number): Validity {
  const done = (schema: string[], contract: string[], consistency: string[]): Validity => ({ schema, contract, consistency, mask: schema.length + contract.length + consistency.length === 0 ? 1 : 0 });
  if (task.family === 'zebra') {
    const schema = [...puzzleProblems(task.puzzle), ...(puzzleProblems(task.puzzle).length === 0 ? solutionProblems(task.puzzle, task.solution) : [])];
    if (schema.length > 0) return done(schema, ['not checked'], ['not checked']);
    const contract = [...(satisfies(task.puzzle, task.solution) ? [] : ['the hidden solution breaks a clue']), ...(spec ? specProblems(spec, task) : [])];
    const n = countSolutions(task.puzzle, 2).count;
    return done(schema, contract, n === 1 ? [] : [n === 0 ? 'the puzzle has no solution' : 'the puzzle has more than one solution']);
  }
  const v = toolValidity({ request: task.request, calls: task.calls }, maxCalls);
  const contract = v.schema.length > 0 ? v.contract : [...v.contract, ...(spec ? specProblems(spec, task) : [])];
  return done(v.schema, contract, v.consistency);
}

/** The features novelty is judged on: the sizes/call counts a spec admits and the clue types/functions it needs. */
export function specFeatures(spec: ValidatorSpec): Set<string> {
  const range = ([lo, hi]: [number, number], tag: string): string[] => Array.from({ length: hi - lo + 1 }, (_, i) => `${tag}${lo + i}`);
  return spec.family === 'zebra'
    ? new Set([...range(spec.houses, 'h'), ...range(spec.attributes, 'a'), ...spec.requiredClueTypes])
    : new Set([...range(spec.calls, 'n'), ...spec.allowedFunctions, ...spec.requiredFunctions.map((f) => `req:${f}`)]);
}

export function jaccard(a: Set<string>, b: Set<string>): number {
  const inter = [...a].filter((x) => b.has(x)).length;
  const union = new Set([...a, ...b]).size;
  return union === 0 ? 1 : inter / union;
}

/** The spec an open-stream task suggests: its exact size and its `clueTypes` most used clue types, or the functions it uses. */
export function specOfTask(task: SpTask, clueTypes = 3): ValidatorSpec {
  if (task.family === 'zebra') {
    const counts = new Map<ClueType, number>();
    for (const c of task.puzzle.clues) counts.set(c.type, (counts.get(c.type) ?? 0) + 1);
    const types = [...counts].sort((x, y) => y[1] - x[1] || CLUE_TYPES.indexOf(x[0]) - CLUE_TYPES.indexOf(y[0])).slice(0, clueTypes).map(([t]) => t);
    const A = Object.keys(task.puzzle.attributes).length;
    return { family: 'zebra', houses: [task.puzzle.houses, task.puzzle.houses], attributes: [A, A], requiredClueTypes: types.sort() };
  }
  const used = [...new Set(task.calls.map((c) => c.name))].sort();
  return { family: 'toolcall', allowedFunctions: used, requiredFunctions: used, calls: [task.calls.length, task.calls.length] };
}

export type InductionOutcome = { ok: true; pkg: SkillPackage } | { ok: false; reason: string };

/**
 * A new package from a verified, frontier open-stream task. Integrity: the new spec accepts its own example,
 * which passes the full validity check. Novelty: its features overlap every same-family package's by less
 * than `noveltyMax` (Jaccard).
 */
export function induceSkill(
  task: SpTask,
  library: readonly SkillPackage[],
  opts: { id: string; iteration: number; from: string; noveltyMax: number; maxCalls: number; clueTypes?: number },
): InductionOutcome {
  const validator = specOfTask(task, opts.clueTypes);
  const v = validate(task, validator, opts.maxCalls);
  if (v.mask !== 1) return { ok: false, reason: `integrity: ${[...v.schema, ...v.contract, ...v.consistency].join('; ')}` };
  const features = specFeatures(validator);
  for (const p of library) {
    if (p.family !== task.family) continue;
    const sim = jaccard(features, specFeatures(p.validator));
    if (sim >= opts.noveltyMax) return { ok: false, reason: `novelty: overlaps ${p.id} (Jaccard ${sim.toFixed(2)} ≥ ${opts.noveltyMax})` };
  }
  const name =
    validator.family === 'zebra'
      ? `zebra ${validator.houses[0]}×${validator.attributes[0]} with ${validator.requiredClueTypes.join(', ')}`
      : `${validator.allowedFunctions.join(' + ')} in ${validator.calls[0]} call${validator.calls[0] === 1 ? '' : 's'}`;
  const hints =
    validator.family === 'zebra'
      ? [`Use ${validator.houses[0]} houses and ${validator.attributes[0]} attributes.`, `Build the deduction around ${validator.requiredClueTypes.join(', ')} clues.`]
      : [`The request must need ${validator.allowedFunctions.join(', ')} (${validator.calls[0]} call${validator.calls[0] === 1 ? '' : 's'}), with every argument value stated in the request.`];
  return {
    ok: true,
    pkg: {
      id: opts.id,
      family: task.family,
      name,
      description: `Induced from a successful open-ended ${task.family} task: ${name}.`,
      hints,
      examples: [task],
      validator,
      stats: emptyStats(),
      source: 'induced',
      createdIteration: opts.iteration,
      inducedFrom: opts.from,
    },
  };
}

const ZEBRA_SEEDS: Array<{ id: string; name: string; description: string; hints: string[]; validator: Extract<ValidatorSpec, { family: 'zebra' }> }> = [
  {
    id: 'zebra-placement-bridge',
    name: 'placement bridged by same-house links',
    description: 'A few houses; fixed placements plus same-house links carry the deduction.',
    hints: ['Anchor one value with a found_at clue.', 'Link other attributes to it with same_house clues.'],
    validator: { family: 'zebra', houses: [2, 3], attributes: [2, 3], requiredClueTypes: ['found_at', 'same_house'] },
  },
  {
    id: 'zebra-adjacency-chain',
    name: 'adjacency chain',
    description: 'Positions follow from a chain of directly-left and next-to relations.',
    hints: ['Chain two or three directly_left_of clues.', 'Add a next_to clue that only one placement satisfies.'],
    validator: { family: 'zebra', houses: [3, 4], attributes: [2, 3], requiredClueTypes: ['directly_left_of', 'next_to'] },
  },
  {
    id: 'zebra-elimination',
    name: 'elimination by negatives',
    description: 'Negative clues (not in a house, not in the same house) force the assignment by elimination.',
    hints: ['Use not_at and not_same_house clues to rule options out.', 'Keep positive placements to a minimum.'],
    validator: { family: 'zebra', houses: [3, 4], attributes: [3, 3], requiredClueTypes: ['not_at', 'not_same_house'] },
  },
  {
    id: 'zebra-order-bridge',
    name: 'ordering with a same-house bridge',
    description: 'Somewhere-left-of orderings, bridged across attributes by same-house clues, over more houses.',
    hints: ['Order values with left_of clues.', 'Tie attributes together with same_house clues.'],
    validator: { family: 'zebra', houses: [4, 5], attributes: [3, 4], requiredClueTypes: ['left_of', 'same_house'] },
  },
];

const TOOL_SEEDS: Array<{ id: string; name: string; description: string; hints: string[]; fn: string }> = [
  { id: 'tool-weather', name: 'weather lookup', description: 'A forecast request naming a city and an ISO date.', hints: ['State the city and the date (YYYY-MM-DD) in the request.'], fn: 'get_weather' },
  { id: 'tool-currency', name: 'currency conversion', description: 'Convert a stated amount between two currencies.', hints: ['State the amount and both currency codes.'], fn: 'convert_currency' },
  {
    id: 'tool-book-from-observation',
    name: 'book from an earlier search',
    description: 'Earlier search results are quoted in the request; book the restaurant they single out.',
    hints: ['Quote the search results (ids, names, ratings) in the request.', 'Ask for the top-rated one, with date, time and guests.'],
    fn: 'book_table',
  },
  { id: 'tool-meeting', name: 'meeting scheduling', description: 'Participants, a topic and an ISO time window to schedule.', hints: ['Give start and end as YYYY-MM-DDTHH:MM.'], fn: 'schedule_meeting' },
  { id: 'tool-email', name: 'email', description: 'Send a short email to a stated address.', hints: ['State the address in the request.'], fn: 'send_email' },
];

/** The seed library: both families, each package with two examples generated (and so valid) by construction. */
export function seedPackages(): SkillPackage[] {
  const rng = new Rng(20260501);
  const zebra: SkillPackage[] = ZEBRA_SEEDS.map((s) => ({
    ...s,
    family: 'zebra',
    examples: [0, 1].map(() => ({ family: 'zebra' as const, ...generateZebra({ houses: s.validator.houses, attributes: s.validator.attributes, requiredClueTypes: s.validator.requiredClueTypes }, rng) })),
    stats: emptyStats(),
    source: 'seed',
    createdIteration: 0,
  }));
  const tool: SkillPackage[] = TOOL_SEEDS.map(({ fn, ...s }) => ({
    ...s,
    family: 'toolcall',
    examples: [0, 1].map(() => ({ family: 'toolcall' as const, ...generateToolTask([fn], rng) })),
    validator: { family: 'toolcall', allowedFunctions: [fn], requiredFunctions: [fn], calls: [1, 1] },
    stats: emptyStats(),
    source: 'seed',
    createdIteration: 0,
  }));
  return [...zebra, ...tool];
}
