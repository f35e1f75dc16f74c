// The proposer's and solver's prompts, and reading their replies (docs/recipes.md). The proposer writes one
// task with its hidden contract as JSON; the skill stream conditions it on one skill package, the open stream
// on nothing but the family's format. The solver sees only the task, never the contract.
import type { ChatMessage } from '../../llm/types.js';
import { type Checked, firstValid, isObject } from '../reply-json.js';
import type { Family, SkillPackage, SpTask } from './packages.js';
import { renderToolTask, TOOL_FUNCTIONS, type ToolCall } from './toolcall.js';
import { renderZebra, type ZebraSolution } from './zebra.js';

const FORMAT: Record<Family, string> = {
  zebra: [
    'A ZebraLogic puzzle: houses in a row, attributes whose values each sit in exactly one house, and clues whose only solution is the hidden one.',
    'Clue types: found_at (x, house), not_at (x, house), same_house, not_same_house, directly_left_of, left_of, next_to (x, y); x and y are [attribute, value].',
    'Reply with one JSON object only:',
    '{"family": "zebra", "puzzle": {"houses": 3, "attributes": {"Name": ["Alice", "Bob", "Carol"], "Pet": ["cat", "dog", "fish"]}, "clues": [{"type": "found_at", "x": ["Name", "Bob"], "house": 1}, {"type": "same_house", "x": ["Name", "Alice"], "y": ["Pet", "fish"]}]}, "solution": {"Name": ["Bob", "Alice", "Carol"], "Pet": ["dog", "fish", "cat"]}}',
    'The solution lists each attribute\'s values in house order (house 1 first).',
  ].join('\n'),
  toolcall: [
    'A tool-call task: a user request (quote any earlier observations in it) and the exact call sequence that fulfils it. Every argument value must be stated in the request.',
    `Functions:\n${TOOL_FUNCTIONS.map((f) => `- ${f.name}: ${f.description} Parameters: ${JSON.stringify(f.parameters)}`).join('\n')}`,
    'Reply with one JSON object only:',
    '{"family": "toolcall", "request": "What will the weather be in Oslo on 2026-03-14?", "calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "date": "2026-03-14"}}]}',
  ].join('\n'),
};

function specText(p: SkillPackage): string {
  const v = p.validator;
  return v.family === 'zebra'
    ? `${v.houses[0]}–${v.houses[1]} houses, ${v.attributes[0]}–${v.attributes[1]} attributes, at least one clue of each type: ${v.requiredClueTypes.join(', ')}`
    : `functions ${v.allowedFunctions.join(', ')} only; must call ${v.requiredFunctions.join(', ')}; ${v.calls[0]}–${v.calls[1]} calls`;
}

const SYSTEM = 'You are the Proposer in Skill Self-Play. You write one new, verifiable task with its hidden answer, aimed so that a solver gets it right about half of the time.';

export function skillProposerMessages(p: SkillPackage): ChatMessage[] {
  const example = p.examples[0];
  return [
    { role: 'system', content: SYSTEM },
    {
      role: 'user',
      content: [
        FORMAT[p.family],
        `Skill ${p.id}: ${p.name}. ${p.description}`,
        `Hints:\n${p.hints.map((h) => `- ${h}`).join('\n')}`,
        `The validator requires: ${specText(p)}.`,
        ...(example ? [`An example of this skill:\n${JSON.stringify(example)}`] : []),
        'Write a new task of this skill (not the example).',
      ].join('\n\n'),
    },
  ];
}

export function openProposerMessages(family: Family): ChatMessage[] {
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `${FORMAT[family]}\n\nInvent a new ${family} task of any structure you like.` },
  ];
}

export function solverMessages(task: SpTask): ChatMessage[] {
  const body =
    task.family === 'zebra'
      ? `${renderZebra(task.puzzle)}\n\nSolve the puzzle. Reply with one JSON object only: {"solution": {"<attribute>": ["<value in house 1>", "<value in house 2>", …]}} covering every attribute.`
      : `${renderToolTask(task)}\n\nReply with one JSON object only: {"calls": [{"name": "<function>", "arguments": {…}}]}, the calls that fulfil the request, in order.`;
  return [
    { role: 'system', content: 'You are the Solver. Read the task carefully and answer exactly in the format asked.' },
    { role: 'user', content: body },
  ];
}

/** A proposal's task, or the reason it is not one (a schema failure of the validity mask). */
export function parseProposal(text: string, family: Family): Checked<SpTask> {
  return firstValid(text, (v): Checked<SpTask> => {
    if (!isObject(v)) return { ok: false, problem: 'expected a JSON object' };
    if (v.family !== undefined && v.family !== family) return { ok: false, problem: `family must be "${family}"` };
    if (family === 'zebra') {
      if (!isObject(v.puzzle) || !isObject(v.solution)) return { ok: false, problem: 'expected "puzzle" and "solution" objects' };
      return { ok: true, value: { family, puzzle: v.puzzle as never, solution: v.solution as ZebraSolution } };
    }
    if (typeof v.request !== 'string' || !Array.isArray(v.calls)) return { ok: false, problem: 'expected a "request" string and a "calls" array' };
    return { ok: true, value: { family, request: v.request, calls: v.calls as ToolCall[] } };
  });
}

/** The solver's answer object (`solution` or `calls`), or undefined when the reply holds none. */
export function parseAnswer(text: string, family: Family): unknown {
  const key = family === 'zebra' ? 'solution' : 'calls';
  const got = firstValid(text, (v): Checked<unknown> => (isObject(v) && key in v ? { ok: true, value: v[key] } : { ok: false, problem: `no "${key}"` }));
  return got.ok ? got.value : undefined;
}
