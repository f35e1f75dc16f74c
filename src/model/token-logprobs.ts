// The log-probs of tokens another engine sampled, recomputed with our own forward (as verl does after vLLM
// rollouts): for each row, log softmax(logits / T) at every continuation token given the prompt and the tokens
// before it — the same quantity the native sampler records (T = 1 when greedy), so GRPO's old log-probs mean
// the same thing whichever engine generated.
import { tf } from '../tensor/backend.js';
import type { CausalLM, ProjectionAdapter } from './qwen3.js';
import { leftPad } from './score.js';

export interface ContinuationLogprobOptions {
  /** Sampling temperature; 0 (greedy) scores at T = 1, like the native sampler. */
  temperature: number;
  adapter?: ProjectionAdapter;
  padTokenId?: number;
  /** Positions whose logits are materialised at once (a Qwen3 row is 151,936 floats). */
  chunkPositions?: number;
}

/** logprobs[b][j] = log p_T(continuations[b][j] | prompts[b] ++ continuations[b][..j]). */
export async function continuationLogprobs(model: CausalLM, prompts: number[][], continuations: number[][], opts: ContinuationLogprobOptions): Promise<number[][]> {
  if (prompts.length !== continuations.length) throw new Error(`continuationLogprobs: ${prompts.length} prompts but ${continuations.length} continuations`);
  const out: number[][] = continuations.map(() => []);
  const rows = prompts.map((_, b) => b).filter((b) => (continuations[b] as number[]).length > 0);
  if (rows.length === 0) return out;
  if (rows.some((b) => (prompts[b] as number[]).length === 0)) throw new Error('continuationLogprobs: every prompt needs at least one token');
  const V = model.config.vocabSize;
  const invT = opts.temperature > 0 ? 1 / opts.temperature : 1;
  // The input is prompt ++ continuation minus its last token; the targets are the continuation.
  const inputs = rows.map((b) => [...(prompts[b] as number[]), ...(continuations[b] as number[]).slice(0, -1)]);
  const { ids, mask } = leftPad(inputs, opts.padTokenId ?? 0);
  const T = (ids[0] as number[]).length;
  // Flat positions (row·T + t) of every target, and the target ids.
  const positions: number[] = [];
  const targets: number[] = [];
  rows.forEach((b, r) => {
    const cont = continuations[b] as number[];
    const first = T - cont.length; // the position that predicts cont[0] (inputs are left-padded)
    cont.forEach((tok, j) => {
      positions.push(r * T + first + j);
      targets.push(tok);
    });
  });
  const hidden = model.forward(ids, { attentionMask: mask, ...(opts.adapter ? { adapter: opts.adapter } : {}) });
  const values = new Float32Array(positions.length);
  try {
    const flat = tf.reshape(hidden, [rows.length * T, model.config.hiddenSize]) as tf.Tensor2D;
    const chunk = opts.chunkPositions ?? Math.max(1, Math.floor(2 ** 24 / V));
    for (let start = 0; start < positions.length; start += chunk) {
      const n = Math.min(chunk, positions.length - start);
      const picked = tf.tidy(() => {
        const h = tf.gather(flat, tf.tensor1d(positions.slice(start, start + n), 'int32'));
        const logSoftmax = tf.logSoftmax(tf.mul(model.logits(h as tf.Tensor2D), invT));
        const flatIndex = new Int32Array(n);
        for (let i = 0; i < n; i++) flatIndex[i] = i * V + (targets[start + i] as number);
        return tf.gather(tf.reshape(logSoftmax, [n * V]), tf.tensor1d(flatIndex, 'int32'));
      });
      values.set((await picked.data()) as Float32Array, start);
      picked.dispose();
    }
    flat.dispose();
  } finally {
    hidden.dispose();
  }
  let k = 0;
  for (const b of rows) {
    const n = (continuations[b] as number[]).length;
    out[b] = Array.from(values.subarray(k, k + n));
    k += n;
  }
  return out;
}
