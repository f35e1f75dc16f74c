// Skill Self-Play's settings (docs/recipes.md), one declarative table built like the trainer's
// (src/settings/setting.ts): --help, --config files and the checks all derive from it. From the paper:
// 5 iterations, β = 1, τ = 5, the routing weights of its worked example (0.5, 0.25, 0.25), the clip [0.1, 1].
// The rest are ours.
import { bool, choice, type ConfigOf, fixedOnResumeExcept, int, num, optionalNum, str } from '../../settings/setting.js';
import { BACKEND_CHOICES } from '../../tensor/backend.js';
import { defaultsOf } from '../../settings/table.js';
import { RUN_SETTINGS } from '../../settings/train/run.js';

const families = (v: string): string | undefined =>
  v.split(',').every((f) => f.trim() === 'zebra' || f.trim() === 'toolcall') ? undefined : `must list zebra and/or toolcall, comma-separated, got '${v}'`;

export const SKILL_SP_SETTINGS = fixedOnResumeExcept(
  {
    model: str('tiny', { help: "model folder or name for the proposer and solver (one frozen base, two LoRA adapters); 'tiny' = the embedded tiny random Qwen3" }),
    backend: choice(BACKEND_CHOICES, 'auto', { help: 'tensor backend (auto picks the fastest available)' }),
    threads: optionalNum({ min: 1, check: (v) => (v === undefined || Number.isInteger(v) ? undefined : `must be a whole number of threads, got ${v}`), help: "compute threads of the wasm backend, or of the native backend's matMuls (default: all cores; a count the backend does not honour is an error)" }),
    out: str('runs/skill-sp', { help: 'run folder (config.json, metrics.jsonl, library.json, adapters)' }),
    // The trainer's own setting, not a copy: the same flag, default and help (docs/recipes.md, "Run metrics").
    tensorboard: RUN_SETTINGS.tensorboard,
    iterations: int(5, { help: 'self-play iterations (the paper: 5; on --resume: a larger value extends the run)' }),
    promptsPerIteration: int(8, { help: 'proposer prompts per iteration (each a skill-stream or open-stream slot)' }),
    proposalsPerPrompt: int(4, { help: 'proposals sampled per prompt (the proposer GRPO group)' }),
    solverRollouts: int(4, { help: 'K, solver rollouts per valid task (estimate v_solve; the solver GRPO group)' }),
    alpha: num(0.25, { min: 0, max: 1, help: 'α, share of proposer slots in the open-ended stream (no skill)' }),
    families: str('zebra,toolcall', { help: 'task families the open stream draws from (comma-separated: zebra, toolcall)', check: families }),
    beta: num(1, { min: 0, help: 'β, exploration bonus scale (bonus 1 + β·e^(−a/τ))' }),
    tau: num(5, { above: 0, help: 'τ, exploration bonus decay in attempts' }),
    wVerified: num(0.5, { min: 0, help: 'routing weight of the verified rate' }),
    wConsistent: num(0.25, { min: 0, help: 'routing weight of the consistent rate' }),
    wFrontier: num(0.25, { min: 0, help: 'routing weight of the frontier rate' }),
    clipLow: num(0.1, { min: 0, max: 1, help: 'lower clip of the composite routing score' }),
    clipHigh: num(1, { above: 0, help: 'upper clip of the composite routing score' }),
    frontierLow: num(0.25, { min: 0, max: 1, help: 'a verified task is on the frontier when frontierLow ≤ v_solve ≤ frontierHigh' }),
    frontierHigh: num(0.75, { min: 0, max: 1, help: 'upper end of the frontier band' }),
    gamma: num(0.05, { min: 0, max: 1, help: 'γ, prune a skill whose mean gated reward falls below this' }),
    pruneMinAttempts: int(8, { help: 'attempts before a skill can be pruned' }),
    pruneSeeds: bool(false, { help: 'let pruning remove seed skills too' }),
    noveltyMax: num(0.75, { min: 0, max: 1, help: 'an induced skill is novel when its Jaccard overlap with every same-family skill is below this' }),
    inductionClueTypes: int(3, { help: "an induced zebra skill requires the task's this-many most used clue types" }),
    maxCalls: int(4, { help: 'most calls in a tool-call task or answer' }),
    proposerTokens: int(768, { min: 8, help: 'new tokens per proposal' }),
    solverTokens: int(384, { min: 8, help: 'new tokens per solver answer' }),
    temperature: num(1, { min: 0, max: 2, help: 'sampling temperature of both roles' }),
    update: bool(true, { help: 'GRPO updates of the proposer and solver adapters (--no-update: rollouts only)' }),
    lr: num(1e-5, { above: 0, help: 'LoRA learning rate' }),
    weightDecay: num(0.01, { min: 0, help: 'AdamW weight decay of the adapters' }),
    maxGradNorm: num(1, { above: 0, help: 'gradient clipping at this global norm' }),
    loraR: int(16, { help: 'LoRA rank' }),
    loraAlpha: num(32, { above: 0, help: 'LoRA alpha' }),
    klCoef: num(0.01, { min: 0, help: 'k3 KL coefficient to the base model' }),
    microBatchSize: int(4, { help: 'sequences per GRPO forward/backward pass' }),
    generationBatch: int(16, { help: "prompts generated together (bounds one batch's KV cache)" }),
    seed: int(0, { min: 0, help: 'run seed (routing, stream choice, sampling)' }),
  },
  ['iterations', 'threads', 'tensorboard'],
  'a resumed run continues with the settings it recorded; only --iterations may extend it (and --threads is this machine\'s, --tensorboard what it logs)',
);

export type SkillSpConfig = ConfigOf<typeof SKILL_SP_SETTINGS>;

export const SKILL_SP_DEFAULTS: SkillSpConfig = defaultsOf(SKILL_SP_SETTINGS);

/** Rules that tie settings together, each naming the flags. */
export function skillSpProblems(c: SkillSpConfig): string[] {
  const out: string[] = [];
  if (c.frontierLow > c.frontierHigh) out.push(`--frontier-low (${c.frontierLow}) must be ≤ --frontier-high (${c.frontierHigh})`);
  if (c.clipLow > c.clipHigh) out.push(`--clip-low (${c.clipLow}) must be ≤ --clip-high (${c.clipHigh})`);
  if (c.wVerified + c.wConsistent + c.wFrontier <= 0) out.push('the routing weights --w-verified, --w-consistent, --w-frontier must not all be 0');
  return out;
}
