// Ctx2Skill's settings (docs/recipes.md): N iterations of M tasks, the replay probe sets, the bounded retries
// of a malformed reply, and the per-role generation lengths. The paper's values are N = M = 5; the rest are ours.
import { atLeast, inRange, type OptionTable } from '../option-table.js';

export interface Ctx2SkillConfig {
  [key: string]: unknown;
  iterations: number;
  tasks: number;
  rubricsMin: number;
  rubricsMax: number;
  probeMax: number;
  parseRetries: number;
  contextMaxChars: number;
  challengerTokens: number;
  reasonerTokens: number;
  judgeTokens: number;
  proposerTokens: number;
  generatorTokens: number;
  challengerTemperature: number;
  temperature: number;
  maxSkills: number;
  seed: number;
}

export const CTX2SKILL_OPTIONS: OptionTable<Extract<keyof Ctx2SkillConfig, string>> = [
  { key: 'iterations', type: 'integer', default: 5, help: 'N, self-play iterations (the paper: 5)', check: atLeast(1) },
  { key: 'tasks', type: 'integer', default: 5, help: 'M, tasks the Challenger writes per iteration (the paper: 5)', check: atLeast(1) },
  { key: 'rubricsMin', type: 'integer', default: 1, help: 'fewest rubric items a task must carry', check: atLeast(1) },
  { key: 'rubricsMax', type: 'integer', default: 6, help: 'most rubric items kept per task (extra items are an error, not cut)', check: atLeast(1) },
  { key: 'probeMax', type: 'integer', default: 10, help: 'most tasks in each replay probe set (hard, easy), spread over the iterations', check: atLeast(1) },
  { key: 'parseRetries', type: 'integer', default: 2, help: 'retries of a role whose reply does not parse, before it is recorded as a failure', check: atLeast(0) },
  { key: 'contextMaxChars', type: 'integer', default: 200_000, help: 'largest context accepted (characters); a longer one is refused, never cut', check: atLeast(1) },
  { key: 'challengerTokens', type: 'integer', default: 1536, help: 'reply budget of the Challenger (tokens)', check: atLeast(16) },
  { key: 'reasonerTokens', type: 'integer', default: 1024, help: 'reply budget of the Reasoner (tokens)', check: atLeast(16) },
  { key: 'judgeTokens', type: 'integer', default: 768, help: 'reply budget of the Judge (tokens)', check: atLeast(16) },
  { key: 'proposerTokens', type: 'integer', default: 1024, help: 'reply budget of a Proposer (tokens)', check: atLeast(16) },
  { key: 'generatorTokens', type: 'integer', default: 2048, help: 'reply budget of a Generator (tokens)', check: atLeast(16) },
  { key: 'challengerTemperature', type: 'number', default: 0.7, help: 'sampling temperature of the Challenger (varied tasks)', check: inRange(0, 2) },
  { key: 'temperature', type: 'number', default: 0, help: 'sampling temperature of the other roles (0 = greedy)', check: inRange(0, 2) },
  { key: 'maxSkills', type: 'integer', default: 30, help: 'most skills a Generator may return for one side', check: atLeast(1) },
  { key: 'seed', type: 'integer', default: 0, help: 'seed of the in-process model sampling', check: atLeast(0) },
];

export const CTX2SKILL_DEFAULTS: Ctx2SkillConfig = Object.fromEntries(CTX2SKILL_OPTIONS.map((r) => [r.key, r.default])) as Ctx2SkillConfig;

export function ctx2skillProblems(c: Ctx2SkillConfig): string[] {
  return c.rubricsMax >= c.rubricsMin ? [] : [`--rubrics-max (${c.rubricsMax}) must be ≥ --rubrics-min (${c.rubricsMin})`];
}
