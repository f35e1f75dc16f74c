// Generation: the KV-cache decode against teacher-forced scoring, seeded sampling, and per-row stopping.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { generate, type TextDecoder } from '../src/model/generate.js';
import { CausalLM } from '../src/model/qwen3.js';
import { sampleToken } from '../src/model/sampling.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

/** Test double of a tokenizer: token id i decodes to the letter `a + (i mod 26)`. */
const letterDecoder: TextDecoder = {
  decode: (ids) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join(''),
};

let root: string;
let model: CausalLM;
const prompts = [
  [1, 2, 3, 4, 5],
  [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
  [42],
];

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-generate-'));
  const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, vocab: 320, seed: 21 });
  model = await CausalLM.load(dir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe('generate', () => {
  it('greedy decoding with the cache equals teacher-forced scoring of the result (ids and log-probs ≤ 1e-5)', async () => {
    const out = await generate(model, prompts, { maxNewTokens: 24, temperature: 0, stopTokenIds: [] });
    const scored = await scoreBatch(model, prompts.map((p, b) => [...p, ...(out[b]?.ids ?? [])]));
    for (let b = 0; b < prompts.length; b++) {
      const g = out[b] as { ids: number[]; logprobs: number[]; finishReason: string };
      const s = scored[b] as { logprobs: number[]; greedyNext: number[] };
      const n = (prompts[b] as number[]).length;
      expect(g.ids).toHaveLength(24);
      expect(g.finishReason).toBe('length');
      // Each generated token is the argmax after its prefix, and its log-prob matches the recomputation.
      expect(g.ids).toEqual(s.greedyNext.slice(n - 1, n - 1 + 24));
      const err = Math.max(...g.logprobs.map((lp, i) => Math.abs(lp - (s.logprobs[n - 1 + i] as number))));
      expect(err).toBeLessThanOrEqual(1e-5);
    }
  });

  it('sampling: the same seed gives the same output; another seed differs; log-probs are the policy’s (T = 1)', async () => {
    const opts = { maxNewTokens: 16, temperature: 1, seed: 5, stopTokenIds: [] };
    const a = await generate(model, prompts, opts);
    const b = await generate(model, prompts, opts);
    const c = await generate(model, prompts, { ...opts, seed: 6 });
    expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
    expect(a.map((r) => r.ids)).not.toEqual(c.map((r) => r.ids));
    const scored = await scoreBatch(model, prompts.map((p, i) => [...p, ...(a[i]?.ids ?? [])]));
    for (let i = 0; i < prompts.length; i++) {
      const n = (prompts[i] as number[]).length;
      const want = (scored[i] as { logprobs: number[] }).logprobs.slice(n - 1);
      const got = (a[i] as { logprobs: number[] }).logprobs;
      expect(Math.max(...got.map((v, j) => Math.abs(v - (want[j] as number))))).toBeLessThanOrEqual(1e-5);
    }
  });

  it("a row's samples do not depend on its batch-mates", async () => {
    const opts = { maxNewTokens: 10, temperature: 0.8, topK: 40, topP: 0.95, seed: 9, stopTokenIds: [] };
    const batch = await generate(model, prompts, opts);
    const alone = await generate(model, [prompts[0] as number[]], opts);
    expect(batch[0]?.ids).toEqual(alone[0]?.ids);
  });

  it('stops each row on its own: stop token ids, stop strings, max new tokens', async () => {
    const free = await generate(model, prompts, { maxNewTokens: 12, temperature: 0, stopTokenIds: [] });
    // Stop at the 4th token that row 1 generates greedily; other rows continue unless they hit it too.
    const stopId = free[1]?.ids[3] as number;
    const stopped = await generate(model, prompts, { maxNewTokens: 12, temperature: 0, stopTokenIds: [stopId] });
    for (let b = 0; b < prompts.length; b++) {
      const ids = free[b]?.ids as number[];
      const cut = ids.indexOf(stopId);
      const want = cut < 0 ? ids : ids.slice(0, cut + 1);
      expect(stopped[b]?.ids).toEqual(want);
      expect(stopped[b]?.finishReason).toBe(cut < 0 ? 'length' : 'eos');
    }
    // A stop string spanning two tokens of row 0's greedy text.
    const text0 = letterDecoder.decode(free[0]?.ids as number[]);
    const stop = text0.slice(5, 7);
    const byString = await generate(model, prompts, { maxNewTokens: 12, temperature: 0, stopTokenIds: [], stopStrings: [stop], tokenizer: letterDecoder });
    const r0 = byString[0] as { ids: number[]; finishReason: string; stopString?: string; text?: string };
    expect(r0.finishReason).toBe('stop');
    expect(r0.stopString).toBe(stop);
    expect(r0.text?.endsWith(stop)).toBe(true);
    expect(r0.ids).toEqual((free[0]?.ids as number[]).slice(0, r0.ids.length));
    expect(letterDecoder.decode(r0.ids.slice(0, -1)).includes(stop)).toBe(false);
  });

  it('releases every tensor it creates (live tensor count is flat across calls)', async () => {
    await generate(model, prompts, { maxNewTokens: 4, temperature: 1, seed: 1 });
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) await generate(model, prompts, { maxNewTokens: 6, temperature: 1, seed: i });
    await scoreBatch(model, prompts);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('rejects bad sampling parameters with clear errors', async () => {
    await expect(generate(model, prompts, { maxNewTokens: 2, temperature: -1 })).rejects.toThrow(/temperature/);
    await expect(generate(model, prompts, { maxNewTokens: 2, topP: 0 })).rejects.toThrow(/top-p/);
    await expect(generate(model, prompts, { maxNewTokens: 2, stopStrings: ['</search>'] })).rejects.toThrow(/tokenizer/);
  });
});

describe('sampleToken', () => {
  const row = Float32Array.from([0.1, 2.0, -1.0, 1.5, 0.3]);

  it('top-k 1 and a tiny top-p are greedy', () => {
    const rng = new Rng(1);
    for (let i = 0; i < 20; i++) {
      expect(sampleToken(row, { temperature: 1, topK: 1, topP: 1 }, rng).id).toBe(1);
      expect(sampleToken(row, { temperature: 1, topK: 0, topP: 0.01 }, rng).id).toBe(1);
    }
  });

  it('top-k 2 only ever returns the two most likely tokens, with empirical frequencies near their renormalised probabilities', () => {
    const rng = new Rng(2);
    const counts = [0, 0, 0, 0, 0];
    const n = 4000;
    for (let i = 0; i < n; i++) {
      const id = sampleToken(row, { temperature: 1, topK: 2, topP: 1 }, rng).id;
      counts[id] = (counts[id] as number) + 1;
    }
    expect([counts[0], counts[2], counts[4]]).toEqual([0, 0, 0]);
    const p1 = Math.exp(2.0) / (Math.exp(2.0) + Math.exp(1.5));
    // 4000 draws: the binomial standard deviation is ~0.008; 0.04 is five of them.
    expect(Math.abs((counts[1] as number) / n - p1)).toBeLessThan(0.04);
  });

  it('reports log softmax(logits / T) of the chosen token', () => {
    const rng = new Rng(3);
    const t = sampleToken(row, { temperature: 0.5, topK: 0, topP: 1 }, rng);
    const scaled = Array.from(row, (v) => v / 0.5);
    const lz = Math.log(scaled.reduce((a, v) => a + Math.exp(v), 0));
    expect(t.logprob).toBeCloseTo((scaled[t.id] as number) - lz, 6);
  });
});
