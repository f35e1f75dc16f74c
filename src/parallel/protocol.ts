// The messages between the coordinator and its data-parallel workers (docs/scale-out.md). Every message is
// sent over the child process IPC channel with the "advanced" (structured clone) serialization, so typed
// arrays travel as they are.
import type { AdamWConfig, AdamWState } from '../rl/optimizer.js';
import type { GrpoUpdateConfig, TrainingSequence } from '../rl/grpo-update.js';
import type { LoraAdapter, LoraConfig } from '../model/lora.js';
import type { CausalLM } from '../model/qwen3.js';
import type { BackendChoice } from '../tensor/backend.js';

export interface RoleInit {
  lora: LoraConfig;
  /** Every worker creates the adapter from the same seed (the hash check at each step proves they agree). */
  loraSeed: number;
  optimizer: AdamWConfig;
}

export interface WorkerInit {
  rank: number;
  worldSize: number;
  modelDir: string;
  /** The backend the trainer runs (native-int8 rather than native where the base is 8-bit: workers hold it alike). */
  backend: Exclude<BackendChoice, 'auto'>;
  roles: Record<string, RoleInit>;
  grpo: Omit<GrpoUpdateConfig, 'normalizer'>;
  /**
   * A module (file URL) the worker imports at init to run `task` messages, and what it is started with: the
   * layer above the pool gives its workers more work than updates this way (docs/scale-out.md: the step's
   * rollouts), without this layer importing it.
   */
  tasks?: { module: string; init: unknown };
}

/** What a task module is given: the worker's model and its adapters (kept equal on every rank by the updates). */
export interface WorkerTaskContext {
  rank: number;
  worldSize: number;
  modelDir: string;
  model: CausalLM;
  adapter(role: string): LoraAdapter;
}

export interface WorkerTasks {
  run(task: unknown): Promise<unknown>;
}

/** A task module exports `createWorkerTasks` of this type. */
export type CreateWorkerTasks = (ctx: WorkerTaskContext, init: unknown) => Promise<WorkerTasks>;

/** Coordinator → worker. */
export type ToWorker =
  | { type: 'init'; init: WorkerInit }
  /** Start an update of `role` from this worker's shard: the worker answers with its loss-normalizer counts. */
  | { type: 'update'; role: string; seqs: TrainingSequence[] }
  /** The counts summed over all workers: compute gradients with them and send them. */
  | { type: 'normalizer'; tokens: number; sequences: number; maxLen: number }
  /** The gradients summed over all workers, in `gradientKeys` order: step the optimizer and send the hash. */
  | { type: 'gradients'; sum: Float32Array }
  | { type: 'weights'; role: string }
  /** Rank 0's optimizer state of `role` (for the coordinator's checkpoints). */
  | { type: 'state'; role: string }
  /** Replace `role`'s adapter weights and optimizer state (a resumed run, or the coordinator's current ones). */
  | { type: 'load'; role: string; weights: Record<string, Float32Array>; state: AdamWState }
  /** Work for the task module given at init; answered with its result. */
  | { type: 'task'; task: unknown }
  | { type: 'shutdown' };

/** Worker → coordinator. */
export type FromWorker =
  | { type: 'ready'; rank: number; gradientKeys: Record<string, string[]> }
  | { type: 'counts'; tokens: number; sequences: number; maxLen: number }
  /**
   * This shard's summed-into gradients, and (with a KL term) its sequences' reference log-probs, for a later
   * update over the same sequences to carry (TrainingSequence.refLogprobs) instead of recomputing.
   */
  | { type: 'gradients'; flat: Float32Array; loss: number; pgLoss: number; kl: number; clipFrac: number; entropy: number; refLogprobs?: number[][] }
  | { type: 'stepped'; hash: string; gradNorm: number; lr: number }
  | { type: 'weights'; weights: Record<string, Float32Array> }
  | { type: 'state'; state: AdamWState }
  | { type: 'loaded'; hash: string }
  | { type: 'task'; result: unknown }
  | { type: 'error'; message: string };
