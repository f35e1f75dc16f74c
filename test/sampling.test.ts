// Top-k by partial selection and top-p over the top-k candidates give exactly what sorting the whole
// vocabulary gives: the same candidates, the same probabilities, and the same token for the same RNG stream.
import { describe, expect, it } from 'vitest';
import { type SamplingParams, sampleToken, topKIds, truncatedCandidates } from '../src/model/sampling.js';
import { Rng } from '../src/util/rng.js';

/** The reference: sort every id by logit (descending, ties by id), cut at k, then at the nucleus p. */
function sortedCandidates(row: Float32Array, p: SamplingParams): { ids: number[]; probs: number[] } {
  const invT = 1 / p.temperature;
  const all = Array.from({ length: row.length }, (_, i) => i).sort((a, b) => (row[b] as number) - (row[a] as number) || a - b);
  let ids = p.topK > 0 && p.topK < row.length ? all.slice(0, p.topK) : all;
  const max = Math.max(...ids.map((i) => (row[i] as number) * invT));
  let w = ids.map((i) => Math.exp((row[i] as number) * invT - max));
  if (p.topP < 1) {
    const total = w.reduce((a, b) => a + b, 0);
    let c = 0;
    let keep = w.length;
    for (let j = 0; j < w.length; j++) {
      c += (w[j] as number) / total;
      if (c >= p.topP) {
        keep = j + 1;
        break;
      }
    }
    ids = ids.slice(0, keep);
    w = w.slice(0, keep);
  }
  const total = w.reduce((a, b) => a + b, 0);
  return { ids, probs: w.map((x) => x / total) };
}

function referenceSample(row: Float32Array, p: SamplingParams, rng: Rng): number {
  const { ids, probs } = sortedCandidates(row, p);
  let u = rng.next();
  for (let j = 0; j < ids.length; j++) {
    u -= probs[j] as number;
    if (u < 0) return ids[j] as number;
  }
  return ids[ids.length - 1] as number;
}

/** A logits row with a peaked head, a flat tail and exact ties (tie order is part of the contract). */
function makeRow(V: number, seed: number, spread: number): Float32Array {
  const rng = new Rng(seed);
  const row = Float32Array.from({ length: V }, () => (rng.next() - 0.5) * spread);
  for (let i = 0; i < V; i += 37) row[i] = row[(i * 7) % V] as number;
  row[(seed * 13) % V] = spread;
  return row;
}

const GRID: SamplingParams[] = [];
for (const temperature of [0.7, 1.3]) {
  for (const topK of [0, 1, 5, 50, 999, 1000, 5000]) for (const topP of [1, 0.95, 0.5, 0.1]) if (topK > 0 || topP < 1) GRID.push({ temperature, topK, topP });
}

describe('sampling without sorting the vocabulary', () => {
  it('topKIds equals the head of the sorted order, ties by id', () => {
    const row = makeRow(1000, 3, 4);
    const sorted = Array.from({ length: 1000 }, (_, i) => i).sort((a, b) => (row[b] as number) - (row[a] as number) || a - b);
    for (const k of [1, 2, 7, 100, 999, 1000]) expect(Array.from(topKIds(row, k))).toEqual(sorted.slice(0, k));
  });

  it.each([
    [1000, 1, 8],
    [1000, 2, 1],
    [1000, 4, 30],
    [1500, 5, 0.2],
  ])('V=%i seed=%i spread=%f: same candidates and probabilities for every setting', (V, seed, spread) => {
    const row = makeRow(V, seed, spread);
    for (const p of GRID) {
      const want = sortedCandidates(row, p);
      const got = truncatedCandidates(row, p);
      expect(Array.from(got.ids), JSON.stringify(p)).toEqual(want.ids);
      const total = got.weights.reduce((a, b) => a + b, 0);
      const err = Math.max(...Array.from(got.weights, (w, j) => Math.abs(w / total - (want.probs[j] as number))));
      expect(err, JSON.stringify(p)).toBeLessThan(1e-12);
    }
  });

  it('the same RNG stream draws the same tokens as the sort-based version', () => {
    const row = makeRow(1000, 9, 6);
    for (const p of GRID) {
      const a = new Rng(42);
      const b = new Rng(42);
      const got = Array.from({ length: 40 }, () => sampleToken(row, p, a).id);
      const want = Array.from({ length: 40 }, () => referenceSample(row, p, b));
      expect(got, JSON.stringify(p)).toEqual(want);
    }
  });
});
