// The run group: what to train, how long, where the run folder is, and the recipe (docs/method.md, "Recipes").
import { BACKEND_CHOICES } from '../../tensor/backend.js';
import { choice, fixedForRun, int, onOff, optionalNum, optionalStr, str } from '../setting.js';

/**
 * Worker processes of a run: --gpus N and --workers N both mean N workers (one device each), which shard the
 * step (docs/scale-out.md, "The step over N workers"); 1 = everything in the trainer's process.
 */
export function workerCount(c: { gpus: number; workers: number }): number {
  return Math.max(c.gpus, c.workers);
}

/**
 * The hop shares of --hop-mix ('1,1,1' → [1, 1, 1], the weights of 1-, 2- and 3-hop seeds), or a problem
 * (the rest of a sentence after the flag).
 */
export function parseHopMix(v: string): number[] | string {
  const parts = v.split(',').map((x) => x.trim());
  const w = parts.map(Number);
  if (parts.some((x) => x === '') || w.some((x) => !Number.isFinite(x) || x < 0)) return `must be shares of 1-, 2-, 3-, … hop seeds as non-negative numbers 'a,b,c', got ${v}`;
  if (!w.some((x) => x > 0)) return `must give some hop count a share above 0, got ${v}`;
  return w;
}

function hopMixProblem(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const r = parseHopMix(v);
  return typeof r === 'string' ? r : undefined;
}

export const RECIPES = ['sesa', 'ssp'] as const;
export type RecipeName = (typeof RECIPES)[number];

export const RUN_SETTINGS = {
  recipe: choice(RECIPES, 'sesa', {
    help: 'sesa: self-play with the skill bank and frontier reward; ssp: the Search Self-Play baseline (no skills, reward 1 − p̂, n_p = 1, r_invalid = 0); skill-sp runs Skill Self-Play with its own settings (--recipe skill-sp --help)',
    resume: fixedForRun('the recipe decides what the run trains; start a new run for another recipe'),
  }),
  model: str('demo', {
    tiny: 'tiny',
    help: "base model: 'demo' = the demo world's warm-start model shipped in models/demo (the embedded default: SESA in that world, docs/world.md); a Hugging Face folder or a registry name (qwen3-4b, ...); 'tiny' = a tiny random Qwen3 (mechanics only: it writes no valid question)",
    resume: fixedForRun('the adapters and optimizer state of the run belong to its base model'),
  }),
  backend: choice(BACKEND_CHOICES, 'auto', { help: 'tensor backend (auto picks the fastest available and says which: on a CPU machine native, where onnxruntime-node loads, else wasm; native-int8 is native with the frozen base in 8-bit blocks, an option for memory and decoding speed: docs/method.md)' }),
  gpus: int(1, {
    help: 'GPUs: N > 1 runs the step on N worker processes, one GPU each (CUDA_VISIBLE_DEVICES=rank); needs the tensorflow GPU backend (@tensorflow/tfjs-node-gpu) and is refused on another backend, where --workers N runs N processes on the CPU',
  }),
  threads: optionalNum({ min: 1, check: (v) => (v === undefined || Number.isInteger(v) ? undefined : `must be a whole number of threads, got ${v}`), help: 'compute threads of the wasm backend, or of the native backend\'s matMuls (default: all cores; a count the backend does not honour is an error)' }),
  workers: int(1, {
    help: 'worker processes that shard the step: worker r rolls out seeds r, r + N, … and the GRPO updates are data-parallel over all (each holds the model and both adapters; docs/scale-out.md); 1 = all in this process',
  }),
  rolloutEngine: choice(['native', 'llama.cpp'], 'native', {
    help: "rollout generation: our own forward, or llama.cpp (needs node-llama-cpp, see docs/usage.md, 'Install size'); old log-probs are recomputed with our forward",
  }),
  steps: int(200, { tiny: 3, help: 'training steps (on --resume: a larger value extends the run)' }),
  seedsPerStep: int(256, { tiny: 2, help: "answer seeds per step (SSP's train_batch_size: 256 seeds × 1 proposal)" }),
  proposalsPerSeed: int(1, {
    tiny: 2,
    help: 'n_p, proposer rollouts per seed (the proposer GRPO group; 1, as SSP: a group of one trains with A = R)',
  }),
  solverBatch: int(0, {
    min: 0,
    help: "questions the solver gets per step: the step's valid questions, topped up to this many from the reuse pool (--extraction-failure reuse); 0 = one per proposal (seeds × n_p), as SSP. More valid questions than this are all solved",
  }),
  minInformativeGroups: int(0, {
    min: 0,
    help: "resample until the solver batch has this many groups with a learning signal (0 < p̂ < 1): while fewer, another round solves up to a solver batch more of questions drawn from the reuse pool (distinct, not yet in the step), at most --resample-rounds rounds (DAPO's dynamic sampling, from SSP's pool; docs/method.md, \"The solver batch and the reuse pool\"); 0 = off, as SSP",
  }),
  resampleRounds: int(2, { min: 1, help: 'the most resampling rounds a step runs for --min-informative-groups' }),
  hopMix: optionalStr({
    help: "the shares of 1-, 2-, 3-, … hop answer seeds each step draws, as 'a,b,c' (1,1,1 = a third each, as the papers' seed pool); unset: the pool as it comes (docs/method.md, \"One step\")",
    check: hopMixProblem,
  }),
  maxHops: optionalNum({
    min: 1,
    check: (v) => (v === undefined || Number.isInteger(v) ? undefined : `must be a whole number of hops, got ${v}`),
    help: 'ask the proposer for at most this many search steps: an answer seed of more hops is asked for this many (a curriculum for a model that solves few multi-hop questions; default: each seed\'s own hop count)',
  }),
  minHops: optionalNum({
    min: 1,
    check: (v) => (v === undefined || Number.isInteger(v) ? undefined : `must be a whole number of hops, got ${v}`),
    help: 'ask the proposer for at least this many search steps: an answer seed of fewer hops is asked for this many (with --max-hops equal to it, every seed is asked for that many; default: each seed\'s own hop count)',
  }),
  groupSize: int(5, { tiny: 3, help: 'G, solver rollouts per valid question (the solver GRPO group; p̂ is its success rate)' }),
  out: str('runs/sesa', {
    tiny: 'runs/tiny',
    help: 'run folder (config.json, metrics.jsonl, skills.json, train.log, checkpoints/)',
    resume: fixedForRun('--resume names the run folder itself'),
  }),
  saveEvery: int(10, { tiny: 1, help: 'write a checkpoint every N steps (and at the last step)' }),
  tensorboard: onOff(true, { help: "TensorBoard event files of the step metrics (their flat names) in RUN_DIR/tensorboard/ (docs/usage.md, 'Run metrics')" }),
  seed: int(0, {
    min: 0,
    help: 'run seed: every random choice of step s derives from (seed, s)',
    resume: fixedForRun('a resumed run replays the random choices of the original seed; a new seed is a new run'),
  }),
};
