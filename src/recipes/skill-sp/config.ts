// Skill Self-Play's settings (docs/recipes.md), one declarative table. From the paper: 5 iterations, β = 1,
// τ = 5, the routing weights of its worked example (0.5, 0.25, 0.25), the clip [0.1, 1]. The rest are ours.
import { atLeast, inRange, nonEmpty, type OptionTable } from '../option-table.js';

export interface SkillSpConfig {
  [key: string]: unknown;
  model: string;
  backend: string;
  out: string;
  iterations: number;
  promptsPerIteration: number;
  proposalsPerPrompt: number;
  solverRollouts: number;
  alpha: number;
  families: string;
  beta: number;
  tau: number;
  wVerified: number;
  wConsistent: number;
  wFrontier: number;
  clipLow: number;
  clipHigh: number;
  frontierLow: number;
  frontierHigh: number;
  gamma: number;
  pruneMinAttempts: number;
  pruneSeeds: boolean;
  noveltyMax: number;
  inductionClueTypes: number;
  maxCalls: number;
  proposerTokens: number;
  solverTokens: number;
  temperature: number;
  update: boolean;
  lr: number;
  weightDecay: number;
  maxGradNorm: number;
  loraR: number;
  loraAlpha: number;
  klCoef: number;
  microBatchSize: number;
  generationBatch: number;
  seed: number;
}

const families = (v: string): string | undefined =>
  v.split(',').every((f) => f.trim() === 'zebra' || f.trim() === 'toolcall') && v.trim() !== '' ? undefined : `must list zebra and/or toolcall, comma-separated, got '${v}'`;

export const SKILL_SP_OPTIONS: OptionTable<Extract<keyof SkillSpConfig, string>> = [
  { key: 'model', type: 'string', default: 'tiny', help: "model folder or name for the proposer and solver (one frozen base, two LoRA adapters); 'tiny' = the embedded tiny random Qwen3", check: nonEmpty },
  { key: 'backend', type: 'string', default: 'auto', help: 'tensor backend: auto, tensorflow, wasm or cpu', check: (v: string) => (['auto', 'tensorflow', 'wasm', 'cpu'].includes(v) ? undefined : `must be auto, tensorflow, wasm or cpu, got '${v}'`) },
  { key: 'out', type: 'string', default: 'runs/skill-sp', help: 'run folder (config.json, metrics.jsonl, library.json, adapters)', check: nonEmpty },
  { key: 'iterations', type: 'integer', default: 5, help: 'self-play iterations (the paper: 5)', check: atLeast(1) },
  { key: 'promptsPerIteration', type: 'integer', default: 8, help: 'proposer prompts per iteration (each a skill-stream or open-stream slot)', check: atLeast(1) },
  { key: 'proposalsPerPrompt', type: 'integer', default: 4, help: 'proposals sampled per prompt (the proposer GRPO group)', check: atLeast(1) },
  { key: 'solverRollouts', type: 'integer', default: 4, help: 'K, solver rollouts per valid task (estimate v_solve; the solver GRPO group)', check: atLeast(1) },
  { key: 'alpha', type: 'number', default: 0.25, help: 'α, share of proposer slots in the open-ended stream (no skill)', check: inRange(0, 1) },
  { key: 'families', type: 'string', default: 'zebra,toolcall', help: 'task families the open stream draws from', check: families },
  { key: 'beta', type: 'number', default: 1, help: 'β, exploration bonus scale (bonus 1 + β·e^(−a/τ))', check: atLeast(0) },
  { key: 'tau', type: 'number', default: 5, help: 'τ, exploration bonus decay in attempts', check: (v: number) => (v > 0 ? undefined : `must be > 0, got ${v}`) },
  { key: 'wVerified', type: 'number', default: 0.5, help: 'routing weight of the verified rate', check: atLeast(0) },
  { key: 'wConsistent', type: 'number', default: 0.25, help: 'routing weight of the consistent rate', check: atLeast(0) },
  { key: 'wFrontier', type: 'number', default: 0.25, help: 'routing weight of the frontier rate', check: atLeast(0) },
  { key: 'clipLow', type: 'number', default: 0.1, help: 'lower clip of the composite routing score', check: inRange(0, 1) },
  { key: 'clipHigh', type: 'number', default: 1, help: 'upper clip of the composite routing score', check: (v: number) => (v > 0 ? undefined : `must be > 0, got ${v}`) },
  { key: 'frontierLow', type: 'number', default: 0.25, help: 'a verified task is on the frontier when frontierLow ≤ v_solve ≤ frontierHigh', check: inRange(0, 1) },
  { key: 'frontierHigh', type: 'number', default: 0.75, help: 'upper end of the frontier band', check: inRange(0, 1) },
  { key: 'gamma', type: 'number', default: 0.05, help: 'γ, prune a skill whose mean gated reward falls below this', check: inRange(0, 1) },
  { key: 'pruneMinAttempts', type: 'integer', default: 8, help: 'attempts before a skill can be pruned', check: atLeast(1) },
  { key: 'pruneSeeds', type: 'boolean', default: false, help: 'let pruning remove seed skills too', check: undefined },
  { key: 'noveltyMax', type: 'number', default: 0.75, help: 'an induced skill is novel when its Jaccard overlap with every same-family skill is below this', check: inRange(0, 1) },
  { key: 'inductionClueTypes', type: 'integer', default: 3, help: 'an induced zebra skill requires the task\'s this-many most used clue types', check: atLeast(1) },
  { key: 'maxCalls', type: 'integer', default: 4, help: 'most calls in a tool-call task or answer', check: atLeast(1) },
  { key: 'proposerTokens', type: 'integer', default: 768, help: 'new tokens per proposal', check: atLeast(8) },
  { key: 'solverTokens', type: 'integer', default: 384, help: 'new tokens per solver answer', check: atLeast(8) },
  { key: 'temperature', type: 'number', default: 1, help: 'sampling temperature of both roles', check: inRange(0, 2) },
  { key: 'update', type: 'boolean', default: true, help: 'GRPO updates of the proposer and solver adapters (--no-update: rollouts only)', check: undefined },
  { key: 'lr', type: 'number', default: 1e-5, help: 'LoRA learning rate', check: (v: number) => (v > 0 ? undefined : `must be > 0, got ${v}`) },
  { key: 'weightDecay', type: 'number', default: 0.01, help: 'AdamW weight decay of the adapters', check: atLeast(0) },
  { key: 'maxGradNorm', type: 'number', default: 1, help: 'gradient clipping at this global norm', check: (v: number) => (v > 0 ? undefined : `must be > 0, got ${v}`) },
  { key: 'loraR', type: 'integer', default: 16, help: 'LoRA rank', check: atLeast(1) },
  { key: 'loraAlpha', type: 'number', default: 32, help: 'LoRA alpha', check: (v: number) => (v > 0 ? undefined : `must be > 0, got ${v}`) },
  { key: 'klCoef', type: 'number', default: 0.01, help: 'k3 KL coefficient to the base model', check: atLeast(0) },
  { key: 'microBatchSize', type: 'integer', default: 4, help: 'sequences per GRPO forward/backward pass', check: atLeast(1) },
  { key: 'generationBatch', type: 'integer', default: 16, help: 'prompts generated together (bounds one batch\'s KV cache)', check: atLeast(1) },
  { key: 'seed', type: 'integer', default: 0, help: 'run seed (routing, stream choice, sampling)', check: atLeast(0) },
];

export const SKILL_SP_DEFAULTS: SkillSpConfig = Object.fromEntries(SKILL_SP_OPTIONS.map((r) => [r.key, r.default])) as SkillSpConfig;

export function skillSpProblems(c: SkillSpConfig): string[] {
  const out: string[] = [];
  if (c.frontierLow > c.frontierHigh) out.push(`--frontier-low (${c.frontierLow}) must be ≤ --frontier-high (${c.frontierHigh})`);
  if (c.clipLow > c.clipHigh) out.push(`--clip-low (${c.clipLow}) must be ≤ --clip-high (${c.clipHigh})`);
  if (c.wVerified + c.wConsistent + c.wFrontier <= 0) out.push('the routing weights --w-verified, --w-consistent, --w-frontier must not all be 0');
  return out;
}
