// The SFT loss (docs/sft.md): the masked negative log-likelihood of the assistant tokens,
//   L = −Σ_{n, i: mask_n[i] = 1} log p(ids_n[i] | ids_n[< i]) / N,
// where N counts the masked tokens of the WHOLE optimizer batch, so that per-micro-batch losses add up to the
// big-batch loss and their gradients add up to its gradient (src/rl/accumulate.ts). The log-probs come from
// the fused chunked kernel (kernels/token-logprob.ts), which never forms all logits at once; for a trainable
// model the kernel also returns the head's gradient.
import { tokenLogProbs } from '../../kernels/token-logprob.js';
import type { LoraAdapter } from '../model/lora.js';
import type { CausalLM } from '../model/qwen3.js';
import { tf } from '../tensor/backend.js';

/** One sequence as the loss sees it: ids and a per-token target mask (mask[0] is ignored: nothing predicts it). */
export interface MaskedSequence {
  ids: number[];
  mask: number[];
}

/** Left-padded ids of a micro-batch and, per target token, the flat hidden row that predicts it. */
export interface NllLayout {
  ids: number[][];
  attention: number[][];
  /** Flat indices into the [B·T, d] hidden states. */
  hiddenRows: Int32Array;
  targets: Int32Array;
}

export function layoutSequences(seqs: readonly MaskedSequence[], padId: number): NllLayout {
  if (seqs.length === 0) throw new Error('SFT: an empty micro-batch');
  const T = Math.max(...seqs.map((s) => s.ids.length));
  const ids: number[][] = [];
  const attention: number[][] = [];
  const rows: number[] = [];
  const targets: number[] = [];
  seqs.forEach((s, b) => {
    if (s.mask.length !== s.ids.length) throw new Error(`SFT: sequence ${b} has ${s.ids.length} ids but ${s.mask.length} mask values`);
    const pad = T - s.ids.length;
    ids.push([...new Array<number>(pad).fill(padId), ...s.ids]);
    attention.push([...new Array<number>(pad).fill(0), ...s.ids.map(() => 1)]);
    for (let i = 1; i < s.ids.length; i++) {
      if (s.mask[i] !== 1) continue;
      rows.push(b * T + pad + i - 1); // token i is predicted by the hidden state one position earlier
      targets.push(s.ids[i] as number);
    }
  });
  return { ids, attention, hiddenRows: Int32Array.from(rows), targets: Int32Array.from(targets) };
}

/** Masked target tokens of a list of sequences (the normalizer N of the loss). */
export function countTargets(seqs: readonly MaskedSequence[]): number {
  let n = 0;
  for (const s of seqs) for (let i = 1; i < s.mask.length; i++) if (s.mask[i] === 1) n++;
  return n;
}

export interface NllOptions {
  /** The LoRA adapter being trained (LoRA SFT); none for full-weight SFT or for the base model. */
  adapter?: LoraAdapter;
  padTokenId: number;
  /** Rows of logits formed at once in the fused kernel. */
  chunkSize?: number;
  /**
   * Recompute each layer's activations in the backward (src/tensor/recompute.ts): the same gradient, with
   * the memory of a pass bounded by one layer's intermediates instead of every layer's (tfjs keeps every
   * intermediate gradient of a tape until the backward ends).
   */
  recomputeLayers?: boolean;
}

/**
 * −Σ log p over the masked tokens of `seqs`, divided by `normalizer` (a scalar on the tape when recording).
 * Returns 0 for a micro-batch without targets. Call inside tf.tidy or tf.variableGrads.
 */
export function maskedNll(model: CausalLM, seqs: readonly MaskedSequence[], normalizer: number, opts: NllOptions): tf.Scalar {
  if (!(normalizer > 0)) throw new Error(`SFT: the loss normalizer must be positive, got ${normalizer}`);
  const layout = layoutSequences(seqs, opts.padTokenId);
  if (layout.targets.length === 0) return tf.scalar(0);
  const hidden = model.forward(layout.ids, { attentionMask: layout.attention, recomputeLayers: opts.recomputeLayers ?? false, ...(opts.adapter ? { adapter: opts.adapter } : {}) });
  const flat = tf.reshape(hidden, [-1, model.config.hiddenSize]) as tf.Tensor2D;
  const selected = tf.gather(flat, tf.tensor1d(layout.hiddenRows, 'int32')) as tf.Tensor2D;
  const head = model.trainingHead();
  const logp = tokenLogProbs(selected, head.weight, tf.tensor1d(layout.targets, 'int32'), {
    ...(opts.chunkSize ? { chunkSize: opts.chunkSize } : {}),
    weightGrad: model.trainable,
    ...(head.weightT ? { weightT: head.weightT } : {}),
  });
  return tf.div(tf.neg(tf.sum(logp)), normalizer) as tf.Scalar;
}
