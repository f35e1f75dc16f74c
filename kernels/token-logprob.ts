// Fused, chunked log-prob gathering and entropy for the LM head (SPEC §4, issue 3).
//
//   tokenLogProbs(hidden [N, d], W [d, V], targets [N]) = log softmax(hidden · W)[n, targets[n]]   → [N]
//
// The logits hidden·W are formed `chunkSize` rows at a time, so no [N × V] tensor ever exists (Qwen3's vocab
// is 151,936: 8k tokens would be 5 GB of float32). Per chunk: logits = h_c·W, lse = logSumExp(logits),
// logp = logits[n, t_n] − lse.
//
// Exact custom gradient, recomputing each chunk's logits in the backward (nothing [N × V] is kept on the
// tape: only `hidden`, the per-row lse [N], and W by reference):
//   ∂logp_n/∂logits_n = onehot(t_n) − softmax(logits_n)          (p = exp(logits − lse))
//   ∂L/∂h_c = dy ⊙ (Wᵀ[t]) − (dy ⊙ p)·Wᵀ                          (the onehot term is a row gather of Wᵀ)
//   ∂L/∂W   = Σ_c h_cᵀ · (dy ⊙ (onehot − p))                      (only with `weightGrad: true`)
// Wᵀ is formed once per backward with an explicit transpose (or passed in as `weightT`, e.g. a tied
// embedding table [V, d]): matMul with a transposed operand is ~7× slower on wasm (SPEC §8), so every matMul
// here is the plain non-transposed 2-D form.
//
// Everything is tf ops inside tf.customGrad, so it is backend-agnostic (cpu, wasm, tensorflow). On wasm the
// gather *forward* is fine (only its gradient is missing there, and it is never differentiated here).
import { tf } from '../src/tensor/backend.js';

export interface TokenLogProbOptions {
  /** Rows of logits formed at once; default 128 (128 × 151,936 × 4 B ≈ 78 MB per [chunk × V] temporary). */
  chunkSize?: number;
  /**
   * Also return the gradient w.r.t. the LM-head weight (default false: the base lm_head is frozen, so the
   * weight is closed over and gets no gradient and no [d × V] gradient buffer).
   */
  weightGrad?: boolean;
  /** Optional Wᵀ [V, d] (a tied embedding table), used by the backward instead of transposing W. */
  weightT?: tf.Tensor2D;
}

export interface LogitsOptions {
  /** Rows per chunk; default 128. */
  chunkSize?: number;
}

const DEFAULT_CHUNK = 128;

type CustomGradArgs = Array<tf.Tensor | tf.GradSaveFunc>;

function chunkBounds(n: number, chunkSize: number): Array<[number, number]> {
  if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new Error(`chunkSize must be a positive integer; got ${chunkSize}`);
  const out: Array<[number, number]> = [];
  for (let s = 0; s < n; s += chunkSize) out.push([s, Math.min(n, s + chunkSize)]);
  return out;
}

function rows<T extends tf.Tensor>(t: T, start: number, end: number): T {
  if (start === 0 && end === t.shape[0]) return t;
  const size = t.shape.slice();
  size[0] = end - start;
  const begin = t.shape.map(() => 0);
  begin[0] = start;
  return tf.slice(t, begin, size) as T;
}

/** Concatenates along axis 0 and disposes the parts (unless there is only one). */
function concatDispose<T extends tf.Tensor>(parts: T[]): T {
  if (parts.length === 1) return parts[0] as T;
  const out = tf.concat(parts, 0) as T;
  for (const p of parts) p.dispose();
  return out;
}

/** logits[n, t_n] for a [c, V] logits chunk, by a flat gather (forward only). */
function pickTargets(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [c, v] = logits.shape;
  const idx = tf.add(tf.mul(tf.range(0, c, 1, 'int32'), tf.scalar(v, 'int32')), targets);
  return tf.gather(tf.reshape(logits, [c * v]), idx) as tf.Tensor1D;
}

interface ChunkStats {
  /** Absent when no targets were given. */
  logp?: tf.Tensor1D;
  lse: tf.Tensor1D;
  entropy?: tf.Tensor1D;
}

/** Log-probs (and optionally entropies) of one logits chunk; call inside tf.tidy. */
function statsOfLogits(logits: tf.Tensor2D, targets: tf.Tensor1D | undefined, wantEntropy: boolean): ChunkStats {
  const lse = tf.logSumExp(logits, 1) as tf.Tensor1D;
  const out: ChunkStats = { lse };
  if (targets) out.logp = tf.sub(pickTargets(logits, targets), lse) as tf.Tensor1D;
  if (wantEntropy) {
    // H = −Σ p log p = lse − Σ p · logits
    const p = tf.exp(tf.sub(logits, tf.expandDims(lse, 1)));
    out.entropy = tf.sub(lse, tf.sum(tf.mul(p, logits), 1)) as tf.Tensor1D;
  }
  return out;
}

function checkShapes(hidden: tf.Tensor, weight: tf.Tensor, targets: tf.Tensor | undefined): void {
  if (hidden.rank !== 2 || weight.rank !== 2) throw new Error('tokenLogProbs: hidden must be [N, d] and weight [d, V]');
  if (hidden.shape[1] !== weight.shape[0]) {
    throw new Error(`tokenLogProbs: hidden [${hidden.shape.join(', ')}] does not match weight [${weight.shape.join(', ')}] (stored [in, out])`);
  }
  if (targets) {
    if (targets.rank !== 1 || targets.shape[0] !== hidden.shape[0]) throw new Error('tokenLogProbs: targets must be [N]');
    if (targets.dtype !== 'int32') throw new Error('tokenLogProbs: targets must be int32');
  }
}

/** Chunked forward over hidden·W; returns per-row logp, lse and (optionally) entropy. Not differentiable. */
function forwardHidden(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: tf.Tensor1D | undefined,
  chunkSize: number,
  wantEntropy: boolean,
): ChunkStats {
  const logps: tf.Tensor1D[] = [];
  const lses: tf.Tensor1D[] = [];
  const ents: tf.Tensor1D[] = [];
  for (const [s, e] of chunkBounds(hidden.shape[0], chunkSize)) {
    const st = tf.tidy(() => {
      const logits = tf.matMul(rows(hidden, s, e), weight) as tf.Tensor2D;
      return statsOfLogits(logits, targets ? rows(targets, s, e) : undefined, wantEntropy) as unknown as tf.NamedTensorMap;
    }) as unknown as ChunkStats;
    lses.push(st.lse);
    if (st.logp) logps.push(st.logp);
    if (st.entropy) ents.push(st.entropy);
  }
  const out: ChunkStats = { lse: concatDispose(lses) };
  if (logps.length > 0) out.logp = concatDispose(logps);
  if (ents.length > 0) out.entropy = concatDispose(ents);
  return out;
}

/** The chunked backward of tokenLogProbs: ∂L/∂hidden and, if asked, ∂L/∂W. */
function backwardHidden(
  dy: tf.Tensor1D,
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  weightT: tf.Tensor2D | undefined,
  targets: tf.Tensor1D,
  lse: tf.Tensor1D,
  chunkSize: number,
  weightGrad: boolean,
): { dh: tf.Tensor2D; dw?: tf.Tensor2D } {
  const v = weight.shape[1];
  const wt = weightT ?? (tf.transpose(weight) as tf.Tensor2D);
  const dhs: tf.Tensor2D[] = [];
  let dw: tf.Tensor2D | undefined;
  for (const [s, e] of chunkBounds(hidden.shape[0], chunkSize)) {
    const r = tf.tidy(() => {
      const hc = rows(hidden, s, e);
      const tc = rows(targets, s, e);
      const dyc = tf.expandDims(rows(dy, s, e), 1);
      const logits = tf.matMul(hc, weight);
      const p = tf.exp(tf.sub(logits, tf.expandDims(rows(lse, s, e), 1)));
      const sp = tf.mul(dyc, p); // dy ⊙ p
      const dh = tf.sub(tf.mul(tf.gather(wt, tc), dyc), tf.matMul(sp, wt)) as tf.Tensor2D;
      if (!weightGrad) return [dh];
      const dlogits = tf.sub(tf.mul(tf.cast(tf.oneHot(tc, v), 'float32'), dyc), sp);
      const dwc = tf.matMul(tf.transpose(hc), dlogits) as tf.Tensor2D;
      return [dh, dw ? tf.add(dw, dwc) : dwc];
    });
    dhs.push(r[0] as tf.Tensor2D);
    if (r[1]) {
      dw?.dispose();
      dw = r[1] as tf.Tensor2D;
    }
  }
  if (!weightT) wt.dispose();
  const out: { dh: tf.Tensor2D; dw?: tf.Tensor2D } = { dh: concatDispose(dhs) };
  if (dw) out.dw = dw;
  return out;
}

/** The shared customGrad op; `entropySink`, when given, receives the (kept, constant) entropy [N]. */
function logProbsOp(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: tf.Tensor1D,
  opts: TokenLogProbOptions,
  entropySink?: (t: tf.Tensor1D) => void,
): tf.Tensor1D {
  checkShapes(hidden, weight, targets);
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  const weightGrad = opts.weightGrad ?? false;
  const forward = (h: tf.Tensor2D, w: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const st = forwardHidden(h, w, targets, chunkSize, entropySink !== undefined);
    if (st.entropy && entropySink) entropySink(tf.keep(st.entropy));
    // Everything the backward reads is saved (clone + keep shares the data, no copy): tensors that were
    // merely closed over may be disposed by the time the backward runs (e.g. targets made inside the
    // function given to tf.variableGrads, whose forward is tidied before backprop).
    save(opts.weightT ? [h, st.lse, targets, w, opts.weightT] : [h, st.lse, targets, w]);
    return st;
  };
  type Saved = [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D, tf.Tensor2D, tf.Tensor2D | undefined];
  if (weightGrad) {
    const f = tf.customGrad((...args: CustomGradArgs) => {
      const [hIn, wIn, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
      const st = forward(hIn as tf.Tensor2D, wIn as tf.Tensor2D, save);
      return {
        value: st.logp as tf.Tensor1D,
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          const [h, lse, t, w, wT] = saved as Saved;
          const g = backwardHidden(dy as tf.Tensor1D, h, w, wT, t, lse, chunkSize, true);
          return [g.dh, g.dw as tf.Tensor2D];
        },
      };
    });
    return f(hidden, weight) as tf.Tensor1D;
  }
  const f = tf.customGrad((...args: CustomGradArgs) => {
    const [hIn, save] = args as [tf.Tensor, tf.GradSaveFunc];
    const st = forward(hIn as tf.Tensor2D, weight, save);
    return {
      value: st.logp as tf.Tensor1D,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [h, lse, t, w, wT] = saved as Saved;
        return backwardHidden(dy as tf.Tensor1D, h, w, wT, t, lse, chunkSize, false).dh;
      },
    };
  });
  return f(hidden) as tf.Tensor1D;
}

/**
 * log p(targets[n] | hidden[n]) under the LM head W ([d, V], stored [in, out]), fused and chunked, with an
 * exact gradient w.r.t. `hidden` (and w.r.t. W with `weightGrad: true`). targets: int32 [N].
 */
export function tokenLogProbs(
  hidden: tf.Tensor2D,
  lmHeadWeight: tf.Tensor2D,
  targets: tf.Tensor1D,
  opts: TokenLogProbOptions = {},
): tf.Tensor1D {
  return logProbsOp(hidden, lmHeadWeight, targets, opts);
}

/**
 * `tokenLogProbs` plus the per-row entropy of the same distributions, from one pass over the logits. The
 * entropy is a constant (no gradient; for metrics) and the caller owns and disposes both tensors.
 */
export function tokenLogProbsWithEntropy(
  hidden: tf.Tensor2D,
  lmHeadWeight: tf.Tensor2D,
  targets: tf.Tensor1D,
  opts: TokenLogProbOptions = {},
): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D } {
  let entropy: tf.Tensor1D | undefined;
  const logProbs = logProbsOp(hidden, lmHeadWeight, targets, opts, (t) => {
    entropy = t;
  });
  if (!entropy) throw new Error('tokenLogProbsWithEntropy: entropy was not produced');
  return { logProbs, entropy };
}

/** Wraps a no-gradient computation so that nothing inside it is recorded on an active tape. */
function constantOf(x: tf.Tensor, compute: (x: tf.Tensor) => tf.Tensor1D): tf.Tensor1D {
  const f = tf.customGrad((...args: CustomGradArgs) => {
    const [xIn, save] = args as [tf.Tensor, tf.GradSaveFunc];
    save([]);
    const { shape, dtype } = xIn; // not the tensor itself: it may be disposed before the backward runs
    return { value: compute(xIn), gradFunc: () => tf.zeros(shape, dtype) };
  });
  return f(x) as tf.Tensor1D;
}

/**
 * Entropy −Σ p log p of softmax(hidden·W) per row [N], chunked like `tokenLogProbs`. For metrics: its
 * gradient is defined as zero (nothing is kept on the tape).
 */
export function tokenEntropy(hidden: tf.Tensor2D, lmHeadWeight: tf.Tensor2D, opts: LogitsOptions = {}): tf.Tensor1D {
  checkShapes(hidden, lmHeadWeight, undefined);
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  return constantOf(hidden, (h) => {
    const st = forwardHidden(h as tf.Tensor2D, lmHeadWeight, undefined, chunkSize, true);
    return st.entropy as tf.Tensor1D;
  });
}

/**
 * log softmax(logits)[n, targets[n]] from logits [N, V] already in memory, chunked (the temporaries are
 * [chunk × V]), with the exact gradient dy ⊙ (onehot − softmax) w.r.t. the logits.
 */
export function tokenLogProbsFromLogits(logits: tf.Tensor2D, targets: tf.Tensor1D, opts: LogitsOptions = {}): tf.Tensor1D {
  if (logits.rank !== 2) throw new Error('tokenLogProbsFromLogits: logits must be [N, V]');
  if (targets.rank !== 1 || targets.shape[0] !== logits.shape[0] || targets.dtype !== 'int32') {
    throw new Error('tokenLogProbsFromLogits: targets must be int32 [N]');
  }
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  const v = logits.shape[1];
  const f = tf.customGrad((...args: CustomGradArgs) => {
    const [lIn, save] = args as [tf.Tensor, tf.GradSaveFunc];
    const l = lIn as tf.Tensor2D;
    const logps: tf.Tensor1D[] = [];
    const lses: tf.Tensor1D[] = [];
    for (const [s, e] of chunkBounds(l.shape[0], chunkSize)) {
      const [lp, lse] = tf.tidy(() => {
        const st = statsOfLogits(rows(l, s, e), rows(targets, s, e), false);
        return [st.logp as tf.Tensor1D, st.lse];
      });
      logps.push(lp as tf.Tensor1D);
      lses.push(lse as tf.Tensor1D);
    }
    const lseAll = concatDispose(lses);
    save([l, lseAll, targets]); // targets saved too: see logProbsOp
    return {
      value: concatDispose(logps),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [ls, lse, tg] = saved as [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D];
        const parts: tf.Tensor2D[] = [];
        for (const [s, e] of chunkBounds(ls.shape[0], chunkSize)) {
          parts.push(
            tf.tidy(() => {
              const dyc = tf.expandDims(rows(dy as tf.Tensor1D, s, e), 1);
              const p = tf.exp(tf.sub(rows(ls, s, e), tf.expandDims(rows(lse, s, e), 1)));
              return tf.mul(dyc, tf.sub(tf.cast(tf.oneHot(rows(tg, s, e), v), 'float32'), p)) as tf.Tensor2D;
            }),
          );
        }
        return concatDispose(parts);
      },
    };
  });
  return f(logits) as tf.Tensor1D;
}

/** Entropy per row of softmax(logits) [N, V], chunked; zero gradient (metrics only). */
export function tokenEntropyFromLogits(logits: tf.Tensor2D, opts: LogitsOptions = {}): tf.Tensor1D {
  if (logits.rank !== 2) throw new Error('tokenEntropyFromLogits: logits must be [N, V]');
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  return constantOf(logits, (lIn) => {
    const l = lIn as tf.Tensor2D;
    const parts: tf.Tensor1D[] = [];
    for (const [s, e] of chunkBounds(l.shape[0], chunkSize)) {
      parts.push(tf.tidy(() => statsOfLogits(rows(l, s, e), undefined, true).entropy as tf.Tensor1D));
    }
    return concatDispose(parts);
  });
}
