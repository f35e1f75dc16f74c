// Multi-turn rollouts of a real (tiny, random) model on the kept KV cache: every generated token's sampling
// log-prob equals the log-prob of the same tokens scored from scratch (≤ 1e-5), on cpu and wasm; and the
// live tensor count stays flat over 50 rollout + GRPO update steps.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { LoraAdapter } from '../src/model/lora.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { grpoUpdate } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { type RolloutConfig, runRollouts } from '../src/agent/rollout.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { FakeSearcher } from './helpers/fake-searcher.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-rollout-cache-'));
const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 2000, seed: 17 });
afterAll(() => rmSync(root, { recursive: true, force: true }));

const searcher = new FakeSearcher([{ id: 'p1', title: 'Mora', text: 'The Mora flows north into the sea.' }]);

async function setup(): Promise<{ model: CausalLM; policy: ModelPolicy; adapter: LoraAdapter }> {
  const model = await CausalLM.load(dir);
  const tokenizer = await loadTokenizer(dir);
  const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] }, { seed: 2, randomB: true, randomBStd: 0.05 });
  return { model, policy: new ModelPolicy('solver', model, tokenizer, adapter), adapter };
}

describe.each(['cpu', 'wasm'] as const)('rollouts on the kept cache (%s)', (backend) => {
  it('sampling log-probs of every turn equal the whole rollout scored from scratch (≤ 1e-5)', async () => {
    await initBackend(backend);
    const { model, policy, adapter } = await setup();
    const before = tf.memory().numTensors;
    const question = (q: string): number[] => policy.renderChat([{ role: 'user', content: q }]);
    const requests = [
      { id: 'a', promptIds: question('Which river flows north?') },
      { id: 'b', promptIds: question('Which river flows north?') },
      { id: 'c', promptIds: question('Where is Mora?') },
    ];
    const config: RolloutConfig = { maxTurns: 3, maxTokensPerTurn: 10, maxResponseTokens: 400, temperature: 1, passagesPerQuery: 1, finalTag: 'answer', seed: 5 };
    const rollouts = await runRollouts(policy, searcher, requests, config);
    expect(tf.memory().numTensors).toBe(before);
    // Turns after the first ran on the kept cache, with an observation spliced in between.
    expect(rollouts.some((r) => r.turns >= 2 && r.responseMask.includes(0))).toBe(true);
    const scored = await scoreBatch(model, rollouts.map((r) => [...r.promptIds, ...r.responseIds]), { adapter });
    let worst = 0;
    let compared = 0;
    rollouts.forEach((r, i) => {
      const lp = (scored[i] as { logprobs: number[] }).logprobs;
      r.responseMask.forEach((m, j) => {
        if (m !== 1) return;
        worst = Math.max(worst, Math.abs((r.logprobs[j] as number) - (lp[r.promptIds.length + j - 1] as number)));
        compared++;
      });
    });
    expect(compared).toBeGreaterThan(20);
    expect(worst).toBeLessThanOrEqual(1e-5);
    adapter.dispose();
    model.dispose();
  });
});

describe('memory over training steps', () => {
  it('live tensors stay flat over 50 rollout + GRPO update steps (wasm)', async () => {
    await initBackend('wasm');
    const { model, policy, adapter } = await setup();
    const params = Object.fromEntries(adapter.variables());
    const optimizer = new AdamW(params, { lr: 1e-3 });
    const prompt = policy.renderChat([{ role: 'user', content: 'Which river?' }]);
    const config: RolloutConfig = { maxTurns: 2, maxTokensPerTurn: 4, maxResponseTokens: 200, temperature: 1, passagesPerQuery: 1, finalTag: 'answer', seed: 0 };
    const counts: number[] = [];
    for (let step = 0; step < 50; step++) {
      const rollouts = await runRollouts(policy, searcher, [0, 1].map((i) => ({ id: `s${step}/${i}`, promptIds: prompt })), { ...config, seed: step });
      await grpoUpdate(
        model,
        adapter,
        optimizer,
        params,
        rollouts.map((r, i) => ({ promptIds: r.promptIds, responseIds: r.responseIds, responseMask: r.responseMask, oldLogprobs: r.logprobs, advantage: i === 0 ? 1 : -1, samplingTemperature: r.samplingTemperature })),
        { microBatchSize: 2, klCoef: 0.01 },
      );
      counts.push(tf.memory().numTensors);
    }
    expect(new Set(counts.slice(1)).size).toBe(1);
    optimizer.dispose();
    adapter.dispose();
    model.dispose();
  }, 600_000);
});
