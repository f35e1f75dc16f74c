// Activation recomputation (gradient checkpointing): a block's forward runs without keeping its intermediate
// activations; its backward runs the block again under a tape of its own and differentiates that. Memory
// for a stack of blocks drops from every block's activations to the block inputs plus one block's working set,
// for about one more forward pass of compute.
import * as tf from '@tensorflow/tfjs';

interface EngineState {
  activeTape: unknown;
}

/**
 * Gradients of `f` (run again here) with respect to `xs`, weighted by `dy`. Safe to call while an outer
 * gradient is being computed: tfjs keeps one active tape, so the outer one is put aside and restored.
 * An x that `f` does not reach gets a zero gradient.
 */
function innerGradients(f: () => tf.Tensor, xs: tf.Tensor[], dy: tf.Tensor): tf.Tensor[] {
  const state = (tf.engine() as unknown as { state: EngineState }).state;
  const outer = state.activeTape;
  try {
    const { value, grads } = tf.engine().gradients(f, xs, dy, true);
    value.dispose();
    return xs.map((x, i) => grads[i] ?? tf.zerosLike(x));
  } finally {
    state.activeTape = outer;
  }
}

/**
 * `block(x, context)` whose backward recomputes it. `params` are the trainable tensors the block reads (they
 * get gradients through this op); `context` are constant tensors it reads that its caller frees after the
 * forward (masks, rotary tables): they are kept for the backward. `random` is the block's random stream
 * (dropout): the backward replays it from where the forward started, then puts it back where it was.
 */
export function recomputed(
  x: tf.Tensor2D,
  params: readonly tf.Tensor[],
  context: readonly tf.Tensor[],
  block: (x: tf.Tensor2D, context: readonly tf.Tensor[]) => tf.Tensor2D,
  random?: { get(): number; set(state: number): void },
): tf.Tensor2D {
  const start = random?.get();
  const f = tf.customGrad((...inputs: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const xIn = inputs[0] as tf.Tensor2D;
    const save = inputs[inputs.length - 1] as tf.GradSaveFunc;
    save([xIn, ...context]);
    // Inside customGrad nothing is taped; tidy frees the block's intermediates right away.
    const value = tf.tidy(() => block(xIn, context));
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const xSaved = saved[0] as tf.Tensor2D;
        const now = random?.get();
        if (random && start !== undefined) random.set(start);
        try {
          return innerGradients(() => block(xSaved, saved.slice(1)), [xSaved, ...params], dy);
        } finally {
          if (random && now !== undefined) random.set(now);
        }
      },
    };
  });
  return f(x, ...params) as tf.Tensor2D;
}
