// Teacher-forced scoring: the log-prob of every token given the ones before it, and the greedy next id.
import { tf } from '../tensor/backend.js';
import type { CausalLM, ProjectionAdapter } from './qwen3.js';

export interface ScoreResult {
  /** logprobs[i] = log p(ids[i+1] | ids[0..i]); length n − 1. */
  logprobs: number[];
  /** greedyNext[i] = argmax_v p(v | ids[0..i]); length n. */
  greedyNext: number[];
}

export interface ScoreOptions {
  adapter?: ProjectionAdapter;
  /** Rows of logits materialised at once (the Qwen3 vocab is 151,936 wide). */
  chunkRows?: number;
  padTokenId?: number;
}

/** Left-pads rows to one length; returns the padded ids and the attention mask. */
export function leftPad(batch: number[][], padId: number): { ids: number[][]; mask: number[][]; pads: number[] } {
  const T = Math.max(...batch.map((r) => r.length));
  const pads = batch.map((r) => T - r.length);
  return {
    ids: batch.map((r, i) => [...new Array<number>(pads[i] as number).fill(padId), ...r]),
    mask: batch.map((r, i) => [...new Array<number>(pads[i] as number).fill(0), ...r.map(() => 1)]),
    pads,
  };
}

/** Scores a batch of sequences of any lengths (run as one left-padded batch). */
export async function scoreBatch(model: CausalLM, batch: number[][], opts: ScoreOptions = {}): Promise<ScoreResult[]> {
  if (batch.length === 0) return [];
  if (batch.some((r) => r.length === 0)) throw new Error('scoreBatch: every sequence needs at least one token');
  const V = model.config.vocabSize;
  for (const row of batch) {
    const bad = row.find((id) => !Number.isInteger(id) || id < 0 || id >= V);
    if (bad !== undefined) throw new Error(`scoreBatch: token id ${bad} is outside the vocabulary [0, ${V})`);
  }
  const { ids, mask, pads } = leftPad(batch, opts.padTokenId ?? 0);
  const B = ids.length;
  const T = (ids[0] as number[]).length;
  // Targets: the next id at each position (the last position's target is a dummy, dropped below).
  const targets = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t + 1 < T; t++) targets[b * T + t] = (ids[b] as number[])[t + 1] as number;

  const hidden = model.forward(ids, { attentionMask: mask, adapter: opts.adapter });
  const chunk = opts.chunkRows ?? Math.max(1, Math.floor(2 ** 24 / V));
  const lp = new Float32Array(B * T);
  const am = new Int32Array(B * T);
  try {
    const flat = tf.reshape(hidden, [B * T, model.config.hiddenSize]) as tf.Tensor2D;
    for (let start = 0; start < B * T; start += chunk) {
      const n = Math.min(chunk, B * T - start);
      const [logp, arg] = tf.tidy(() => {
        const logSoftmax = tf.logSoftmax(model.logits(tf.slice(flat, [start, 0], [n, -1])));
        // Flat index row·V + target: a plain 1-D gather (wasm's batched gather is not reliable).
        const flatIndex = new Int32Array(n);
        for (let i = 0; i < n; i++) flatIndex[i] = i * V + (targets[start + i] as number);
        return [tf.gather(tf.reshape(logSoftmax, [n * V]), tf.tensor1d(flatIndex, 'int32')), tf.argMax(logSoftmax, -1)];
      });
      lp.set((await logp.data()) as Float32Array, start);
      am.set((await arg.data()) as Int32Array, start);
      tf.dispose([logp, arg]);
    }
    flat.dispose();
  } finally {
    hidden.dispose();
  }
  return batch.map((row, b) => {
    const off = b * T + (pads[b] as number);
    return {
      logprobs: Array.from(lp.subarray(off, off + row.length - 1)),
      greedyNext: Array.from(am.subarray(off, off + row.length)),
    };
  });
}
