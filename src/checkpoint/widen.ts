// Widening a Qwen3 checkpoint (docs/world.md, "Growing the warm start"): a wider residual stream, more attention
// heads and a wider MLP, initialised so that the wider model computes the source model's logits, as Net2Net's
// function-preserving growth (Chen et al., 2016) in its zero-output form. With d → D hidden dims, H → H' query
// heads (KV → KV' key/value heads, the same H/KV ratio, the same head_dim) and I → I' MLP units:
//
//   residual stream   the new dims D − d start at 0 and stay 0: every weight that writes into them (the
//                     embedding's new columns, o_proj's and down_proj's new rows) is 0;
//   RMSNorm           over D dims with D − d zeros, mean(x²) shrinks by d/D, so each norm weight w is written
//                     w·√(d/D) and rms_norm_eps ε·d/D:  x_i·w_i·√(d/D) / √(mean_d(x²)·d/D + ε·d/D)
//                     = x_i·w_i / √(mean_d(x²) + ε), the source's norm exactly;
//   new heads         q/k/v rows random (N(0, std²)), o_proj's new columns 0: they add nothing until o_proj moves;
//                     appended after the old ones, so with H/KV kept, old query head j still reads kv head
//                     ⌊j·KV/H⌋ (GQA groups consecutive query heads);
//   new MLP units     gate/up rows random, down_proj's new columns 0;
//   new input columns of q/k/v/gate/up random: they multiply the new dims, which are 0.
//
// Every new weight gets a gradient: a new residual dim at layer l feeds layer l+1's random input columns, so
// ∂L/∂(o_proj, down_proj new rows) ≠ 0 below the last layer, and the tied embedding's new columns get it from
// the input side. q_norm/k_norm act on head_dim, which does not change. Only the norm's ε differs from a
// checkpoint written at D from the start, which is why config.json carries its own.
//
// The new folder holds config.json (the new sizes), model.safetensors in f32, and the source's tokenizer,
// generation and priming-card files; every file is written atomically.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { Rng } from '../util/rng.js';
import { copyModelFiles, readConfigJson } from './full-model.js';
import { SafetensorsCheckpoint, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';

export interface WidenOptions {
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  /** RNG seed of the new random weights. */
  seed: number;
  /** Standard deviation of the new random weights. */
  initStd: number;
}

export const WIDEN_DEFAULTS: Pick<WidenOptions, 'seed' | 'initStd'> = { seed: 4243, initStd: 0.02 };

/** Files of a model folder besides the weights, config and tokenizer that a grown folder keeps: the priming cards (docs/world.md). */
const KEPT_FILES = ['priming-cards.jsonl'];

/** Copies the KEPT_FILES that `srcDir` has into `dstDir` (a grown model computes what its source did, so its cards still apply). */
export function copyKeptFiles(srcDir: string, dstDir: string): void {
  for (const f of KEPT_FILES) if (existsSync(join(srcDir, f))) writeFileAtomic(join(dstDir, f), readFileSync(join(srcDir, f)));
}

export interface WidenResult {
  before: { hidden: number; heads: number; kvHeads: number; intermediate: number };
  after: { hidden: number; heads: number; kvHeads: number; intermediate: number };
  parametersBefore: number;
  parametersAfter: number;
}

function intField(config: Record<string, unknown>, key: string, path: string): number {
  const v = config[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`${path}: field ${key} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/** `rows × cols` (row-major) copied into the top-left of a `R × C` matrix whose other entries come from `fill`. */
function embed(src: Float32Array, rows: number, cols: number, R: number, C: number, fill: (r: number, c: number) => number): Float32Array {
  const out = new Float32Array(R * C);
  for (let r = 0; r < R; r++) {
    for (let c = 0; c < C; c++) out[r * C + c] = r < rows && c < cols ? (src[r * cols + c] as number) : fill(r, c);
  }
  return out;
}

/** Widens the Qwen3 model in `srcDir` to the sizes of `opts`, writing `dstDir` (see the header). */
export function widenCheckpoint(srcDir: string, dstDir: string, opts: WidenOptions): WidenResult {
  const configPath = join(srcDir, 'config.json');
  const config = readConfigJson(srcDir);
  if (config.model_type !== 'qwen3') throw new Error(`${configPath}: field model_type is ${JSON.stringify(config.model_type)}; widening writes Qwen3 layers and needs "qwen3"`);
  if (config.attention_bias === true) throw new Error(`${configPath}: field attention_bias is true; widening writes layers without biases`);
  if (config.tie_word_embeddings !== true) throw new Error(`${configPath}: field tie_word_embeddings must be true (the widened lm_head is the embedding)`);
  const layers = intField(config, 'num_hidden_layers', configPath);
  const d = intField(config, 'hidden_size', configPath);
  const I = intField(config, 'intermediate_size', configPath);
  const H = intField(config, 'num_attention_heads', configPath);
  const KV = config.num_key_value_heads === undefined ? H : intField(config, 'num_key_value_heads', configPath);
  const hd = config.head_dim === undefined ? d / H : intField(config, 'head_dim', configPath);
  const eps = typeof config.rms_norm_eps === 'number' ? config.rms_norm_eps : 1e-6;
  const { hidden: D, heads: H2, kvHeads: KV2, intermediate: I2 } = opts;
  for (const [name, v, from] of [['hidden', D, d], ['heads', H2, H], ['kvHeads', KV2, KV], ['intermediate', I2, I]] as const) {
    if (!Number.isInteger(v) || v < from) throw new Error(`widen: ${name} must be an integer ≥ the source's ${from} (${configPath}), got ${v}`);
  }
  if (H2 * KV !== H * KV2) throw new Error(`widen: heads/kvHeads must stay ${H}/${KV} (= ${H / KV} query heads per kv head, so that the old heads keep their kv heads), got ${H2}/${KV2}`);
  if (!(opts.initStd > 0)) throw new Error(`widen: initStd must be > 0, got ${opts.initStd}`);

  const source = new SafetensorsCheckpoint(srcDir);
  const rng = new Rng(opts.seed);
  const random = (): number => rng.normal() * opts.initStd;
  const zero = (): number => 0;
  const tensors = new Map<string, TensorToWrite>();
  let before = 0;
  let after = 0;
  const put = (name: string, shape: number[], data: Float32Array): void => {
    tensors.set(name, { dtype: 'F32', shape, data });
    after += data.length;
  };
  const read = (name: string, shape: number[]): Float32Array => {
    const got = [...source.entry(name).shape];
    if (got.length !== shape.length || got.some((x, i) => x !== shape[i])) throw new Error(`${srcDir}: weight ${name} has shape [${got.join(', ')}], config.json implies [${shape.join(', ')}]`);
    const data = source.readFloat32(name);
    before += data.length;
    return data;
  };
  const scale = Math.sqrt(d / D);
  const norm = (name: string): void => put(name, [D], embed(read(name, [d]), 1, d, 1, D, () => scale).map((x, i) => (i < d ? x * scale : x)));

  const vocab = intField(config, 'vocab_size', configPath);
  put('model.embed_tokens.weight', [vocab, D], embed(read('model.embed_tokens.weight', [vocab, d]), vocab, d, vocab, D, zero));
  norm('model.norm.weight');
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    norm(`${p}input_layernorm.weight`);
    norm(`${p}post_attention_layernorm.weight`);
    for (const k of ['self_attn.q_norm.weight', 'self_attn.k_norm.weight']) put(p + k, [hd], read(p + k, [hd]));
    // Rows are output units, columns input dims: old rows keep their weights on the old dims, and random ones on the new.
    put(`${p}self_attn.q_proj.weight`, [H2 * hd, D], embed(read(`${p}self_attn.q_proj.weight`, [H * hd, d]), H * hd, d, H2 * hd, D, random));
    put(`${p}self_attn.k_proj.weight`, [KV2 * hd, D], embed(read(`${p}self_attn.k_proj.weight`, [KV * hd, d]), KV * hd, d, KV2 * hd, D, random));
    put(`${p}self_attn.v_proj.weight`, [KV2 * hd, D], embed(read(`${p}self_attn.v_proj.weight`, [KV * hd, d]), KV * hd, d, KV2 * hd, D, random));
    put(`${p}self_attn.o_proj.weight`, [D, H2 * hd], embed(read(`${p}self_attn.o_proj.weight`, [d, H * hd]), d, H * hd, D, H2 * hd, zero));
    put(`${p}mlp.gate_proj.weight`, [I2, D], embed(read(`${p}mlp.gate_proj.weight`, [I, d]), I, d, I2, D, random));
    put(`${p}mlp.up_proj.weight`, [I2, D], embed(read(`${p}mlp.up_proj.weight`, [I, d]), I, d, I2, D, random));
    put(`${p}mlp.down_proj.weight`, [D, I2], embed(read(`${p}mlp.down_proj.weight`, [d, I]), d, I, D, I2, zero));
  }
  const unused = source.names().filter((n) => !tensors.has(n));
  if (unused.length > 0) throw new Error(`${srcDir}: weights widening does not know: ${unused.slice(0, 5).join(', ')}${unused.length > 5 ? ', …' : ''}`);

  ensureDir(dstDir);
  writeSafetensors(join(dstDir, 'model.safetensors'), tensors, { format: 'pt' });
  writeJsonAtomic(join(dstDir, 'config.json'), {
    ...config,
    hidden_size: D,
    num_attention_heads: H2,
    num_key_value_heads: KV2,
    head_dim: hd,
    intermediate_size: I2,
    rms_norm_eps: (eps * d) / D,
    torch_dtype: 'float32',
  });
  copyModelFiles(srcDir, dstDir);
  copyKeptFiles(srcDir, dstDir);
  return {
    before: { hidden: d, heads: H, kvHeads: KV, intermediate: I },
    after: { hidden: D, heads: H2, kvHeads: KV2, intermediate: I2 },
    parametersBefore: before,
    parametersAfter: after,
  };
}
