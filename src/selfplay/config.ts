// The trainer's configuration: every value with its default in one place. SPEC numbers are cited; values the
// papers leave open are ours and marked so. The CLI, config files and the run folder all use this type.

export type EmbedderName = 'e5' | 'lexical';
export type BackendOption = 'auto' | 'tensorflow' | 'wasm' | 'cpu';

export interface TrainConfig {
  /** A model folder or registry name; 'tiny' = the embedded tiny random Qwen3. */
  model: string;
  gpus: number;
  backend: BackendOption;
  /** A JSONL corpus path, or 'demo' for the embedded synthetic encyclopedia. */
  corpus: string;
  /** A Search-R1-compatible retrieval server; when set, it replaces the local index. */
  retrieverUrl?: string;
  /** Answer seeds (JSONL of {answer, hops}); default: the demo corpus's seeds. */
  seeds?: string;
  steps: number;
  seedsPerStep: number;
  /** n_p: proposals per seed (SPEC §2 step 1, ours: 4). */
  proposalsPerSeed: number;
  /** G: solver rollouts per valid question (SPEC §2 step 3: 5). */
  groupSize: number;
  /** SPEC §3: 10. */
  maxTurns: number;
  /** New tokens per turn. Ours: 512. */
  maxNewTokens: number;
  /** Response tokens per rollout, tool output included. Ours: 4096. */
  maxResponseTokens: number;
  /** Rollout temperature (SPEC §4: 1.0). */
  temperature: number;
  /** LoRA learning rate (SPEC §4: 1e-5). */
  lr: number;
  warmupSteps: number;
  weightDecay: number;
  maxGradNorm: number;
  /** SPEC §4: rank 16, alpha 32. */
  loraR: number;
  loraAlpha: number;
  /** SPEC §4: 0.01. */
  klCoef: number;
  /** SPEC §4: ε_low 0.2, ε_high 0.28. */
  clipLow: number;
  clipHigh: number;
  /** SPEC §2 step 5: λ = 0.5 (ours). */
  lambda: number;
  /** SPEC §2 step 2: r_invalid = −1. */
  invalidReward: number;
  /** off = the SSP baseline (no skill bank at all). */
  skills: boolean;
  /** Start the bank from the seed cards (SPEC §2 memory priming). */
  priming: boolean;
  /** Frontier reward 4p̂(1−p̂) with −λ at the endpoints; off: 1 − p̂. */
  frontier: boolean;
  /** Failure distillation into new cards (SPEC §2 step 9). */
  distill: boolean;
  embedder: EmbedderName;
  e5Model: string;
  judgeUrl?: string;
  judgeModel?: string;
  distillerUrl?: string;
  distillerModel?: string;
  /** Environment variable holding the API key of the judge/distiller endpoints. */
  apiKeyEnv: string;
  /** Sequences per forward/backward pass in GRPO (gradients accumulate over them). */
  microBatchSize: number;
  /** Qwen3 thinking in the chat template (SPEC §3: off). */
  enableThinking: boolean;
  out: string;
  saveEvery: number;
  seed: number;
  /** Held-out evaluation every K steps (and at step 0 and the end); 0 = off (docs/evaluation.md). */
  evalEvery: number;
  /** Held-out questions: a FlashRAG JSONL file, a benchmark name (in $SESA_DATA) or demo. */
  evalData?: string;
  /** Held-out questions per evaluation (a seeded sample). */
  evalLimit: number;
  /** With `--corpus world`: the seed of the generated world (0 = the demo world; docs/world.md). */
  worldSeed: number;
}

/** Defaults for a real model (`--model`): SPEC §2-§4, and ours where marked in the type above. */
export const TRAIN_DEFAULTS: TrainConfig = {
  model: 'tiny',
  gpus: 1,
  backend: 'auto',
  corpus: 'demo',
  steps: 200,
  seedsPerStep: 8,
  proposalsPerSeed: 4,
  groupSize: 5,
  maxTurns: 10,
  maxNewTokens: 512,
  maxResponseTokens: 4096,
  temperature: 1.0,
  lr: 1e-5,
  warmupSteps: 10,
  weightDecay: 0.01,
  maxGradNorm: 1.0,
  loraR: 16,
  loraAlpha: 32,
  klCoef: 0.01,
  clipLow: 0.2,
  clipHigh: 0.28,
  lambda: 0.5,
  invalidReward: -1,
  skills: true,
  priming: true,
  frontier: true,
  distill: true,
  embedder: 'e5',
  e5Model: 'intfloat/e5-base-v2',
  apiKeyEnv: 'OPENAI_API_KEY',
  microBatchSize: 4,
  enableThinking: false,
  out: 'runs/sesa',
  saveEvery: 10,
  seed: 0,
  evalEvery: 0,
  evalLimit: 100,
  worldSeed: 0,
};

/**
 * The embedded default (`sesa-train` with no arguments): the tiny random model, the synthetic corpus and the
 * lexical embedder, sized to finish a few steps on a CPU in minutes.
 */
export const EMBEDDED_DEFAULTS: Partial<TrainConfig> = {
  model: 'tiny',
  corpus: 'demo',
  embedder: 'lexical',
  steps: 3,
  seedsPerStep: 2,
  proposalsPerSeed: 2,
  groupSize: 3,
  maxTurns: 3,
  maxNewTokens: 40,
  maxResponseTokens: 256,
  lr: 1e-3,
  warmupSteps: 0,
  microBatchSize: 8,
  out: 'runs/demo',
  saveEvery: 1,
};

/**
 * `--model demo` (docs/world.md): SESA self-play in the demo world from the shipped warm-start model, with the
 * held-out eval at step 0, every 5 steps and at the end, the lexical embedder and the scripted judge, RAG
 * check and distiller. Sized for a CPU (ours; not yet timed on an idle 2-core machine).
 */
export const WORLD_DEFAULTS: Partial<TrainConfig> = {
  model: 'demo',
  corpus: 'world',
  worldSeed: 0,
  embedder: 'lexical',
  steps: 20,
  seedsPerStep: 4,
  proposalsPerSeed: 4,
  groupSize: 5,
  maxTurns: 4,
  maxNewTokens: 64,
  maxResponseTokens: 768,
  lr: 1e-3,
  warmupSteps: 0,
  microBatchSize: 4,
  evalEvery: 5,
  evalData: 'world',
  evalLimit: 57,
  out: 'runs/world',
  saveEvery: 5,
};

/** Multi-worker training is a later issue: until then more than one GPU is refused plainly. */
export const MAX_SUPPORTED_GPUS = 1;

type Check = (c: TrainConfig) => string | undefined;

const positiveInt = (k: keyof TrainConfig): Check => (c) => (Number.isInteger(c[k]) && (c[k] as number) > 0 ? undefined : `--${flagName(k)} must be a positive integer, got ${String(c[k])}`);
const nonNegative = (k: keyof TrainConfig): Check => (c) => (typeof c[k] === 'number' && (c[k] as number) >= 0 && Number.isFinite(c[k]) ? undefined : `--${flagName(k)} must be a number ≥ 0, got ${String(c[k])}`);
const positive = (k: keyof TrainConfig): Check => (c) => (typeof c[k] === 'number' && (c[k] as number) > 0 && Number.isFinite(c[k]) ? undefined : `--${flagName(k)} must be a positive number, got ${String(c[k])}`);

/** camelCase key → --kebab-case flag. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
}

const CHECKS: Check[] = [
  positiveInt('steps'),
  positiveInt('seedsPerStep'),
  positiveInt('proposalsPerSeed'),
  positiveInt('groupSize'),
  positiveInt('maxTurns'),
  positiveInt('maxNewTokens'),
  positiveInt('maxResponseTokens'),
  positiveInt('loraR'),
  positiveInt('microBatchSize'),
  positiveInt('saveEvery'),
  positiveInt('gpus'),
  nonNegative('temperature'),
  positive('lr'),
  nonNegative('warmupSteps'),
  nonNegative('weightDecay'),
  positive('maxGradNorm'),
  positive('loraAlpha'),
  nonNegative('klCoef'),
  nonNegative('lambda'),
  (c) => (c.clipLow > 0 && c.clipLow < 1 ? undefined : `--clip-low must be in (0, 1), got ${c.clipLow}`),
  (c) => (c.clipHigh > 0 ? undefined : `--clip-high must be positive, got ${c.clipHigh}`),
  (c) => (Number.isFinite(c.invalidReward) ? undefined : `--invalid-reward must be a number, got ${c.invalidReward}`),
  (c) => (Number.isInteger(c.seed) && c.seed >= 0 ? undefined : `--seed must be a non-negative integer, got ${c.seed}`),
  (c) => (['e5', 'lexical'].includes(c.embedder) ? undefined : `--embedder must be e5 or lexical, got ${c.embedder}`),
  (c) => (['auto', 'tensorflow', 'wasm', 'cpu'].includes(c.backend) ? undefined : `--backend must be auto, tensorflow, wasm or cpu, got ${c.backend}`),
  (c) =>
    c.gpus <= MAX_SUPPORTED_GPUS
      ? undefined
      : `--gpus ${c.gpus}: multi-GPU training needs the multi-worker trainer, which does not exist yet; run with --gpus 1 (one process, one device)`,
  (c) => (c.maxResponseTokens >= c.maxNewTokens ? undefined : `--max-response-tokens (${c.maxResponseTokens}) must be ≥ --max-new-tokens (${c.maxNewTokens})`),
  (c) => (c.groupSize >= 2 || !c.frontier ? undefined : '--group-size must be ≥ 2 for the frontier reward (p̂ needs a group)'),
  (c) => (c.out.trim().length > 0 ? undefined : '--out must name a folder'),
  (c) => (Number.isInteger(c.evalEvery) && c.evalEvery >= 0 ? undefined : `--eval-every must be an integer ≥ 0, got ${c.evalEvery}`),
  positiveInt('evalLimit'),
  (c) => (Number.isInteger(c.worldSeed) && c.worldSeed >= 0 ? undefined : `--world-seed must be a non-negative integer, got ${c.worldSeed}`),
  (c) => (c.evalEvery === 0 || (c.evalData !== undefined && c.evalData !== '') ? undefined : '--eval-every needs --eval-data (a FlashRAG JSONL file, a benchmark name or demo)'),
];

/** All problems with a config, each naming its flag; empty when valid. */
export function configProblems(c: TrainConfig): string[] {
  return CHECKS.map((check) => check(c)).filter((m): m is string => m !== undefined);
}

export function validateConfig(c: TrainConfig): TrainConfig {
  const problems = configProblems(c);
  if (problems.length > 0) throw new Error(`invalid training configuration:\n  - ${problems.join('\n  - ')}`);
  return c;
}

const KNOWN_KEYS = new Set(Object.keys(TRAIN_DEFAULTS).concat(['retrieverUrl', 'seeds', 'judgeUrl', 'judgeModel', 'distillerUrl', 'distillerModel', 'evalData']));

/** Checks a parsed config file's keys and value types against TrainConfig; `file` names it in errors. */
export function parseConfigObject(raw: unknown, file: string): Partial<TrainConfig> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${file}: a config file must hold an object of settings`);
  const out: Record<string, unknown> = {};
  for (const [k0, v] of Object.entries(raw)) {
    const k = k0.replace(/-([a-z])/g, (_, ch: string) => ch.toUpperCase());
    if (!KNOWN_KEYS.has(k)) throw new Error(`${file}: unknown setting '${k0}' (known: ${[...KNOWN_KEYS].join(', ')})`);
    const def = (TRAIN_DEFAULTS as unknown as Record<string, unknown>)[k];
    if (def !== undefined && typeof def !== typeof v) throw new Error(`${file}: setting '${k0}' must be a ${typeof def}, got ${JSON.stringify(v)}`);
    if (def === undefined && typeof v !== 'string') throw new Error(`${file}: setting '${k0}' must be a string, got ${JSON.stringify(v)}`);
    out[k] = v;
  }
  return out as Partial<TrainConfig>;
}
