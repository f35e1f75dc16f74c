// Small tensor helpers shared by the model and the trainer. Backend-agnostic.
import { tf } from './backend.js';
import type { FrozenMatrix } from './frozen-matrix.js';
import { nativeMatMulThreads } from './native-matmul.js';

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
 * `x @ W` for a frozen weight W [in, out] (./frozen-matrix.ts: a tensor, or onnxruntime's on the native
 * backend). The gradient flows to `x` only (base weights are never trained) and is dy @ Wᵀ, which the matrix
 * forms without a transposed matMul operand (~7× slower on wasm: docs/method.md, "The tensor stack").
 */
export function linearFrozen(x: tf.Tensor2D, w: FrozenMatrix): tf.Tensor2D {
  // Untaped: the same product without the custom-gradient wrapper.
  if (!recordingGradients()) return w.times(x);
  const f = tf.customGrad((...inputs: Inputs) => {
    const xIn = inputs[0] as tf.Tensor2D;
    return {
      value: w.times(xIn),
      gradFunc: (dy: tf.Tensor) => w.timesTransposed(dy as tf.Tensor2D),
    };
  });
  return f(x) as tf.Tensor2D;
}

/**
 * op(a)·op(b), an operand transposed where its flag says: on the native path as matMul flags (MLAS multiplies a
 * transposed operand as fast as a plain one, and forming the transpose would be a pass over memory for nothing:
 * ./native-matmul.ts), elsewhere as explicit transposes, because XNNPACK's transposed path is ~7× slower on wasm
 * (docs/method.md, "The tensor stack"). The same product either way.
 */
export function matMulT<R extends tf.Rank.R2 | tf.Rank.R3>(a: tf.Tensor<R>, b: tf.Tensor<R>, transposeA: boolean, transposeB: boolean): tf.Tensor<R> {
  if (nativeMatMulThreads() !== undefined) return tf.matMul(a, b, transposeA, transposeB) as tf.Tensor<R>;
  const flip = (x: tf.Tensor<R>): tf.Tensor<R> => (x.rank === 2 ? tf.transpose(x) : tf.transpose(x, [0, 2, 1])) as tf.Tensor<R>;
  return tf.matMul(transposeA ? flip(a) : a, transposeB ? flip(b) : b) as tf.Tensor<R>;
}

/**
 * `a @ b` for two trainable 2-D operands, with both gradients computed as `matMulT` forms them
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
        return [matMulT(dy as tf.Tensor2D, sb, false, true), matMulT(sa, dy as tf.Tensor2D, true, false)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}
