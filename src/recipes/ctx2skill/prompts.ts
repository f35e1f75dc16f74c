// The five roles' prompts (docs/recipes.md). Every role gets the context; no prompt ever shows one side's
// skills to the other side. Structured replies are asked for as one JSON object, whose shape shapes.ts checks.
import type { ChatMessage } from '../../llm/types.js';
import type { Attempt, Diagnosis, Side, SkillSet, Task } from './types.js';

export function renderSkills(skills: SkillSet): string {
  if (skills.length === 0) return '(no skills yet)';
  return skills.map((s, i) => `${i + 1}. ${s.name}: ${s.description}\n   ${s.body.replace(/\n/g, '\n   ')}`).join('\n');
}

function contextBlock(context: string): string {
  return `<context>\n${context}\n</context>`;
}

export function challengerMessages(context: string, skills: SkillSet, count: number, rubricsMin: number, rubricsMax: number): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You are the Challenger in Ctx2Skill. You write tasks that can only be solved by learning the rules, ' +
        'procedures and facts of the given context (not by paraphrasing a sentence of it), each with a rubric: ' +
        'a list of independent yes/no checks that a correct answer must all pass. Use your task-writing skills.',
    },
    {
      role: 'user',
      content: [
        contextBlock(context),
        `Your task-writing skills:\n${renderSkills(skills)}`,
        `Write ${count} tasks, each with ${rubricsMin} to ${rubricsMax} rubric items. Reply with one JSON object only:`,
        '{"tasks": [{"task": "…", "rubrics": ["…", "…"]}]}',
      ].join('\n\n'),
    },
  ];
}

export function reasonerMessages(context: string, skills: SkillSet, task: string): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You are the Reasoner in Ctx2Skill. Answer the task using the context; your skills summarize rules and ' +
        'procedures of this context. Give a complete, direct answer.',
    },
    { role: 'user', content: `${contextBlock(context)}\n\nYour skills:\n${renderSkills(skills)}\n\nTask:\n${task}` },
  ];
}

export function judgeMessages(task: Task, answer: string): ChatMessage[] {
  const rubric = task.rubrics.map((r, i) => `${i + 1}. ${r}`).join('\n');
  return [
    {
      role: 'system',
      content:
        'You are the Judge in Ctx2Skill: a strict, neutral grader. For every rubric item, decide whether the ' +
        'answer passes it. An item passes only if the answer clearly satisfies it.',
    },
    {
      role: 'user',
      content: [
        `Task:\n${task.task}`,
        `Rubric:\n${rubric}`,
        `Answer:\n${answer}`,
        `Reply with one JSON object only, one verdict per rubric item in order (${task.rubrics.length} in all):`,
        '{"verdicts": [{"pass": true, "reason": "…"}]}',
      ].join('\n\n'),
    },
  ];
}

function caseBlock(task: Task, attempt: Attempt): string {
  const verdicts = attempt.verdict
    ? task.rubrics.map((r, i) => `  - [${attempt.verdict?.passes[i] ? 'pass' : 'FAIL'}] ${r}${attempt.verdict?.reasons[i] ? ` (${attempt.verdict.reasons[i]})` : ''}`).join('\n')
    : task.rubrics.map((r) => `  - ${r}`).join('\n');
  return `Task: ${task.task}\nRubric:\n${verdicts}\nAnswer: ${attempt.answer}`;
}

const SIDE_GOAL: Record<Side, { who: string; cases: string; goal: string }> = {
  reasoner: {
    who: 'Reasoner',
    cases: 'tasks the Reasoner FAILED',
    goal: 'Diagnose which knowledge of the context (rules, procedures, definitions, exceptions) is missing from or misrepresented in the Reasoner skills, judging by the wrong answers and the rubric items they failed.',
  },
  challenger: {
    who: 'Challenger',
    cases: 'tasks the Reasoner SOLVED (they were too easy)',
    goal: 'Diagnose what the Challenger task-writing skills miss: which parts of the context, kinds of reasoning or rubric checks would probe the Reasoner harder, judging by how these tasks were solved.',
  },
};

export function proposerMessages(side: Side, context: string, skills: SkillSet, cases: Array<{ task: Task; attempt: Attempt }>): ChatMessage[] {
  const g = SIDE_GOAL[side];
  return [
    {
      role: 'system',
      content: `You are the ${g.who}-side Proposer in Ctx2Skill. You analyze cases jointly and write a high-level diagnosis of how the ${g.who} skill set should change: add a new skill, or merge the knowledge into an existing one.`,
    },
    {
      role: 'user',
      content: [
        contextBlock(context),
        `Current ${g.who} skills:\n${renderSkills(skills)}`,
        `The ${g.cases}:\n\n${cases.map((c, i) => `Case ${i + 1}\n${caseBlock(c.task, c.attempt)}`).join('\n\n')}`,
        g.goal,
        'Reply with one JSON object only (merge names an existing skill; add names a new one):',
        '{"diagnoses": [{"action": "add", "skill": "…", "description": "…", "justification": "…"}]}',
      ].join('\n\n'),
    },
  ];
}

export function generatorMessages(side: Side, context: string, skills: SkillSet, diagnoses: Diagnosis[], maxSkills: number): ChatMessage[] {
  const who = SIDE_GOAL[side].who;
  return [
    {
      role: 'system',
      content: `You are the ${who}-side Generator in Ctx2Skill. You turn a diagnosis into concrete skills: return the complete replacement skill set, adding or merging what the diagnosis asks and keeping every unrelated skill unchanged.`,
    },
    {
      role: 'user',
      content: [
        contextBlock(context),
        `Current ${who} skills (as JSON):\n${JSON.stringify({ skills }, null, 1)}`,
        `Diagnosis:\n${JSON.stringify({ diagnoses }, null, 1)}`,
        `Each skill states a rule or procedure of the context concisely and faithfully. At most ${maxSkills} skills. Reply with one JSON object only:`,
        '{"skills": [{"name": "…", "description": "when it applies", "body": "the rule or procedure"}]}',
      ].join('\n\n'),
    },
  ];
}
