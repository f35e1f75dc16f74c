// The shape every structured role reply must have, checked field by field (docs/recipes.md). Each check
// returns a problem sentence that is shown to the role on a retry, so it names the field that is wrong.
import { type Checked, isObject, text } from '../reply-json.js';
import type { Diagnosis, Skill, SkillSet, Verdict } from './types.js';

export interface ChallengerTask {
  task: string;
  rubrics: string[];
}

/** `{"tasks":[{"task":"…","rubrics":["…",…]},…]}` with at least one task; extra tasks beyond `max` are dropped. */
export function checkChallengerReply(max: number, rubricsMin: number, rubricsMax: number) {
  return (v: unknown): Checked<ChallengerTask[]> => {
    const list = isObject(v) ? v.tasks : Array.isArray(v) ? v : undefined;
    if (!Array.isArray(list)) return { ok: false, problem: 'expected an object with a "tasks" array' };
    if (list.length === 0) return { ok: false, problem: '"tasks" is empty' };
    const tasks: ChallengerTask[] = [];
    for (const [i, t] of list.slice(0, max).entries()) {
      if (!isObject(t)) return { ok: false, problem: `tasks[${i}] is not an object` };
      const task = text(t, 'task');
      if (!task) return { ok: false, problem: `tasks[${i}].task must be a non-empty string` };
      const rubrics = t.rubrics;
      if (!Array.isArray(rubrics) || rubrics.some((r) => typeof r !== 'string' || r.trim().length === 0)) {
        return { ok: false, problem: `tasks[${i}].rubrics must be an array of non-empty strings` };
      }
      if (rubrics.length < rubricsMin || rubrics.length > rubricsMax) {
        return { ok: false, problem: `tasks[${i}].rubrics has ${rubrics.length} items; give ${rubricsMin} to ${rubricsMax}` };
      }
      tasks.push({ task, rubrics: rubrics.map((r: string) => r.trim()) });
    }
    return { ok: true, value: tasks };
  };
}

/** `{"verdicts":[{"pass":true|false,"reason":"…"},…]}`, exactly one per rubric item, in order. */
export function checkJudgeReply(rubricCount: number) {
  return (v: unknown): Checked<Verdict> => {
    const list = isObject(v) ? v.verdicts : Array.isArray(v) ? v : undefined;
    if (!Array.isArray(list)) return { ok: false, problem: 'expected an object with a "verdicts" array' };
    if (list.length !== rubricCount) return { ok: false, problem: `"verdicts" has ${list.length} items; there are ${rubricCount} rubric items` };
    const passes: boolean[] = [];
    const reasons: string[] = [];
    for (const [i, x] of list.entries()) {
      if (!isObject(x) || typeof x.pass !== 'boolean') return { ok: false, problem: `verdicts[${i}].pass must be true or false` };
      passes.push(x.pass);
      reasons.push(typeof x.reason === 'string' ? x.reason.trim() : '');
    }
    return { ok: true, value: { passes, reasons, solved: passes.every((p) => p) } };
  };
}

/** `{"diagnoses":[{"action":"add"|"merge","skill":"…","description":"…","justification":"…"},…]}` (or one object). */
export function checkProposerReply(v: unknown): Checked<Diagnosis[]> {
  const list = isObject(v) && Array.isArray(v.diagnoses) ? v.diagnoses : isObject(v) && 'action' in v ? [v] : Array.isArray(v) ? v : undefined;
  if (!list) return { ok: false, problem: 'expected an object with a "diagnoses" array' };
  if (list.length === 0) return { ok: false, problem: '"diagnoses" is empty' };
  const out: Diagnosis[] = [];
  for (const [i, d] of list.entries()) {
    if (!isObject(d)) return { ok: false, problem: `diagnoses[${i}] is not an object` };
    const action = d.action;
    if (action !== 'add' && action !== 'merge') return { ok: false, problem: `diagnoses[${i}].action must be "add" or "merge"` };
    const skill = text(d, 'skill');
    const description = text(d, 'description');
    if (!skill) return { ok: false, problem: `diagnoses[${i}].skill (the target skill name) must be a non-empty string` };
    if (!description) return { ok: false, problem: `diagnoses[${i}].description must be a non-empty string` };
    out.push({ action, skill, description, justification: text(d, 'justification') ?? '' });
  }
  return { ok: true, value: out };
}

/** `{"skills":[{"name":"…","description":"…","body":"…"},…]}`: the complete new skill set, unique names. */
export function checkGeneratorReply(maxSkills: number) {
  return (v: unknown): Checked<SkillSet> => {
    const list = isObject(v) ? v.skills : Array.isArray(v) ? v : undefined;
    if (!Array.isArray(list)) return { ok: false, problem: 'expected an object with a "skills" array' };
    if (list.length === 0) return { ok: false, problem: '"skills" is empty; return the complete skill set' };
    if (list.length > maxSkills) return { ok: false, problem: `"skills" has ${list.length} entries; at most ${maxSkills} (merge related ones)` };
    const out: Skill[] = [];
    const names = new Set<string>();
    for (const [i, s] of list.entries()) {
      if (!isObject(s)) return { ok: false, problem: `skills[${i}] is not an object` };
      const name = text(s, 'name');
      const description = text(s, 'description');
      const body = text(s, 'body');
      if (!name || !description || !body) return { ok: false, problem: `skills[${i}] needs non-empty "name", "description" and "body" strings` };
      if (names.has(name.toLowerCase())) return { ok: false, problem: `skills[${i}].name "${name}" repeats another skill's name` };
      names.add(name.toLowerCase());
      out.push({ name, description, body });
    }
    return { ok: true, value: out };
  };
}
