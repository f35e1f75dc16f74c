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
import { disposeGrads, GradientAccumulator } from './accumulate.js';
import { type GrpoLossConfig, grpoLoss, type LossNormalizer } from './grpo-loss.js';
import { yieldToEventLoop } from '../util/yield.js';
import { microBatchBytes } from './memory-budget.js';
import type { AdamW } from './optimizer.js';

/** One sampled sequence, as GRPO trains on it. */
export interface TrainingSequence {
  promptIds: number[];
  /** Generated and tool-output tokens after the prompt. */
  responseIds: number[];
  /** 1 where the token is trained (generated), 0 where it is context only (tool output). */
  responseMask: number[];
  /** log π_old of each response token at sampling time (ignored where the mask is 0). */
  oldLogprobs: number[];
  /** The sequence's advantage (broadcast to its tokens). */
  advantage: number;
  /**
   * The temperature T whose softmax(logits / T) gave `oldLogprobs` (1 for greedy or untempered sampling).
   * The update divides the logits by the same T, so the first on-policy ratio is exactly 1.
   */
  samplingTemperature: number;
  /**
   * log π_ref of each response token (adapters off, at the sampling temperature), when an earlier update over
   * the same sequence computed it (`GrpoGradients.refLogprobs`): the base weights do not change, so the KL term
   * needs no second reference forward. A pass skips its reference forward when all its sequences carry it.
   */
  refLogprobs?: number[];
}

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
  /** Recompute each layer in the backward instead of keeping its activations (default true). */
  recomputeLayers?: boolean;
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

/** The padded layout of one micro-batch: left-padded ids and, per response slot, where its prediction is. */
interface MicroBatchLayout {
  ids: number[][];
  attention: number[][];
  /** [B × R] flat row indices into the [B·T, d] hidden states (the position before each response token). */
  hiddenRows: Int32Array;
  targets: Int32Array;
  mask: Float32Array;
  oldLogprobs: Float32Array;
  /** log π_ref per slot (0 where the mask is 0) when every sequence carried it, else undefined. */
  refLogprobs: Float32Array | undefined;
  advantages: Float32Array;
  /** [B × R] 1 / T of each slot's sequence (the logits are divided by its sampling temperature). */
  invTemperature: Float32Array;
  B: number;
  R: number;
}

export function layoutMicroBatch(seqs: readonly TrainingSequence[], padId: number): MicroBatchLayout {
  const B = seqs.length;
  const full = seqs.map((s) => [...s.promptIds, ...s.responseIds]);
  const T = Math.max(...full.map((r) => r.length));
  const R = Math.max(1, ...seqs.map((s) => s.responseIds.length));
  const ids: number[][] = [];
  const attention: number[][] = [];
  const hiddenRows = new Int32Array(B * R);
  const targets = new Int32Array(B * R);
  const mask = new Float32Array(B * R);
  const oldLogprobs = new Float32Array(B * R);
  const refLogprobs = seqs.every((s) => s.refLogprobs !== undefined) ? new Float32Array(B * R) : undefined;
  const advantages = new Float32Array(B);
  const invTemperature = new Float32Array(B * R);
  seqs.forEach((s, b) => {
    if (s.promptIds.length === 0) throw new Error('GRPO: a sequence has an empty prompt');
    if (!(s.samplingTemperature > 0) || !Number.isFinite(s.samplingTemperature)) {
      throw new Error(`GRPO: sequence ${b} has sampling temperature ${String(s.samplingTemperature)}; it must be a positive number (1 for greedy sampling)`);
    }
    invTemperature.fill(1 / s.samplingTemperature, b * R, (b + 1) * R);
    if (s.responseMask.length !== s.responseIds.length || s.oldLogprobs.length !== s.responseIds.length) {
      throw new Error(`GRPO: sequence ${b} has ${s.responseIds.length} response tokens but ${s.responseMask.length} mask values and ${s.oldLogprobs.length} log-probs`);
    }
    if (s.refLogprobs !== undefined && s.refLogprobs.length !== s.responseIds.length) {
      throw new Error(`GRPO: sequence ${b} has ${s.responseIds.length} response tokens but ${s.refLogprobs.length} reference log-probs`);
    }
    const row = full[b] as number[];
    const pad = T - row.length;
    ids.push([...new Array<number>(pad).fill(padId), ...row]);
    attention.push([...new Array<number>(pad).fill(0), ...row.map(() => 1)]);
    advantages[b] = s.advantage;
    for (let j = 0; j < R; j++) {
      const cell = b * R + j;
      if (j < s.responseIds.length) {
        // Response token j sits at pad + P + j and is predicted by the hidden state one position earlier.
        hiddenRows[cell] = b * T + pad + s.promptIds.length + j - 1;
        targets[cell] = s.responseIds[j] as number;
        mask[cell] = s.responseMask[j] as number;
        oldLogprobs[cell] = (s.responseMask[j] as number) > 0 ? (s.oldLogprobs[j] as number) : 0;
        if (refLogprobs) refLogprobs[cell] = (s.responseMask[j] as number) > 0 ? ((s.refLogprobs as number[])[j] as number) : 0;
      } else {
        hiddenRows[cell] = b * T; // any valid row; masked out
      }
    }
  });
  return { ids, attention, hiddenRows, targets, mask, oldLogprobs, refLogprobs, advantages, invTemperature, B, R };
}

/**
 * log π of every response slot [B, R] under `adapter` (or the base when undefined), on the tape if recording,
 * and the entropy of each slot's distribution [B, R] (a constant for metrics). Both are of softmax(logits / T):
 * logits / T = (h / T)·W, so each selected hidden state is scaled by its sequence's 1 / T before the head.
 */
function responseLogProbs(
  model: CausalLM,
  layout: MicroBatchLayout,
  adapter: LoraAdapter | undefined,
  chunkSize: number | undefined,
  recomputeLayers = false,
): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
  const hidden = model.forward(layout.ids, { attentionMask: layout.attention, recomputeLayers, ...(adapter ? { adapter } : {}) });
  const flat = tf.reshape(hidden, [-1, model.config.hiddenSize]) as tf.Tensor2D;
  const gathered = tf.gather(flat, tf.tensor1d(layout.hiddenRows, 'int32')) as tf.Tensor2D;
  const selected = tf.mul(gathered, tf.tensor2d(layout.invTemperature, [layout.invTemperature.length, 1])) as tf.Tensor2D;
  const { logProbs, entropy } = tokenLogProbsWithEntropy(selected, model.outputHead, tf.tensor1d(layout.targets, 'int32'), {
    ...(chunkSize ? { chunkSize } : {}),
    // The backward multiplies by Wᵀ: a persistent one, so that nothing is transposed or repacked per chunk.
    weightT: model.outputHeadTransposed,
  });
  const entropyGrid = tf.reshape(entropy, [layout.B, layout.R]) as tf.Tensor2D;
  entropy.dispose(); // the kernel keeps it outside any tidy scope; the reshaped view holds the data now
  return { logProbs: tf.reshape(logProbs, [layout.B, layout.R]) as tf.Tensor2D, entropy: entropyGrid };
}

/** The default pass budget on wasm: what is left of the 4 GiB heap for activations beside a ~1B-parameter model. */
export const WASM_PASS_BUDGET_BYTES = 1.5 * 2 ** 30;

/**
 * Cuts the sequences, in order, into micro-batches of at most `maxSize` whose estimated pass bytes stay within
 * `budget` (a sequence that alone exceeds it runs alone).
 */
export function microBatches(
  seqs: readonly TrainingSequence[],
  maxSize: number,
  budget: number | undefined,
  bytesOf: (batch: number, tokens: number) => number,
): TrainingSequence[][] {
  const out: TrainingSequence[][] = [];
  let current: TrainingSequence[] = [];
  let longest = 0;
  for (const s of seqs) {
    const len = s.promptIds.length + s.responseIds.length;
    const wouldBe = Math.max(longest, len);
    const fits = current.length < maxSize && (budget === undefined || bytesOf(current.length + 1, wouldBe) <= budget);
    if (current.length > 0 && !fits) {
      out.push(current);
      current = [];
      longest = 0;
    }
    current.push(s);
    longest = Math.max(longest, len);
  }
  if (current.length > 0) out.push(current);
  return out;
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
  const recompute = cfg.recomputeLayers ?? true;
  const budget = cfg.memoryBudgetBytes ?? (tf.getBackend() === 'wasm' ? WASM_PASS_BUDGET_BYTES : undefined);
  const groups = microBatches(seqs, cfg.microBatchSize, budget, (b, t) => microBatchBytes(model.config, b, t, adapter.config.r, recompute));
  const layouts = groups.map((group) => layoutMicroBatch(group, padId));
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
      const { logProbs, entropy } = tf.tidy(() => responseLogProbs(model, layout, undefined, cfg.logitsChunkSize));
      const values = (await logProbs.data()) as Float32Array;
      tf.dispose([logProbs, entropy]);
      // Masked slots keep 0, as carried values do: the loss multiplies them by the mask either way.
      refLogprobs.push(values.map((v, cell) => ((layout.mask[cell] as number) > 0 ? v : 0)));
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
          const { logProbs, entropy } = responseLogProbs(model, layout, adapter, cfg.logitsChunkSize, recompute);
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
        ? { refLogprobs: groups.flatMap((group, i) => group.map((s, b) => Array.from((refLogprobs[i] as Float32Array).subarray(b * (layouts[i] as MicroBatchLayout).R, b * (layouts[i] as MicroBatchLayout).R + s.responseIds.length)))) }
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
  const layout = layoutMicroBatch(seqs, cfg.padTokenId ?? 0);
  const { logProbs, entropy } = tf.tidy(() => responseLogProbs(model, layout, adapter, cfg.logitsChunkSize));
  const values = (await logProbs.data()) as Float32Array;
  tf.dispose([logProbs, entropy]);
  return seqs.map((s, b) => Array.from(values.subarray(b * layout.R, b * layout.R + s.responseIds.length)));
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
