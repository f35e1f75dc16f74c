// Small tensor helpers shared by the model and the trainer. Backend-agnostic.
import { tf } from './backend.js';

type Inputs = Array<tf.Tensor | tf.GradSaveFunc>;

/**
 * Whether a gradient tape records the ops run now (inside tf.grad/variableGrads, and not inside a custom
 * gradient's forward). When none does, a custom gradient is never used, and wrapping an op in one costs only
 * dispatch (tens of microseconds a call on wasm, hundreds of calls per decoded token).
 */
export function recordingGradients(): boolean {
  return (tf.engine() as unknown as { isTapeOn(): boolean }).isTapeOn();
}

/**
 * `x @ w` for a frozen weight `w` stored as [in, out] (transposed from Hugging Face's [out, in] at load time,
 * so the forward takes XNNPACK's fast non-transposed 2-D path). The gradient flows to `x` only (base weights
 * are never trained) and is computed as `dy @ wT`, with `wT` the held transpose of `w` when given, else an
 * explicit transpose per backward, because matMul with a transposed operand is ~7× slower on wasm
 * (docs/method.md, "The tensor stack"; a held one also spares XNNPACK repacking a new right operand).
 */
export function linearFrozen(x: tf.Tensor2D, w: tf.Tensor2D, wT?: tf.Tensor2D): tf.Tensor2D {
  // Untaped: the same matMul without the custom-gradient wrapper.
  if (!recordingGradients()) return tf.matMul(x, w);
  const f = tf.customGrad((...inputs: Inputs) => {
    const xIn = inputs[0] as tf.Tensor2D;
    return {
      value: tf.matMul(xIn, w),
      gradFunc: (dy: tf.Tensor) => tf.matMul(dy as tf.Tensor2D, wT ?? tf.transpose(w)),
    };
  });
  return f(x) as tf.Tensor2D;
}

/**
 * `a @ b` for two trainable 2-D operands, with both gradients computed from explicit transposes
 * (see `linearFrozen` for why).
 */
export function matMulTrainable(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (!recordingGradients()) return tf.matMul(a, b);
  const f = tf.customGrad((...inputs: Inputs) => {
    const aIn = inputs[0] as tf.Tensor2D;
    const bIn = inputs[1] as tf.Tensor2D;
    const save = inputs[2] as tf.GradSaveFunc;
    save([aIn, bIn]);
    return {
      value: tf.matMul(aIn, bIn),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
        return [tf.matMul(dy as tf.Tensor2D, tf.transpose(sb)), tf.matMul(tf.transpose(sa), dy as tf.Tensor2D)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}
