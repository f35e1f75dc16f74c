// Skill-bank benchmarks: retrieval latency over 800 cards, admission (dedup) cost for 30 candidates, and
// embedding throughput of each embedder. The e5 rows use the generated tiny encoder (no E5 weights exist
// here), so they measure the tokenizer + onnxruntime pipeline overhead, not E5-base's compute; the
// "768-d" rows time the vector math at E5-base's width with random unit vectors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Rng } from '../src/util/rng.js';
import { type Candidate, admit } from '../src/skills/consolidate.js';
import { SkillBank } from '../src/skills/bank.js';
import { topK } from '../src/skills/top-k.js';
import { type SkillCard, cardEmbeddingText, emptyStats } from '../src/skills/card.js';
import { E5Embedder } from '../src/skills/e5.js';
import { type Embedder, l2normalize } from '../src/skills/embedder.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { writeTinyE5 } from '../src/skills/tiny-e5.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

const WORDS = (
  'river film born director author album team country capital award war king queen son daughter city river mountain ' +
  'novel song band company founder year date population language election party church school university ship battle ' +
  'bridge island painter composer actor singer player coach stadium museum treaty empire dynasty province district'
).split(' ');

function syntheticCards(n: number, seed: number): SkillCard[] {
  const rng = new Rng(seed);
  const pick = (): string => WORDS[Math.floor(rng.next() * WORDS.length)] as string;
  return Array.from({ length: n }, (_, i) => ({
    id: `bench-${String(i).padStart(4, '0')}`,
    category: 'bench',
    source: 'mined' as const,
    description: `Strategy ${i}: when the question links a ${pick()} to a ${pick()} and a ${pick()}, search the ${pick()} first, then confirm the ${pick()} with a second passage about the ${pick()}.`,
    triggers: [pick(), `${pick()} of the ${pick()}`, `${pick()} ${i}`],
    avoid: [`confusing the ${pick()} with the ${pick()}`],
    queries: [`[${pick()}] ${pick()} [year]`],
    stats: emptyStats(),
    createdStep: 0,
    bankVersion: 0,
  }));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

async function timeIt(reps: number, f: () => Promise<unknown> | unknown): Promise<number> {
  await f(); // warm-up
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await f();
    t.push(performance.now() - t0);
  }
  return median(t);
}

function randomUnit(rng: Rng, dim: number): Float32Array {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i++) v[i] = rng.normal();
  return l2normalize(v);
}

const QUESTIONS = [
  'Which royalist commander in the English Civil War was born in Prague in 1619 as the younger son of Frederick V?',
  'How many years after the founding of the company was its founder born?',
  'What is the stage name of the singer who performed the song at the award ceremony?',
  'Which river flows through the capital of the country where the author of the novel was born?',
];

export const suite: BenchSuite = {
  name: 'skills',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const reps = ctx.quick ? 5 : 30;
    const dir = mkdtempSync(join(tmpdir(), 'sesa-bench-skills-'));
    try {
      ctx.log('skills: generating the tiny e5 encoder');
      const tiny = writeTinyE5(join(dir, 'tiny-e5'), { hidden: 32 });
      const embedders: Array<{ engine: string; make: () => Promise<Embedder> }> = [
        { engine: 'lexical', make: async () => new LexicalEmbedder() },
        { engine: 'e5-tiny(onnxruntime)', make: () => E5Embedder.load({ model: tiny.dir, batchSize: 32 }) },
      ];
      const cards = syntheticCards(800 - 18, 1);
      for (const { engine, make } of embedders) {
        const emb = await make();
        const bank = await SkillBank.open(join(dir, `${engine.replace(/\W/g, '_')}.json`), { embedder: emb });
        await bank.importCards(cards);
        ctx.log(`skills: ${engine} bank of ${bank.cards.length} cards`);
        let qi = 0;
        const ms = await timeIt(reps, () => bank.retrieve(QUESTIONS[qi++ % QUESTIONS.length] as string, 3));
        rows.push({ case: `retrieve top-3 of ${bank.cards.length} cards (embed question + score)`, engine, metric: 'latency', value: ms, unit: 'ms' });

        // Admission: embed 30 candidate cards, then compare each with the bank and the round (docs/method.md, "The skill bank").
        const cands = syntheticCards(30, 99).map((c) => ({ ...c, id: `cand-${c.id}` }));
        const texts = cands.map(cardEmbeddingText);
        const vecs = await emb.embed(texts, 'query');
        const candidates: Candidate[] = cands.map((c, i) => ({ fromKey: c.id, content: c, vector: vecs[i] as Float32Array }));
        const bankVecs = await emb.embed(bank.cards.map(cardEmbeddingText), 'query');
        const pool = bank.cards.map((c, i) => ({ id: c.id, vector: bankVecs[i] as Float32Array }));
        const admitMs = await timeIt(reps, () => admit(candidates, pool, bank.dedupThreshold));
        rows.push({ case: `admission of 30 candidates vs ${pool.length} cards (cosines only)`, engine, metric: 'latency', value: admitMs, unit: 'ms', notes: `dim ${emb.info.dim}` });
        const embedMs = await timeIt(Math.max(3, Math.floor(reps / 3)), () => emb.embed(texts, 'query'));
        rows.push({ case: 'admission of 30 candidates (embedding them)', engine, metric: 'latency', value: embedMs, unit: 'ms' });

        const many = syntheticCards(256, 7).map(cardEmbeddingText);
        const tputMs = await timeIt(ctx.quick ? 2 : 5, () => emb.embed(many, 'passage'));
        rows.push({ case: 'embedding throughput (256 card texts)', engine, metric: 'throughput', value: (256 / tputMs) * 1000, unit: 'texts/s', notes: `dim ${emb.info.dim}` });
        await bank.dispose();
      }

      // The vector math at E5-base width (768), random unit vectors.
      const rng = new Rng(5);
      const v768 = Array.from({ length: 800 }, () => randomUnit(rng, 768));
      const cards800 = syntheticCards(800, 3);
      const q = randomUnit(rng, 768);
      rows.push({ case: 'score + top-3 of 800 cards', engine: '768-d vectors', metric: 'latency', value: await timeIt(reps * 3, () => topK(cards800, v768, q, 3)), unit: 'ms' });
      const c768: Candidate[] = Array.from({ length: 30 }, (_, i) => ({ fromKey: `c${i}`, content: cards800[i] as SkillCard, vector: randomUnit(rng, 768) }));
      const pool768 = cards800.map((c, i) => ({ id: c.id, vector: v768[i] as Float32Array }));
      rows.push({ case: 'admission of 30 candidates vs 800 cards (cosines only)', engine: '768-d vectors', metric: 'latency', value: await timeIt(reps, () => admit(c768, pool768, 0.93)), unit: 'ms' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
