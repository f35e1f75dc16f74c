// A tiny random model on a world tokenizer (a BPE of 400 tokens trained on a world's passages), for tests that
// train in a world: mechanics only, a random model learns nothing.
import { join } from 'node:path';
import { initDemoModel } from '../../src/world/demo-model.js';
import { trainBpe } from '../../src/world/tokenizer.js';
import { World } from '../../src/world/world.js';

/** Writes the model under `root`/model and returns its folder. */
export function tinyWorldModel(root: string): string {
  const texts = new World({ seed: 11, passages: 300 }).passages.map((p) => `${p.title}\n${p.text}`);
  const bpe = trainBpe(texts, { vocabSize: 400 });
  return initDemoModel(join(root, 'model'), { layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, vocabSize: 400, ropeTheta: 10_000, qkNormWeight: 1 }, bpe, 1).dir;
}
