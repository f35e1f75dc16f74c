// The embedded default model: a tiny random Qwen3 with the real tokenizer, made on first use, so that
// `npx sesa-train` runs end to end on a fresh machine with no download.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint } from './make-tiny.js';

export const TINY_DEFAULT_NAME = 'tiny';

/** Where sesa keeps its own files: $SESA_HOME, else $XDG_CACHE_HOME/sesa, else ~/.cache/sesa. */
export function sesaHome(): string {
  if (process.env.SESA_HOME) return process.env.SESA_HOME;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sesa');
}

/** The tiny default model's folder, made (deterministically, seed 0) when it does not exist yet. */
export function ensureTinyDefaultModel(log: (line: string) => void): string {
  const dir = join(sesaHome(), 'models', 'tiny-qwen3');
  if (!existsSync(join(dir, 'model.safetensors'))) {
    log(`making the tiny default model in ${dir} (random weights, real Qwen3 tokenizer) ...`);
    makeTinyCheckpoint({ out: dir, arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, vocab: 'full', tie: true, seed: 0 });
  }
  return dir;
}
