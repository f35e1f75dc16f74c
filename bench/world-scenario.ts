// The world step that bench/world.bench.ts measures, pinned here rather than taken from the measured tree's
// WORLD_DEFAULTS, so that this tree and a base tree (SESA_BENCH_BASE) run the same step: each tree's own
// TRAIN_DEFAULTS with these settings over them, on one model folder (the bench's, below).
//
// The step is the one the README's "Speed on 2 CPU cores" table measured: 9217bcb's world defaults cut to one
// step of 4 seeds (4 seeds × 8 proposals = 32, G = 4, two-hop seeds, 4 solver epochs, a 120-token card budget,
// the paper's r_invalid = −1 and cards in every rollout), seed 0. Settings added since 9217bcb are pinned to the
// value that computes what a tree without them computes (one training world, no reuse pool, every valid
// question solved, no checks or resampling of later layouts); a tree whose settings table lacks one of those
// runs without it, and a tree that lacks any other pinned setting is refused (bench/world-step-child.ts).
//
// The model: the bench passes one folder to every tree, SESA_BENCH_MODEL or else this tree's models/demo (its
// weights, tokenizer and priming-cards.jsonl), so a base tree that shipped another warm start still runs this
// one. Pass SESA_BENCH_MODEL=<base>/models/demo where an old tree cannot read today's warm start.
import { resolve } from 'node:path';

/** A pinned value; null = unset (the setting left out of the configuration, as its table's unset default). */
export type PinnedValue = string | number | boolean | string[] | null;

/** Settings every measured tree must know, at 9217bcb's values of the step measured. */
export const PINNED_SETTINGS: Readonly<Record<string, PinnedValue>> = {
  // Run: one step of 4 seeds × 8 proposals, two-hop seeds, G = 4, seed 0, in one process.
  recipe: 'sesa',
  gpus: 1,
  workers: 1,
  rolloutEngine: 'native',
  steps: 1,
  seedsPerStep: 4,
  proposalsPerSeed: 8,
  minHops: 2,
  maxHops: 2,
  groupSize: 4,
  saveEvery: 4,
  seed: 0,
  // Rollout.
  maxTurns: 4,
  maxNewTokens: 64,
  maxResponseTokens: 768,
  temperature: 0.7,
  solverTemperature: null,
  enableThinking: false,
  // Search: the world of seed 0, the local index.
  corpus: 'world',
  worldSeed: 0,
  retrieverUrl: null,
  seeds: null,
  passagesPerQuery: 3,
  ragDistractorBlocks: 4,
  ragMaxTokens: 64,
  // Proposer (validity and reward): the paper's format penalty.
  frontier: true,
  lambda: 0.5,
  invalidReward: -1,
  questionMinChars: 10,
  questionMaxChars: 1000,
  questionMinWords: 10,
  minDistinctQueries: 2,
  rejectRepeatedQueries: true,
  // GRPO and optimizer.
  advantage: 'grpo',
  advantageEps: 1e-6,
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClip: 3,
  skipUniformGroups: true,
  solverEpochs: 4,
  proposerEpochs: 1,
  klCoef: 0.01,
  lossAggregation: 'token-mean',
  lr: 3e-4,
  solverLr: 1e-3,
  proposerLr: null,
  lrSchedule: 'constant',
  minLrRatio: 0,
  warmupSteps: 0,
  weightDecay: 0.01,
  adamBeta1: 0.9,
  adamBeta2: 0.999,
  adamEps: 1e-8,
  maxGradNorm: 1,
  microBatchSize: 4,
  // LoRA.
  loraR: 16,
  loraAlpha: 32,
  loraDropout: 0,
  loraTargets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
  // Skill bank: primed with the model folder's priming-cards.jsonl only, the lexical embedder, the top 3 cards in
  // 120 tokens, in every rollout of a group.
  skills: true,
  priming: true,
  seedCards: false,
  primingCards: null,
  distill: true,
  embedder: 'lexical',
  skillsTopK: 3,
  skillsMinScore: -1,
  queueCapacity: 300,
  consolidateEvery: 2,
  consolidateMinPending: 1,
  consolidateMaxSelected: 30,
  dedupThreshold: null,
  evictMinRetrieved: 3,
  maxCards: 800,
  renderTokenBudget: 120,
  failureEvidenceChars: 2000,
  queueFailures: 'frontier',
  cardsInGroup: 'all',
  distillEvidenceChars: 1500,
  distillConcurrency: 4,
  distillMaxTokens: 700,
  // Judge and distiller: the scripted ones, in process.
  judgeUrl: null,
  judgeModel: null,
  judgeMaxTokens: 8,
  distillerUrl: null,
  distillerModel: null,
  // Held-out eval, at steps 0 and 1: a few questions of each evaluation world (the default run evaluates 57), skills
  // on and off.
  evalEvery: 1,
  evalData: 'eval-worlds',
  evalLimit: 4,
  evalBatchSize: 8,
};

/**
 * Settings added since 9217bcb, each pinned to the value whose step is the one a tree without the setting runs
 * (why, in `absent`): a tree whose table lacks one runs without it.
 */
export const LATER_SETTINGS: Readonly<Record<string, { value: PinnedValue; absent: string }>> = {
  solverBatch: { value: 0, absent: 'a slot per proposal: the solver gets the valid questions (nothing fills the rest, extractionFailure below)' },
  minInformativeGroups: { value: 0, absent: 'no resampling rounds' },
  resampleRounds: { value: 2, absent: 'used only with minInformativeGroups > 0' },
  hopMix: { value: null, absent: 'the seeds drawn from the pool as it comes' },
  tensorboard: { value: false, absent: 'no TensorBoard event files written' },
  trainingWorlds: { value: 1, absent: "one training world, --world-seed's" },
  stepCorpora: { value: 'one', absent: 'one corpus a step (with one training world, its own)' },
  hopCheck: { value: false, absent: 'no hop check' },
  firstSearchCheck: { value: false, absent: 'no first-search check' },
  extractionFailure: { value: 'dummy', absent: 'no reuse pool: a proposal without a valid question leaves its slot empty' },
  reuseThreshold: { value: 1, absent: 'used only with the reuse pool' },
  reuseByHops: { value: false, absent: 'used only with the reuse pool' },
  reusePoolClearEvery: { value: 10, absent: 'used only with the reuse pool' },
  proposerBaseline: { value: 'seed', absent: "a seed's proposals are the proposer's GRPO group" },
  cardUtility: { value: 'outcome', absent: "card utility per rollout that had the card (the paper's)" },
  evalCache: { value: false, absent: 'the step-0 eval computed (a cache would let a later repetition read the first one)' },
};

/**
 * Settings of this tree's table that do not shape the step, left at the tree's defaults or set by the child: where
 * the run goes and on what it runs (the bench's backend and threads), the model (the bench's folder, below),
 * endpoints' timeouts and retries (the scripted judge and the local index call none), the e5 model (the lexical
 * embedder is pinned) and a stop rule for failed steps. test/world-bench.test.ts checks that every setting of
 * this tree is pinned or named here, so a new one has to be placed.
 */
export const UNPINNED_SETTINGS: Readonly<Record<string, string>> = {
  model: 'the bench gives one folder to every tree (WorldScenario.model)',
  backend: "the bench's backend (base trees: wasm)",
  threads: "the bench's --threads",
  out: 'a folder of the bench',
  retrieverTimeout: 'no retriever endpoint',
  retrieverRetries: 'no retriever endpoint',
  retrieverMaxResponseMb: 'no retriever endpoint',
  apiKeyEnv: 'no endpoint',
  judgeTimeout: 'no judge endpoint',
  judgeRetries: 'no judge endpoint',
  distillerTimeout: 'no distiller endpoint',
  distillerRetries: 'no distiller endpoint',
  stopAfterFailedSteps: 'a stop rule of long runs',
  e5Model: 'the lexical embedder is pinned',
};

/** What the bench passes to bench/world-step-child.ts (as one JSON argument, --scenario). */
export interface WorldScenario {
  /** The model folder every tree loads (absolute). */
  model: string;
  /** Every pinned setting, PINNED_SETTINGS and LATER_SETTINGS' values. */
  settings: Record<string, PinnedValue>;
  /** The settings a tree's table may lack (LATER_SETTINGS): left out there. */
  mayBeAbsent: string[];
}

/** Evaluation questions per evaluation world in each eval (PINNED_SETTINGS.evalLimit); quick: 2. */
export const QUICK_EVAL_LIMIT = 2;

/** The pinned scenario on the model folder `model`; quick evaluates fewer questions. */
export function worldScenario(model: string, quick = false): WorldScenario {
  const settings: Record<string, PinnedValue> = { ...PINNED_SETTINGS, ...Object.fromEntries(Object.entries(LATER_SETTINGS).map(([k, s]) => [k, s.value])) };
  if (quick) settings.evalLimit = QUICK_EVAL_LIMIT;
  return { model: resolve(model), settings, mayBeAbsent: Object.keys(LATER_SETTINGS) };
}

/** What the child takes from the measured tree: its settings table's keys and its TRAIN_DEFAULTS. */
export interface TreeSettings {
  keys: readonly string[];
  defaults: Record<string, unknown>;
}

/** Where a run goes and how it runs, set by the bench for each run. */
export interface RunPlace {
  out: string;
  backend: string;
  threads: number;
}

/**
 * The configuration a tree runs the scenario with: its TRAIN_DEFAULTS, the pinned settings its table knows over
 * them (null ones left out), the model, and the run's place. A pinned setting the table lacks is left out when
 * the scenario allows it (mayBeAbsent); any other is refused, naming the tree, since that tree would run another
 * step. `root` names the tree in the error.
 */
export function scenarioConfig(scenario: WorldScenario, tree: TreeSettings, place: RunPlace, root: string): Record<string, unknown> {
  const known = new Set(tree.keys);
  const missing = Object.keys(scenario.settings).filter((k) => !known.has(k) && !scenario.mayBeAbsent.includes(k));
  if (missing.length > 0) {
    throw new Error(
      `the tree at ${root} has no setting ${missing.join(', ')}: it cannot run the world bench's pinned step (bench/world-scenario.ts); ` +
        'if the setting was renamed or its absence computes the same step, say so there (LATER_SETTINGS)',
    );
  }
  if (!known.has('model')) throw new Error(`the tree at ${root} has no setting model: not a settings table of this project`);
  const config: Record<string, unknown> = { ...tree.defaults };
  for (const [k, v] of Object.entries(scenario.settings)) {
    if (!known.has(k)) continue;
    if (v === null) delete config[k];
    else config[k] = Array.isArray(v) ? [...v] : v;
  }
  return { ...config, model: scenario.model, out: place.out, backend: place.backend, threads: place.threads };
}

/** Fields that are measurements of time, not results: left out of the digests. */
const TIMING_KEYS = new Set(['seconds', 'tokensPerSecond']);

/**
 * Whether a metrics field is a measurement of time: the names above, and the flat verl-style names of one
 * (`timing_s/...`, `perf/throughput`, `.../update_tokens_per_s`; src/selfplay/flat-metrics.ts), which a tree writes
 * beside the nested ones since 9217bcb (left in, they made two runs of the same tree differ).
 */
export function isTimingKey(key: string): boolean {
  return TIMING_KEYS.has(key) || key.startsWith('timing_s/') || key === 'perf/throughput' || key.endsWith('_per_s');
}

/** A metrics value without its timing fields (recursively). */
export function withoutTimings(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutTimings);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([k]) => !isTimingKey(k)).map(([k, v]) => [k, withoutTimings(v)]));
  }
  return value;
}
