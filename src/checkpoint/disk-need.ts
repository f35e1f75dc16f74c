// What a training run writes to disk, estimated before it starts (docs/usage.md, "Disk"): `sesa-train doctor`
// states it, and the trainer refuses to start when not even its first checkpoint would fit.
//   a checkpoint: two adapters (proposer, solver), each with its weights and AdamW's two moments, all f32;
//   the run's other files (config, metrics, logs, the skill bank, held-out predictions): RUN_FILES_BYTES;
//   with --rollout-engine llama.cpp, the base model exported once as an f32 GGUF.
// A run keeps every checkpoint it writes (checkpoints/step-N), so its need grows with the steps.
import { existsSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ModelConfig } from '../model/config.js';
import { projectionShape } from '../model/lora.js';
import { parameterCount } from '../model/memory-need.js';
import type { ProjectionName } from '../model/qwen3.js';

/** Room for a run's files besides its checkpoints: config, metrics, train.log, the bank, eval predictions. */
export const RUN_FILES_BYTES = 64 * 2 ** 20;

/** Bytes per f32 value. */
const F32_BYTES = 4;

/** An adapter's values in a checkpoint: its weights and AdamW's first and second moments. */
const COPIES_PER_ADAPTER = 3;

/** The adapters a training checkpoint holds: the proposer's and the solver's. */
const ADAPTERS_PER_CHECKPOINT = 2;

/** Free bytes of the file system holding `path`, through its nearest existing ancestor. */
export function freeBytesAt(path: string): number {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  const s = statfsSync(p);
  return Number(s.bavail) * Number(s.bsize);
}

/** LoRA parameters of one adapter of rank r on `targets`: r · Σ (in + out) over layers and projections. */
export function loraParameters(cfg: ModelConfig, r: number, targets: readonly ProjectionName[]): number {
  let n = 0;
  for (const p of targets) {
    const { inDim, outDim } = projectionShape(cfg, p);
    n += inDim + outDim;
  }
  return n * cfg.numLayers * r;
}

/** Bytes of one training checkpoint (the bank file aside: it is counted in RUN_FILES_BYTES). */
export function checkpointBytes(cfg: ModelConfig, r: number, targets: readonly ProjectionName[]): number {
  return ADAPTERS_PER_CHECKPOINT * COPIES_PER_ADAPTER * F32_BYTES * loraParameters(cfg, r, targets);
}

/** The f32 GGUF of the base model that --rollout-engine llama.cpp exports once. */
export function ggufExportBytes(cfg: ModelConfig): number {
  return F32_BYTES * parameterCount(cfg);
}

/** The steps from `firstStep` to `steps` that write a checkpoint: every --save-every steps and the last. */
export function checkpointSteps(firstStep: number, steps: number, saveEvery: number): number[] {
  const out: number[] = [];
  for (let s = firstStep; s <= steps; s++) if (s % saveEvery === 0 || s === steps) out.push(s);
  return out;
}

export interface DiskNeed {
  oneCheckpoint: number;
  /** The checkpoints still to be written. */
  checkpoints: number;
  /** Written once before the first step (the llama.cpp engine's GGUF), 0 when none. */
  once: number;
}

export function totalBytes(n: DiskNeed): number {
  return n.once + RUN_FILES_BYTES + n.checkpoints * n.oneCheckpoint;
}

/**
 * The run's disk against `free`: 'refuse' when not even the first checkpoint fits (the run would fail there),
 * 'warn' when the run's checkpoints together do not, with how many fit; undefined when all fit.
 */
export function diskVerdict(free: number, n: DiskNeed): { kind: 'refuse' | 'warn'; fitting: number } | undefined {
  if (free >= totalBytes(n)) return undefined;
  const fitting = Math.max(0, Math.floor((free - n.once - RUN_FILES_BYTES) / Math.max(1, n.oneCheckpoint)));
  return { kind: fitting === 0 ? 'refuse' : 'warn', fitting: Math.min(fitting, n.checkpoints) };
}
