// Deepening a Qwen3 checkpoint (docs/world.md, "Deepening the warm start"): N new decoder layers appended after
// the last one, each initialised so that it computes the identity on the residual stream:
//
//   h ← h + o_proj(attn(norm(h)))        with o_proj = 0     → h
//   h ← h + down_proj(mlp(norm(h)))      with down_proj = 0  → h
//
// so the deepened model's logits equal the source model's exactly, while every new weight still gets a gradient:
// ∂L/∂o_proj = attn(·)ᵀ · ∂L/∂h ≠ 0 because q/k/v and gate/up are random (N(0, std²)), not zero; once o_proj and
// down_proj move, the gradients reach q/k/v/gate/up too. Norm weights are 1. This is the "function-preserving"
// growth of Net2Net (Chen et al., 2016) in its simplest, zero-output form, applied to whole residual blocks.
//
// The new folder holds config.json (num_hidden_layers and max_window_layers raised), model.safetensors in f32
// and the source's tokenizer, generation and priming-card files; every file is written atomically.
import { join } from 'node:path';
import { ensureDir, writeJsonAtomic } from '../util/atomic.js';
import { Rng } from '../util/rng.js';
import { copyModelFiles, readConfigJson } from './full-model.js';
import { copyKeptFiles } from './widen.js';
import { SafetensorsCheckpoint, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';

export interface DeepenOptions {
  /** Decoder layers to append (≥ 1). */
  addLayers: number;
  /** RNG seed of the new q/k/v/gate/up weights. */
  seed: number;
  /** Standard deviation of those weights (the usual initializer_range of Hugging Face configs). */
  initStd: number;
}

export const DEEPEN_DEFAULTS: Omit<DeepenOptions, 'addLayers'> = { seed: 4242, initStd: 0.02 };

export interface DeepenResult {
  layersBefore: number;
  layersAfter: number;
  /** Parameters the new layers add. */
  addedParameters: number;
}

function intField(config: Record<string, unknown>, key: string, path: string): number {
  const v = config[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`${path}: field ${key} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/** Appends `opts.addLayers` identity-initialised decoder layers to the Qwen3 model in `srcDir`, writing `dstDir`. */
export function deepenCheckpoint(srcDir: string, dstDir: string, opts: DeepenOptions): DeepenResult {
  if (!Number.isInteger(opts.addLayers) || opts.addLayers < 1) throw new Error(`addLayers must be an integer >= 1, got ${opts.addLayers}`);
  if (!(opts.initStd > 0)) throw new Error(`initStd must be > 0, got ${opts.initStd}`);
  const configPath = join(srcDir, 'config.json');
  const config = readConfigJson(srcDir);
  if (config.model_type !== 'qwen3') throw new Error(`${configPath}: field model_type is ${JSON.stringify(config.model_type)}; deepening writes Qwen3 layers (q_norm/k_norm, no biases) and needs "qwen3"`);
  if (config.attention_bias === true) throw new Error(`${configPath}: field attention_bias is true; deepening writes layers without biases`);
  const layers = intField(config, 'num_hidden_layers', configPath);
  const hidden = intField(config, 'hidden_size', configPath);
  const inter = intField(config, 'intermediate_size', configPath);
  const heads = intField(config, 'num_attention_heads', configPath);
  const kvHeads = config.num_key_value_heads === undefined ? heads : intField(config, 'num_key_value_heads', configPath);
  const headDim = config.head_dim === undefined ? hidden / heads : intField(config, 'head_dim', configPath);

  const source = new SafetensorsCheckpoint(srcDir);
  const tensors = new Map<string, TensorToWrite>();
  for (const name of source.names()) {
    const layer = /^model\.layers\.(\d+)\./.exec(name)?.[1];
    if (layer !== undefined && Number(layer) >= layers) {
      throw new Error(`${srcDir}: weight ${name} is past num_hidden_layers = ${layers} of config.json`);
    }
    tensors.set(name, { dtype: 'F32', shape: [...source.entry(name).shape], data: source.readFloat32(name) });
  }

  const rng = new Rng(opts.seed);
  const normal = (n: number): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = rng.normal() * opts.initStd;
    return a;
  };
  const ones = (n: number): Float32Array => new Float32Array(n).fill(1);
  let added = 0;
  for (let l = layers; l < layers + opts.addLayers; l++) {
    const put = (key: string, shape: number[], data: Float32Array): void => {
      tensors.set(`model.layers.${l}.${key}`, { dtype: 'F32', shape, data });
      added += data.length;
    };
    put('input_layernorm.weight', [hidden], ones(hidden));
    put('post_attention_layernorm.weight', [hidden], ones(hidden));
    put('self_attn.q_norm.weight', [headDim], ones(headDim));
    put('self_attn.k_norm.weight', [headDim], ones(headDim));
    put('self_attn.q_proj.weight', [heads * headDim, hidden], normal(heads * headDim * hidden));
    put('self_attn.k_proj.weight', [kvHeads * headDim, hidden], normal(kvHeads * headDim * hidden));
    put('self_attn.v_proj.weight', [kvHeads * headDim, hidden], normal(kvHeads * headDim * hidden));
    put('self_attn.o_proj.weight', [hidden, heads * headDim], new Float32Array(hidden * heads * headDim));
    put('mlp.gate_proj.weight', [inter, hidden], normal(inter * hidden));
    put('mlp.up_proj.weight', [inter, hidden], normal(inter * hidden));
    put('mlp.down_proj.weight', [hidden, inter], new Float32Array(hidden * inter));
  }

  ensureDir(dstDir);
  writeSafetensors(join(dstDir, 'model.safetensors'), tensors, { format: 'pt' });
  const after = layers + opts.addLayers;
  writeJsonAtomic(join(dstDir, 'config.json'), { ...config, num_hidden_layers: after, ...(config.max_window_layers !== undefined ? { max_window_layers: after } : {}), torch_dtype: 'float32' });
  copyModelFiles(srcDir, dstDir);
  copyKeptFiles(srcDir, dstDir);
  return { layersBefore: layers, layersAfter: after, addedParameters: added };
}
