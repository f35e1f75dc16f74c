// Growing a Qwen3 checkpoint to a larger shape (docs/world.md, "Growing the warm start"): widened first
// (./widen.ts: hidden size, heads, MLP), then deepened (./deepen.ts: identity layers appended at the new width).
// Both steps preserve the function, so the grown model computes the source's logits (to f32 rounding) and SFT
// continues from what the source had learned, with the new capacity starting at zero output.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelConfig } from '../model/config.js';
import { DEEPEN_DEFAULTS, deepenCheckpoint } from './deepen.js';
import { WIDEN_DEFAULTS, widenCheckpoint } from './widen.js';

export interface GrowShape {
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
}

export interface GrowResult {
  from: GrowShape;
  to: GrowShape;
  parametersBefore: number;
  parametersAfter: number;
}

/** The shape of a model folder, as a GrowShape. */
export function shapeOf(dir: string): GrowShape {
  const c = loadModelConfig(dir);
  return { layers: c.numLayers, hidden: c.hiddenSize, heads: c.numHeads, kvHeads: c.numKvHeads, intermediate: c.intermediateSize };
}

/** Grows the model in `srcDir` to `to` (every size ≥ the source's), writing `dstDir`; `seed` draws the new random weights. */
export function growCheckpoint(srcDir: string, dstDir: string, to: GrowShape, seed: number): GrowResult {
  const from = shapeOf(srcDir);
  if (to.layers < from.layers) throw new Error(`grow: layers must be ≥ the source's ${from.layers} (${join(srcDir, 'config.json')}), got ${to.layers}`);
  const tmp = mkdtempSync(join(tmpdir(), 'sesa-grow-'));
  try {
    const wide = join(tmp, 'wide');
    const w = widenCheckpoint(srcDir, to.layers > from.layers ? wide : dstDir, { ...WIDEN_DEFAULTS, seed, hidden: to.hidden, heads: to.heads, kvHeads: to.kvHeads, intermediate: to.intermediate });
    let after = w.parametersAfter;
    if (to.layers > from.layers) after += deepenCheckpoint(wide, dstDir, { ...DEEPEN_DEFAULTS, seed: seed + 1, addLayers: to.layers - from.layers }).addedParameters;
    return { from, to, parametersBefore: w.parametersBefore, parametersAfter: after };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
