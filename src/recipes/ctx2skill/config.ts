// Ctx2Skill's settings (docs/recipes.md), one declarative table built like the trainer's
// (src/settings/setting.ts): N iterations of M tasks, the replay probe sets, the bounded retries of a
// malformed reply, and the per-role generation lengths. The paper's values are N = M = 5; the rest are ours.
import { type ConfigOf, fixedOnResumeExcept, int, num } from '../../settings/setting.js';
import { defaultsOf } from '../../settings/table.js';
import { RUN_SETTINGS } from '../../settings/train/run.js';

export const CTX2SKILL_SETTINGS = fixedOnResumeExcept(
  {
    iterations: int(5, { help: 'N, self-play iterations (the paper: 5)' }),
    tasks: int(5, { help: 'M, tasks the Challenger writes per iteration (the paper: 5)' }),
    rubricsMin: int(1, { help: 'fewest rubric items a task must carry' }),
    rubricsMax: int(6, { help: 'most rubric items kept per task (extra items are an error, not cut)' }),
    probeMax: int(10, { help: 'most tasks in each replay probe set (hard, easy), spread over the iterations' }),
    parseRetries: int(2, { min: 0, help: 'retries of a role whose reply does not parse, before it is recorded as a failure' }),
    contextMaxChars: int(200_000, { help: 'largest context accepted (characters); a longer one is refused, never cut' }),
    challengerTokens: int(1536, { min: 16, help: 'reply budget of the Challenger (tokens)' }),
    reasonerTokens: int(1024, { min: 16, help: 'reply budget of the Reasoner (tokens)' }),
    judgeTokens: int(768, { min: 16, help: 'reply budget of the Judge (tokens)' }),
    proposerTokens: int(1024, { min: 16, help: 'reply budget of a Proposer (tokens)' }),
    generatorTokens: int(2048, { min: 16, help: 'reply budget of a Generator (tokens)' }),
    challengerTemperature: num(0.7, { min: 0, max: 2, help: 'sampling temperature of the Challenger (varied tasks)' }),
    temperature: num(0, { min: 0, max: 2, help: 'sampling temperature of the other roles (0 = greedy)' }),
    maxSkills: int(30, { help: 'most skills a Generator may return for one side' }),
    seed: int(0, { min: 0, help: 'seed of the in-process model sampling' }),
    // The trainer's own setting, not a copy: the same flag, default and help (docs/recipes.md, "Run metrics").
    tensorboard: RUN_SETTINGS.tensorboard,
  },
  ['tensorboard'],
  'a resumed run continues with the settings and context it recorded (only --tensorboard, what it logs, may change)',
);

export type Ctx2SkillConfig = ConfigOf<typeof CTX2SKILL_SETTINGS>;

export const CTX2SKILL_DEFAULTS: Ctx2SkillConfig = defaultsOf(CTX2SKILL_SETTINGS);

/** Rules that tie settings together, each naming the flags. */
export function ctx2skillProblems(c: Ctx2SkillConfig): string[] {
  return c.rubricsMax >= c.rubricsMin ? [] : [`--rubrics-max (${c.rubricsMax}) must be ≥ --rubrics-min (${c.rubricsMin})`];
}
