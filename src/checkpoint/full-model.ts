// A fully fine-tuned model saved as a Hugging Face folder (docs/sft.md): model.safetensors with every weight
// under its Hugging Face name and [out, in] layout, plus the source folder's config, generation config and
// tokenizer files copied as they are, so the project's loader (and transformers) reads it like the original.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CausalLM } from '../model/qwen3.js';
import { writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { type SafetensorsDtype, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';

export type SaveDtype = 'f32' | 'f16' | 'bf16';

const ST_DTYPE: Record<SaveDtype, SafetensorsDtype> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };
const TORCH_DTYPE: Record<SaveDtype, string> = { f32: 'float32', f16: 'float16', bf16: 'bfloat16' };

/** Files copied from the source model folder when present (the weights are written, never copied). */
const COPIED_MODEL_FILES = [
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'chat_template.jinja',
  'special_tokens_map.json',
  'vocab.json',
  'merges.txt',
] as const;

/** Weights the model holds transposed ([in, out]) relative to the file ([out, in]). */
function heldTransposed(name: string): boolean {
  return name.endsWith('_proj.weight') || name === 'lm_head.weight';
}

/** Copies COPIED_MODEL_FILES that `sourceDir` holds into `outDir`, each written atomically. */
export function copyModelFiles(sourceDir: string, outDir: string): void {
  for (const file of COPIED_MODEL_FILES) {
    const src = join(sourceDir, file);
    if (existsSync(src)) writeFileAtomic(join(outDir, file), readFileSync(src));
  }
}

/** A model folder's config.json as written (every field kept, for a derived folder's config), or an error naming the file. */
export function readConfigJson(dir: string): Record<string, unknown> {
  const configPath = join(dir, 'config.json');
  try {
    return JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${configPath}: cannot read the model config (${(err as Error).message})`);
  }
}

/**
 * Writes `model`'s trainable weights to `outDir` in the Hugging Face layout (`dtype` f32 keeps them exact),
 * with config.json (torch_dtype set to match) and the tokenizer files of `sourceDir`.
 */
export async function saveFullModel(model: CausalLM, sourceDir: string, outDir: string, dtype: SaveDtype = 'f32'): Promise<void> {
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, v] of model.variables()) {
    const data = (await v.data()) as Float32Array;
    if (heldTransposed(name)) {
      const [inDim, outDim] = v.shape as [number, number];
      const t = new Float32Array(data.length);
      for (let i = 0; i < inDim; i++) for (let o = 0; o < outDim; o++) t[o * inDim + i] = data[i * outDim + o] as number;
      tensors.set(name, { dtype: ST_DTYPE[dtype], shape: [outDim, inDim], data: t });
    } else {
      tensors.set(name, { dtype: ST_DTYPE[dtype], shape: [...v.shape], data: Float32Array.from(data) });
    }
  }
  writeSafetensors(join(outDir, 'model.safetensors'), tensors, { format: 'pt' });
  writeJsonAtomic(join(outDir, 'config.json'), { ...readConfigJson(sourceDir), torch_dtype: TORCH_DTYPE[dtype] });
  copyModelFiles(sourceDir, outDir);
}

