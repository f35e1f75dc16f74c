// The settings of an SFT run (docs/sft.md), their defaults and their validation. The resolved settings are
// saved in the run folder as sft.json; a resumed run reads them back from there.
import type { SaveDtype } from '../checkpoint/full-model.js';
import { PROJECTIONS, type ProjectionName } from '../model/qwen3.js';
import type { BackendChoice } from '../tensor/backend.js';
import { LOSS_ON, type LossOn } from './transcript.js';

export type SftMode = 'full' | 'lora';

export interface SftConfig {
  /** Model folder or short name. */
  model: string;
  /** Training transcripts, JSONL of {"messages": [...]}. */
  data: string;
  /** Held-out transcripts for the eval loss (instead of, or besides, a held-out fraction of `data`). */
  evalData?: string;
  /** Fraction of `data` held out for the eval loss (0: none). */
  evalFraction: number;
  /** Run folder. */
  out: string;
  mode: SftMode;
  loraR: number;
  loraAlpha: number;
  loraTargets: ProjectionName[];
  epochs: number;
  /** Stop after this many optimizer steps (0: run all epochs). */
  maxSteps: number;
  /** Sequences per optimizer step. */
  batchSize: number;
  /** Sequences per forward/backward pass (gradients accumulate over the passes of a step). */
  microBatchSize: number;
  /**
   * Padded tokens per pass at most (0: no limit): a pass takes up to `microBatchSize` sequences of similar
   * length while sequences × longest ≤ this, so short examples share a pass and long ones go alone.
   */
  microBatchTokens: number;
  lr: number;
  warmupSteps: number;
  schedule: 'constant' | 'cosine';
  /** Cosine floor as a fraction of lr. */
  minLrRatio: number;
  weightDecay: number;
  maxGradNorm: number;
  seed: number;
  /** Longest rendered transcript allowed (tokens); longer ones are an error naming the line. */
  maxTokens: number;
  /** Checkpoint every N optimizer steps (and always at the end). */
  saveEvery: number;
  /** Eval loss every N optimizer steps (and at step 0 and the end); 0: only at the end. */
  evalEvery: number;
  /** Complete checkpoints kept (older ones are deleted). */
  keepCheckpoints: number;
  /** dtype of the final full model's weights (checkpoints are always f32, for exact resume). */
  saveDtype: SaveDtype;
  /** Qwen3's `enable_thinking` when rendering prompts (the rollout default, off). */
  enableThinking: boolean;
  /** Loss targets: the assistant's tokens (SFT), or every token (language modelling on whole transcripts). */
  lossOn: LossOn;
  /** Rows of logits formed at once in the fused log-prob kernel. */
  logitsChunkSize: number;
  /** Recompute layer activations in the backward (same gradient, far less memory per pass; ~1/3 more compute). */
  recomputeLayers: boolean;
  backend: BackendChoice;
}

export const SFT_DEFAULTS: Omit<SftConfig, 'model' | 'data' | 'out' | 'mode'> = {
  evalFraction: 0,
  loraR: 16,
  loraAlpha: 32,
  loraTargets: [...PROJECTIONS],
  epochs: 1,
  maxSteps: 0,
  batchSize: 8,
  microBatchSize: 4,
  microBatchTokens: 0,
  lr: 1e-4,
  warmupSteps: 0,
  schedule: 'cosine',
  minLrRatio: 0.1,
  weightDecay: 0.01,
  maxGradNorm: 1.0,
  seed: 0,
  maxTokens: 4096,
  saveEvery: 100,
  evalEvery: 0,
  keepCheckpoints: 2,
  saveDtype: 'f32',
  enableThinking: false,
  lossOn: 'assistant',
  logitsChunkSize: 128,
  recomputeLayers: true,
  backend: 'auto',
};

function positiveInt(c: SftConfig, key: keyof SftConfig, min = 1): void {
  const v = c[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new Error(`SFT setting '${key}' must be an integer >= ${min}, got ${JSON.stringify(v)}`);
}

/** Checks every setting; errors name the setting. */
export function validateSftConfig(c: SftConfig): SftConfig {
  for (const key of ['model', 'data', 'out'] as const) {
    if (typeof c[key] !== 'string' || c[key].length === 0) throw new Error(`SFT setting '${key}' is required`);
  }
  if (c.mode !== 'full' && c.mode !== 'lora') throw new Error(`SFT setting 'mode' must be full or lora, got ${JSON.stringify(c.mode)}`);
  for (const key of ['loraR', 'epochs', 'batchSize', 'microBatchSize', 'maxTokens', 'saveEvery', 'keepCheckpoints', 'logitsChunkSize'] as const) positiveInt(c, key);
  for (const key of ['maxSteps', 'warmupSteps', 'evalEvery', 'seed', 'microBatchTokens'] as const) positiveInt(c, key, 0);
  if (c.seed > 0xffffffff) throw new Error(`SFT setting 'seed' must be below 2^32, got ${c.seed}`);
  if (!(c.evalFraction >= 0 && c.evalFraction < 1)) throw new Error(`SFT setting 'evalFraction' must be in [0, 1), got ${c.evalFraction}`);
  if (!(c.lr > 0)) throw new Error(`SFT setting 'lr' must be positive, got ${c.lr}`);
  if (!(c.loraAlpha > 0)) throw new Error(`SFT setting 'loraAlpha' must be positive, got ${c.loraAlpha}`);
  if (!(c.weightDecay >= 0)) throw new Error(`SFT setting 'weightDecay' must be >= 0, got ${c.weightDecay}`);
  if (!(c.maxGradNorm > 0)) throw new Error(`SFT setting 'maxGradNorm' must be positive, got ${c.maxGradNorm}`);
  if (!(c.minLrRatio >= 0 && c.minLrRatio <= 1)) throw new Error(`SFT setting 'minLrRatio' must be in [0, 1], got ${c.minLrRatio}`);
  if (c.schedule !== 'constant' && c.schedule !== 'cosine') throw new Error(`SFT setting 'schedule' must be constant or cosine, got ${JSON.stringify(c.schedule)}`);
  if (!['f32', 'f16', 'bf16'].includes(c.saveDtype)) throw new Error(`SFT setting 'saveDtype' must be f32, f16 or bf16, got ${JSON.stringify(c.saveDtype)}`);
  if (typeof c.recomputeLayers !== 'boolean') throw new Error(`SFT setting 'recomputeLayers' must be true or false, got ${JSON.stringify(c.recomputeLayers)}`);
  if (!(LOSS_ON as readonly string[]).includes(c.lossOn)) throw new Error(`SFT setting 'lossOn' must be ${LOSS_ON.join(' or ')}, got ${JSON.stringify(c.lossOn)}`);
  if (c.loraTargets.length === 0) throw new Error(`SFT setting 'loraTargets' must not be empty`);
  for (const t of c.loraTargets) {
    if (!(PROJECTIONS as readonly string[]).includes(t)) throw new Error(`SFT setting 'loraTargets' names '${t}', not one of ${PROJECTIONS.join(', ')}`);
  }
  if (c.microBatchSize > c.batchSize) throw new Error(`SFT setting 'microBatchSize' (${c.microBatchSize}) must not exceed 'batchSize' (${c.batchSize})`);
  return c;
}
