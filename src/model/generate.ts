// Batched generation with a KV cache: prefill the left-padded prompts once, then decode one token per step
// for every unfinished row, stopping each row on its own (EOS / stop token ids, stop strings, max tokens).
import { tf } from '../tensor/backend.js';
import { Rng } from '../util/rng.js';
import type { CausalLM, ProjectionAdapter } from './qwen3.js';
import { leftPad } from './score.js';
import { type SamplingParams, sampleToken, validateSampling } from './sampling.js';

/** The part of a tokenizer generation needs: decoding, for stop strings and text. */
export interface TextDecoder {
  decode(ids: number[], opts?: { skipSpecialTokens?: boolean }): string;
}

export interface GenerateOptions extends Partial<SamplingParams> {
  maxNewTokens: number;
  /** Per-row RNG streams derive from this seed, so a row's samples do not depend on its batch-mates. */
  seed?: number;
  /** Token ids that end a row (included in its ids). Default: the model config's EOS ids. */
  stopTokenIds?: number[];
  /** Strings that end a row once its generated text contains them (e.g. `</search>`); needs `tokenizer`. */
  stopStrings?: string[];
  tokenizer?: TextDecoder;
  adapter?: ProjectionAdapter;
  padTokenId?: number;
  /** Called after every decoding step with the number of rows still running (progress display). */
  onStep?: (step: number, running: number) => void;
}

export type FinishReason = 'eos' | 'stop' | 'length';

export interface Generation {
  /** The new tokens only (a stop token, when hit, is the last one). */
  ids: number[];
  /** log-prob of each new token under the sampling policy (see SampledToken.logprob). */
  logprobs: number[];
  finishReason: FinishReason;
  /** The stop string that ended the row, when finishReason is 'stop' because of one. */
  stopString?: string;
  /** Decoded new text (special tokens skipped), when a tokenizer is given. */
  text?: string;
}

/** Logits of the last position of each row, read back to JS as one [B × V] array. */
async function lastLogits(model: CausalLM, hidden: tf.Tensor3D): Promise<Float32Array> {
  const [B, T, d] = hidden.shape;
  const logits = tf.tidy(() => model.logits(tf.reshape(tf.slice(hidden, [0, T - 1, 0], [B, 1, d]), [B, d]) as tf.Tensor2D));
  const values = (await logits.data()) as Float32Array;
  logits.dispose();
  return values;
}

export async function generate(model: CausalLM, prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
  const params: SamplingParams = { temperature: opts.temperature ?? 1, topK: opts.topK ?? 0, topP: opts.topP ?? 1 };
  validateSampling(params);
  if (!Number.isInteger(opts.maxNewTokens) || opts.maxNewTokens < 0) throw new Error(`max new tokens must be a non-negative integer, got ${opts.maxNewTokens}`);
  if (prompts.length === 0) return [];
  if (prompts.some((p) => p.length === 0)) throw new Error('generate: every prompt needs at least one token');
  const V = model.config.vocabSize;
  for (const p of prompts) {
    const bad = p.find((id) => !Number.isInteger(id) || id < 0 || id >= V);
    if (bad !== undefined) throw new Error(`generate: prompt token id ${bad} is outside the vocabulary [0, ${V})`);
  }
  const stopStrings = opts.stopStrings ?? [];
  if (stopStrings.length > 0 && !opts.tokenizer) throw new Error('generate: stop strings need a tokenizer to decode with');
  const stopIds = new Set(opts.stopTokenIds ?? model.config.eosTokenIds);
  // A stop string spans at most its length in tokens (every token decodes to ≥ 1 character), plus one.
  const tailTokens = Math.max(0, ...stopStrings.map((s) => s.length)) + 1;

  const B = prompts.length;
  const results: Generation[] = prompts.map(() => ({ ids: [], logprobs: [], finishReason: 'length' }));
  const rngs = prompts.map((_, i) => Rng.derive(opts.seed ?? 0, i));
  if (opts.maxNewTokens === 0) return results;

  const padId = opts.padTokenId ?? 0;
  const { ids, mask } = leftPad(prompts, padId);
  const cache = model.newCache(B);
  // The rows still generating, as indices into `prompts`; the cache holds exactly these rows, in this order.
  let active = prompts.map((_, i) => i);
  try {
    let hidden: tf.Tensor3D | undefined = model.forward(ids, { attentionMask: mask, cache, adapter: opts.adapter });
    for (let step = 0; hidden; step++) {
      const logits = await lastLogits(model, hidden);
      hidden.dispose();
      hidden = undefined;
      const keep: number[] = []; // positions in `active` that continue
      active.forEach((b, pos) => {
        const r = results[b] as Generation;
        const tok = sampleToken(logits.subarray(pos * V, (pos + 1) * V), params, rngs[b] as Rng);
        r.ids.push(tok.id);
        r.logprobs.push(tok.logprob);
        if (stopIds.has(tok.id)) {
          r.finishReason = 'eos';
          return;
        }
        if (stopStrings.length > 0) {
          const tail = (opts.tokenizer as TextDecoder).decode(r.ids.slice(-tailTokens));
          const hit = stopStrings.find((str) => tail.includes(str));
          if (hit !== undefined) {
            r.finishReason = 'stop';
            r.stopString = hit;
            return;
          }
        }
        keep.push(pos);
      });
      opts.onStep?.(step + 1, keep.length);
      if (keep.length === 0 || step + 1 >= opts.maxNewTokens) break;
      // Finished rows leave the batch (and the cache), so the remaining steps compute only live rows.
      if (keep.length < active.length) {
        cache.keepRows(keep);
        active = keep.map((pos) => active[pos] as number);
      }
      hidden = model.forward(
        active.map((b) => [(results[b] as Generation).ids.at(-1) as number]),
        { attentionMask: active.map(() => [1]), cache, adapter: opts.adapter },
      );
    }
  } finally {
    cache.dispose();
  }
  if (opts.tokenizer) for (const r of results) r.text = opts.tokenizer.decode(r.ids, { skipSpecialTokens: true });
  return results;
}
