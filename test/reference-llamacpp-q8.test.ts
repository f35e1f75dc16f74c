// The 8-bit base against llama.cpp's: our native-int8 forward (src/tensor/block-int8.ts) and llama.cpp on a Q8_0
// export of the same checkpoint quantize the same blocks of 32 (ours keeps the scale in f32, Q8_0 in f16), and
// both round the activations to 8 bits inside the product. Each is measured against the f32 forward; the two
// should be as close to each other as to it. The matrices are large enough (≥ 2^18 floats) to be held natively.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportGguf } from '../src/checkpoint/export-gguf.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { ortAvailability } from '../src/tensor/ort-binding.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { llamaCppMissing, llamaCppTitle, openReference } from './helpers/llama-cpp-reference.js';

/** |Δ log-prob| allowed between any two of the three (measured: see the log line; about 2× margin). */
const Q8_TOL = 0.15;

const root = mkdtempSync(join(tmpdir(), 'sesa-llamacpp-q8-'));
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await initBackend('wasm', { threads: 1 });
});

function maxAbsDiff(a: number[], b: number[]): number {
  expect(a.length).toBe(b.length);
  return a.reduce((m, v, i) => Math.max(m, Math.abs(v - (b[i] as number))), 0);
}

describe.skipIf(llamaCppMissing !== undefined || !ortAvailability().ok)(llamaCppTitle('llama.cpp Q8_0 vs our native-int8'), () => {
  let dir: string;
  beforeAll(() => {
    dir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 2, hidden: 512, heads: 8, kvHeads: 2, headDim: 64, intermediate: 1024, vocab: 512, tie: true, seed: 9, dtype: 'f32' }).dir;
  });

  async function logprobs(backend: 'native' | 'native-int8', ids: number[]): Promise<number[]> {
    await initBackend(backend, { threads: 2 });
    const model = await CausalLM.load(dir);
    try {
      const [scored] = await scoreBatch(model, [ids]);
      return scored?.logprobs ?? [];
    } finally {
      model.dispose();
    }
  }

  it(`log-probs of the two 8-bit bases agree within ${Q8_TOL}, as each does with the f32 forward`, async () => {
    const path = join(root, 'm-q8_0.gguf');
    await exportGguf(dir, path, { dtype: 'q8_0' });
    const rng = new Rng(31);
    const ids = Array.from({ length: 64 }, () => rng.int(500));
    const f32 = await logprobs('native', ids);
    const int8 = await logprobs('native-int8', ids);
    const ref = await openReference(path, { contextSize: 128 });
    let llama: number[];
    try {
      llama = await ref.logprobsOf(ids);
    } finally {
      await ref.dispose();
    }
    const oursVsLlama = maxAbsDiff(int8, llama);
    const oursVsF32 = maxAbsDiff(int8, f32);
    const llamaVsF32 = maxAbsDiff(llama, f32);
    console.log(`[q8] max |Δ logp| native-int8–llama.cpp Q8_0 ${oursVsLlama.toExponential(2)}, native-int8–f32 ${oursVsF32.toExponential(2)}, llama.cpp Q8_0–f32 ${llamaVsF32.toExponential(2)}`);
    // Both moved off the f32 model (they are 8-bit), and neither moved far.
    expect(oursVsF32).toBeGreaterThan(1e-4);
    expect(llamaVsF32).toBeGreaterThan(1e-4);
    expect(llamaVsF32).toBeLessThanOrEqual(Q8_TOL);
    expect(oursVsF32).toBeLessThanOrEqual(Q8_TOL);
    expect(oursVsLlama).toBeLessThanOrEqual(Q8_TOL);
  });
});
