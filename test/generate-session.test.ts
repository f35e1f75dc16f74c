// The KV cache kept across tool turns: a sequence generated over three turns, with "observations" appended
// between them, has the same log-probs as the whole sequence scored from scratch (≤ 1e-5), on cpu and wasm.
// Each turn runs only the new tokens through the model, rows with the same prompt share one prefill, and
// nothing leaks.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { GenerationSession, type Generation } from '../src/model/generate.js';
import { CausalLM, type ForwardOptions } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend, tf } from '../src/tensor/backend.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-session-'));
const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 96, vocab: 320, seed: 31 });
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Records the [B, T] of every forward call (a spy on the real model, not a double). */
function spyForward(model: CausalLM): Array<[number, number]> {
  const calls: Array<[number, number]> = [];
  const original = model.forward.bind(model);
  model.forward = (ids: number[][], opts?: ForwardOptions) => {
    calls.push([ids.length, (ids[0] ?? []).length]);
    return original(ids, opts);
  };
  return calls;
}

describe.each(['cpu', 'wasm'] as const)('generation session on %s', (backend) => {
  it('three turns with observations equal scoring from scratch; only new tokens run; shared prompts prefill once', async () => {
    await initBackend(backend);
    const model = await CausalLM.load(dir);
    const before = tf.memory().numTensors;
    const calls = spyForward(model);
    const prompts = [
      [1, 2, 3, 4, 5, 6, 7],
      [1, 2, 3, 4, 5, 6, 7],
      [40, 41, 42],
    ];
    const observations = [
      [
        [100, 101, 102],
        [103, 104, 105, 106, 107, 108],
        [109],
      ],
      [[110], [111, 112], [113, 114, 115, 116]],
    ];
    const budgets = [
      [6, 9, 4],
      [5, 3, 7],
      [4, 4, 70],
    ];
    const seqs = prompts.map((p) => [...p]);
    const generated: Array<Array<{ start: number; gen: Generation }>> = prompts.map(() => []);
    const session = new GenerationSession(model);
    try {
      for (let turn = 0; turn < 3; turn++) {
        const callsBefore = calls.length;
        const out = await session.generate(
          seqs.map((ids, key) => ({ key, ids: [...ids], maxNewTokens: (budgets[turn] as number[])[key] as number })),
          { maxNewTokens: 100, temperature: 1, seed: 11 + turn, stopTokenIds: [] },
        );
        const first = calls[callsBefore] as [number, number];
        if (turn === 0) {
          // Two distinct prompts: one prefill of 2 rows × 7 tokens serves all three rows.
          expect(first).toEqual([2, 7]);
        } else {
          // Only the last sampled token and the observation run: 1 + the longest observation.
          const longest = Math.max(...(observations[turn - 1] as number[][]).map((o) => o.length));
          expect(first).toEqual([3, 1 + longest]);
        }
        out.forEach((g, key) => {
          expect(g.ids).toHaveLength((budgets[turn] as number[])[key] as number);
          expect(g.finishReason).toBe('length');
          (generated[key] as Array<{ start: number; gen: Generation }>).push({ start: (seqs[key] as number[]).length, gen: g });
          (seqs[key] as number[]).push(...g.ids);
          if (turn < 2) (seqs[key] as number[]).push(...((observations[turn] as number[][])[key] as number[]));
        });
      }
      // The two rows with one prompt sampled with their own RNG streams.
      expect(generated[0]?.[0]?.gen.ids).not.toEqual(generated[1]?.[0]?.gen.ids);
      // Row 2's cache grew past one block (64 slots) during the last turn.
      expect((seqs[2] as number[]).length).toBeGreaterThan(64);
    } finally {
      session.close();
    }
    const scored = await scoreBatch(model, seqs);
    let worst = 0;
    generated.forEach((turns, key) => {
      const lp = (scored[key] as { logprobs: number[] }).logprobs;
      for (const { start, gen } of turns) {
        gen.logprobs.forEach((v, j) => {
          worst = Math.max(worst, Math.abs(v - (lp[start + j - 1] as number)));
        });
      }
    });
    expect(worst).toBeLessThanOrEqual(1e-5);
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it("a row's samples follow its key, not its batch-mates or its position (docs/scale-out.md: sharded steps)", async () => {
    await initBackend(backend);
    const model = await CausalLM.load(dir);
    const opts = { maxNewTokens: 8, temperature: 1, seed: 9, stopTokenIds: [] };
    const run = async (rows: Array<{ key: number; ids: number[] }>): Promise<Generation[]> => {
      const session = new GenerationSession(model);
      try {
        return await session.generate(rows, opts);
      } finally {
        session.close();
      }
    };
    const together = await run([
      { key: 0, ids: [1, 2, 3, 4] },
      { key: 1, ids: [50, 51] },
      { key: 2, ids: [7, 8, 9] },
    ]);
    const alone = await run([{ key: 2, ids: [7, 8, 9] }]);
    const otherKey = await run([{ key: 4, ids: [7, 8, 9] }]);
    expect(alone[0]?.ids).toEqual(together[2]?.ids);
    for (let i = 0; i < 8; i++) expect(Math.abs((alone[0]?.logprobs[i] as number) - (together[2]?.logprobs[i] as number))).toBeLessThanOrEqual(1e-5);
    // The key is what the stream derives from: the same prompt under another key samples differently.
    expect(otherKey[0]?.ids).not.toEqual(alone[0]?.ids);
    model.dispose();
  });

  it('keeps nothing after close, and refuses ids that do not extend the kept sequence', async () => {
    await initBackend(backend);
    const model = await CausalLM.load(dir);
    const before = tf.memory().numTensors;
    const session = new GenerationSession(model);
    const a = await session.generate([{ key: 7, ids: [1, 2, 3] }], { maxNewTokens: 3, temperature: 0, stopTokenIds: [] });
    expect(session.keys).toEqual([7]);
    expect(session.keptBytes()).toBeGreaterThan(0);
    await expect(session.generate([{ key: 7, ids: [1, 2, 9, ...(a[0]?.ids ?? [])] }], { maxNewTokens: 2, temperature: 0, stopTokenIds: [] })).rejects.toThrow(
      /do not extend/,
    );
    session.close();
    expect(session.keys).toEqual([]);
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });
});
