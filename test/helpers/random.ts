// Seeded random test inputs, from the project's own RNG (src/util/rng.ts).
import { Rng } from '../../src/util/rng.js';

/** A uniform [0, 1) generator as a function. */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

/** `n` float32-representable values uniform in [−scale, scale). */
export function randoms(n: number, seed: number, scale = 1): number[] {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => Math.fround((r.next() * 2 - 1) * scale));
}
