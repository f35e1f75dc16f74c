// Batched generation with a KV cache: prefill the left-padded prompts once, then decode one token per step
// for every unfinished row, stopping each row on its own (EOS / stop token ids, stop strings, max tokens).
// A GenerationSession keeps each stopped row's cache, so a multi-turn agent continues where it stopped.
import { tf } from '../tensor/backend.js';
import { Rng } from '../util/rng.js';
import { KVCache } from './kv-cache.js';
import type { CausalLM, ProjectionAdapter } from './qwen3.js';
import { leftPad } from './score.js';
import { type SamplingParams, sampleToken, validateSampling } from './sampling.js';

/** The part of a tokenizer generation needs: decoding, for stop strings and text. */
export interface TextDecoder {
  decode(ids: number[], opts?: { skipSpecialTokens?: boolean }): string;
}

export interface GenerateOptions extends Partial<SamplingParams> {
  maxNewTokens: number;
  /**
   * Per-row RNG streams derive from this seed and the row's key (a session row's `key`; a prompt's index for
   * `generate()`), so a row's samples depend neither on its batch-mates nor on its position in the batch.
   */
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

/** Logits of the last position of each row, read back to JS as one [B × V] array; disposes `hidden`. */
async function lastLogits(model: CausalLM, hidden: tf.Tensor3D): Promise<Float32Array> {
  const [B, T, d] = hidden.shape;
  const logits = tf.tidy(() => model.logits(tf.reshape(tf.slice(hidden, [0, T - 1, 0], [B, 1, d]), [B, d]) as tf.Tensor2D));
  hidden.dispose();
  const values = (await logits.data()) as Float32Array;
  logits.dispose();
  return values;
}

/** One sequence of a session call. */
export interface SessionRow {
  /** The caller's key for the sequence, stable across calls; its sampling stream (see GenerateOptions.seed). */
  key: number;
  /**
   * Every token of the sequence so far: the prompt, what was generated, and what the caller appended since
   * (a tool observation). It must extend what this session already holds for `key`; only the new tokens are
   * run through the model.
   */
  ids: number[];
  /** This row's token budget for this call (default: the call's maxNewTokens). */
  maxNewTokens?: number;
}

/** What a session keeps of a sequence between calls: its KV cache and the tokens it has seen. */
interface ParkedRow {
  cache: KVCache;
  /** The tokens in the cache, then the last sampled token (not yet run through the model). */
  history: number[];
}

/**
 * Generation whose KV cache outlives a call: a row that stops (stop string, EOS, budget) keeps its cache,
 * and the next call for the same key runs only the tokens appended since (the last sampled token and, say, a
 * tool observation) before decoding again. Rows with identical prompts that start in the same call are
 * prefilled once and their caches copied. Finished rows leave the decoding batch as they stop.
 */
export class GenerationSession {
  private readonly parked = new Map<number, ParkedRow>();

  constructor(
    private readonly model: CausalLM,
    /** Keep the caches of stopped rows for later calls (false: one-shot generation). */
    private readonly keepCaches = true,
  ) {}

  /** Keys whose cache is kept. */
  get keys(): number[] {
    return [...this.parked.keys()];
  }

  /** Bytes of KV cache kept between calls. */
  keptBytes(): number {
    let n = 0;
    for (const p of this.parked.values()) n += p.cache.bytes();
    return n;
  }

  /** Drops a sequence's cache (it will not continue). */
  release(key: number): void {
    this.parked.get(key)?.cache.dispose();
    this.parked.delete(key);
  }

  close(): void {
    for (const key of [...this.parked.keys()]) this.release(key);
  }

  async generate(rows: readonly SessionRow[], opts: GenerateOptions): Promise<Generation[]> {
    const params: SamplingParams = { temperature: opts.temperature ?? 1, topK: opts.topK ?? 0, topP: opts.topP ?? 1 };
    validateSampling(params);
    if (!Number.isInteger(opts.maxNewTokens) || opts.maxNewTokens < 0) throw new Error(`max new tokens must be a non-negative integer, got ${opts.maxNewTokens}`);
    if (rows.length === 0) return [];
    const model = this.model;
    const V = model.config.vocabSize;
    const budgets = rows.map((r) => Math.min(opts.maxNewTokens, r.maxNewTokens ?? opts.maxNewTokens));
    if (budgets.some((b) => !Number.isInteger(b) || b < 0)) throw new Error(`generate: a row's max new tokens must be a non-negative integer, got ${budgets.join(',')}`);
    const seen = new Set<number>();
    for (const r of rows) {
      if (seen.has(r.key)) throw new Error(`generate: key ${r.key} appears twice in one call`);
      seen.add(r.key);
      if (r.ids.length === 0) throw new Error('generate: every prompt needs at least one token');
      const bad = r.ids.find((id) => !Number.isInteger(id) || id < 0 || id >= V);
      if (bad !== undefined) throw new Error(`generate: prompt token id ${bad} is outside the vocabulary [0, ${V})`);
    }
    const stopStrings = opts.stopStrings ?? [];
    if (stopStrings.length > 0 && !opts.tokenizer) throw new Error('generate: stop strings need a tokenizer to decode with');
    const stopIds = new Set(opts.stopTokenIds ?? model.config.eosTokenIds);
    // A stop string spans at most its length in tokens (every token decodes to ≥ 1 character), plus one.
    const tailTokens = Math.max(0, ...stopStrings.map((s) => s.length)) + 1;
    const results: Generation[] = rows.map(() => ({ ids: [], logprobs: [], finishReason: 'length' }));
    const rngs = rows.map((r) => Rng.derive(opts.seed ?? 0, r.key));
    const padId = opts.padTokenId ?? 0;
    const adapter = opts.adapter;

    // The new tokens of each row: all of them for a fresh row, those after the cached ones for a kept row.
    const fresh: number[] = [];
    const continuing: number[] = [];
    const pending: number[][] = rows.map((r, i) => {
      const kept = this.parked.get(r.key);
      if (!kept) {
        fresh.push(i);
        return r.ids;
      }
      const h = kept.history;
      if (r.ids.length <= h.length - 1 || h.some((id, j) => r.ids[j] !== id)) {
        throw new Error(`generate: the ids of sequence ${r.key} do not extend the ${h.length} tokens its kept cache was built from`);
      }
      continuing.push(i);
      return r.ids.slice(h.length - 1);
    });
    // Rows whose budget is 0 are answered without running anything (their kept cache, if any, stays).
    const runnable = (list: number[]): number[] => list.filter((i) => (budgets[i] as number) > 0);
    const freshRun = runnable(fresh);
    const contRun = runnable(continuing);
    if (freshRun.length + contRun.length === 0) return results;

    const parts: KVCache[] = [];
    const logitParts: Float32Array[] = [];
    let cache: KVCache | undefined;
    try {
      if (freshRun.length > 0) {
        // One prefill per distinct prompt; rows that share it get copies of its cache.
        const distinct = new Map<string, number>();
        const prompts: number[][] = [];
        const expand = freshRun.map((i) => {
          const k = (pending[i] as number[]).join(',');
          let u = distinct.get(k);
          if (u === undefined) {
            u = prompts.push(pending[i] as number[]) - 1;
            distinct.set(k, u);
          }
          return u;
        });
        const part = model.newCache(prompts.length);
        parts.push(part);
        const { ids, mask } = leftPad(prompts, padId);
        const logits = await lastLogits(model, model.forward(ids, { attentionMask: mask, cache: part, adapter }));
        if (prompts.length < freshRun.length) part.keepRows(expand);
        logitParts.push(prompts.length < freshRun.length ? expandRows(logits, expand, V) : logits);
      }
      if (contRun.length > 0) {
        const part = KVCache.merge(contRun.map((i) => this.take(rows[i] as SessionRow)));
        parts.push(part);
        const { ids, mask } = leftPad(contRun.map((i) => pending[i] as number[]), padId);
        logitParts.push(await lastLogits(model, model.forward(ids, { attentionMask: mask, cache: part, adapter })));
      }
      cache = KVCache.merge(parts);
      parts.length = 0;
      let logits = logitParts.length === 1 ? (logitParts[0] as Float32Array) : concatRows(logitParts);
      // The rows still generating, as indices into `rows`; the cache holds exactly these rows, in this order.
      let active = [...freshRun, ...contRun];
      for (let step = 0; active.length > 0; step++) {
        const keep: number[] = []; // positions in `active` that continue
        const stopped: number[] = [];
        active.forEach((i, pos) => {
          const r = results[i] as Generation;
          const tok = sampleToken(logits.subarray(pos * V, (pos + 1) * V), params, rngs[i] as Rng);
          r.ids.push(tok.id);
          r.logprobs.push(tok.logprob);
          if (stopIds.has(tok.id)) {
            r.finishReason = 'eos';
          } else if (stopStrings.length > 0 && this.hitStop(r, stopStrings, tailTokens, opts.tokenizer as TextDecoder)) {
            r.finishReason = 'stop';
          } else if (r.ids.length >= (budgets[i] as number)) {
            r.finishReason = 'length';
          } else {
            keep.push(pos);
            return;
          }
          stopped.push(pos);
        });
        opts.onStep?.(step + 1, keep.length);
        if (this.keepCaches) {
          for (const pos of stopped) {
            const i = active[pos] as number;
            const row = rows[i] as SessionRow;
            this.parked.set(row.key, { cache: cache.copyRows([pos]), history: [...row.ids, ...(results[i] as Generation).ids] });
          }
        }
        if (keep.length === 0) break;
        // Finished rows leave the batch (and the cache), so the remaining steps compute only live rows.
        if (keep.length < active.length) {
          cache.keepRows(keep);
          active = keep.map((pos) => active[pos] as number);
        }
        logits = await lastLogits(
          model,
          model.forward(
            active.map((i) => [(results[i] as Generation).ids.at(-1) as number]),
            { attentionMask: active.map(() => [1]), cache, adapter },
          ),
        );
      }
    } finally {
      cache?.dispose();
      for (const p of parts) p.dispose();
    }
    if (opts.tokenizer) for (const r of results) r.text = opts.tokenizer.decode(r.ids, { skipSpecialTokens: true });
    return results;
  }

  /** Removes and returns a kept row's cache. */
  private take(row: SessionRow): KVCache {
    const kept = this.parked.get(row.key) as ParkedRow;
    this.parked.delete(row.key);
    return kept.cache;
  }

  private hitStop(r: Generation, stopStrings: string[], tailTokens: number, tokenizer: TextDecoder): boolean {
    const tail = tokenizer.decode(r.ids.slice(-tailTokens));
    const hit = stopStrings.find((str) => tail.includes(str));
    if (hit === undefined) return false;
    r.stopString = hit;
    return true;
  }
}

function expandRows(values: Float32Array, rows: readonly number[], V: number): Float32Array {
  const out = new Float32Array(rows.length * V);
  rows.forEach((u, j) => out.set(values.subarray(u * V, (u + 1) * V), j * V));
  return out;
}

function concatRows(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** One-shot batched generation: prefill the prompts (left-padded) once, then decode until every row stops. */
export async function generate(model: CausalLM, prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
  const session = new GenerationSession(model, false);
  try {
    return await session.generate(
      prompts.map((ids, key) => ({ key, ids })),
      opts,
    );
  } finally {
    session.close();
  }
}
