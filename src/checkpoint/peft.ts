// LoRA adapters in Hugging Face PEFT format (docs/method.md, "Adapters"), which is also our own on-disk format:
//   adapter_config.json        {peft_type: "LORA", r, lora_alpha, target_modules, base_model_name_or_path, ...}
//   adapter_model.safetensors  base_model.model.<module>.lora_A.weight [r, in], .lora_B.weight [out, r]
// so `PeftModel.from_pretrained`, vLLM and our trainer all read the same folder.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { checkManifestFile } from '../formats/manifest.js';
import type { ModelConfig } from '../model/config.js';
import { type LoraConfig, LoraAdapter, moduleName, projectionShape } from '../model/lora.js';
import { PROJECTIONS, type ProjectionName } from '../model/qwen3.js';
import { writeJsonAtomic } from '../util/atomic.js';
import { SafetensorsFile, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';
import { cut, echo } from '../util/text-file.js';

export const PEFT_CONFIG_FILE = 'adapter_config.json';
export const PEFT_WEIGHTS_FILE = 'adapter_model.safetensors';
const KEY_PREFIX = 'base_model.model.';

export interface PeftMetadata {
  /** Recorded as base_model_name_or_path. */
  baseModel: string;
}

/** Writes `adapter` as a PEFT folder (both files atomically). */
export async function savePeftAdapter(adapter: LoraAdapter, dir: string, meta: PeftMetadata): Promise<void> {
  const weights = await adapter.peftWeights();
  const tensors = new Map<string, TensorToWrite>();
  for (const [mod, w] of weights) {
    const r = adapter.config.r;
    tensors.set(`${KEY_PREFIX}${mod}.lora_A.weight`, { dtype: 'F32', shape: [r, w.inDim], data: w.a });
    tensors.set(`${KEY_PREFIX}${mod}.lora_B.weight`, { dtype: 'F32', shape: [w.outDim, r], data: w.b });
  }
  // The data's SHA-256 in the header: a copy damaged behind an intact header is refused on load.
  writeSafetensors(join(dir, PEFT_WEIGHTS_FILE), tensors, { format: 'pt' }, { dataChecksum: true });
  writeJsonAtomic(join(dir, PEFT_CONFIG_FILE), {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: meta.baseModel,
    r: adapter.config.r,
    lora_alpha: adapter.config.alpha,
    lora_dropout: adapter.config.dropout,
    target_modules: [...adapter.config.targets],
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
    revision: null,
  });
}

function fail(file: string, field: string, message: string): never {
  throw new Error(`${file}: field '${field}' ${message}`);
}

/** Reads and validates adapter_config.json into our LoRA config. */
export function readPeftConfig(dir: string): LoraConfig & { baseModel?: string } {
  const file = join(dir, PEFT_CONFIG_FILE);
  if (!existsSync(file)) throw new Error(`${file}: not found (a PEFT adapter folder needs ${PEFT_CONFIG_FILE} and ${PEFT_WEIGHTS_FILE})`);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  if (raw.peft_type !== 'LORA') fail(file, 'peft_type', `must be "LORA", got ${echo(raw.peft_type)}`);
  for (const unsupported of ['use_dora', 'use_rslora'] as const) {
    if (raw[unsupported] === true) fail(file, unsupported, 'is true, which this trainer does not support');
  }
  for (const pattern of ['rank_pattern', 'alpha_pattern'] as const) {
    const v = raw[pattern];
    if (v && typeof v === 'object' && Object.keys(v).length > 0) fail(file, pattern, 'is not empty; per-module ranks are not supported');
  }
  const r = raw.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r <= 0) fail(file, 'r', `must be a positive integer, got ${echo(r)}`);
  const alpha = raw.lora_alpha ?? r;
  if (typeof alpha !== 'number' || !(alpha > 0)) fail(file, 'lora_alpha', `must be a positive number, got ${echo(alpha)}`);
  const targets = raw.target_modules;
  if (!Array.isArray(targets) || targets.length === 0) fail(file, 'target_modules', 'must be a non-empty list of module names (regex strings are not supported)');
  for (const t of targets) {
    if (!(PROJECTIONS as readonly string[]).includes(String(t))) fail(file, 'target_modules', `names '${String(t)}', not one of ${PROJECTIONS.join(', ')}`);
  }
  const dropout = typeof raw.lora_dropout === 'number' ? raw.lora_dropout : 0;
  const base = typeof raw.base_model_name_or_path === 'string' ? raw.base_model_name_or_path : undefined;
  return { r, alpha, dropout, targets: targets as ProjectionName[], ...(base !== undefined ? { baseModel: base } : {}) };
}

/** Loads a PEFT folder as a named adapter for a model of `modelConfig`; every tensor checked by name and shape. */
export function loadPeftAdapter(dir: string, name: string, modelConfig: ModelConfig): LoraAdapter {
  // Inside a run's checkpoint, the adapter's files must match the checkpoint's manifest (checkpoints/step-N/solver).
  const inCheckpoint = [PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE].map((f) => checkManifestFile(dirname(resolve(dir)), `${basename(resolve(dir))}/${f}`)).find((p) => p !== undefined);
  if (inCheckpoint !== undefined) throw new Error(`${inCheckpoint}; the adapter cannot be used`);
  const config = readPeftConfig(dir);
  const path = join(dir, PEFT_WEIGHTS_FILE);
  const file = new SafetensorsFile(path);
  file.verifyDataChecksum();
  const weights = new Map<string, { a: Float32Array; b: Float32Array }>();
  // PEFT strips the adapter name on save; older files may keep ".default". Accept both spellings.
  const find = (mod: string, ab: 'lora_A' | 'lora_B'): string => {
    for (const key of [`${KEY_PREFIX}${mod}.${ab}.weight`, `${KEY_PREFIX}${mod}.${ab}.default.weight`]) if (file.has(key)) return key;
    throw new Error(`${path}: tensor '${KEY_PREFIX}${mod}.${ab}.weight' is missing (adapter_config.json targets ${mod.split('.').pop()})`);
  };
  for (let l = 0; l < modelConfig.numLayers; l++) {
    for (const p of config.targets) {
      const mod = moduleName(l, p);
      const keyA = find(mod, 'lora_A');
      const keyB = find(mod, 'lora_B');
      const { inDim, outDim } = projectionShape(modelConfig, p);
      for (const [key, want] of [
        [keyA, [config.r, inDim]],
        [keyB, [outDim, config.r]],
      ] as const) {
        const got = file.entry(key).shape;
        if (got.length !== 2 || got[0] !== want[0] || got[1] !== want[1]) {
          throw new Error(`${path}: tensor '${key}' has shape ${JSON.stringify(got)}, expected ${JSON.stringify(want)} (r = ${config.r})`);
        }
      }
      const w = { a: file.readFloat32(keyA), b: file.readFloat32(keyB) };
      checkFinite(path, keyA, w.a);
      checkFinite(path, keyB, w.b);
      weights.set(mod, w);
    }
  }
  // After the modules it lists are found: a tensor left over is one the load would drop.
  checkEveryTensorIsRead(dir, path, file, config.targets, modelConfig.numLayers);
  return LoraAdapter.fromPeftWeights(name, modelConfig, config, weights);
}

/** A NaN or ±Inf in an adapter weight (damaged bytes, or a diverged run) would make every output NaN: refused. */
function checkFinite(path: string, key: string, values: Float32Array): void {
  const i = values.findIndex((v) => !Number.isFinite(v));
  if (i >= 0) throw new Error(`${path}: tensor '${key}' holds ${String(values[i])} at index ${i}: the adapter is damaged (or its run diverged) and cannot be used`);
}

/**
 * Every tensor of the weights file must be one the load reads: LoRA weights of a projection that
 * target_modules leaves out would be dropped without a word (the adapter would load as a different one), and
 * a tensor of another layer or another kind (lm_head, embeddings, DoRA magnitudes) means the folder is not an
 * adapter for this model in the layout we read. Either is refused, naming the files and what is left over.
 */
function checkEveryTensorIsRead(dir: string, path: string, file: SafetensorsFile, targets: readonly ProjectionName[], numLayers: number): void {
  const read = new Set<string>();
  const other = new Map<string, ProjectionName>();
  for (let l = 0; l < numLayers; l++) {
    for (const p of PROJECTIONS) {
      for (const ab of ['lora_A', 'lora_B']) {
        for (const key of [`${KEY_PREFIX}${moduleName(l, p)}.${ab}.weight`, `${KEY_PREFIX}${moduleName(l, p)}.${ab}.default.weight`]) {
          if (targets.includes(p)) read.add(key);
          else other.set(key, p);
        }
      }
    }
  }
  const untargeted = new Set<ProjectionName>();
  const unknown: string[] = [];
  for (const name of file.tensors.keys()) {
    if (read.has(name)) continue;
    const p = other.get(name);
    if (p !== undefined) untargeted.add(p);
    else unknown.push(name);
  }
  if (untargeted.size > 0) {
    throw new Error(
      `${path} holds LoRA weights for ${[...untargeted].sort().join(', ')}, which ${join(dir, PEFT_CONFIG_FILE)} does not list in target_modules (${targets.join(', ')}): ` +
        'loading would drop them; add them to target_modules or remove their tensors',
    );
  }
  if (unknown.length > 0) {
    const shown = unknown.sort().slice(0, 5).map((n) => cut(n));
    throw new Error(`${path} holds ${unknown.length} tensor${unknown.length === 1 ? '' : 's'} no LoRA module of the model reads: ${shown.join(', ')}${unknown.length > shown.length ? ', …' : ''}`);
  }
}
