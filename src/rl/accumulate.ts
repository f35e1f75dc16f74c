// Gradient accumulation over micro-batches.
//
// The result equals one big batch when each micro-batch's loss is its share of the big-batch loss, i.e. a sum
// of per-token (or per-sequence) terms divided by counts of the WHOLE batch: then
//   L_big = Σ_k L_k   and   ∇L_big = Σ_k ∇L_k.
// For the GRPO loss that means computing `lossNormalizer(allMasks)` once (./grpo-loss.ts) and passing it as
// `normalizer` to every micro-batch's `grpoLoss`; the micro-batch metrics then add up to the big-batch metrics
// too. This module only sums: weights, if any, belong in the loss function (`lossFn` may scale its loss).
import { tf } from '../tensor/backend.js';

export interface MicroBatchLoss {
  /** This micro-batch's share of the whole-batch loss. */
  loss: tf.Scalar;
  /** Scalars to sum over micro-batches (each a share of the whole-batch value, like the loss). */
  metrics?: Readonly<Record<string, tf.Scalar | undefined>>;
}

export interface AccumulatedGradients {
  /** Σ over micro-batches of ∂loss/∂param, keyed like `params`; a parameter no loss depends on is absent. */
  grads: Record<string, tf.Tensor>;
  /** Σ of the micro-batch losses. */
  loss: number;
  /** Σ of each metric over the micro-batches (a metric missing from a micro-batch counts as 0). */
  metrics: Record<string, number>;
}

/**
 * Sums micro-batch gradients w.r.t. `params` (only those: nothing else gets a gradient), one `add` per
 * micro-batch, so a caller may do other work between two of them (e.g. yield to the event loop). Every tensor
 * made here is disposed except the grads `result()` returns, which the caller owns (`disposeGrads`), or which
 * `dispose()` frees when the caller gives up half-way.
 */
export class GradientAccumulator {
  private readonly byVarName = new Map<string, string>();
  private readonly varList: tf.Variable[] = [];
  private readonly grads: Record<string, tf.Tensor> = {};
  private readonly metrics: Record<string, number> = {};
  private loss = 0;

  constructor(params: Record<string, tf.Variable>) {
    for (const key of Object.keys(params)) {
      const v = params[key] as tf.Variable;
      if (!v.trainable) throw new Error(`accumulateGradients: parameter '${key}' is not trainable`);
      this.byVarName.set(v.name, key);
      this.varList.push(v);
    }
  }

  /** Runs one micro-batch's `lossFn` under tf.variableGrads and adds its gradients, loss and metrics. */
  add(lossFn: () => MicroBatchLoss): void {
    let kept: Record<string, tf.Scalar> = {};
    const { value, grads: g } = tf.variableGrads(() => {
      const r = lossFn();
      kept = {};
      for (const [name, t] of Object.entries(r.metrics ?? {})) if (t) kept[name] = tf.keep(t);
      return r.loss;
    }, this.varList);
    this.loss += value.dataSync()[0] as number;
    value.dispose();
    for (const [name, t] of Object.entries(kept)) {
      this.metrics[name] = (this.metrics[name] ?? 0) + (t.dataSync()[0] as number);
      t.dispose();
    }
    for (const [varName, gi] of Object.entries(g)) {
      const key = this.byVarName.get(varName);
      if (key === undefined) {
        gi.dispose();
        continue;
      }
      const prev = this.grads[key];
      if (prev) {
        this.grads[key] = tf.add(prev, gi);
        prev.dispose();
        gi.dispose();
      } else {
        this.grads[key] = gi;
      }
    }
  }

  /** The sums so far; the grads now belong to the caller. */
  result(): AccumulatedGradients {
    return { grads: this.grads, loss: this.loss, metrics: this.metrics };
  }

  /** Frees the gradients summed so far (a caller that stops before `result()`). */
  dispose(): void {
    disposeGrads(this.grads);
  }
}

/**
 * Runs `lossFn(i)` for i = 0..count−1 under tf.variableGrads and sums the gradients w.r.t. `params` (only
 * those: nothing else gets a gradient). Every tensor made here is disposed except the returned grads, which
 * the caller owns (`disposeGrads`).
 */
export function accumulateGradients(
  params: Record<string, tf.Variable>,
  count: number,
  lossFn: (index: number) => MicroBatchLoss,
): AccumulatedGradients {
  const acc = new GradientAccumulator(params);
  for (let i = 0; i < count; i++) acc.add(() => lossFn(i));
  return acc.result();
}

/** Disposes a map of gradients. */
export function disposeGrads(grads: Record<string, tf.Tensor>): void {
  for (const t of Object.values(grads)) t.dispose();
}
