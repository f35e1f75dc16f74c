// AdamW state on disk: moments as an F32 safetensors file (exact) and the step count in its metadata, so a
// resumed run continues bit for bit.
import { join } from 'node:path';
import type { AdamWState } from '../rl/optimizer.js';
import { SafetensorsFile, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';

export const OPTIMIZER_FILE = 'optimizer.safetensors';

export function saveOptimizerState(dir: string, state: AdamWState): void {
  const tensors = new Map<string, TensorToWrite>();
  for (const [k, m] of Object.entries(state.m)) tensors.set(`m.${k}`, { dtype: 'F32', shape: [m.length], data: m });
  for (const [k, v] of Object.entries(state.v)) tensors.set(`v.${k}`, { dtype: 'F32', shape: [v.length], data: v });
  writeSafetensors(join(dir, OPTIMIZER_FILE), tensors, { format: 'sesa-adamw', step: String(state.step) });
}

export function loadOptimizerState(dir: string): AdamWState {
  const path = join(dir, OPTIMIZER_FILE);
  const file = new SafetensorsFile(path);
  const step = Number(file.metadata.step);
  if (file.metadata.format !== 'sesa-adamw' || !Number.isInteger(step) || step < 0) {
    throw new Error(`${path}: metadata must have format 'sesa-adamw' and an integer 'step' (got ${JSON.stringify(file.metadata)})`);
  }
  const m: Record<string, Float32Array> = {};
  const v: Record<string, Float32Array> = {};
  for (const name of file.tensors.keys()) {
    const [kind, ...rest] = name.split('.');
    const key = rest.join('.');
    if (kind === 'm') m[key] = file.readFloat32(name);
    else if (kind === 'v') v[key] = file.readFloat32(name);
    else throw new Error(`${path}: unexpected tensor '${name}' (expected m.<param> or v.<param>)`);
  }
  return { step, m, v };
}
