// The local search tool: BM25 index build time, cache load time and query latency (a batch of 32 queries,
// top 3, as one rollout batch's pending searches) over generated corpora of ~2,000 and ~20,000 passages of
// ~100 words (wiki-18 passages are 100 words). Words are drawn Zipf-like from a made-up vocabulary so that
// posting lists have realistic skew; as in English, the most frequent ranks are stopwords (which the analyzer
// drops, about 38% of tokens here). Queries are 6 words taken from random passages so that they all match.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bm25Index } from '../src/search/bm25-index.js';
import type { Passage } from '../src/search/types.js';
import { Rng } from '../src/util/rng.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

const VOCAB = 30_000;
const WORDS_PER_PASSAGE = 100;
const BATCH = 32;
const K = 3;

// Lucene's English stopwords, given the top Zipf ranks.
const STOPWORDS =
  'the of and a in to is was for on as by with that at it an be are or this but not their these they into if no such then there will'.split(
    ' ',
  );

function makeVocab(rng: Rng): string[] {
  const syll = ['ka', 'lo', 'mi', 'ren', 'to', 'vas', 'quel', 'dor', 'an', 'is', 'ur', 'bel', 'th', 'ox', 'py', 'se'];
  const words = new Set<string>(STOPWORDS);
  while (words.size < VOCAB) {
    let w = '';
    const n = 2 + rng.int(3);
    for (let i = 0; i < n; i += 1) w += syll[rng.int(syll.length)];
    words.add(w);
  }
  return [...words];
}

/** Zipf(1) sampler over ranks 0..n-1 by inverting the cumulative weights. */
function zipf(n: number): (rng: Rng) => number {
  const cdf = new Float64Array(n);
  let s = 0;
  for (let i = 0; i < n; i += 1) cdf[i] = s += 1 / (i + 1);
  return (rng) => {
    const u = rng.next() * s;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function makeCorpus(n: number, seed: number): { passages: Passage[]; queries: string[] } {
  const rng = new Rng(seed);
  const vocab = makeVocab(rng);
  const draw = zipf(VOCAB);
  const passages: Passage[] = [];
  for (let i = 0; i < n; i += 1) {
    const words: string[] = [];
    for (let j = 0; j < WORDS_PER_PASSAGE; j += 1) words.push(vocab[draw(rng)] as string);
    passages.push({ id: `g${i}`, title: `${vocab[rng.int(VOCAB)]} ${vocab[rng.int(VOCAB)]}`, text: words.join(' ') });
  }
  const queries: string[] = [];
  for (let q = 0; q < BATCH; q += 1) {
    const words = (passages[rng.int(n)] as Passage).text.split(' ');
    const start = rng.int(words.length - 6);
    queries.push(words.slice(start, start + 6).join(' '));
  }
  return { passages, queries };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export const suite: BenchSuite = {
  name: 'search',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const sizes = ctx.quick ? [2_000] : [2_000, 20_000];
    const engine = 'sesa/bm25';
    for (const n of sizes) {
      const { passages, queries } = makeCorpus(n, 1234 + n);
      const cacheDir = mkdtempSync(join(tmpdir(), 'sesa-bench-search-'));
      try {
        let t0 = performance.now();
        const built = await Bm25Index.fromPassages(passages, { cacheDir }, `generated ${n}`);
        const buildS = (performance.now() - t0) / 1000;
        const cacheMiB = statSync(built.cachePath as string).size / 2 ** 20;
        ctx.log(`search: n=${n} built in ${buildS.toFixed(2)} s (cache ${cacheMiB.toFixed(1)} MiB)`);
        rows.push({ case: `build n=${n}`, engine, metric: 'time', value: buildS, unit: 's', notes: 'index + cache write' });
        rows.push({ case: `build n=${n}`, engine, metric: 'throughput', value: n / buildS, unit: 'passages/s' });
        rows.push({ case: `cache n=${n}`, engine, metric: 'size', value: cacheMiB, unit: 'MiB' });

        t0 = performance.now();
        const idx = await Bm25Index.fromPassages(passages, { cacheDir }, `generated ${n}`);
        const loadS = (performance.now() - t0) / 1000;
        if (idx.source !== 'cache') throw new Error('search bench: the second open did not load from the cache');
        rows.push({ case: `cache load n=${n}`, engine, metric: 'time', value: loadS, unit: 's' });

        await idx.search(queries, K); // warm-up
        const reps = ctx.quick ? 5 : 15;
        const times: number[] = [];
        for (let r = 0; r < reps; r += 1) {
          t0 = performance.now();
          await idx.search(queries, K);
          times.push(performance.now() - t0);
        }
        const batchMs = median(times);
        ctx.log(`search: n=${n} batch of ${BATCH} top-${K} in ${batchMs.toFixed(1)} ms`);
        rows.push({ case: `query b${BATCH} top${K} n=${n}`, engine, metric: 'latency', value: batchMs, unit: 'ms/batch' });
        rows.push({ case: `query b${BATCH} top${K} n=${n}`, engine, metric: 'throughput', value: (BATCH * 1000) / batchMs, unit: 'queries/s' });
      } finally {
        rmSync(cacheDir, { recursive: true, force: true });
      }
    }
    return rows;
  },
};
