// The Qwen3-family decoder (Qwen3, Qwen2/2.5 and Llama 3 share it), read top to bottom like the architecture:
//
//   h = embed(ids)
//   for each layer:
//     a = RMSNorm(h);  q, k, v = a·Wq (+bq), a·Wk (+bk), a·Wv (+bv)       (LoRA deltas added when an adapter is on)
//     q, k = RMSNorm_head(q), RMSNorm_head(k)                               (Qwen3 only)
//     q, k = RoPE(q, pos), RoPE(k, pos)                                    (rotate-half; Llama 3 frequency scaling)
//     k, v = cache ++ k, cache ++ v                                        (grouped-query: kv heads shared by groups)
//     h = h + softmax(q·kᵀ/√d_head + mask)·v · Wo (+bo)                    (mask: causal and padding)
//     h = h + (silu(m·Wgate) ⊙ m·Wup)·Wdown,  m = RMSNorm(h)
//   h = RMSNorm(h);  logits = h·W_lm  (W_lm = embedᵀ when tied)
//
// Frozen projections and the LM head are `FrozenMatrix`es (src/tensor/frozen-matrix.ts): tfjs tensors held as
// [in, out] (transposed from Hugging Face's [out, in] once at load, so every matMul takes the fast
// non-transposed path: docs/method.md, "The tensor stack"), or, on the native backend, onnxruntime sessions
// that hold the file's [out, in] weights packed for MLAS, outside the wasm heap. Base weights are never
// variables: no gradient or optimizer state can exist for them, unless the model is loaded `trainable` for
// full-weight fine-tuning (docs/sft.md): then every weight is a tf.Variable, the projections take trainable
// matMuls, and a tied head is the embedding's transpose formed on each use (so both uses train the one table).
// Positions and masks are built on the JS side from the ids.
import { tf } from '../tensor/backend.js';
import { linearFrozen, matMulTrainable } from '../tensor/ops.js';
import { type FrozenMatrix, holdsNatively, NativeMatrix, type NativeLayout, TensorMatrix } from '../tensor/frozen-matrix.js';
import { type FrozenTable, holdsTableNatively, NativeTable, TensorTable, TiedTable } from '../tensor/frozen-table.js';
import { batchedMatMul } from '../tensor/batched-matmul.js';
import { nativeFrozenBase, nativeMatMulThreads } from '../tensor/native-matmul.js';
import { recomputed } from '../tensor/recompute.js';
import { addScaledKernel, fusedInference, rmsNormKernel, ropeKernel, scaleMaskKernel } from '../tensor/fused-kernels.js';
import { SafetensorsCheckpoint } from '../formats/safetensors.js';
import { releaseWeightStaging } from '../tensor/weight-staging.js';
import type { RawFill } from '../formats/onnx.js';
import { type ModelConfig, expectedTensors, loadModelConfig } from './config.js';
import { activeBackendName, backendRefusal, mallocSettingsWarning, memoryNeedOfConfig, nativeLayout } from './memory-need.js';
import { inverseFrequencies, ropeTables } from './rope.js';
import { KVCache } from './kv-cache.js';

/** Query rows per kv head from which attention over a KV cache runs per-head 2-D matMuls (see `attention`). */
const PLANAR_MIN_ROWS = 32;
/** Most query rows per attention block without a cache (see `attention`: later keys are skipped per block). */
const CAUSAL_BLOCK_ROWS = 128;
/** Most attention scores (floats) formed at once: 2^24 = 64 MiB. Longer query spans are processed in blocks. */
const SCORE_BUDGET = 2 ** 24;

export const PROJECTIONS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type ProjectionName = (typeof PROJECTIONS)[number];

/** What the forward needs from a LoRA adapter: the low-rank delta of one projection, or none. */
export interface ProjectionAdapter {
  delta(layer: number, projection: ProjectionName, x: tf.Tensor2D): tf.Tensor2D | undefined;
  /**
   * The delta as its unscaled low-rank product and its scale (delta = product · scale), so that an untaped
   * forward adds it in one kernel; undefined where `delta` would differ from that (or gives none).
   */
  scaledDelta?(layer: number, projection: ProjectionName, x: tf.Tensor2D): { product: tf.Tensor2D; scale: tf.Scalar } | undefined;
  /** The trainable tensors the deltas of `layer` read (needed to recompute a layer in the backward). */
  layerParameters?(layer: number): tf.Tensor[];
  /** The adapter's random stream (dropout), saved and restored to recompute a layer identically. */
  randomState?: number;
}

interface LayerWeights {
  inputNorm: tf.Tensor1D;
  /** Frozen matrices; a trainable model's are variables [in, out]. */
  proj: Record<ProjectionName, FrozenMatrix | tf.Tensor2D>;
  bias: Partial<Record<'q_proj' | 'k_proj' | 'v_proj' | 'o_proj', tf.Tensor1D>>;
  qNorm?: tf.Tensor1D;
  kNorm?: tf.Tensor1D;
  postNorm: tf.Tensor1D;
}

export interface ForwardOptions {
  /** [B][T]: 1 for real tokens, 0 for (left) padding. Default: all ones. */
  attentionMask?: number[][];
  /** When given, attends over the cached keys/values and appends this chunk to them. */
  cache?: KVCache;
  /** LoRA adapter to apply; none = the base model (the reference policy). */
  adapter?: ProjectionAdapter;
  /** Most attention scores formed at once (default 2^24); smaller values only split the work into more blocks. */
  attentionScoreBudget?: number;
  /**
   * Under a gradient tape, keep only each layer's input and recompute the layer in the backward (activation
   * checkpointing): the same gradients for about one more forward of compute, and a fraction of the memory.
   */
  recomputeLayers?: boolean;
}

export interface LoadOptions {
  /** Every weight a trainable tf.Variable named by its Hugging Face tensor name (full-weight training). */
  trainable?: boolean;
  /** Where a warning about the load goes (default: console.warn). */
  warn?: (message: string) => void;
  /**
   * How the native backend holds the frozen f32 matrices (src/tensor/frozen-matrix.ts), instead of what fits this
   * machine (./memory-need.ts, `nativeLayout`): for measurements (bench/load-memory.ts). Ignored on native-int8.
   */
  nativeLayout?: 'packed' | 'once';
  /**
   * Natively, a tied frozen head's table: `shared` (the default) gathers the lookups from the head's own
   * initializer (src/tensor/frozen-table.ts, `TiedTable`: the table held once); `apart` holds it again in a Gather
   * session of its own (the load before the shared table: for tests and bench/load-memory.ts). Native-int8 keeps
   * it apart (its head is in 8-bit blocks).
   */
  nativeTiedTable?: 'shared' | 'apart';
}

/**
 * The LM head for a loss with gradients (see `CausalLM.trainingHead`): a trainable model's W [d, V] and Wᵀ [V, d];
 * a frozen model's head as a frozen matrix (it forms x·W and dy·Wᵀ itself).
 */
export type TrainingHead = { weight: tf.Tensor2D; weightT: tf.Tensor2D } | { weight: FrozenMatrix; weightT?: undefined };

let nextTrainableInstance = 0;

/**
 * Additive attention mask [B, 1, T, S]: 0 where query t may see key slot s (causal, a real token, and a slot
 * that exists: `keyMask` rows may be shorter than S, the rest is unwritten cache capacity), else −1e9.
 */
function attentionBias(keyMask: number[][], pastLength: number, T: number, S: number): tf.Tensor4D {
  const B = keyMask.length;
  const bias = new Float32Array(B * T * S);
  for (let b = 0; b < B; b++) {
    const row = keyMask[b] as number[];
    for (let t = 0; t < T; t++) {
      const base = (b * T + t) * S;
      for (let s = 0; s < S; s++) if (s > pastLength + t || row[s] !== 1) bias[base + s] = -1e9;
    }
  }
  return tf.tensor4d(bias, [B, 1, T, S]);
}

/**
 * a[i] · b[i] (b[i]ᵀ when `transposeB`) for every i of the leading axis, as separate 2-D matMuls: batched and
 * transposed matMuls take XNNPACK's slow path (a few GFLOP/s), plain 2-D ones the fast one.
 *
 * Its own gradient, per-plane matMuls with explicit transposes (as `matMulTrainable`): ∂a[i] = dy[i] · b[i]ᵀ,
 * ∂b[i] = a[i]ᵀ · dy[i] (dy[i]ᵀ · a[i] when `transposeB`), stacked. Autodiff of slices and a stack padded each
 * plane's gradient to the whole tensor and summed the n padded copies (n PadV2 and n − 1 Add kernels of the
 * full size per call, ~4% of a world step's update).
 */
function planarMatMuls(a: tf.Tensor3D, b: tf.Tensor3D, transposeB: boolean): tf.Tensor3D {
  // On the native path one batched matMul with the flag serves every plane (MLAS takes batches and transposed
  // operands at full speed: src/tensor/native-matmul.ts), and tfjs's own gradient is the same kind of product.
  if (nativeMatMulThreads() !== undefined) return tf.matMul(a, b, false, transposeB);
  const f = tf.customGrad((...inputs: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [aIn, bIn, save] = inputs as [tf.Tensor3D, tf.Tensor3D, tf.GradSaveFunc];
    save([aIn, bIn]);
    const right = transposeB ? (tf.transpose(bIn, [0, 2, 1]) as tf.Tensor3D) : bIn;
    const as = tf.unstack(aIn) as tf.Tensor2D[];
    const bs = tf.unstack(right) as tf.Tensor2D[];
    return {
      value: tf.stack(as.map((ai, i) => tf.matMul(ai, bs[i] as tf.Tensor2D))) as tf.Tensor3D,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as [tf.Tensor3D, tf.Tensor3D];
        const dys = tf.unstack(dy) as tf.Tensor2D[];
        const aPlanes = tf.unstack(sa) as tf.Tensor2D[];
        // The planes of b as the forward multiplied them (bᵀ when transposeB) and their transposes.
        const bPlanes = tf.unstack(sb) as tf.Tensor2D[];
        const da = dys.map((g, i) => tf.matMul(g, transposeB ? (bPlanes[i] as tf.Tensor2D) : tf.transpose(bPlanes[i] as tf.Tensor2D)));
        // ∂b[i] directly in b's layout: dy[i]ᵀ · a[i] when transposeB (an [S, n]·[n, hd] matMul runs ~3× faster on
        // XNNPACK than the [hd, n]·[n, S] one of a[i]ᵀ · dy[i] and needs no transpose back), else a[i]ᵀ · dy[i].
        const db = dys.map((g, i) => (transposeB ? tf.matMul(tf.transpose(g), aPlanes[i] as tf.Tensor2D) : tf.matMul(tf.transpose(aPlanes[i] as tf.Tensor2D), g)));
        return [tf.stack(da), tf.stack(db)];
      },
    };
  });
  return f(a, b) as tf.Tensor3D;
}

/**
 * x [a, b, c, d] → [a, c, b, d]. When b or c is 1 (one decoded token, one head) the order of the elements
 * does not change, so a reshape (no kernel, no copy) gives the transpose's exact result.
 */
function swapAxes12(x: tf.Tensor4D): tf.Tensor4D {
  const [a, b, c, d] = x.shape;
  if (b === 1 || c === 1) return tf.reshape(x, [a, c, b, d]);
  return tf.transpose(x, [0, 2, 1, 3]);
}

export class CausalLM {
  private readonly invFreq: Float64Array;
  /**
   * The RMSNorm epsilon and the attention scale 1/√d_head as tensors made once: a JS number given to an op
   * becomes a fresh scalar tensor on every call (an upload and a dispose, dearer than the op itself on a tiny
   * model), with the same float32 value.
   */
  private readonly eps: tf.Scalar;
  private readonly attentionScale: tf.Scalar;

  private constructor(
    readonly config: ModelConfig,
    /** The embedding table: natively held on the native backend when frozen and large (src/tensor/frozen-table.ts). */
    private readonly embed: FrozenTable,
    private readonly layers: LayerWeights[],
    private readonly finalNorm: tf.Tensor1D,
    /**
     * A frozen model's head; a trainable model's untied head [d, V] (a variable); undefined for a trainable tied
     * model (its head is the embedding's transpose, formed per use).
     */
    private readonly lmHead: FrozenMatrix | tf.Tensor2D | undefined,
    readonly dir: string,
    /** Trainable weights by Hugging Face tensor name; empty for a frozen model. */
    private readonly trainableWeights: Map<string, tf.Variable> = new Map(),
  ) {
    this.invFreq = inverseFrequencies(config);
    this.eps = tf.keep(tf.scalar(config.rmsNormEps));
    this.attentionScale = tf.keep(tf.scalar(1 / Math.sqrt(config.headDim)));
  }

  /** Whether the base weights are trainable variables (`load(dir, { trainable: true })`). */
  get trainable(): boolean {
    return this.trainableWeights.size > 0;
  }

  /**
   * Loads a Hugging Face folder (config.json + safetensors); every tensor is checked by name and shape.
   * `trainable` makes every weight a tf.Variable (full-weight training).
   */
  static async load(dir: string, opts: LoadOptions = {}): Promise<CausalLM> {
    const cfg = loadModelConfig(dir);
    // Refused before a weight is read when the active backend cannot hold the model (./memory-need.ts).
    const need = memoryNeedOfConfig(cfg);
    const refusal = backendRefusal(dir, need, activeBackendName());
    if (refusal !== undefined) throw new Error(refusal);
    // Natively: in 8-bit blocks on native-int8; else packed twice where that fits this machine, else once
    // (src/tensor/frozen-matrix.ts).
    const layout: NativeLayout = nativeFrozenBase() === 'int8' ? 'int8' : (opts.nativeLayout ?? nativeLayout(need) ?? 'once');
    const risky = layout === 'int8' ? undefined : mallocSettingsWarning(dir, activeBackendName(), layout);
    if (risky !== undefined) (opts.warn ?? ((m: string) => console.warn(`warning: ${m}`)))(risky);
    const ckpt = new SafetensorsCheckpoint(dir);
    const shapes = expectedTensors(cfg);
    for (const name of shapes.keys()) {
      if (!ckpt.has(name)) throw new Error(`${ckpt.fileOf(name)}: tensor '${name}' is missing (required by ${dir}/config.json)`);
    }
    const read = (name: string): Float32Array => ckpt.readFloat32(name, shapes.get(name));
    // Natively, a weight is read from the file straight into its session's model bytes (src/tensor/frozen-matrix.ts).
    const source = (name: string): RawFill => {
      const shape = shapes.get(name) as number[];
      return { byteLength: 4 * shape.reduce((a, b) => a * b, 1), fill: (target) => ckpt.readFloat32Into(name, target, shape) };
    };
    // Trainable: each weight becomes a variable (tfjs names are global, hence the per-instance prefix).
    const variables = new Map<string, tf.Variable>();
    const instance = opts.trainable ? nextTrainableInstance++ : 0;
    const param = <T extends tf.Tensor>(name: string, t: T): T => {
      if (!opts.trainable) return t;
      const v = tf.variable(t, true, `causal-lm#${instance}/${name}`);
      t.dispose();
      variables.set(name, v);
      return v as unknown as T;
    };
    const vector = (name: string): tf.Tensor1D => param(name, tf.tensor1d(read(name)));
    // [out, in] on disk → [in, out] in memory (a tensor), or as on disk in onnxruntime (native).
    const transposed = (name: string): tf.Tensor2D => {
      const [out, inDim] = shapes.get(name) as [number, number];
      return tf.tidy(() => tf.transpose(tf.tensor2d(read(name), [out, inDim])));
    };
    const projection = (name: string): FrozenMatrix | tf.Tensor2D => {
      if (opts.trainable) return param(name, transposed(name));
      const [out, inDim] = shapes.get(name) as [number, number];
      return holdsNatively(inDim, out) ? new NativeMatrix(inDim, out, () => source(name), layout) : new TensorMatrix(transposed(name));
    };

    const embedName = 'model.embed_tokens.weight';
    const embedding = (): { table: FrozenTable; lmHead: FrozenMatrix | tf.Tensor2D | undefined } => {
      // Frozen and large, natively: the table out of the wasm heap (src/tensor/frozen-table.ts).
      const embedNatively = !opts.trainable && holdsTableNatively(cfg.vocabSize, cfg.hiddenSize);
      // Natively and tied in f32, one session holds the table for the lookups and the head (`TiedTable`). The
      // head is held natively wherever the table is (both from 2^18 floats: src/tensor/frozen-table.ts).
      if (embedNatively && cfg.tieWordEmbeddings && layout !== 'int8' && (opts.nativeTiedTable ?? 'shared') === 'shared') {
        const head = new NativeMatrix(cfg.hiddenSize, cfg.vocabSize, () => source(embedName), layout, { lookup: true });
        return { table: new TiedTable(head), lmHead: head };
      }
      const embed = embedNatively ? undefined : param(embedName, tf.tensor2d(read(embedName), [cfg.vocabSize, cfg.hiddenSize]));
      const table: FrozenTable = embed ? new TensorTable(embed) : new NativeTable(cfg.vocabSize, cfg.hiddenSize, () => source(embedName));
      // A tied frozen head: natively, the embedding table as stored ([V, d] is the head's [out, in]); else a
      // transposed copy of the embedding, whose transpose for the backward is the table itself: memory for speed
      // (no transposed matMul). A trainable tied model keeps none: a copy would go stale at the first update.
      let lmHead: FrozenMatrix | tf.Tensor2D | undefined;
      if (!cfg.tieWordEmbeddings) lmHead = projection('lm_head.weight');
      else if (opts.trainable) lmHead = undefined;
      else if (holdsNatively(cfg.hiddenSize, cfg.vocabSize)) lmHead = new NativeMatrix(cfg.hiddenSize, cfg.vocabSize, () => source(embedName), layout);
      else lmHead = new TensorMatrix(tf.transpose(embed as tf.Tensor2D) as tf.Tensor2D, { transposed: embed as tf.Tensor2D });
      return { table, lmHead };
    };
    // A frozen model's table and head first: their load's transient bytes (a table is up to a tenth of a Qwen3's
    // weights, read into a buffer of its own: src/tensor/weight-staging.ts) then come and go while little else is
    // resident, instead of on top of every layer. (A trainable model keeps the order of its variables.)
    const early = opts.trainable ? undefined : embedding();

    const layers: LayerWeights[] = [];
    for (let l = 0; l < cfg.numLayers; l++) {
      const p = `model.layers.${l}.`;
      const proj = {} as LayerWeights['proj'];
      for (const name of PROJECTIONS) {
        const group = name === 'gate_proj' || name === 'up_proj' || name === 'down_proj' ? 'mlp' : 'self_attn';
        proj[name] = projection(`${p}${group}.${name}.weight`);
      }
      const bias: LayerWeights['bias'] = {};
      if (cfg.qkvBias) for (const n of ['q_proj', 'k_proj', 'v_proj'] as const) bias[n] = vector(`${p}self_attn.${n}.bias`);
      if (cfg.oBias) bias.o_proj = vector(`${p}self_attn.o_proj.bias`);
      layers.push({
        inputNorm: vector(`${p}input_layernorm.weight`),
        proj,
        bias,
        qNorm: cfg.qkNorm ? vector(`${p}self_attn.q_norm.weight`) : undefined,
        kNorm: cfg.qkNorm ? vector(`${p}self_attn.k_norm.weight`) : undefined,
        postNorm: vector(`${p}post_attention_layernorm.weight`),
      });
    }
    const { table, lmHead } = early ?? embedding();
    // The staging buffer's memory back to the system (src/tensor/weight-staging.ts); a backward's session made
    // at the first update stages in it again.
    releaseWeightStaging();
    return new CausalLM(cfg, table, layers, vector('model.norm.weight'), lmHead, dir, variables);
  }

  /** A fresh, empty KV cache for a batch of `batchSize` sequences. */
  newCache(batchSize: number): KVCache {
    const { numLayers, numKvHeads: kvHeads, headDim } = this.config;
    return new KVCache({ numLayers, kvHeads, headDim }, batchSize);
  }

  private rmsNorm(x: tf.Tensor, weight: tf.Tensor1D): tf.Tensor {
    // Untaped on wasm, one kernel with the chain's float32 arithmetic (src/tensor/fused-kernels.ts).
    if (fusedInference()) return rmsNormKernel(x, weight, this.config.rmsNormEps);
    const variance = tf.mean(tf.square(x), -1, true);
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(variance, this.eps))), weight);
  }

  /** x·W (+b) (+ LoRA delta). x: [N, in]. */
  private project(x: tf.Tensor2D, layer: number, name: ProjectionName, opts: ForwardOptions): tf.Tensor2D {
    const w = this.layers[layer] as LayerWeights;
    const p = w.proj[name];
    let y: tf.Tensor2D = p instanceof tf.Tensor ? matMulTrainable(x, p) : linearFrozen(x, p);
    const b = w.bias[name as keyof LayerWeights['bias']];
    if (b) y = tf.add(y, b);
    // Untaped on wasm, the scale and the add of the delta in one kernel (src/tensor/fused-kernels.ts).
    const parts = opts.adapter?.scaledDelta && fusedInference() ? opts.adapter.scaledDelta(layer, name, x) : undefined;
    if (parts) return addScaledKernel(y, parts.product, parts.scale);
    const delta = opts.adapter?.delta(layer, name, x);
    if (delta) y = tf.add(y, delta);
    return y;
  }

  /** Rotate-half RoPE on x [B, T, heads, hd] with cos/sin [B, T, 1, hd/2]. */
  private rope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
    if (fusedInference()) return ropeKernel(x, cos, sin);
    const [x1, x2] = tf.split(x, 2, -1) as [tf.Tensor4D, tf.Tensor4D];
    return tf.concat([tf.sub(tf.mul(x1, cos), tf.mul(x2, sin)), tf.add(tf.mul(x2, cos), tf.mul(x1, sin))], -1);
  }

  private attention(
    h: tf.Tensor2D,
    layer: number,
    shape: { B: number; T: number },
    rot: { cos: tf.Tensor4D; sin: tf.Tensor4D },
    mask: tf.Tensor4D,
    opts: ForwardOptions,
  ): tf.Tensor2D {
    const { numHeads: H, numKvHeads: KV, headDim: hd } = this.config;
    const { B, T } = shape;
    const groups = H / KV;
    const w = this.layers[layer] as LayerWeights;

    let q = tf.reshape(this.project(h, layer, 'q_proj', opts), [B, T, H, hd]) as tf.Tensor4D;
    let k = tf.reshape(this.project(h, layer, 'k_proj', opts), [B, T, KV, hd]) as tf.Tensor4D;
    const v = tf.reshape(this.project(h, layer, 'v_proj', opts), [B, T, KV, hd]) as tf.Tensor4D;
    if (w.qNorm && w.kNorm) {
      q = this.rmsNorm(q, w.qNorm) as tf.Tensor4D;
      k = this.rmsNorm(k, w.kNorm) as tf.Tensor4D;
    }
    q = this.rope(q, rot.cos, rot.sin);
    k = this.rope(k, rot.cos, rot.sin);

    // Heads first; keys and values join the cache ([B, KV, S, hd]).
    let keys = swapAxes12(k);
    let values = swapAxes12(v);
    if (opts.cache) [keys, values] = opts.cache.append(layer, keys, values);
    const S = keys.shape[2];

    // Queries in blocks, so the [B, H, rows, S] score tensor stays within SCORE_BUDGET floats however long
    // the context (a multi-turn prefill of thousands of tokens would otherwise need gigabytes). Without a cache
    // (training, scoring: S = T) the blocks are at most CAUSAL_BLOCK_ROWS queries and each attends only to the
    // keys up to its last query: the later keys are masked for all of its rows, so about half of the scores are
    // never formed (their softmax weights were exact zeros).
    const rows = Math.max(1, Math.min(T, opts.cache ? T : CAUSAL_BLOCK_ROWS, Math.floor((opts.attentionScoreBudget ?? SCORE_BUDGET) / (B * H * S))));
    const keysFlat = tf.reshape(keys, [B * KV, S, hd]);
    const valuesFlat = tf.reshape(values, [B * KV, S, hd]);
    const blocks: tf.Tensor[] = [];
    for (let t0 = 0; t0 < T; t0 += rows) {
      const n = Math.min(rows, T - t0);
      // Each block's scores are freed as soon as its context is formed (under autodiff, tfjs keeps what the
      // backward needs on its own).
      blocks.push(
        tf.tidy(() => {
          const keyEnd = opts.cache ? S : t0 + n;
          const qBlock = n === T ? q : tf.slice(q, [0, t0, 0, 0], [B, n, H, hd]);
          const maskBlock = n === T ? mask : tf.slice(mask, [0, 0, t0, 0], [B, 1, n, keyEnd]);
          const keysBlock = keyEnd === S ? keysFlat : tf.slice(keysFlat, [0, 0, 0], [B * KV, keyEnd, hd]);
          const valuesBlock = keyEnd === S ? valuesFlat : tf.slice(valuesFlat, [0, 0, 0], [B * KV, keyEnd, hd]);
          // Grouped-query attention without copying keys: the `groups` query heads of one kv head are stacked
          // along the query axis, so one batched matMul per kv head serves them all (head h uses kv head h / groups).
          const qGrouped = tf.reshape(swapAxes12(qBlock), [B * KV, groups * n, hd]) as tf.Tensor3D;
          // Without a cache (training, scoring), and with one when a kv head serves many query rows (a prefill,
          // a tool observation appended to the cache), the keys are transposed once and every kv head runs plain
          // 2-D matMuls, XNNPACK's fast path (the batched, transposed form ran at ~1.3 GFLOP/s in a ~100M
          // prefill); decoding a few tokens keeps the batched form (per-head ops would cost more than they save).
          const planar = !opts.cache || groups * n >= PLANAR_MIN_ROWS;
          // (The batched form runs as the SIMD kernel of src/tensor/batched-matmul.ts where it applies: same floats.)
          const raw = planar ? planarMatMuls(qGrouped, keysBlock as tf.Tensor3D, true) : batchedMatMul(qGrouped, keysBlock as tf.Tensor3D, true);
          // Untaped on wasm, the scale and the mask in one kernel (src/tensor/fused-kernels.ts).
          const masked = fusedInference()
            ? scaleMaskKernel(tf.reshape(raw, [B, H, n, keyEnd]) as tf.Tensor4D, maskBlock as tf.Tensor4D, this.attentionScale)
            : tf.add(tf.reshape(tf.mul(raw, this.attentionScale), [B, H, n, keyEnd]), maskBlock);
          const probs = tf.softmax(masked);
          const probsGrouped = tf.reshape(probs, [B * KV, groups * n, keyEnd]) as tf.Tensor3D;
          const context = planar ? planarMatMuls(probsGrouped, valuesBlock as tf.Tensor3D, false) : batchedMatMul(probsGrouped, valuesBlock as tf.Tensor3D, false);
          return swapAxes12(tf.reshape(context, [B, H, n, hd]) as tf.Tensor4D);
        }),
      );
    }
    const joined = blocks.length === 1 ? (blocks[0] as tf.Tensor) : tf.concat(blocks, 1);
    const merged = tf.reshape(joined, [B * T, H * hd]) as tf.Tensor2D;
    return this.project(merged, layer, 'o_proj', opts);
  }

  private mlp(m: tf.Tensor2D, layer: number, opts: ForwardOptions): tf.Tensor2D {
    const gate = this.project(m, layer, 'gate_proj', opts);
    const up = this.project(m, layer, 'up_proj', opts);
    const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D; // silu(gate) ⊙ up
    return this.project(act, layer, 'down_proj', opts);
  }

  /**
   * The final-normed hidden states [B, T, d] of a batch of equal-length rows `inputIds` ([B][T], left-padded).
   * With a cache, the rows continue the cached sequences. Call inside tf.tidy (or dispose the result).
   */
  forward(inputIds: number[][], opts: ForwardOptions = {}): tf.Tensor3D {
    const B = inputIds.length;
    const T = (inputIds[0] ?? []).length;
    if (B === 0 || T === 0 || inputIds.some((r) => r.length !== T)) {
      throw new Error(`forward: inputIds must be a non-empty batch of equal-length rows (got lengths ${inputIds.map((r) => r.length).join(',')})`);
    }
    const mask = opts.attentionMask ?? inputIds.map((r) => r.map(() => 1));
    const cache = opts.cache;
    if (cache && cache.batchSize !== B) throw new Error(`forward: cache holds ${cache.batchSize} sequences, batch has ${B}`);

    // Position of each token = number of real tokens before it in its row (so left padding shifts nothing).
    let positions: Int32Array;
    let pastLength = 0;
    let keyMask: number[][];
    if (cache) {
      ({ positions, pastLength } = cache.beginChunk(mask));
      keyMask = cache.keyMask;
    } else {
      positions = new Int32Array(B * T);
      for (let b = 0; b < B; b++) {
        let next = 0;
        const maskRow = mask[b] as number[];
        for (let t = 0; t < T; t++) {
          positions[b * T + t] = next;
          if (maskRow[t] === 1) next++;
        }
      }
      keyMask = mask;
    }
    const keyWidth = cache ? cache.attentionWidth : T;

    const { cos, sin } = ropeTables(this.invFreq, positions);
    const half = this.config.headDim / 2;
    return tf.tidy(() => {
      const rot = { cos: tf.tensor4d(cos, [B, T, 1, half]), sin: tf.tensor4d(sin, [B, T, 1, half]) };
      const bias = attentionBias(keyMask, pastLength, T, keyWidth);
      let h = this.embed.rows(inputIds.flat());
      for (let l = 0; l < this.config.numLayers; l++) {
        const w = this.layers[l] as LayerWeights;
        const hIn = h;
        // One scope per layer: its intermediates are released before the next layer runs, so inference memory
        // is one layer's working set plus the residual stream (autodiff keeps what its backward needs).
        const layer = (x: tf.Tensor2D, context: readonly tf.Tensor[]): tf.Tensor2D => {
          const [cos, sin, mask] = context as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D];
          const a = tf.add(x, this.attention(this.rmsNorm(x, w.inputNorm) as tf.Tensor2D, l, { B, T }, { cos, sin }, mask, opts));
          return tf.add(a, this.mlp(this.rmsNorm(a, w.postNorm) as tf.Tensor2D, l, opts)) as tf.Tensor2D;
        };
        const context = [rot.cos, rot.sin, bias];
        if (opts.recomputeLayers && !cache) {
          const adapter = opts.adapter;
          // What the layer trains: the adapter's matrices, and a trainable model's own layer weights.
          const params = [...(adapter?.layerParameters?.(l) ?? []), ...(this.trainable ? this.layerVariables(l) : [])];
          const random =
            adapter?.randomState !== undefined
              ? { get: () => adapter.randomState as number, set: (state: number) => (adapter.randomState = state) }
              : undefined;
          h = tf.tidy(() => recomputed(hIn, params, context, layer, random));
        } else {
          h = tf.tidy(() => layer(hIn, context));
        }
      }
      return tf.reshape(this.rmsNorm(h, this.finalNorm), [B, T, this.config.hiddenSize]) as tf.Tensor3D;
    });
  }

  /** Logits [N, V] of hidden states [N, d]. For the full vocab, callers chunk N (see score.ts). */
  logits(hidden: tf.Tensor2D): tf.Tensor2D {
    if (this.trainable) return tf.tidy(() => matMulTrainable(hidden, (this.lmHead as tf.Tensor2D | undefined) ?? (tf.transpose(this.embedTensor()) as tf.Tensor2D)));
    return linearFrozen(hidden, this.head);
  }

  /**
   * A frozen model's output head [d, V], for fused log-prob kernels that never materialise all logits at once
   * (it forms x·W and, for their backward, dy·Wᵀ without a transpose per call).
   */
  get head(): FrozenMatrix {
    if (this.trainable || this.lmHead === undefined || this.lmHead instanceof tf.Tensor) throw new Error(`head: ${this.dir} was loaded trainable; use trainingHead()`);
    return this.lmHead;
  }

  /**
   * The head for a loss whose gradient reaches it (full-weight training): tied, W = embeddingᵀ formed here (on
   * the tape, so its gradient flows into the embedding) and Wᵀ is the embedding itself; untied, W is the head
   * and Wᵀ a fresh transpose. A frozen model returns its persistent head. Call inside tf.tidy (or under
   * tf.variableGrads), as the tensors may be new.
   */
  trainingHead(): TrainingHead {
    if (!this.trainable) return { weight: this.head };
    if (!this.lmHead) return { weight: tf.transpose(this.embedTensor()) as tf.Tensor2D, weightT: this.embedTensor() };
    const w = this.lmHead as tf.Tensor2D;
    return { weight: w, weightT: tf.transpose(w) as tf.Tensor2D };
  }

  private layerVariablesCache: tf.Variable[][] | undefined;

  /** A trainable model's weights of layer `l` (for the recomputed backward, which must be told what it trains). */
  private layerVariables(l: number): tf.Variable[] {
    this.layerVariablesCache ??= Array.from({ length: this.config.numLayers }, (_, k) =>
      [...this.trainableWeights].filter(([name]) => name.startsWith(`model.layers.${k}.`)).map(([, v]) => v),
    );
    return this.layerVariablesCache[l] as tf.Variable[];
  }

  /**
   * The trainable weights keyed by Hugging Face tensor name (a trainable model only). Projections and an
   * untied lm_head are held [in, out], i.e. transposed from the file's [out, in]; the rest as in the file.
   */
  variables(): Map<string, tf.Variable> {
    if (!this.trainable) throw new Error(`variables: ${this.dir} was loaded frozen; load it with { trainable: true } to train its weights`);
    return new Map(this.trainableWeights);
  }

  /**
   * Where the frozen base lives, for the line commands print: 'tensors' (the tfjs heap), or how onnxruntime
   * holds the matrices it holds (src/tensor/frozen-matrix.ts), with how many of them.
   */
  describeFrozenBase(): string {
    const all = [...this.layers.flatMap((w) => Object.values(w.proj)), ...(this.lmHead ? [this.lmHead] : [])];
    const native = all.filter((m): m is NativeMatrix => m instanceof NativeMatrix);
    if (native.length === 0) return 'frozen base as tensors';
    const layout =
      native[0]?.layout === 'once' ? 'once, unpacked (two packed copies would not fit this machine: slower products)' : native[0]?.layout === 'int8' ? 'in 8-bit blocks (native-int8)' : 'packed for MLAS';
    return `frozen base: ${native.length} of ${all.length} matrices held by onnxruntime, ${layout}`;
  }

  /** The frozen projections held as tfjs tensors (the ones a held transpose can serve). */
  private tensorProjections(): TensorMatrix[] {
    return this.layers.flatMap((w) => Object.values(w.proj).filter((p): p is TensorMatrix => p instanceof TensorMatrix));
  }

  /**
   * Holds Wᵀ of every frozen projection kept as a tfjs tensor, for the backward's dX = dy·Wᵀ (ops.ts,
   * `linearFrozen`), from now on. On wasm a transpose made per backward costs the transpose and XNNPACK's
   * packing of a new right operand (about a sixth of a ~100M GRPO update); a held one is packed once. It costs
   * `projectionParameters` floats twice (the copy and its packing): the caller decides whether the heap has room
   * (src/rl/grpo-update.ts, `holdTransposesIfRoom`). Idempotent; a trainable model's weights change every step,
   * so it holds none; natively held projections need none (onnxruntime multiplies by Wᵀ as it is).
   */
  holdTransposedProjections(): void {
    for (const p of this.tensorProjections()) p.holdTransposed();
  }

  /** Whether every projection kept as a tensor holds its transpose (true when there is none). */
  get holdsTransposedProjections(): boolean {
    return this.tensorProjections().every((p) => p.holdsTransposed);
  }

  /** Floats of the layers' projections kept as tfjs tensors (what `holdTransposedProjections` copies). */
  projectionParameters(): number {
    return this.tensorProjections().reduce((n, p) => n + p.weight.size, 0);
  }

  /** The embedding table as a tensor (a trainable model's; a frozen native one has none in the heap). */
  private embedTensor(): tf.Tensor2D {
    if (!(this.embed instanceof TensorTable)) throw new Error('the embedding table is held natively: only a trainable model forms its transpose');
    return this.embed.table;
  }

  /**
   * Floats of the base model in the tfjs heap: every weight but those onnxruntime holds (native), the held
   * transposes included (for the wasm heap's plan: src/rl/grpo-update.ts, `wasmHeapInUse`).
   */
  heapWeightFloats(): number {
    let n = this.embed.heapFloats + this.finalNorm.size;
    const matrix = (m: FrozenMatrix | tf.Tensor2D): number => (m instanceof tf.Tensor ? m.size : m.heapFloats);
    // A tied tensor head's held transpose is the embedding, counted already.
    if (this.lmHead) n += this.lmHead instanceof TensorMatrix && this.config.tieWordEmbeddings ? this.lmHead.weight.size : matrix(this.lmHead);
    for (const w of this.layers) {
      n += w.inputNorm.size + w.postNorm.size + (w.qNorm?.size ?? 0) + (w.kNorm?.size ?? 0);
      for (const p of Object.values(w.proj)) n += matrix(p);
      for (const t of Object.values(w.bias)) n += t.size;
    }
    return n;
  }

  dispose(): void {
    const all: tf.Tensor[] = [this.eps, this.attentionScale, this.finalNorm];
    this.embed.dispose();
    const matrices: FrozenMatrix[] = [];
    const add = (m: FrozenMatrix | tf.Tensor2D | undefined): void => {
      if (m instanceof tf.Tensor) all.push(m);
      else if (m) matrices.push(m);
    };
    add(this.lmHead);
    for (const w of this.layers) {
      all.push(w.inputNorm, w.postNorm, ...Object.values(w.bias));
      for (const p of Object.values(w.proj)) add(p);
      if (w.qNorm) all.push(w.qNorm);
      if (w.kNorm) all.push(w.kNorm);
    }
    for (const m of matrices) m.dispose();
    tf.dispose(all);
  }

  /** Number of parameters of the base model (the tied head counted once). */
  parameterCount(): number {
    const size = (m: FrozenMatrix | tf.Tensor2D): number => (m instanceof tf.Tensor ? m.size : m.shape[0] * m.shape[1]);
    let n = this.embed.shape[0] * this.embed.shape[1] + this.finalNorm.size + (this.config.tieWordEmbeddings ? 0 : size(this.lmHead as FrozenMatrix | tf.Tensor2D));
    for (const w of this.layers) {
      n += w.inputNorm.size + w.postNorm.size + (w.qNorm?.size ?? 0) + (w.kNorm?.size ?? 0);
      for (const t of Object.values(w.proj)) n += size(t);
      for (const t of Object.values(w.bias)) n += t.size;
    }
    return n;
  }
}
