// LoRA adapters on the frozen base (docs/method.md, "Adapters"): for a targeted projection W, the adapted output is
//   y = x·W + (α/r) · (x·A)·B,   A: [in, r] (Kaiming-uniform), B: [r, out] (zeros, so a fresh adapter is the base).
// Several named adapters (proposer, solver) share one base model; the forward takes one of them or none.
// Only A and B are tf.Variables, so gradients and optimizer state exist for adapter weights alone.
import { tf } from '../tensor/backend.js';
import { matMulTrainable } from '../tensor/ops.js';
import { Rng } from '../util/rng.js';
import type { ModelConfig } from './config.js';
import { PROJECTIONS, type ProjectionAdapter, type ProjectionName } from './qwen3.js';

export interface LoraConfig {
  r: number;
  alpha: number;
  dropout: number;
  targets: ProjectionName[];
}

/** The defaults of docs/method.md, "Adapters". */
export const LORA_DEFAULTS: LoraConfig = { r: 16, alpha: 32, dropout: 0, targets: [...PROJECTIONS] };

/** Input and output width of each projection. */
export function projectionShape(cfg: ModelConfig, p: ProjectionName): { inDim: number; outDim: number } {
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  switch (p) {
    case 'q_proj':
      return { inDim: cfg.hiddenSize, outDim: q };
    case 'k_proj':
    case 'v_proj':
      return { inDim: cfg.hiddenSize, outDim: kv };
    case 'o_proj':
      return { inDim: q, outDim: cfg.hiddenSize };
    case 'gate_proj':
    case 'up_proj':
      return { inDim: cfg.hiddenSize, outDim: cfg.intermediateSize };
    case 'down_proj':
      return { inDim: cfg.intermediateSize, outDim: cfg.hiddenSize };
  }
}

/** The Hugging Face module path of a projection (used for PEFT keys and GGUF names). */
export function moduleName(layer: number, p: ProjectionName): string {
  const group = p === 'gate_proj' || p === 'up_proj' || p === 'down_proj' ? 'mlp' : 'self_attn';
  return `model.layers.${layer}.${group}.${p}`;
}

export function validateLoraConfig(c: LoraConfig, where = 'LoRA config'): void {
  if (!Number.isInteger(c.r) || c.r <= 0) throw new Error(`${where}: r must be a positive integer, got ${c.r}`);
  if (!(c.alpha > 0)) throw new Error(`${where}: alpha must be positive, got ${c.alpha}`);
  if (!(c.dropout >= 0 && c.dropout < 1)) throw new Error(`${where}: dropout must be in [0, 1), got ${c.dropout}`);
  if (c.targets.length === 0) throw new Error(`${where}: target modules must not be empty`);
  for (const t of c.targets) {
    if (!(PROJECTIONS as readonly string[]).includes(t)) throw new Error(`${where}: unknown target module '${t}' (known: ${PROJECTIONS.join(', ')})`);
  }
}

export interface LoraPair {
  /** [in, r] */
  a: tf.Variable<tf.Rank.R2>;
  /** [r, out] */
  b: tf.Variable<tf.Rank.R2>;
}

export interface LoraInitOptions {
  seed: number;
  /** Non-zero B (normal, std `randomBStd`), so that tests and checks see an effect. */
  randomB?: boolean;
  randomBStd?: number;
}

let nextInstance = 0;

export class LoraAdapter implements ProjectionAdapter {
  /** Dropout on the adapter path is active only while training. */
  training = false;
  private dropoutSeed = 0;
  /** α/r as a tensor made once (a number given to tf.mul is uploaded as a fresh scalar on every call). */
  private scaleTensor: tf.Scalar | undefined;

  private constructor(
    readonly name: string,
    readonly config: LoraConfig,
    readonly modelConfig: ModelConfig,
    /** Keyed by `moduleName(layer, projection)`. */
    readonly pairs: Map<string, LoraPair>,
  ) {
    this.scaleTensor = tf.keep(tf.scalar(config.alpha / config.r));
  }

  get scale(): number {
    return this.config.alpha / this.config.r;
  }

  /** A fresh adapter: A Kaiming-uniform (bound 1/√in, as PEFT's kaiming_uniform_(a=√5)), B zeros. */
  static create(name: string, modelConfig: ModelConfig, config: LoraConfig, init: LoraInitOptions): LoraAdapter {
    validateLoraConfig(config);
    const rng = new Rng(init.seed);
    const pairs = new Map<string, LoraPair>();
    for (let l = 0; l < modelConfig.numLayers; l++) {
      for (const p of PROJECTIONS) {
        if (!config.targets.includes(p)) continue;
        const { inDim, outDim } = projectionShape(modelConfig, p);
        const bound = 1 / Math.sqrt(inDim);
        const a = new Float32Array(inDim * config.r);
        // Drawn in PEFT's [r, in] order and stored transposed, so a seed means the same A in both layouts.
        for (let i = 0; i < config.r; i++) for (let j = 0; j < inDim; j++) a[j * config.r + i] = (rng.next() * 2 - 1) * bound;
        const b = new Float32Array(config.r * outDim);
        if (init.randomB) {
          const std = init.randomBStd ?? 0.02;
          for (let i = 0; i < outDim; i++) for (let j = 0; j < config.r; j++) b[j * outDim + i] = rng.normal() * std;
        }
        pairs.set(moduleName(l, p), LoraAdapter.pair(name, moduleName(l, p), a, b, inDim, outDim, config.r));
      }
    }
    return new LoraAdapter(name, config, modelConfig, pairs);
  }

  /** An adapter from given weights in PEFT layout: A [r, in] and B [out, r], per module name. */
  static fromPeftWeights(
    name: string,
    modelConfig: ModelConfig,
    config: LoraConfig,
    weights: Map<string, { a: Float32Array; b: Float32Array }>,
  ): LoraAdapter {
    validateLoraConfig(config);
    const pairs = new Map<string, LoraPair>();
    for (let l = 0; l < modelConfig.numLayers; l++) {
      for (const p of config.targets) {
        const mod = moduleName(l, p);
        const w = weights.get(mod);
        if (!w) throw new Error(`adapter '${name}': no weights for ${mod}`);
        const { inDim, outDim } = projectionShape(modelConfig, p);
        const r = config.r;
        if (w.a.length !== r * inDim || w.b.length !== outDim * r) {
          throw new Error(`adapter '${name}': ${mod} has ${w.a.length}/${w.b.length} values in A/B, expected ${r * inDim}/${outDim * r}`);
        }
        pairs.set(mod, LoraAdapter.pair(name, mod, transpose(w.a, r, inDim), transpose(w.b, outDim, r), inDim, outDim, r));
      }
    }
    return new LoraAdapter(name, config, modelConfig, pairs);
  }

  private static pair(adapter: string, mod: string, a: Float32Array, b: Float32Array, inDim: number, outDim: number, r: number): LoraPair {
    // tfjs variable names are global: a per-instance number lets two adapters of the same name coexist.
    const id = `${adapter}#${nextInstance++}/${mod}`;
    return tf.tidy(() => ({
      a: tf.variable(tf.tensor2d(a, [inDim, r]), true, `${id}/lora_A`),
      b: tf.variable(tf.tensor2d(b, [r, outDim]), true, `${id}/lora_B`),
    }));
  }

  delta(layer: number, projection: ProjectionName, x: tf.Tensor2D): tf.Tensor2D | undefined {
    const pair = this.pairs.get(moduleName(layer, projection));
    if (!pair) return undefined;
    let input = x;
    if (this.training && this.config.dropout > 0) input = tf.dropout(x, this.config.dropout, undefined, this.dropoutSeed++) as tf.Tensor2D;
    return tf.mul(matMulTrainable(matMulTrainable(input, pair.a), pair.b), this.scaleTensor ?? this.scale);
  }

  /** The delta's product (x·A)·B and the scale α/r, where no dropout applies (see ProjectionAdapter.scaledDelta). */
  scaledDelta(layer: number, projection: ProjectionName, x: tf.Tensor2D): { product: tf.Tensor2D; scale: tf.Scalar } | undefined {
    const pair = this.pairs.get(moduleName(layer, projection));
    if (!pair || !this.scaleTensor || (this.training && this.config.dropout > 0)) return undefined;
    return { product: matMulTrainable(matMulTrainable(x, pair.a), pair.b), scale: this.scaleTensor };
  }

  /** The variables the deltas of `layer` read (A then B per projection): what a recomputed layer differentiates. */
  layerParameters(layer: number): tf.Variable[] {
    const out: tf.Variable[] = [];
    for (const p of PROJECTIONS) {
      const pair = this.pairs.get(moduleName(layer, p));
      if (pair) out.push(pair.a, pair.b);
    }
    return out;
  }

  /** Where the dropout stream stands; a recomputed layer sets it back to replay the same masks. */
  get randomState(): number {
    return this.dropoutSeed;
  }

  set randomState(seed: number) {
    this.dropoutSeed = seed;
  }

  /** The trainable variables, named `<module>.lora_A` / `.lora_B` (stable order: layer, projection). */
  variables(): Map<string, tf.Variable> {
    const out = new Map<string, tf.Variable>();
    for (const [mod, p] of this.pairs) {
      out.set(`${mod}.lora_A`, p.a);
      out.set(`${mod}.lora_B`, p.b);
    }
    return out;
  }

  /** Weights in PEFT layout (A [r, in], B [out, r]) per module, read back from the variables. */
  async peftWeights(): Promise<Map<string, { a: Float32Array; b: Float32Array; inDim: number; outDim: number }>> {
    const out = new Map<string, { a: Float32Array; b: Float32Array; inDim: number; outDim: number }>();
    for (const [mod, p] of this.pairs) {
      const [inDim, r] = p.a.shape;
      const outDim = p.b.shape[1];
      const a = (await p.a.data()) as Float32Array;
      const b = (await p.b.data()) as Float32Array;
      out.set(mod, { a: transpose(a, inDim, r), b: transpose(b, r, outDim), inDim, outDim });
    }
    return out;
  }

  parameterCount(): number {
    let n = 0;
    for (const p of this.pairs.values()) n += p.a.size + p.b.size;
    return n;
  }

  dispose(): void {
    this.scaleTensor?.dispose();
    this.scaleTensor = undefined;
    for (const p of this.pairs.values()) {
      p.a.dispose();
      p.b.dispose();
    }
    this.pairs.clear();
  }
}

/** Transpose of a row-major [rows, cols] matrix. */
function transpose(m: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(m.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) t[j * rows + i] = m[i * cols + j] as number;
  return t;
}
