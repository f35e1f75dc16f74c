// A scripted LLM double for the Ctx2Skill tests (not a test itself): a rule-based fake that plays every role
// in a toy world, replying as a deterministic function of the messages (so a resumed run and an HTTP server
// get the same replies). The context lists item codes; the Reasoner knows an item's code only once a skill
// named `code-<ITEM>` is in its prompt. Some replies are malformed on purpose:
//   - BETA's judgement comes wrapped in prose and a code fence (the parser must dig it out);
//   - GAMMA's first judgement has the wrong number of verdicts (a retry must fix it);
//   - ZETA's judgement never parses (recorded as a failure after the retries);
//   - the first Challenger reply with 2 challenger skills is not JSON at all.
// And the Reasoner-side Generator, when it adds code-ETA, drops code-ALPHA (a skill set corrupted by a later
// edit), so cross-time replay has a reason to prefer an earlier iteration's skills.
import type { ChatMessage } from '../src/llm/types.js';

export const ITEMS: Array<[string, number]> = [
  ['ALPHA', 11],
  ['BETA', 22],
  ['GAMMA', 33],
  ['DELTA', 44],
  ['EPSILON', 55],
  ['ZETA', 66],
  ['ETA', 77],
  ['THETA', 88],
];

export const TOY_CONTEXT = ['# Item codes of the toy registry', '', ...ITEMS.map(([n, c]) => `The code of ${n} is ${c}.`)].join('\n');

const codeOf = new Map(ITEMS);

function systemOf(messages: ChatMessage[]): string {
  return messages.find((m) => m.role === 'system')?.content ?? '';
}

function firstUser(messages: ChatMessage[]): string {
  return messages.find((m) => m.role === 'user')?.content ?? '';
}

const isRetry = (messages: ChatMessage[]): boolean => messages.some((m) => m.role === 'user' && m.content.startsWith('Your reply could not be used'));

/** Skill names listed in a rendered skill section (`1. name: description`). */
function skillNames(section: string): string[] {
  return [...section.matchAll(/^\d+\. ([^:\n]+):/gm)].map((m) => (m[1] as string).trim());
}

function section(text: string, header: string, next: string): string {
  const at = text.indexOf(header);
  if (at < 0) return '';
  const end = text.indexOf(next, at + header.length);
  return text.slice(at + header.length, end < 0 ? undefined : end);
}

function jsonAfter(text: string, header: string): unknown {
  const at = text.indexOf(header);
  const start = text.indexOf('{', at);
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return JSON.parse(text.slice(start, i + 1));
  }
  throw new Error(`double: no JSON after ${header}`);
}

export function toyReply(messages: ChatMessage[]): string {
  const sys = systemOf(messages);
  const user = firstUser(messages);
  if (sys.startsWith('You are the Challenger in')) {
    const skills = skillNames(section(user, 'Your task-writing skills:', 'Write '));
    const count = Number(/Write (\d+) tasks/.exec(user)?.[1] ?? 3);
    if (skills.length === 2 && !isRetry(messages)) return 'Here are some great tasks! 1) What is ALPHA? 2) ...';
    const tasks = Array.from({ length: count }, (_, j) => {
      const [name, code] = ITEMS[(skills.length * 2 + j) % ITEMS.length] as [string, number];
      return { task: `What is the code of ${name}?`, rubrics: [`The answer names ${name}.`, `The answer says the code is ${code}.`] };
    });
    return JSON.stringify({ tasks });
  }
  if (sys.startsWith('You are the Reasoner in')) {
    const name = /What is the code of (\w+)\?/.exec(user)?.[1] ?? '?';
    const known = skillNames(section(user, 'Your skills:', 'Task:')).includes(`code-${name}`);
    return known ? `<think>look it up</think>The code of ${name} is ${codeOf.get(name)}.` : `I am not sure about ${name}.`;
  }
  if (sys.startsWith('You are the Judge in')) {
    const name = /What is the code of (\w+)\?/.exec(user)?.[1] ?? '?';
    const answer = section(user, 'Answer:\n', '\n\nReply with');
    const verdicts = [
      { pass: answer.includes(name), reason: 'names the item' },
      { pass: answer.includes(String(codeOf.get(name))), reason: 'states the code' },
    ];
    if (name === 'ZETA') return 'The answer looks fine to me.';
    if (name === 'GAMMA' && !isRetry(messages)) return JSON.stringify({ verdicts: verdicts.slice(0, 1) });
    if (name === 'BETA') return `Here is my grading:\n\`\`\`json\n${JSON.stringify({ verdicts })}\n\`\`\`\nDone.`;
    return JSON.stringify({ verdicts });
  }
  if (sys.startsWith('You are the Reasoner-side Proposer')) {
    const failed = [...user.matchAll(/Task: What is the code of (\w+)\?/g)].map((m) => m[1] as string);
    return JSON.stringify({ diagnoses: failed.map((n) => ({ action: 'add', skill: `code-${n}`, description: `the code of ${n}`, justification: 'the answer did not know it' })) });
  }
  if (sys.startsWith('You are the Challenger-side Proposer')) {
    const have = skillNames(section(user, 'Current Challenger skills:', 'The tasks'));
    return JSON.stringify({ diagnoses: [{ action: 'add', skill: `probe-${have.length + 1}`, description: 'ask about items further down the registry', justification: 'these were solved' }] });
  }
  if (sys.includes('-side Generator in')) {
    const current = (jsonAfter(user, 'skills (as JSON):') as { skills: Array<{ name: string; description: string; body: string }> }).skills;
    const diagnoses = (jsonAfter(user, 'Diagnosis:') as { diagnoses: Array<{ skill: string; description: string }> }).diagnoses;
    const names = new Set(current.map((s) => s.name));
    const next = diagnoses.some((d) => d.skill === 'code-ETA') ? current.filter((s) => s.name !== 'code-ALPHA') : [...current];
    for (const d of diagnoses) {
      if (names.has(d.skill)) continue;
      names.add(d.skill);
      const item = /^code-(\w+)$/.exec(d.skill)?.[1];
      next.push({ name: d.skill, description: d.description, body: item ? `The code of ${item} is ${codeOf.get(item)}.` : 'Ask about the next items of the registry.' });
    }
    return JSON.stringify({ skills: next });
  }
  throw new Error(`double: unknown role in system prompt: ${sys.slice(0, 60)}`);
}
