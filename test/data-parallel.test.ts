// Data-parallel GRPO updates across worker processes: two workers on two halves of each batch give the same
// adapter as one worker on the whole batch (≤ 1e-5 after 3 updates), and as the in-process update; workers
// that disagree, fail or die stop the pool with that error instead of hanging. Epochs over the same groups carry
// the workers' reference log-probs, and equal the in-process updater's epochs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { LoraAdapter, type LoraConfig } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { DataParallelPool, shard } from '../src/parallel/coordinator.js';
import type { RoleInit, WorkerInit } from '../src/parallel/protocol.js';
import { grpoUpdate, type TrainingSequence } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { DataParallelPolicyUpdater } from '../src/selfplay/data-parallel-updater.js';
import type { Rollout } from '../src/agent/rollout.js';
import { GrpoPolicyUpdater, type RolloutGroup, type TrainedRole } from '../src/selfplay/updater.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

const TOL = 1e-5;
const LORA: LoraConfig = { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] };
const ROLE: RoleInit = { lora: LORA, loraSeed: 5, optimizer: { lr: 1e-2, warmupSteps: 0, weightDecay: 0.01, maxGradNorm: 1 } };
const GRPO = { microBatchSize: 2, klCoef: 0.01, clipLow: 0.2, clipHigh: 0.28, padTokenId: 0 };

let root: string;
let modelDir: string;
let batches: TrainingSequence[][];

function init(over: Partial<RoleInit> = {}): Omit<WorkerInit, 'rank' | 'worldSize'> {
  return { modelDir, backend: 'wasm', roles: { solver: { ...ROLE, ...over } }, grpo: GRPO };
}

function maxAbsDiff(a: Record<string, Float32Array>, b: Record<string, Float32Array>): number {
  let m = 0;
  for (const [k, v] of Object.entries(a)) {
    const w = b[k] as Float32Array;
    expect(w?.length, k).toBe(v.length);
    for (let i = 0; i < v.length; i++) m = Math.max(m, Math.abs((v[i] as number) - (w[i] as number)));
  }
  return m;
}

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-dp-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', hidden: 32, heads: 2, kvHeads: 1, headDim: 16, layers: 1, intermediate: 48, vocab: 300, seed: 3 }).dir;
  const model = await CausalLM.load(modelDir);
  const rng = new Rng(11);
  // Three batches of 5 sequences (an odd count: the shards differ in size), tool-output spans masked out,
  // old log-probs from the base model so that the ratios start near 1.
  batches = [];
  for (let step = 0; step < 3; step++) {
    const raw = Array.from({ length: 5 }, () => {
      const prompt = Array.from({ length: 3 + rng.int(5) }, () => 1 + rng.int(299));
      const response = Array.from({ length: 4 + rng.int(8) }, () => 1 + rng.int(299));
      return { prompt, response, mask: response.map((_, j) => (j >= 2 && j < 4 ? 0 : 1)) };
    });
    const scored = await scoreBatch(model, raw.map((r) => [...r.prompt, ...r.response]));
    batches.push(
      raw.map((r, i) => ({
        samplingTemperature: 1,
        promptIds: r.prompt,
        responseIds: r.response,
        responseMask: r.mask,
        oldLogprobs: (scored[i]?.logprobs as number[]).slice(r.prompt.length - 1),
        advantage: rng.next() * 2 - 1,
      })),
    );
  }
  model.dispose();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('data-parallel GRPO updates', () => {
  it('shards are contiguous and cover everything once', () => {
    expect(shard([1, 2, 3, 4, 5], 2)).toEqual([[1, 2, 3], [4, 5]]);
    expect(shard([1], 3)).toEqual([[1], [], []]);
  });

  it('2 workers equal 1 worker and the in-process update after 3 updates (≤ 1e-5)', async () => {
    const results: Array<Record<string, Float32Array>> = [];
    const hashes: string[][] = [];
    for (const n of [1, 2]) {
      const pool = await DataParallelPool.start({ workers: n, init: init() });
      try {
        const h: string[] = [];
        for (const batch of batches) h.push((await pool.update('solver', shard(batch, n))).hash);
        hashes.push(h);
        results.push(await pool.weights('solver', n - 1));
      } finally {
        await pool.close();
      }
    }
    // The same three updates in this process, without workers.
    const model = await CausalLM.load(modelDir);
    const adapter = LoraAdapter.create('solver', model.config, LORA, { seed: ROLE.loraSeed });
    const params = Object.fromEntries(adapter.variables());
    const initial = Object.fromEntries([...adapter.variables()].map(([k, v]) => [k, v.dataSync().slice() as Float32Array]));
    const opt = new AdamW(params, ROLE.optimizer);
    for (const batch of batches) await grpoUpdate(model, adapter, opt, params, batch, GRPO);
    const inProcess = Object.fromEntries([...adapter.variables()].map(([k, v]) => [k, v.dataSync().slice() as Float32Array]));
    opt.dispose();
    adapter.dispose();
    model.dispose();

    const [one, two] = results as [Record<string, Float32Array>, Record<string, Float32Array>];
    const moved = maxAbsDiff(one, initial);
    const nVsOne = maxAbsDiff(one, two);
    const vsInProcess = maxAbsDiff(one, inProcess);
    console.log(`adapter moved ${moved.toExponential(2)}; |N=2 − N=1| ${nVsOne.toExponential(2)}; |N=1 − in-process| ${vsInProcess.toExponential(2)}`);
    expect(moved).toBeGreaterThan(1e-3);
    expect(nVsOne).toBeLessThanOrEqual(TOL);
    expect(vsInProcess).toBeLessThanOrEqual(TOL);
  }, 300_000);

  it('epochs through the data-parallel updater carry the workers\' reference log-probs and equal the in-process epochs (≤ 1e-5)', async () => {
    // Batch 0 as two groups (2 and 3 rollouts) with mixed rewards; scripted rollouts, not sampled.
    const rollouts = (batches[0] as TrainingSequence[]).map(
      (s, i) => ({ id: `r${i}`, promptIds: s.promptIds, responseIds: s.responseIds, responseMask: s.responseMask, logprobs: s.oldLogprobs, samplingTemperature: s.samplingTemperature }) as unknown as Rollout,
    );
    const groups: RolloutGroup[] = [
      { rollouts: rollouts.slice(0, 2), rewards: [1, 0] },
      { rollouts: rollouts.slice(2), rewards: [0, 1, 0] },
    ];
    const model = await CausalLM.load(modelDir);
    const role = (): TrainedRole => {
      const adapter = LoraAdapter.create('solver', model.config, LORA, { seed: ROLE.loraSeed });
      const params = Object.fromEntries(adapter.variables());
      return { adapter, params, optimizer: new AdamW(params, ROLE.optimizer) };
    };
    const weightsOf = (r: TrainedRole): Record<string, Float32Array> => Object.fromEntries(Object.entries(r.params).map(([k, v]) => [k, v.dataSync().slice() as Float32Array]));
    // The updater keeps both roles on the workers in step.
    const pool = await DataParallelPool.start({ workers: 2, init: { ...init(), roles: { proposer: ROLE, solver: ROLE } } });
    const [inProcess, sharded, localProposer, shardedProposer] = [role(), role(), role(), role()] as [TrainedRole, TrainedRole, TrainedRole, TrainedRole];
    const initial = weightsOf(sharded);
    try {
      const local = new GrpoPolicyUpdater(model, { proposer: localProposer, solver: inProcess }, GRPO);
      const dp = new DataParallelPolicyUpdater(pool, { proposer: shardedProposer, solver: sharded });
      await dp.syncWorkers();
      const sent: boolean[][] = [];
      const update = pool.update.bind(pool);
      pool.update = async (r, shards) => {
        sent.push(shards.flat().map((s) => s.refLogprobs !== undefined));
        return update(r, shards);
      };
      for (let epoch = 0; epoch < 2; epoch++) {
        await local.update('solver', groups);
        await dp.update('solver', groups);
      }
      // The first epoch computes the reference on the workers; the second sends it back with every sequence.
      expect(sent).toEqual([[false, false, false, false, false], [true, true, true, true, true]]);
      const moved = maxAbsDiff(weightsOf(sharded), initial);
      const diff = maxAbsDiff(weightsOf(sharded), weightsOf(inProcess));
      console.log(`epochs: adapter moved ${moved.toExponential(2)}; |data-parallel − in-process| ${diff.toExponential(2)}`);
      expect(moved).toBeGreaterThan(1e-3);
      expect(diff).toBeLessThanOrEqual(TOL);
    } finally {
      await pool.close();
      for (const r of [inProcess, sharded, localProposer, shardedProposer]) {
        r.optimizer.dispose();
        r.adapter.dispose();
      }
      model.dispose();
    }
  }, 300_000);

  it('workers whose adapters differ stop the run at the first step with both hashes', async () => {
    const pool = await DataParallelPool.start({ workers: 2, init: (rank) => init({ loraSeed: ROLE.loraSeed + rank }) });
    try {
      await expect(pool.update('solver', shard(batches[0] as TrainingSequence[], 2))).rejects.toThrow(/adapters differ after the step \(hashes 0:[0-9a-f]+, 1:[0-9a-f]+\)/);
      await expect(pool.update('solver', shard(batches[0] as TrainingSequence[], 2))).rejects.toThrow(/adapters differ/);
    } finally {
      await pool.close();
    }
    expect(pool.processes.every((p) => p.exitCode !== null || p.signalCode !== null)).toBe(true);
  }, 300_000);

  it('a worker that fails to start, or dies, stops the pool with its error (no hang)', async () => {
    await expect(DataParallelPool.start({ workers: 2, init: { ...init(), modelDir: join(root, 'missing') } })).rejects.toThrow(/worker [01]: .*config\.json/);
    const pool = await DataParallelPool.start({ workers: 2, init: init() });
    try {
      // Ctrl-C reaches every process of the group: a worker leaves stopping to the coordinator.
      pool.processes[0]!.kill('SIGINT');
      await new Promise((done) => setTimeout(done, 300));
      expect(pool.processes[0]!.exitCode).toBeNull();
      expect(pool.processes[0]!.signalCode).toBeNull();
      const victim = pool.processes[1]!;
      const gone = new Promise((done) => victim.once('exit', done));
      victim.kill('SIGKILL');
      await gone;
      await expect(pool.update('solver', shard(batches[0] as TrainingSequence[], 2))).rejects.toThrow('worker 1 exited (signal SIGKILL)');
    } finally {
      await pool.close();
    }
    expect(pool.processes.every((p) => p.exitCode !== null || p.signalCode !== null)).toBe(true);
  }, 300_000);
});
