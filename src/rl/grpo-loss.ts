// The GRPO loss (docs/method.md, "GRPO"; the formulas follow verl's `compute_policy_loss_vanilla`, `kl_penalty('low_var_kl')`
// and `agg_loss`).
//
// Per generated token t of sequence b, with A_b the sequence's advantage (constant), m_bt the token mask
// (1 for generated tokens, 0 for prompt, padding and tool-output tokens):
//
//   ρ      = exp(clamp(logπ − logπ_old, −20, 20))                          (verl clamps the log-ratio)
//   ℓ_clip = max(−ρA, −clip(ρ, 1 − ε_low, 1 + ε_high)·A)                   = −min(ρA, clip(ρ)·A)
//   ℓ_pg   = A < 0 and dual clip c set ?  min(ℓ_clip, −c·A)  :  ℓ_clip      (dual clip, c = 3 in verl)
//   r      = clamp(logπ_ref − logπ, −20, 20);  k3 = min(exp(r) − r − 1, 10) (k3 estimator, verl's clamp)
//   ℓ      = ℓ_pg + β·k3                                                    (β = klCoef, 0.01)
//
// Aggregation over the batch (Z = the normalizer, see `LossNormalizer`; sums are over b, t with weight m_bt):
//   'token-mean'           loss = Σ m·ℓ / Z.tokens                                   (the default)
//   'seq-mean-token-mean'  loss = Σ_b (Σ_t m·ℓ / Σ_t m) / Z.sequences
//   'seq-sum-norm'         loss = Σ m·ℓ / (Z.sequences · maxLen)                      (Dr. GRPO: a fixed length)
// verl's 'seq-mean-token-sum-norm' divides by the horizon only (Σ m·ℓ / T); we also divide by the number of
// sequences so that the scale does not grow with the batch (with every sequence full length it equals
// 'token-mean'). Z.sequences counts sequences with at least one unmasked token.
//
// Gradient accumulation: each aggregation is a sum of per-token (per-sequence) terms divided by counts of the
// WHOLE batch. Pass the whole batch's `LossNormalizer` (from `lossNormalizer(allMasks)`) to every
// micro-batch's call: the micro-batch losses (and metrics) then add up to exactly the big-batch values, and so
// do their gradients (see ./accumulate.ts).
//
// Masked positions must hold finite values (0·NaN is NaN).
import { tf } from '../tensor/backend.js';

export type LossAggregation = 'token-mean' | 'seq-mean-token-mean' | 'seq-sum-norm';

export interface GrpoLossConfig {
  /** ε_low: the ratio is clipped below at 1 − ε_low (default 0.2). */
  clipLow?: number;
  /** ε_high: the ratio is clipped above at 1 + ε_high (default 0.28). */
  clipHigh?: number;
  /** Dual-clip constant c (> 1) for negative advantages; undefined or null: off. verl uses 3. */
  dualClip?: number | null;
  /** β, the coefficient of the k3 KL to the reference (default 0.01). 0 disables the KL term. */
  klCoef?: number;
  /** Default 'token-mean'. */
  aggregation?: LossAggregation;
  /** The fixed length of 'seq-sum-norm' (default: the T of the inputs; set it to the max response length). */
  maxLen?: number;
}

/** Counts of the whole (accumulated) batch that the aggregation divides by. */
export interface LossNormalizer {
  /** Σ of the mask over the whole batch (the number of loss tokens). */
  tokens: number;
  /** Sequences with at least one unmasked token. */
  sequences: number;
}

export interface GrpoLossInputs {
  /** logπ of the sampled tokens under the policy being trained [B, T] (on the tape). */
  logProbs: tf.Tensor2D;
  /** logπ_old at sampling time [B, T] (constant). */
  oldLogProbs: tf.Tensor2D;
  /** logπ_ref under the reference (adapters off) [B, T] (constant); omit when klCoef is 0. */
  refLogProbs?: tf.Tensor2D;
  /** One advantage per sequence [B] (constant), broadcast over its tokens. */
  advantages: tf.Tensor1D;
  /** Token mask [B, T]: 1 for generated tokens, 0 for prompt, padding and tool output. */
  mask: tf.Tensor2D;
  /** Optional per-token entropy [B, T] (constant), for the metric only. */
  entropy?: tf.Tensor2D;
  /** Whole-batch counts for gradient accumulation; default: this call's own. */
  normalizer?: LossNormalizer;
}

export type GrpoLossMetrics = {
  /** The policy-gradient part of the loss (same aggregation). */
  pgLoss: tf.Scalar;
  /** The k3 KL to the reference (same aggregation; 0 without refLogProbs). */
  kl: tf.Scalar;
  /** Fraction of tokens whose ratio was clipped (−clip(ρ)A > −ρA), token-mean. */
  clipFrac: tf.Scalar;
  /** Fraction of tokens where the dual clip bound was active, token-mean. */
  dualClipFrac: tf.Scalar;
  /** Token-mean of logπ_old − logπ (verl's ppo_kl). */
  ppoKl: tf.Scalar;
  /** Token-mean entropy, when entropy was given. */
  entropy?: tf.Scalar;
};

export interface GrpoLossResult {
  loss: tf.Scalar;
  metrics: GrpoLossMetrics;
}

export const GRPO_DEFAULTS = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klCoef: 0.01,
  aggregation: 'token-mean' as LossAggregation,
};

/** Whole-batch counts from the token masks of all micro-batches (reads them; call outside hot loops). */
export function lossNormalizer(masks: tf.Tensor2D | readonly tf.Tensor2D[]): LossNormalizer {
  const list = Array.isArray(masks) ? (masks as readonly tf.Tensor2D[]) : [masks as tf.Tensor2D];
  let tokens = 0;
  let sequences = 0;
  for (const m of list) {
    const [b, t] = m.shape;
    const v = m.dataSync();
    for (let i = 0; i < b; i++) {
      let n = 0;
      for (let j = 0; j < t; j++) n += v[i * t + j] as number;
      tokens += n;
      if (n > 0) sequences++;
    }
  }
  return { tokens, sequences };
}

function checkShape(name: string, t: tf.Tensor | undefined, shape: readonly number[]): void {
  if (t && (t.rank !== shape.length || t.shape.some((d, i) => d !== shape[i]))) {
    throw new Error(`grpoLoss: ${name} has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`);
  }
}

/** The GRPO loss and its metrics (see the file header). The caller disposes every returned tensor. */
export function grpoLoss(inputs: GrpoLossInputs, config: GrpoLossConfig = {}): GrpoLossResult {
  const { logProbs, oldLogProbs, refLogProbs, advantages, mask, entropy, normalizer } = inputs;
  const [b, t] = logProbs.shape;
  checkShape('oldLogProbs', oldLogProbs, [b, t]);
  checkShape('refLogProbs', refLogProbs, [b, t]);
  checkShape('mask', mask, [b, t]);
  checkShape('entropy', entropy, [b, t]);
  checkShape('advantages', advantages, [b]);
  const clipLow = config.clipLow ?? GRPO_DEFAULTS.clipLow;
  const clipHigh = config.clipHigh ?? GRPO_DEFAULTS.clipHigh;
  const klCoef = config.klCoef ?? GRPO_DEFAULTS.klCoef;
  const aggregation = config.aggregation ?? GRPO_DEFAULTS.aggregation;
  const maxLen = config.maxLen ?? t;
  const dualClip = config.dualClip ?? null;
  if (dualClip !== null && !(dualClip > 1)) throw new Error(`grpoLoss: dualClip must be > 1; got ${dualClip}`);
  if (klCoef !== 0 && !refLogProbs) throw new Error('grpoLoss: refLogProbs is required when klCoef ≠ 0');

  const out = tf.tidy(() => {
    const m = tf.cast(mask, 'float32');
    const a = tf.expandDims(advantages, 1); // [B, 1]
    const negA = tf.neg(a);

    // Counts: the whole batch's when given, else this batch's (tensors, so no read-back).
    const seqTokens = tf.sum(m, 1); // [B]
    const tokens: tf.Tensor = normalizer ? tf.scalar(normalizer.tokens) : tf.sum(seqTokens);
    const sequences: tf.Tensor = normalizer
      ? tf.scalar(normalizer.sequences)
      : tf.sum(tf.cast(tf.greater(seqTokens, 0), 'float32'));
    const safe = (x: tf.Tensor) => tf.maximum(x, 1);

    const aggregate = (x: tf.Tensor): tf.Scalar => {
      const mx = tf.mul(x, m);
      if (aggregation === 'token-mean') return tf.div(tf.sum(mx), safe(tokens)) as tf.Scalar;
      if (aggregation === 'seq-mean-token-mean') {
        return tf.div(tf.sum(tf.div(tf.sum(mx, 1), safe(seqTokens))), safe(sequences)) as tf.Scalar;
      }
      return tf.div(tf.sum(mx), tf.mul(safe(sequences), maxLen)) as tf.Scalar;
    };
    const tokenMean = (x: tf.Tensor): tf.Scalar => tf.div(tf.sum(tf.mul(x, m)), safe(tokens)) as tf.Scalar;

    const logRatio = tf.clipByValue(tf.sub(logProbs, oldLogProbs), -20, 20);
    const ratio = tf.exp(logRatio);
    const l1 = tf.mul(negA, ratio);
    const l2 = tf.mul(negA, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh));
    const lClip = tf.maximum(l1, l2);
    let pg: tf.Tensor = lClip;
    let dualActive: tf.Tensor = tf.zerosLike(m);
    if (dualClip !== null) {
      const l3 = tf.mul(negA, dualClip);
      const negative = tf.broadcastTo(tf.less(a, 0), [b, t]); // from the constant advantages
      pg = tf.where(negative, tf.minimum(lClip, l3), lClip);
      dualActive = tf.cast(tf.logicalAnd(negative, tf.greater(lClip, l3)), 'float32');
    }
    let kl: tf.Tensor = tf.zerosLike(m);
    if (refLogProbs) {
      const r = tf.clipByValue(tf.sub(refLogProbs, logProbs), -20, 20);
      kl = tf.minimum(tf.sub(tf.sub(tf.exp(r), r), 1), 10);
    }
    const perToken = klCoef !== 0 ? tf.add(pg, tf.mul(kl, klCoef)) : pg;

    const metrics: Record<string, tf.Scalar> = {
      pgLoss: aggregate(pg),
      kl: aggregate(kl),
      clipFrac: tokenMean(tf.cast(tf.greater(l2, l1), 'float32')),
      dualClipFrac: tokenMean(dualActive),
      ppoKl: tokenMean(tf.neg(logRatio)),
    };
    if (entropy) metrics.entropy = tokenMean(entropy);
    return { loss: aggregate(perToken), metrics };
  });
  return out as unknown as GrpoLossResult;
}
