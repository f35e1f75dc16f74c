// Sampling one token from a Qwen3-sized logits row (151,936 ids): top-k/top-p by partial selection
// (src/model/sampling.ts) against sorting the whole row, the way it was done before; and the full-distribution
// path for reference. Times per row, in JS (the model's logits are already read back).
import { type SamplingParams, sampleToken } from '../src/model/sampling.js';
import { Rng } from '../src/util/rng.js';
import { median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

const V = 151_936;

/** The sort-based top-k/top-p of before, kept here as the baseline. */
function sortedSample(row: Float32Array, p: SamplingParams, rng: Rng): number {
  const invT = 1 / p.temperature;
  const all = Array.from({ length: row.length }, (_, i) => i).sort((a, b) => (row[b] as number) - (row[a] as number) || a - b);
  let ids = p.topK > 0 && p.topK < row.length ? all.slice(0, p.topK) : all;
  const max = (row[ids[0] as number] as number) * invT;
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
  let u = rng.next() * w.reduce((a, b) => a + b, 0);
  for (let j = 0; j < ids.length; j++) {
    u -= w[j] as number;
    if (u < 0) return ids[j] as number;
  }
  return ids[ids.length - 1] as number;
}

function timePerRow(f: () => void, rows: number): number {
  f();
  const times: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    for (let i = 0; i < rows; i++) f();
    times.push((performance.now() - t) / rows);
  }
  return median(times);
}

export const suite: BenchSuite = {
  name: 'sampling',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rng = new Rng(1);
    // Logits of a trained model are peaked: a few ids far above a broad tail.
    const row = Float32Array.from({ length: V }, () => (rng.next() - 0.5) * 6);
    for (let i = 0; i < 20; i++) row[rng.int(V)] = 8 + rng.next() * 4;
    const rows: BenchRow[] = [];
    const settings: Array<[string, SamplingParams]> = [
      ['top-k 50', { temperature: 1, topK: 50, topP: 1 }],
      ['top-k 50, top-p 0.95', { temperature: 1, topK: 50, topP: 0.95 }],
      ['top-p 0.95', { temperature: 1, topK: 0, topP: 0.95 }],
    ];
    const n = ctx.quick ? 3 : 10;
    for (const [name, p] of settings) {
      const ours = timePerRow(() => void sampleToken(row, p, rng), n);
      const sorted = timePerRow(() => void sortedSample(row, p, rng), n);
      ctx.log(`${name}: ${ours.toFixed(2)} ms/row (partial selection), ${sorted.toFixed(2)} ms/row (sort)`);
      const c = `sample V=${V.toLocaleString('en-US')}, ${name}`;
      rows.push({ case: c, engine: 'sesa (partial selection)', metric: 'time', value: ours, unit: 'ms/row' });
      rows.push({ case: c, engine: 'sort-based (before)', metric: 'time', value: sorted, unit: 'ms/row', notes: 'sorting all ids, as the sampler did before' });
    }
    const full = timePerRow(() => void sampleToken(row, { temperature: 1, topK: 0, topP: 1 }, rng), n);
    rows.push({ case: `sample V=${V.toLocaleString('en-US')}, full distribution`, engine: 'sesa', metric: 'time', value: full, unit: 'ms/row', notes: 'two passes, no truncation' });
    return rows;
  },
};
