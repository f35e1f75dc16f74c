// What the step-0 held-out eval depends on, listed for its cache (src/eval/held-out-cache.ts; docs/evaluation.md,
// "The step-0 cache"). Every setting counts except those that only shape training (below: a setting added to
// the tables later counts until it is listed here, so a forgotten one costs a recomputation, never a stale
// result). Contents count by digest: the program's sources, the model's files, any file or folder a setting
// names, the search tools, the solver adapter (all of it, unless every B is zero: then the adapter adds exactly
// zero to every projection and the eval is the base model's, whatever the seed drew for A), and the bank's
// cards. The backend, its threads and the machine count too (products sum in another order elsewhere).
import { existsSync } from 'node:fs';
import { arch, cpus } from 'node:os';
import { createHash } from 'node:crypto';
import type { EvalSet } from '../agent/environment.js';
import type { LoraAdapter } from '../model/lora.js';
import type { SkillBank } from '../skills/bank.js';
import type { BackendInfo } from '../tensor/backend.js';
import { GRPO_SETTINGS } from '../settings/train/grpo.js';
import { JUDGE_SETTINGS } from '../settings/train/judge.js';
import { PROPOSER_SETTINGS } from '../settings/train/proposer.js';
import type { TrainConfig } from '../settings/train.js';
import { digestOfPath, programDigest } from '../util/fingerprint.js';

/**
 * Settings that cannot change the step-0 eval: the update (GRPO), the proposer's rules and rewards, the judge
 * and distiller (the held-out eval is scored by exact match), how training draws and batches its questions,
 * how the bank learns, and where the run writes.
 */
const TRAINING_ONLY = new Set<string>([
  ...Object.keys(GRPO_SETTINGS),
  ...Object.keys(PROPOSER_SETTINGS),
  ...Object.keys(JUDGE_SETTINGS),
  ...['steps', 'seed', 'seedsPerStep', 'proposalsPerSeed', 'solverBatch', 'minInformativeGroups', 'resampleRounds', 'hopMix', 'minHops', 'maxHops', 'groupSize', 'out', 'saveEvery', 'tensorboard'],
  ...['seeds', 'ragDistractorBlocks', 'ragMaxTokens'],
  ...['evalEvery', 'evalCache'],
  ...['distill', 'queueCapacity', 'consolidateEvery', 'consolidateMinPending', 'consolidateMaxSelected', 'dedupThreshold', 'evictMinRetrieved', 'maxCards'],
  ...['failureEvidenceChars', 'queueFailures', 'cardsInGroup', 'cardUtility', 'distillEvidenceChars', 'distillConcurrency', 'distillMaxTokens'],
]);

export interface StepZeroEvalParts {
  config: TrainConfig;
  /** The resolved model folder (its files are hashed). */
  modelDir: string;
  adapter: LoraAdapter;
  bank?: SkillBank;
  sets: readonly EvalSet[];
  backend: BackendInfo;
}

/** The adapter's digest: 'zero-B' when every lora_B is all zeros, else the sha256 of every variable's values. */
async function adapterDigest(adapter: LoraAdapter): Promise<string> {
  const vars = [...adapter.variables()];
  let zero = true;
  const h = createHash('sha256');
  for (const [name, v] of vars) {
    const data = (await v.data()) as Float32Array;
    if (name.endsWith('.lora_B') && data.some((x) => x !== 0)) zero = false;
    h.update(`${name}\u0000${v.shape.join('x')}\u0000`);
    h.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return zero ? `zero-B (rank ${adapter.config.r})` : h.digest('hex');
}

/**
 * The inputs of the step-0 eval, or why it cannot be cached (a search tool without a content digest: a retrieval
 * server, whose index can change under the same URL).
 */
export async function stepZeroEvalInputs(parts: StepZeroEvalParts): Promise<{ inputs: Record<string, unknown> } | { reason: string }> {
  const blind = parts.sets.find((s) => s.searcher.contentDigest === undefined);
  if (blind) return { reason: `the search tool of ${blind.dataset} (${blind.searcher.describe()}) has no content digest` };
  const settings: Record<string, unknown> = {};
  const files: Record<string, string> = {};
  for (const [key, value] of Object.entries(parts.config)) {
    if (TRAINING_ONLY.has(key)) continue;
    settings[key] = value;
    if (key !== 'model' && typeof value === 'string' && value !== '' && existsSync(value)) files[key] = digestOfPath(value);
  }
  return {
    inputs: {
      program: programDigest(),
      model: digestOfPath(parts.modelDir),
      adapter: await adapterDigest(parts.adapter),
      bank: parts.bank ? createHash('sha256').update(JSON.stringify(parts.bank.cards)).digest('hex') : null,
      sets: parts.sets.map((s) => ({ dataset: s.dataset, search: s.searcher.contentDigest, questions: createHash('sha256').update(JSON.stringify(s.questions)).digest('hex') })),
      settings,
      files,
      backend: { name: parts.backend.name, threads: parts.backend.threads ?? null, frozenBase: parts.backend.frozenBase ?? 'f32' },
      machine: { cpu: cpus()[0]?.model ?? 'unknown', arch: arch(), node: process.version },
    },
  };
}
