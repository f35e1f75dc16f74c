// Scripted doubles for the Skill Self-Play tests (not a test itself). The proposer double writes tasks with
// the family generators (so they are valid by construction), except on purpose: every fifth reply is not
// JSON, and every seventh zebra puzzle loses a clue (no longer unique). It remembers each task's solver
// prompt, so the solver double can answer right with a probability set by the task's difficulty, and wrong
// otherwise. The updater double records the groups it is given.
import type { ChatMessage } from '../src/llm/types.js';
import type { SampledText, TextSampler } from '../src/recipes/skill-sp/iteration.js';
import type { SkillLibrary } from '../src/recipes/skill-sp/library.js';
import type { SpTask } from '../src/recipes/skill-sp/packages.js';
import { solverMessages } from '../src/recipes/skill-sp/prompts.js';
import { FUNCTION_NAMES, generateToolTask } from '../src/recipes/skill-sp/toolcall.js';
import { CLUE_TYPES, generateZebra } from '../src/recipes/skill-sp/zebra.js';
import type { Rollout } from '../src/agent/rollout.js';
import type { PolicyUpdater, Role, RoleUpdateMetrics, RolloutGroup } from '../src/selfplay/updater.js';
import { Rng } from '../src/util/rng.js';

function fakeRollout(id: string): Rollout {
  return { id, promptIds: [], responseIds: [], responseMask: [], logprobs: [], samplingTemperature: 1, queries: [], retrieved: [], outcome: 'eos', turns: 1, invalidActions: 0, text: '' };
}

export class ScriptedProposer implements TextSampler {
  readonly tasks = new Map<string, SpTask>();
  private n = 0;
  private readonly rng: Rng;
  constructor(private readonly library: SkillLibrary, seed: number) {
    this.rng = new Rng(seed);
  }

  async sample(prompts: ChatMessage[][]): Promise<SampledText[]> {
    return prompts.map((m) => {
      this.n++;
      const user = m[1]?.content ?? '';
      if (this.n % 5 === 0) return { text: 'I would like to propose a fun puzzle!', rollout: fakeRollout(`p${this.n}`) };
      const skillId = /^Skill (\S+):/m.exec(user)?.[1];
      const pkg = skillId ? this.library.get(skillId) : undefined;
      const family = pkg?.family ?? (/new zebra task/.test(user) ? 'zebra' : 'toolcall');
      let task: SpTask;
      if (family === 'zebra') {
        const v = pkg?.validator.family === 'zebra' ? pkg.validator : undefined;
        const open = { houses: [2, 5] as [number, number], attributes: [2, 4] as [number, number], requiredClueTypes: [CLUE_TYPES[this.rng.int(CLUE_TYPES.length)] as (typeof CLUE_TYPES)[number]] };
        task = { family, ...generateZebra(v ? { houses: v.houses, attributes: v.attributes, requiredClueTypes: v.requiredClueTypes } : open, this.rng) };
        if (this.n % 7 === 0 && task.puzzle.clues.length > 1) task.puzzle.clues.pop();
      } else {
        const v = pkg?.validator.family === 'toolcall' ? pkg.validator : undefined;
        task = { family, ...generateToolTask(v ? v.requiredFunctions : [FUNCTION_NAMES[this.rng.int(FUNCTION_NAMES.length)] as string], this.rng) };
      }
      this.tasks.set(solverMessages(task)[1]?.content as string, task);
      return { text: `Here is my task:\n${JSON.stringify(task)}`, rollout: fakeRollout(`p${this.n}`) };
    });
  }
}

/** Chance that the scripted solver gets a task right: larger puzzles and chained tool calls are harder. */
export function scriptedSkill(task: SpTask): number {
  if (task.family === 'zebra') return Math.max(0.05, 1 - (task.puzzle.houses * Object.keys(task.puzzle.attributes).length) / 16);
  const hard: Record<string, number> = { get_weather: 0.9, convert_currency: 0.5, search_restaurants: 0.7, book_table: 0.3, schedule_meeting: 0.6, send_email: 1 };
  return hard[task.calls[0]?.name ?? ''] ?? 0.5;
}

export class ScriptedSolver implements TextSampler {
  private readonly rng: Rng;
  private n = 0;
  constructor(private readonly proposer: ScriptedProposer, seed: number) {
    this.rng = new Rng(seed);
  }

  async sample(prompts: ChatMessage[][]): Promise<SampledText[]> {
    return prompts.map((m) => {
      this.n++;
      const task = this.proposer.tasks.get(m[1]?.content ?? '');
      if (!task) throw new Error('scripted solver: a prompt for a task the proposer never wrote');
      const right = this.rng.next() < scriptedSkill(task);
      let answer: unknown;
      if (task.family === 'zebra') {
        const sol = JSON.parse(JSON.stringify(task.solution)) as Record<string, string[]>;
        const first = Object.keys(sol)[0] as string;
        if (!right) sol[first] = [...(sol[first] as string[])].reverse();
        answer = { solution: sol };
      } else {
        const calls = JSON.parse(JSON.stringify(task.calls)) as Array<{ name: string; arguments: Record<string, unknown> }>;
        if (!right) calls[0] = { name: 'send_email', arguments: { to: 'wrong@example.com', subject: 'x', body: 'y' } };
        answer = { calls };
      }
      return { text: JSON.stringify(answer), rollout: fakeRollout(`s${this.n}`) };
    });
  }
}

export class RecordingUpdater implements PolicyUpdater {
  readonly updates: Array<{ role: Role; groups: RolloutGroup[] }> = [];
  async update(role: Role, groups: readonly RolloutGroup[]): Promise<RoleUpdateMetrics | undefined> {
    this.updates.push({ role, groups: [...groups] });
    return undefined;
  }
}
