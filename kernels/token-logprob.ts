// Fused, chunked log-prob gathering and entropy for the LM head (docs/method.md, "GRPO").
// One op with its custom gradient and the two typed-array kernels only it runs (about 500 lines): they are
// one derivation, below, and are kept together so that forward, backward and kernels read against it.
//
//   tokenLogProbs(hidden [N, d], W [d, V], targets [N]) = log softmax(hidden · W)[n, targets[n]]   → [N]
//
// The logits hidden·W are formed `chunkSize` rows at a time, so no [N × V] tensor ever exists (Qwen3's vocab
// is 151,936: 8k tokens would be 5 GB of float32). Per chunk: logits = h_c·W, lse = logSumExp(logits),
// logp = logits[n, t_n] − lse.
//
// Exact custom gradient, recomputing each chunk's logits in the backward (nothing [N × V] is kept on the
// tape: only `hidden`, the per-row lse [N], and W by reference), except where all N rows are one chunk: then
// that chunk's logits, which the forward formed anyway, are kept for the backward (a memory plan that counts
// one chunk of logits counts them) instead of being formed again:
//   ∂logp_n/∂logits_n = onehot(t_n) − softmax(logits_n)          (p = exp(logits − lse))
//   ∂L/∂h_c = dy ⊙ (Wᵀ[t]) − (dy ⊙ p)·Wᵀ                          (the onehot term is a row gather of Wᵀ)
//   ∂L/∂W   = Σ_c h_cᵀ · (dy ⊙ (onehot − p))                      (only with `weightGrad: true`)
// (the kernel path forms dlogits = dy ⊙ (onehot − p) directly and uses ∂L/∂h_c = dlogits·Wᵀ.)
// The head W is a tensor [d, V], or a frozen matrix (src/tensor/frozen-matrix.ts) that forms h·W and dlogits·Wᵀ
// itself (a frozen model's head: held natively by onnxruntime on the native backend, where no Wᵀ exists).
// For a tensor W, Wᵀ is formed once per backward with an explicit transpose, or passed in as `weightT`: matMul with a
// transposed operand is ~7× slower on wasm (docs/method.md, "The tensor stack"), so every matMul here is the plain non-transposed 2-D
// form. PASS `weightT` WHEN TRAINING ON WASM (a tied embedding table [V, d] is exactly Wᵀ, or transpose W once
// and keep it): XNNPACK packs a matMul's right operand on first use of each tensor and reuses the packing, so
// a fresh Wᵀ per backward costs a transpose plus a re-pack (measured ~2 s at d = 256, V = 151,936), while a
// persistent one is packed once. The same holds for W itself, which is persistent anyway.
//
// The op is a tf.customGrad. Per chunk, the matMuls are tf ops (XNNPACK on wasm); the passes over the
// [chunk × V] logits are two typed-array kernels on cpu and wasm, because the equivalent tf ops take ~5 passes
// with temporaries each way and dominate the time when d is small (the tiny models train at d = 128):
//   SesaLogSoftmaxStats   logits [c, V], targets [c] → lse [c], logp [c], entropy [c]    (one max pass, one exp
//                         pass, float64 accumulation)
//   SesaSoftmaxTargetGrad logits [c, V], lse [c], dy [c], targets [c] → dy ⊙ (onehot − exp(logits − lse))
// On other backends (tensorflow), or with `impl: 'ops'`, the same is computed from tf ops (on wasm the
// gather *forward* used there is fine; only its gradient is missing, and it is never differentiated here).
// These two kernels are only ever run inside the customGrad, so they need no registered gradient.
import { tf } from '../src/tensor/backend.js';
import type { FrozenMatrix } from '../src/tensor/frozen-matrix.js';

/** The LM head: W [d, V] as a tensor, or a frozen matrix that forms h·W and dy·Wᵀ itself. */
export type HeadWeight = tf.Tensor2D | FrozenMatrix;

/** h·W for either form of the head. */
function headTimes(h: tf.Tensor2D, w: HeadWeight): tf.Tensor2D {
  return w instanceof tf.Tensor ? (tf.matMul(h, w) as tf.Tensor2D) : w.times(h);
}

export interface TokenLogProbOptions {
  /** Rows of logits formed at once; default 128 (128 × 151,936 × 4 B ≈ 78 MB per [chunk × V] temporary). */
  chunkSize?: number;
  /**
   * Also return the gradient w.r.t. the LM-head weight (default false: the base lm_head is frozen, so the
   * weight is closed over and gets no gradient and no [d × V] gradient buffer).
   */
  weightGrad?: boolean;
  /**
   * Optional persistent Wᵀ [V, d] (a tied embedding table), used by the backward instead of transposing W on
   * every call; recommended on wasm (see the file header). It must equal transpose(W) at call time (with
   * `weightGrad`, W changes every step: do not pass a stale one).
   */
  weightT?: tf.Tensor2D;
  /** 'auto' (default): typed-array kernels on cpu and wasm, tf ops elsewhere; 'ops' forces tf ops. */
  impl?: KernelImpl;
}

export interface LogitsOptions {
  /** Rows per chunk; default 128. */
  chunkSize?: number;
  /** As in TokenLogProbOptions. */
  impl?: KernelImpl;
}

export type KernelImpl = 'auto' | 'ops';

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
function concatDispose<T extends tf.Tensor>(parts: T[], emptyShape: number[] = [0]): T {
  if (parts.length === 0) return tf.zeros(emptyShape) as T; // N = 0
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
  /** The logits, when they were asked to be kept and all rows were one chunk. */
  logits?: tf.Tensor2D;
}

export const LOG_SOFTMAX_STATS = 'SesaLogSoftmaxStats';
export const SOFTMAX_TARGET_GRAD = 'SesaSoftmaxTargetGrad';
const KERNEL_BACKENDS = ['cpu', 'wasm'] as const;

interface CpuBackendLike {
  readSync(dataId: object): ArrayLike<number>;
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: Float32Array): tf.TensorInfo;
}
interface WasmBackendLike {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array | Int32Array | Uint8Array;
}

/**
 * Runs `compute` over input arrays and fresh float32 outputs on the cpu or wasm backend. On wasm all outputs
 * are allocated before any heap view is taken (an allocation can grow the heap and detach earlier views).
 */
function typedKernel(
  backendName: string,
  backend: unknown,
  inputs: tf.TensorInfo[],
  outShapes: number[][],
  compute: (ins: ArrayLike<number>[], outs: Float32Array[]) => void,
): tf.TensorInfo[] {
  if (backendName === 'wasm') {
    const wasm = backend as WasmBackendLike;
    const infos = outShapes.map((shape) => wasm.makeOutput(shape, 'float32'));
    const ins = inputs.map((i) => wasm.typedArrayFromHeap(i));
    const outs = infos.map((i) => wasm.typedArrayFromHeap(i) as Float32Array);
    compute(ins, outs);
    return infos;
  }
  const cpu = backend as CpuBackendLike;
  const ins = inputs.map((i) => cpu.readSync(i.dataId));
  const outs = outShapes.map((shape) => new Float32Array(shape.reduce((a, b) => a * b, 1)));
  compute(ins, outs);
  return outShapes.map((shape, k) => cpu.makeTensorInfo(shape, 'float32', outs[k]));
}

/** Per row of x [rows, v]: lse, x[t] − lse and the entropy lse − Σ p·x, in float64. */
function logSoftmaxStatsRows(x: ArrayLike<number>, t: ArrayLike<number>, rows: number, v: number, lse: Float32Array, logp: Float32Array, ent: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const base = r * v;
    let m = -Infinity;
    for (let j = 0; j < v; j++) {
      const xj = x[base + j] as number;
      if (xj > m) m = xj;
    }
    let se = 0;
    let sex = 0;
    for (let j = 0; j < v; j++) {
      const xj = x[base + j] as number;
      const e = Math.exp(xj - m);
      se += e;
      if (e > 0) sex += e * xj;
    }
    const l = m + Math.log(se);
    lse[r] = l;
    logp[r] = (x[base + (t[r] as number)] as number) - l;
    ent[r] = l - sex / se;
  }
}

/** out = dy ⊙ (onehot(t) − exp(x − lse)) per row. */
function softmaxTargetGradRows(x: ArrayLike<number>, lse: ArrayLike<number>, dy: ArrayLike<number>, t: ArrayLike<number>, rows: number, v: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const base = r * v;
    const l = lse[r] as number;
    const d = dy[r] as number;
    for (let j = 0; j < v; j++) out[base + j] = -d * Math.exp((x[base + j] as number) - l);
    out[base + (t[r] as number)] = (out[base + (t[r] as number)] as number) + d;
  }
}

let kernelsRegistered = false;

/** Registers the two typed-array kernels for cpu and wasm. Idempotent. */
export function registerTokenLogProbKernels(): void {
  if (kernelsRegistered) return;
  kernelsRegistered = true;
  for (const backendName of KERNEL_BACKENDS) {
    if (tf.getKernel(LOG_SOFTMAX_STATS, backendName) === undefined) {
      tf.registerKernel({
        kernelName: LOG_SOFTMAX_STATS,
        backendName,
        kernelFunc: ({ inputs, backend }) => {
          const { logits, targets } = inputs as { logits: tf.TensorInfo; targets: tf.TensorInfo };
          const [rows, v] = logits.shape as [number, number];
          return typedKernel(backendName, backend, [logits, targets], [[rows], [rows], [rows]], (ins, outs) =>
            logSoftmaxStatsRows(ins[0] as ArrayLike<number>, ins[1] as ArrayLike<number>, rows, v, outs[0] as Float32Array, outs[1] as Float32Array, outs[2] as Float32Array),
          );
        },
      });
    }
    if (tf.getKernel(SOFTMAX_TARGET_GRAD, backendName) === undefined) {
      tf.registerKernel({
        kernelName: SOFTMAX_TARGET_GRAD,
        backendName,
        kernelFunc: ({ inputs, backend }) => {
          const { logits, lse, dy, targets } = inputs as Record<'logits' | 'lse' | 'dy' | 'targets', tf.TensorInfo>;
          const [rows, v] = logits.shape as [number, number];
          return typedKernel(backendName, backend, [logits, lse, dy, targets], [[rows, v]], (ins, outs) =>
            softmaxTargetGradRows(ins[0] as ArrayLike<number>, ins[1] as ArrayLike<number>, ins[2] as ArrayLike<number>, ins[3] as ArrayLike<number>, rows, v, outs[0] as Float32Array),
          )[0] as tf.TensorInfo;
        },
      });
    }
  }
}

function kernelsOn(impl: KernelImpl | undefined): boolean {
  if (impl === 'ops') return false;
  if (!(KERNEL_BACKENDS as readonly string[]).includes(tf.getBackend())) return false;
  registerTokenLogProbKernels();
  return true;
}

/** dy ⊙ (onehot(targets) − softmax(logits)) for a chunk, using lse; call inside tf.tidy. */
function softmaxTargetGrad(logits: tf.Tensor2D, lse: tf.Tensor1D, dy: tf.Tensor1D, targets: tf.Tensor1D, kernels: boolean): tf.Tensor2D {
  if (kernels) return tf.engine().runKernel(SOFTMAX_TARGET_GRAD, { logits, lse, dy, targets }) as tf.Tensor2D;
  const v = logits.shape[1];
  const p = tf.exp(tf.sub(logits, tf.expandDims(lse, 1)));
  return tf.mul(tf.expandDims(dy, 1), tf.sub(tf.cast(tf.oneHot(targets, v), 'float32'), p)) as tf.Tensor2D;
}

/** Log-probs (and optionally entropies) of one logits chunk; call inside tf.tidy. */
function statsOfLogits(logits: tf.Tensor2D, targets: tf.Tensor1D | undefined, wantEntropy: boolean, kernels = false): ChunkStats {
  if (kernels) {
    const t = targets ?? (tf.zeros([logits.shape[0]], 'int32') as tf.Tensor1D);
    const [lse, logp, entropy] = tf.engine().runKernel(LOG_SOFTMAX_STATS, { logits, targets: t }) as tf.Tensor1D[];
    const out: ChunkStats = { lse: lse as tf.Tensor1D };
    if (targets) out.logp = logp as tf.Tensor1D;
    if (wantEntropy) out.entropy = entropy as tf.Tensor1D;
    return out;
  }
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

function checkShapes(hidden: tf.Tensor, weight: HeadWeight, targets: tf.Tensor | undefined): void {
  if (hidden.rank !== 2 || weight.shape.length !== 2) throw new Error('tokenLogProbs: hidden must be [N, d] and weight [d, V]');
  if (hidden.shape[1] !== weight.shape[0]) {
    throw new Error(`tokenLogProbs: hidden [${hidden.shape.join(', ')}] does not match weight [${weight.shape.join(', ')}] (stored [in, out])`);
  }
  if (targets) {
    if (targets.rank !== 1 || targets.shape[0] !== hidden.shape[0]) throw new Error('tokenLogProbs: targets must be [N]');
    if (targets.dtype !== 'int32') throw new Error('tokenLogProbs: targets must be int32');
  }
}

/**
 * Chunked forward over hidden·W; returns per-row logp, lse, (optionally) entropy, and with `keepLogits` the
 * logits when all rows are one chunk. Not differentiable.
 */
function forwardHidden(
  hidden: tf.Tensor2D,
  weight: HeadWeight,
  targets: tf.Tensor1D | undefined,
  chunkSize: number,
  wantEntropy: boolean,
  kernels: boolean,
  keepLogits = false,
): ChunkStats {
  const logps: tf.Tensor1D[] = [];
  const lses: tf.Tensor1D[] = [];
  const ents: tf.Tensor1D[] = [];
  const bounds = chunkBounds(hidden.shape[0], chunkSize);
  let kept: tf.Tensor2D | undefined;
  for (const [s, e] of bounds) {
    const st = tf.tidy(() => {
      const logits = headTimes(rows(hidden, s, e), weight);
      const stats = statsOfLogits(logits, targets ? rows(targets, s, e) : undefined, wantEntropy, kernels);
      return (keepLogits && bounds.length === 1 ? { ...stats, logits } : stats) as unknown as tf.NamedTensorMap;
    }) as unknown as ChunkStats;
    lses.push(st.lse);
    if (st.logp) logps.push(st.logp);
    if (st.entropy) ents.push(st.entropy);
    kept = st.logits;
  }
  const out: ChunkStats = { lse: concatDispose(lses) };
  if (targets) out.logp = concatDispose(logps);
  if (wantEntropy) out.entropy = concatDispose(ents);
  if (kept) out.logits = kept;
  return out;
}

/**
 * The chunked backward of tokenLogProbs: ∂L/∂hidden and, if asked, ∂L/∂W. `keptLogits`: the forward's logits of
 * all rows (one chunk), used instead of forming them again.
 */
function backwardHidden(
  dy: tf.Tensor1D,
  hidden: tf.Tensor2D,
  weight: HeadWeight,
  weightT: tf.Tensor2D | undefined,
  targets: tf.Tensor1D,
  lse: tf.Tensor1D,
  chunkSize: number,
  weightGrad: boolean,
  kernels: boolean,
  keptLogits?: tf.Tensor2D,
): { dh: tf.Tensor2D; dw?: tf.Tensor2D } {
  const v = weight.shape[1];
  const frozen = weight instanceof tf.Tensor ? undefined : weight;
  if (frozen && weightGrad) throw new Error('tokenLogProbs: a frozen head takes no weight gradient');
  const wt = frozen ? undefined : (weightT ?? (tf.transpose(weight as tf.Tensor2D) as tf.Tensor2D));
  const dhs: tf.Tensor2D[] = [];
  let dw: tf.Tensor2D | undefined;
  for (const [s, e] of chunkBounds(hidden.shape[0], chunkSize)) {
    const r = tf.tidy(() => {
      const hc = rows(hidden, s, e);
      const tc = rows(targets, s, e);
      const logits = keptLogits ?? headTimes(hc, weight);
      if (kernels) {
        const dlogits = softmaxTargetGrad(logits, rows(lse, s, e), rows(dy, s, e), tc, true);
        const dhk = frozen ? frozen.timesTransposed(dlogits) : (tf.matMul(dlogits, wt as tf.Tensor2D) as tf.Tensor2D);
        if (!weightGrad) return [dhk];
        const dwk = tf.matMul(tf.transpose(hc), dlogits) as tf.Tensor2D;
        return [dhk, dw ? tf.add(dw, dwk) : dwk];
      }
      const dyc = tf.expandDims(rows(dy, s, e), 1);
      const p = tf.exp(tf.sub(logits, tf.expandDims(rows(lse, s, e), 1)));
      const sp = tf.mul(dyc, p); // dy ⊙ p
      if (frozen) {
        // dlogits = dy ⊙ (onehot(t) − p), then dh = dlogits·Wᵀ formed by the frozen matrix itself.
        const dlogits = tf.sub(tf.mul(tf.cast(tf.oneHot(tc, v), 'float32'), dyc), sp) as tf.Tensor2D;
        return [frozen.timesTransposed(dlogits)];
      }
      const w = wt as tf.Tensor2D;
      const dh = tf.sub(tf.mul(tf.gather(w, tc), dyc), tf.matMul(sp, w)) as tf.Tensor2D;
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
  if (!weightT) wt?.dispose();
  const out: { dh: tf.Tensor2D; dw?: tf.Tensor2D } = { dh: concatDispose(dhs, [0, hidden.shape[1]]) };
  if (weightGrad && !dw) dw = tf.zeros([...weight.shape]) as tf.Tensor2D; // N = 0
  if (dw) out.dw = dw;
  return out;
}

/** The shared customGrad op; `entropySink`, when given, receives the (kept, constant) entropy [N]. */
function logProbsOp(
  hidden: tf.Tensor2D,
  weight: HeadWeight,
  targets: tf.Tensor1D,
  opts: TokenLogProbOptions,
  entropySink?: (t: tf.Tensor1D) => void,
): tf.Tensor1D {
  checkShapes(hidden, weight, targets);
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  const weightGrad = opts.weightGrad ?? false;
  const kernels = kernelsOn(opts.impl);
  const forward = (h: tf.Tensor2D, w: HeadWeight, save: tf.GradSaveFunc) => {
    const st = forwardHidden(h, w, targets, chunkSize, entropySink !== undefined, kernels, true);
    if (st.entropy && entropySink) entropySink(tf.keep(st.entropy));
    // Everything the backward reads is saved (clone + keep shares the data, no copy; on wasm through the
    // Identity of src/tensor/wasm-fixes.ts): tensors that were merely closed over may be disposed by the
    // time the backward runs (e.g. targets made inside the function given to tf.variableGrads, whose
    // forward is tidied before backprop). Without a tape nothing is saved, and the kept logits go with the
    // forward's scope. A frozen head is no tensor: the backward uses it as it is (it outlives the step).
    save([h, st.lse, targets, ...(w instanceof tf.Tensor ? [w] : []), ...(opts.weightT ? [opts.weightT] : []), ...(st.logits ? [st.logits] : [])]);
    return st;
  };
  type Saved = [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D, ...tf.Tensor2D[]];
  /** What the backward reads from the saved tensors: [h, lse, targets, W if a tensor, Wᵀ if given, the logits if kept]. */
  const unpack = (saved: tf.Tensor[]) => {
    const [h, lse, t, ...rest] = saved as Saved;
    const w: HeadWeight = weight instanceof tf.Tensor ? (rest.shift() as tf.Tensor2D) : weight;
    const wT = opts.weightT ? rest.shift() : undefined;
    return { h, lse, t, w, wT, logits: rest[0] };
  };
  if (weightGrad) {
    if (!(weight instanceof tf.Tensor)) throw new Error('tokenLogProbs: weightGrad needs the head as a tensor (a frozen head is never trained)');
    const f = tf.customGrad((...args: CustomGradArgs) => {
      const [hIn, wIn, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
      const st = forward(hIn as tf.Tensor2D, wIn as tf.Tensor2D, save);
      return {
        value: st.logp as tf.Tensor1D,
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          const { h, lse, t, w, wT, logits } = unpack(saved);
          const g = backwardHidden(dy as tf.Tensor1D, h, w, wT, t, lse, chunkSize, true, kernels, logits);
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
        const { h, lse, t, w, wT, logits } = unpack(saved);
        return backwardHidden(dy as tf.Tensor1D, h, w, wT, t, lse, chunkSize, false, kernels, logits).dh;
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
  lmHeadWeight: HeadWeight,
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
  lmHeadWeight: HeadWeight,
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
export function tokenEntropy(hidden: tf.Tensor2D, lmHeadWeight: HeadWeight, opts: LogitsOptions = {}): tf.Tensor1D {
  checkShapes(hidden, lmHeadWeight, undefined);
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  const kernels = kernelsOn(opts.impl);
  return constantOf(hidden, (h) => {
    const st = forwardHidden(h as tf.Tensor2D, lmHeadWeight, undefined, chunkSize, true, kernels);
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
  const kernels = kernelsOn(opts.impl);
  const f = tf.customGrad((...args: CustomGradArgs) => {
    const [lIn, save] = args as [tf.Tensor, tf.GradSaveFunc];
    const l = lIn as tf.Tensor2D;
    const logps: tf.Tensor1D[] = [];
    const lses: tf.Tensor1D[] = [];
    for (const [s, e] of chunkBounds(l.shape[0], chunkSize)) {
      const [lp, lse] = tf.tidy(() => {
        const st = statsOfLogits(rows(l, s, e), rows(targets, s, e), false, kernels);
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
            tf.tidy(() => softmaxTargetGrad(rows(ls, s, e), rows(lse, s, e), rows(dy as tf.Tensor1D, s, e), rows(tg, s, e), kernels)),
          );
        }
        return concatDispose(parts, [0, ls.shape[1]]);
      },
    };
  });
  return f(logits) as tf.Tensor1D;
}

/** Entropy per row of softmax(logits) [N, V], chunked; zero gradient (metrics only). */
export function tokenEntropyFromLogits(logits: tf.Tensor2D, opts: LogitsOptions = {}): tf.Tensor1D {
  if (logits.rank !== 2) throw new Error('tokenEntropyFromLogits: logits must be [N, V]');
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK;
  const kernels = kernelsOn(opts.impl);
  return constantOf(logits, (lIn) => {
    const l = lIn as tf.Tensor2D;
    const parts: tf.Tensor1D[] = [];
    for (const [s, e] of chunkBounds(l.shape[0], chunkSize)) {
      parts.push(tf.tidy(() => statsOfLogits(rows(l, s, e), undefined, true, kernels).entropy as tf.Tensor1D));
    }
    return concatDispose(parts);
  });
}
