// Gradients tfjs lacks on every backend (docs/method.md, "The tensor stack"): comparison ops on the tape throw "gradient function not
// found" even though their gradient is zero everywhere. Registering zeros lets masks be computed from
// differentiated tensors (for example the clipped-ratio indicator in GRPO).
import * as tf from '@tensorflow/tfjs';

const COMPARISON_KERNELS = ['Greater', 'GreaterEqual', 'Less', 'LessEqual', 'Equal', 'NotEqual'] as const;
let registered = false;

export function registerGradientFixes(): void {
  if (registered) return;
  registered = true;
  for (const kernelName of COMPARISON_KERNELS) {
    if (tf.getGradient(kernelName) !== undefined) continue;
    tf.registerGradient({
      kernelName,
      inputsToSave: ['a', 'b'],
      gradFunc: (_dy, saved) => {
        const [a, b] = saved as [tf.Tensor, tf.Tensor];
        return { a: () => tf.zerosLike(a), b: () => tf.zerosLike(b) };
      },
    });
  }
}
