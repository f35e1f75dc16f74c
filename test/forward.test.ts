// Our tfjs forward against an independent float64 implementation (test/helpers/reference-forward.ts), on the
// cpu and wasm backends, for the three architecture variants; plus the KV cache and left padding.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ReferenceModel } from './helpers/reference-forward.js';

const CONFIGS: Record<string, Omit<MakeTinyOptions, 'out'>> = {
  'qwen3 tied, head_dim ≠ hidden/heads': { arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, vocab: 320, tie: true, seed: 11 },
  'qwen2 q/k/v biases, no QK norm': { arch: 'qwen2', hidden: 48, heads: 6, kvHeads: 2, intermediate: 80, vocab: 310, tie: false, seed: 12 },
  'llama untied, llama3 rope scaling': {
    arch: 'llama',
    hidden: 64,
    heads: 4,
    kvHeads: 1,
    intermediate: 112,
    vocab: 300,
    tie: false,
    seed: 13,
    ropeTheta: 500000,
    ropeScaling: { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 32 },
  },
};

function randomSequences(seed: number, lengths: number[], vocab: number): number[][] {
  const rng = new Rng(seed);
  return lengths.map((n) => Array.from({ length: n }, () => rng.int(vocab)));
}

let root: string;
const dirs: Record<string, string> = {};

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-forward-'));
  for (const [name, cfg] of Object.entries(CONFIGS)) {
    dirs[name] = makeTinyCheckpoint({ ...cfg, out: join(root, cfg.arch ?? 'm') }).dir;
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

for (const backend of ['wasm', 'cpu'] as const) {
  describe(`forward on ${backend} vs float64 reference`, () => {
    beforeAll(async () => {
      await initBackend(backend);
    });

    for (const name of Object.keys(CONFIGS)) {
      it(`${name}: left-padded batch of 3 sequences (64-80 tokens), |Δ log-prob| ≤ 1e-4`, async () => {
        const dir = dirs[name] as string;
        const model = await CausalLM.load(dir);
        const ref = new ReferenceModel(dir);
        const seqs = randomSequences(7, [64, 80, 71], model.config.vocabSize);
        const ours = await scoreBatch(model, seqs);
        let maxErr = 0;
        seqs.forEach((s, b) => {
          const lp = ref.logProbs(s);
          const got = (ours[b] as { logprobs: number[] }).logprobs;
          expect(got).toHaveLength(s.length - 1);
          for (let i = 0; i + 1 < s.length; i++) {
            maxErr = Math.max(maxErr, Math.abs(((lp[i] as Float64Array)[s[i + 1] as number] as number) - (got[i] as number)));
          }
        });
        expect(maxErr).toBeLessThanOrEqual(1e-4);
        model.dispose();
      });
    }
  });
}

describe('KV cache and padding (wasm)', () => {
  let model: CausalLM;
  beforeAll(async () => {
    await initBackend('wasm');
    model = await CausalLM.load(dirs['qwen3 tied, head_dim ≠ hidden/heads'] as string);
  });
  afterAll(() => model.dispose());

  it('incremental decoding through the cache equals full recomputation (≤ 1e-5)', async () => {
    const [seq] = randomSequences(3, [40], model.config.vocabSize) as [number[]];
    const full = model.forward([seq]);
    const cache = model.newCache(1);
    const parts: tf.Tensor3D[] = [];
    // A prefill chunk, then single tokens, then a chunk of several: every path the cache has.
    for (const [a, b] of [
      [0, 17],
      [17, 18],
      [18, 19],
      [19, 31],
      [31, 40],
    ] as const) {
      parts.push(model.forward([seq.slice(a, b)], { cache }));
    }
    const incremental = tf.concat(parts, 1);
    const diff = tf.max(tf.abs(tf.sub(full, incremental)));
    expect((await diff.data())[0]).toBeLessThanOrEqual(1e-5);
    tf.dispose([full, incremental, diff, ...parts]);
    cache.dispose();
  });

  it('attention over query blocks (a small score budget) equals attention in one block (≤ 1e-6)', async () => {
    const seqs = randomSequences(6, [30, 30], model.config.vocabSize);
    const mask = [seqs[0]!.map(() => 1), seqs[1]!.map((_, i) => (i < 4 ? 0 : 1))];
    const whole = model.forward(seqs, { attentionMask: mask });
    // B·H·S = 2·4·30 = 240 scores per query row: a budget of 1000 gives blocks of 4 rows (8 blocks).
    // Without a cache each block also stops at its last query's key (later keys are masked for all its rows).
    const blocked = model.forward(seqs, { attentionMask: mask, attentionScoreBudget: 1000 });
    // Real tokens only: a padding row sees no real key, so its softmax is uniform over whatever keys its block
    // forms (all 30 in one block, fewer in a causal block); nothing downstream reads it.
    const real = tf.tensor3d(mask.flat(), [2, 30, 1]);
    const diff = tf.max(tf.mul(tf.abs(tf.sub(whole, blocked)), real));
    expect((await diff.data())[0]).toBeLessThanOrEqual(1e-6);
    tf.dispose([whole, blocked, diff, real]);
  });

  it('a left-padded batch gives each row what it gives alone', async () => {
    const seqs = randomSequences(5, [9, 33, 20], model.config.vocabSize);
    const batched = await scoreBatch(model, seqs, { padTokenId: 5 });
    for (let b = 0; b < seqs.length; b++) {
      const [alone] = await scoreBatch(model, [seqs[b] as number[]]);
      const got = (batched[b] as { logprobs: number[]; greedyNext: number[] });
      const want = alone as { logprobs: number[]; greedyNext: number[] };
      const err = Math.max(...got.logprobs.map((v, i) => Math.abs(v - (want.logprobs[i] as number))));
      expect(err).toBeLessThanOrEqual(1e-5);
      expect(got.greedyNext).toEqual(want.greedyNext);
    }
  });

  it('rejects ids outside the vocabulary and ragged rows with clear errors', async () => {
    await expect(scoreBatch(model, [[1, model.config.vocabSize]])).rejects.toThrow(/outside the vocabulary/);
    expect(() => model.forward([[1, 2], [3]])).toThrow(/equal-length rows/);
  });
});
