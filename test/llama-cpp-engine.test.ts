// The llama.cpp rollout engine against the native one on tiny random models: greedy generations are the same
// tokens with and without an adapter (also after the adapter changes and is swapped in); multi-turn rollouts
// with the search tool are the same; the log-probs the trainer recomputes for llama.cpp's sampled tokens match
// llama.cpp's own probabilities of them and our teacher-forced scores (≤ 1e-4).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportGguf } from '../src/checkpoint/export-gguf.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { LlamaCppEngine } from '../src/llama-cpp/engine.js';
import { LlamaCppPolicy } from '../src/llama-cpp/policy.js';
import type { Generation } from '../src/model/generate.js';
import { LoraAdapter } from '../src/model/lora.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { continuationLogprobs } from '../src/model/token-logprobs.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';
import { runRollouts } from '../src/agent/rollout.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { FakeSearcher } from './helpers/fake-searcher.js';
import { llamaCppMissing, llamaCppTitle, openReference } from './helpers/llama-cpp-reference.js';

const LOGPROB_TOL = 1e-4;
const TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as LoraAdapter['config']['targets'];

function maxAbsDiff(a: readonly number[], b: readonly number[]): number {
  expect(a.length).toBe(b.length);
  return a.reduce((m, v, i) => Math.max(m, Math.abs(v - (b[i] as number))), 0);
}

describe.skipIf(llamaCppMissing !== undefined)(llamaCppTitle('llama.cpp rollout engine vs the native engine'), () => {
  let root: string;
  let dir: string;
  let model: CausalLM;
  let tokenizer: Tokenizer;
  let adapter: LoraAdapter;
  let engine: LlamaCppEngine;
  let adapterVersion = 0;
  const policies = (withAdapter: boolean): { native: ModelPolicy; llama: LlamaCppPolicy } => {
    const native = new ModelPolicy(withAdapter ? 'solver' : 'base', model, tokenizer, withAdapter ? adapter : undefined);
    return { native, llama: new LlamaCppPolicy(native, engine, () => adapterVersion) };
  };
  const rng = new Rng(5);
  const prompts = (): number[][] => [5, 9, 14].map((n) => Array.from({ length: n }, () => rng.int(model.config.vocabSize)));

  beforeAll(async () => {
    await initBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'sesa-llama-engine-'));
    dir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, layers: 2, intermediate: 128, vocab: 320, seed: 41 }).dir;
    model = await CausalLM.load(dir);
    tokenizer = await loadTokenizer(dir);
    adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: TARGETS }, { seed: 7, randomB: true, randomBStd: 0.1 });
    engine = await LlamaCppEngine.open({ modelDir: dir, modelConfig: model.config, workDir: join(root, 'llama-cpp'), gpu: false, threads: 1 });
  });
  afterAll(async () => {
    await engine?.dispose();
    adapter?.dispose();
    model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  async function greedyBoth(withAdapter: boolean): Promise<{ native: Generation[]; llama: Generation[] }> {
    const p = prompts();
    const { native, llama } = policies(withAdapter);
    const opts = { maxNewTokens: 24, temperature: 0, seed: 1, stopStrings: [] };
    return { native: await native.generate(p, opts), llama: await llama.generate(p, opts) };
  }

  function expectSame(native: Generation[], llama: Generation[], label: string): void {
    native.forEach((g, i) => {
      const l = llama[i] as Generation;
      expect(l.ids, `${label} row ${i}`).toEqual(g.ids);
      expect(l.finishReason).toBe(g.finishReason);
      const err = maxAbsDiff(l.logprobs, g.logprobs);
      expect(err, `${label} row ${i}: recomputed vs native sampler log-probs`).toBeLessThanOrEqual(LOGPROB_TOL);
    });
  }

  it('greedy, no adapter: the same 24 tokens per row, the same log-probs', async () => {
    const { native, llama } = await greedyBoth(false);
    expectSame(native, llama, 'base');
  });

  it('greedy with an adapter, then with the adapter changed and swapped in: the same tokens', async () => {
    const first = await greedyBoth(true);
    expectSame(first.native, first.llama, 'adapter v0');
    // An update: new B weights and a new version; the engine must export and use the new adapter.
    for (const [name, v] of adapter.variables()) if (name.endsWith('.lora_B')) tf.tidy(() => v.assign(tf.mul(v, -1.5)));
    adapterVersion = 1;
    const second = await greedyBoth(true);
    expectSame(second.native, second.llama, 'adapter v1');
    expect(second.native.map((g) => g.ids)).not.toEqual(first.native.map((g) => g.ids));
    // Only the current version's GGUF stays on disk.
    expect(readdirSync(join(root, 'llama-cpp')).filter((f) => f.startsWith('solver-v'))).toEqual(['solver-v1.gguf']);
  });

  it('sampled by llama.cpp at T = 1: recomputed log-probs match llama.cpp’s own and our scores (≤ 1e-4)', async () => {
    const p = prompts();
    const { llama } = policies(true);
    const gens = await llama.generate(p, { maxNewTokens: 20, temperature: 1, seed: 3, stopStrings: [] });
    const base = join(root, 'base.gguf');
    const loraDir = join(root, 'peft');
    await (await import('../src/checkpoint/peft.js')).savePeftAdapter(adapter, loraDir, { baseModel: dir });
    await exportGguf(dir, base, { dtype: 'f32' });
    (await import('../src/checkpoint/export-gguf-lora.js')).exportGgufLora(loraDir, model.config, join(root, 'lora.gguf'));
    const ref = await openReference(base, { contextSize: 128, loraAdapter: join(root, 'lora.gguf') });
    const scores = await scoreBatch(model, p.map((q, i) => [...q, ...(gens[i] as Generation).ids]), { adapter });
    let worstRef = 0;
    let worstScore = 0;
    try {
      for (let i = 0; i < p.length; i++) {
        const g = gens[i] as Generation;
        expect(g.ids.length).toBe(20);
        const q = p[i] as number[];
        const theirs = (await ref.logprobsOf([...q, ...g.ids])).slice(q.length - 1);
        worstRef = Math.max(worstRef, maxAbsDiff(g.logprobs, theirs));
        worstScore = Math.max(worstScore, maxAbsDiff(g.logprobs, (scores[i]?.logprobs as number[]).slice(q.length - 1)));
      }
    } finally {
      await ref.dispose();
    }
    console.log(`recomputed vs llama.cpp ${worstRef.toExponential(2)}, vs scoreBatch ${worstScore.toExponential(2)}`);
    expect(worstRef).toBeLessThanOrEqual(LOGPROB_TOL);
    expect(worstScore).toBeLessThanOrEqual(LOGPROB_TOL);
  });

  it('generating through llama.cpp leaves no tensors behind (the log-prob recomputation frees its own)', async () => {
    const { llama } = policies(true);
    const p = prompts();
    await llama.generate(p, { maxNewTokens: 6, temperature: 1, seed: 4, stopStrings: [] });
    const before = tf.memory().numTensors;
    await llama.generate(p, { maxNewTokens: 6, temperature: 1, seed: 5, stopStrings: [] });
    expect(tf.memory().numTensors).toBe(before);
  });

  it('tempered log-probs: log softmax(logits / T) at the sampled tokens, as the native sampler records them', async () => {
    const p = prompts();
    const { native } = policies(true);
    const gens = await native.generate(p, { maxNewTokens: 12, temperature: 0.7, seed: 9, stopStrings: [] });
    const again = await continuationLogprobs(model, p, gens.map((g) => g.ids), { temperature: 0.7, adapter });
    gens.forEach((g, i) => expect(maxAbsDiff(again[i] as number[], g.logprobs)).toBeLessThanOrEqual(LOGPROB_TOL));
  });

  it('multi-turn rollouts with the search tool, stop strings and budgets: the same through both engines', async () => {
    const searcher = new FakeSearcher([{ id: '1', title: 'Alpha', text: 'alpha beta gamma' }]);
    const { native, llama } = policies(true);
    const requests = prompts().map((promptIds, i) => ({ id: `r${i}`, promptIds }));
    const config = { maxTurns: 3, maxTokensPerTurn: 16, maxResponseTokens: 60, temperature: 0, passagesPerQuery: 3, finalTag: 'answer' as const, seed: 2 };
    const a = await runRollouts(native, searcher, requests, config);
    const b = await runRollouts(llama, searcher, requests, config);
    a.forEach((r, i) => {
      const s = b[i]!;
      expect(s.responseIds).toEqual(r.responseIds);
      expect(s.responseMask).toEqual(r.responseMask);
      expect(s.text).toBe(r.text);
      expect(s.outcome).toBe(r.outcome);
      expect(maxAbsDiff(s.logprobs, r.logprobs)).toBeLessThanOrEqual(LOGPROB_TOL);
    });
    // The tiny model emits no tags: every turn ends on its budget and gets the corrective observation.
    expect(a.some((r) => r.responseMask.includes(0))).toBe(true);
  });
});
