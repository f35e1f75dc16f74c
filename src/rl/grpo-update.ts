// One GRPO update of one LoRA adapter (docs/method.md, "GRPO") from a batch of sampled sequences:
//   0. every log-prob is taken under softmax(logits / T), T = the temperature the sequence was sampled at
//      (carried with it), as verl and TRL do: the importance ratio then compares like with like;
//   1. reference log-probs (adapters off) for the KL term, without a tape;
//   2. per micro-batch: forward with the adapter, gather the hidden states that predict response tokens,
//      fused chunked log-probs (kernels/token-logprob.ts), the GRPO loss with the WHOLE batch's normalizer,
//      gradients summed over micro-batches (so the result equals one big batch);
//   3. AdamW with warmup/schedule and global-norm clipping.
// Only the adapter's variables get gradients: the base weights are plain tensors.
import { tokenLogProbsWithEntropy } from '../../kernels/token-logprob.js';
import type { LoraAdapter } from '../model/lora.js';
import type { CausalLM } from '../model/qwen3.js';
import { tf } from '../tensor/backend.js';
import { nativeMatMulThreads } from '../tensor/native-matmul.js';
import { disposeGrads, GradientAccumulator } from './accumulate.js';
import { type GrpoLossConfig, grpoLoss, type LossNormalizer } from './grpo-loss.js';
import { yieldToEventLoop } from '../util/yield.js';
import { packedWeightBytes, WASM_HEAP_LIMIT_BYTES } from '../tensor/wasm-heap.js';
import { microBatchBytes } from './memory-budget.js';
import { copyValues, forwardRows, layoutMicroBatch, type MicroBatchLayout, microBatches, tokensOf, type TrainingSequence } from './sequence-layout.js';
import type { AdamW } from './optimizer.js';

export type { TrainingSequence } from './sequence-layout.js';

export interface GrpoUpdateConfig extends GrpoLossConfig {
  /** Most sequences per forward/backward pass; gradients are accumulated over the passes. */
  microBatchSize: number;
  /**
   * Bytes one forward/backward pass may use for activations (estimated by `microBatchBytes` of
   * ./memory-budget.ts); micro-batches are cut so that each stays within it (a single sequence always runs).
   * Default: WASM_PASS_BUDGET_BYTES on the wasm backend (its heap is capped at 4 GiB), no limit beyond
   * microBatchSize elsewhere.
   */
  memoryBudgetBytes?: number;
  /** Recompute each layer in the backward instead of keeping its activations (default: `recomputesLayers`). */
  recomputeLayers?: boolean;
  /**
   * Identical sequences share one forward (src/rl/sequence-layout.ts; default true, and always false with
   * adapter dropout, where each copy draws its own mask). False runs every sequence apart (for checks).
   */
  shareIdentical?: boolean;
  /** Rows of logits formed at once in the fused log-prob kernel. */
  logitsChunkSize?: number;
  padTokenId?: number;
  /**
   * The normalizer of the whole batch when these sequences are only part of it (data-parallel workers each
   * hold a shard: the counts are summed across workers first, see docs/scale-out.md). Default: these sequences'.
   */
  normalizer?: LossNormalizer;
}

export interface GrpoUpdateMetrics {
  loss: number;
  pgLoss: number;
  kl: number;
  clipFrac: number;
  entropy: number;
  gradNorm: number;
  clipped: boolean;
  lr: number;
  /** Tokens that carried loss. */
  trainedTokens: number;
  sequences: number;
  microBatches: number;
  /** All tokens (prompt and response) through forward and backward, per second of this update. */
  tokensPerSecond: number;
  seconds: number;
}

/**
 * log π of the pass's formed response slots [S] (sequence-layout.ts, step 3) under `adapter` (or the base when
 * undefined), on the tape if recording, and the entropy of each slot's distribution [S] (a constant for
 * metrics). Both are of softmax(logits / T): logits / T = (h / T)·W, so each selected hidden state is scaled by
 * its sequence's 1 / T before the head.
 */
function slotLogProbs(
  model: CausalLM,
  layout: MicroBatchLayout,
  adapter: LoraAdapter | undefined,
  chunkSize: number | undefined,
  recomputeLayers = false,
): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D } {
  const hidden = model.forward(layout.ids, { attentionMask: layout.attention, recomputeLayers, ...(adapter ? { adapter } : {}) });
  const flat = tf.reshape(hidden, [-1, model.config.hiddenSize]) as tf.Tensor2D;
  const gathered = tf.gather(flat, tf.tensor1d(layout.hiddenRows, 'int32')) as tf.Tensor2D;
  const selected = tf.mul(gathered, tf.tensor2d(layout.invTemperature, [layout.S, 1])) as tf.Tensor2D;
  // The frozen head forms dlogits·Wᵀ itself, from a persistent Wᵀ (or natively): nothing is transposed or
  // repacked per chunk.
  const { logProbs, entropy } = tokenLogProbsWithEntropy(selected, model.head, tf.tensor1d(layout.targets, 'int32'), chunkSize ? { chunkSize } : {});
  // The kernel keeps the entropy outside any tidy scope: a view of it in this scope holds the data from here.
  const tracked = tf.reshape(entropy, [layout.S]) as tf.Tensor1D;
  entropy.dispose();
  return { logProbs, entropy: tracked };
}

/** Slots [S] → copies [B, R] (each cell reads its formed slot, 0 where none is formed: sequence-layout.ts). */
function perCopy(layout: MicroBatchLayout, slots: tf.Tensor1D): tf.Tensor2D {
  const withZero = tf.concat([slots, tf.zeros([1])]);
  return tf.reshape(tf.gather(withZero, tf.tensor1d(layout.copySlots, 'int32')), [layout.B, layout.R]) as tf.Tensor2D;
}

/** The default pass budget on wasm: what is left of the 4 GiB heap for activations beside a ~1B-parameter model. */
export const WASM_PASS_BUDGET_BYTES = 1.5 * 2 ** 30;

/** Bytes one pass may use: as configured, WASM_PASS_BUDGET_BYTES on wasm, else no limit (undefined). */
export function passBudget(cfg: Pick<GrpoUpdateConfig, 'memoryBudgetBytes'>): number | undefined {
  return cfg.memoryBudgetBytes ?? (tf.getBackend() === 'wasm' ? WASM_PASS_BUDGET_BYTES : undefined);
}

/**
 * Whether an update whose longest sequence has `longestTokens` tokens recomputes layers in the backward: as
 * configured; else, with a pass budget (wasm), only when that sequence alone would not fit it with every
 * activation kept (recomputing costs about one more forward; smaller passes cost little: docs/method.md, "The
 * update's passes"); without one (a GPU backend, whose free memory is not known here), always.
 */
export function recomputesLayers(model: CausalLM, loraRank: number, longestTokens: number, cfg: Pick<GrpoUpdateConfig, 'memoryBudgetBytes' | 'recomputeLayers'>): boolean {
  if (cfg.recomputeLayers !== undefined) return cfg.recomputeLayers;
  const budget = passBudget(cfg);
  return budget === undefined || microBatchBytes(model.config, 1, longestTokens, loraRank, false) > budget;
}

/**
 * Bytes the wasm heap holds for tensors: every live tensor, and XNNPACK's packed copy of the model's weights and
 * of the transposes it holds (src/tensor/wasm-heap.ts).
 */
export function wasmHeapInUse(model: CausalLM): number {
  return tf.memory().numBytes + packedWeightBytes(model.heapWeightFloats());
}

/**
 * Makes the model hold its projections' transposes for the backward (`CausalLM.holdTransposedProjections`)
 * where the heap has room: on wasm, when the copies and XNNPACK's packing of them still leave a whole pass
 * budget free beside what the heap holds now. Elsewhere it holds none: a GPU backend's free memory is not known
 * here. Called before the heap is planned, so the plan sees the copies. Returns whether the model holds them.
 */
export function holdTransposesIfRoom(model: CausalLM, cfg: Pick<GrpoUpdateConfig, 'memoryBudgetBytes'>): boolean {
  if (model.holdsTransposedProjections) return true;
  const budget = passBudget(cfg);
  // The native path multiplies by Wᵀ without forming it (src/tensor/ops.ts, matMulT): nothing to hold.
  if (budget === undefined || tf.getBackend() !== 'wasm' || nativeMatMulThreads() !== undefined) return false;
  // The copies (4 bytes a float) and XNNPACK's packing of them, beside a whole pass budget.
  const copies = model.projectionParameters();
  if (wasmHeapInUse(model) + 4 * copies + packedWeightBytes(copies) + budget > WASM_HEAP_LIMIT_BYTES) return false;
  model.holdTransposedProjections();
  return model.holdsTransposedProjections;
}

export function wholeBatchNormalizer(seqs: readonly TrainingSequence[]): LossNormalizer {
  let tokens = 0;
  let sequences = 0;
  for (const s of seqs) {
    const n = s.responseMask.reduce((a, b) => a + b, 0);
    tokens += n;
    if (n > 0) sequences++;
  }
  return { tokens, sequences };
}

export interface GrpoGradients {
  /** Σ over micro-batches of ∂loss/∂param (caller disposes: `disposeGrads`). */
  grads: Record<string, tf.Tensor>;
  loss: number;
  pgLoss: number;
  kl: number;
  clipFrac: number;
  entropy: number;
  trainedTokens: number;
  /** All tokens (prompt and response) through forward and backward. */
  processedTokens: number;
  microBatches: number;
  /**
   * log π_ref of each sequence's response tokens (in `seqs` order; 0 where the mask is 0) when the KL term is
   * on, for a later update over the same sequences to reuse (`TrainingSequence.refLogprobs`).
   */
  refLogprobs?: number[][];
}

/** The GRPO loss gradients w.r.t. `params` (the adapter's variables), accumulated over micro-batches. */
export async function grpoGradients(
  model: CausalLM,
  adapter: LoraAdapter,
  params: Record<string, tf.Variable>,
  seqs: readonly TrainingSequence[],
  cfg: GrpoUpdateConfig,
): Promise<GrpoGradients> {
  if (seqs.length === 0) throw new Error('GRPO: no sequences to train on');
  if (!Number.isInteger(cfg.microBatchSize) || cfg.microBatchSize < 1) throw new Error(`GRPO: micro-batch size must be a positive integer, got ${cfg.microBatchSize}`);
  const padId = cfg.padTokenId ?? 0;
  holdTransposesIfRoom(model, cfg);
  const budget = passBudget(cfg);
  const recompute = recomputesLayers(model, adapter.config.r, Math.max(...seqs.map(tokensOf)), cfg);
  const rows = forwardRows(seqs, (cfg.shareIdentical ?? true) && adapter.config.dropout === 0);
  const passes = microBatches(rows, cfg.microBatchSize, budget, (b, t) => microBatchBytes(model.config, b, t, adapter.config.r, recompute), (r) => tokensOf(r.seq));
  const layouts = passes.map((pass) => layoutMicroBatch(pass, seqs, padId));
  const normalizer = cfg.normalizer ?? wholeBatchNormalizer(seqs);
  const klCoef = cfg.klCoef ?? 0.01;
  const maxLen = cfg.maxLen ?? Math.max(...layouts.map((l) => l.R));

  // Reference log-probs (adapters off), outside any tape: carried by the sequences, or one forward per pass.
  const refLogprobs: Float32Array[] = [];
  if (klCoef !== 0) {
    for (const layout of layouts) {
      if (layout.refLogprobs) {
        refLogprobs.push(layout.refLogprobs);
        continue;
      }
      // Each pass is synchronous tensor work: let signal handlers (Ctrl-C) in before each.
      await yieldToEventLoop();
      const { logProbs, entropy } = tf.tidy(() => slotLogProbs(model, layout, undefined, cfg.logitsChunkSize));
      const values = (await logProbs.data()) as Float32Array;
      tf.dispose([logProbs, entropy]);
      // Per copy; masked slots keep 0, as carried values do: the loss multiplies them by the mask either way.
      refLogprobs.push(copyValues(layout, values));
    }
  }

  adapter.training = true;
  try {
    const acc = new GradientAccumulator(params);
    try {
      for (let i = 0; i < layouts.length; i++) {
        await yieldToEventLoop();
        acc.add(() => {
          const layout = layouts[i] as MicroBatchLayout;
          const slots = slotLogProbs(model, layout, adapter, cfg.logitsChunkSize, recompute);
          const logProbs = perCopy(layout, slots.logProbs);
          const entropy = perCopy(layout, slots.entropy);
          const { B, R } = layout;
          const { loss, metrics } = grpoLoss(
            {
              logProbs,
              oldLogProbs: tf.tensor2d(layout.oldLogprobs, [B, R]),
              ...(klCoef !== 0 ? { refLogProbs: tf.tensor2d(refLogprobs[i] as Float32Array, [B, R]) } : {}),
              advantages: tf.tensor1d(layout.advantages),
              mask: tf.tensor2d(layout.mask, [B, R]),
              entropy,
              normalizer,
            },
            { ...cfg, klCoef, maxLen },
          );
          return { loss, metrics: { pgLoss: metrics.pgLoss, kl: metrics.kl, clipFrac: metrics.clipFrac, entropy: metrics.entropy } };
        });
      }
    } catch (err) {
      acc.dispose();
      throw err;
    }
    const sums = acc.result();
    return {
      grads: sums.grads,
      loss: sums.loss,
      pgLoss: sums.metrics.pgLoss ?? 0,
      kl: sums.metrics.kl ?? 0,
      clipFrac: sums.metrics.clipFrac ?? 0,
      entropy: sums.metrics.entropy ?? 0,
      trainedTokens: normalizer.tokens,
      processedTokens: layouts.reduce((a, l) => a + l.ids.length * (l.ids[0] as number[]).length, 0),
      microBatches: layouts.length,
      ...(klCoef !== 0
        ? { refLogprobs: inSequenceOrder(seqs, layouts, refLogprobs) }
        : {}),
    };
  } finally {
    adapter.training = false;
  }
}

/**
 * log π of every response token of `seqs` as the update computes it (under `adapter`, or the base when
 * undefined), one array per sequence; positions with mask 0 hold the value too. For checks and diagnostics.
 */
export async function updateLogProbs(model: CausalLM, adapter: LoraAdapter | undefined, seqs: readonly TrainingSequence[], cfg: Pick<GrpoUpdateConfig, 'padTokenId' | 'logitsChunkSize'> = {}): Promise<number[][]> {
  const layout = layoutMicroBatch(forwardRows(seqs, false), seqs, cfg.padTokenId ?? 0, true);
  const { logProbs, entropy } = tf.tidy(() => slotLogProbs(model, layout, adapter, cfg.logitsChunkSize));
  const values = (await logProbs.data()) as Float32Array;
  tf.dispose([logProbs, entropy]);
  return inSequenceOrder(seqs, [layout], [copyValues(layout, values)]);
}

/** Per-copy values [B × R] of each pass → one array per sequence of `seqs` (its response length), in their order. */
function inSequenceOrder(seqs: readonly TrainingSequence[], layouts: readonly MicroBatchLayout[], values: readonly Float32Array[]): number[][] {
  const out = new Array<number[]>(seqs.length);
  layouts.forEach((layout, i) =>
    layout.members.forEach((member, c) => {
      const length = (seqs[member] as TrainingSequence).responseIds.length;
      out[member] = Array.from((values[i] as Float32Array).subarray(c * layout.R, c * layout.R + length));
    }),
  );
  return out;
}

/** One optimizer step of GRPO: gradients (above), then AdamW with clipping and the lr schedule. */
export async function grpoUpdate(
  model: CausalLM,
  adapter: LoraAdapter,
  optimizer: AdamW,
  params: Record<string, tf.Variable>,
  seqs: readonly TrainingSequence[],
  cfg: GrpoUpdateConfig,
): Promise<GrpoUpdateMetrics & Pick<GrpoGradients, 'refLogprobs'>> {
  const started = performance.now();
  const g = await grpoGradients(model, adapter, params, seqs, cfg);
  const info = optimizer.step(g.grads);
  disposeGrads(g.grads);
  const seconds = (performance.now() - started) / 1000;
  return {
    loss: g.loss,
    pgLoss: g.pgLoss,
    kl: g.kl,
    clipFrac: g.clipFrac,
    entropy: g.entropy,
    gradNorm: info.gradNorm,
    clipped: info.clipped,
    lr: info.lr,
    trainedTokens: g.trainedTokens,
    sequences: seqs.length,
    microBatches: g.microBatches,
    tokensPerSecond: g.processedTokens / seconds,
    seconds,
    ...(g.refLogprobs ? { refLogprobs: g.refLogprobs } : {}),
  };
}
