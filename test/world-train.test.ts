// Training in a world (`--corpus world`), in process on a tiny random model that uses a world tokenizer: the run
// searches the world of `--world-seed`, judges by exact match with aliases, runs the scripted RAG reader and
// template distiller (named as such in the log), and writes held-out eval rows for the world (skills on and
// off) at step 0 and at the end. Mechanics only: a random model learns nothing here.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { writeManifest } from '../src/formats/manifest.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { train } from '../src/selfplay/trainer.js';
import { tinyWorldModel } from './helpers/tiny-world-model.js';
import { DEMO_WORLD, World } from '../src/world/world.js';
import { CausalLM } from '../src/model/qwen3.js';
import { LoraAdapter } from '../src/model/lora.js';
import { createWorkerTasks } from '../src/selfplay/step-worker.js';
import type { JudgeTaskResult } from '../src/selfplay/step-judging.js';
import { ragCheckMessages } from '../src/agent/prompts.js';
import type { Passage } from '../src/search/types.js';

let root: string;
let modelDir: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-world-train-'));
  modelDir = tinyWorldModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function config(out: string, worldSeed: number): TrainConfig {
  return {
    ...TRAIN_DEFAULTS,
    model: modelDir, corpus: 'world', worldSeed, embedder: 'lexical', backend: 'wasm', steps: 1, seedsPerStep: 1, proposalsPerSeed: 2,
    groupSize: 2, maxTurns: 2, maxNewTokens: 12, maxResponseTokens: 64, lr: 1e-3, warmupSteps: 0, microBatchSize: 8,
    evalEvery: 1, evalData: 'world', evalLimit: 3, out: join(root, out), saveEvery: 1,
  };
}

describe('training in a world', () => {
  it('plays in the world of --world-seed with the scripted judge, RAG reader and distiller, and evaluates its held-out set', async () => {
    const lines: string[] = [];
    const summary = await train(config('run-demo', DEMO_WORLD.seed), { log: (l) => lines.push(l) });
    const log = lines.join('\n');
    expect(log).toMatch(/generated world of seed 0 \(300 passages/);
    expect(log).toMatch(/RAG check: world RAG reader \(scripted, no LLM\)/);
    expect(log).toMatch(/distiller: template distiller \(scripted, no LLM\)/);
    expect(summary.metrics).toHaveLength(1);
    const rows = readFileSync(join(root, 'run-demo', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind?: string; step: number; skills?: string; questions?: number; datasets?: Array<{ dataset: string }> });
    const evals = rows.filter((r) => r.kind === 'eval');
    expect(evals.map((r) => `${r.step}/${r.skills}`).sort()).toEqual(['0/off', '0/on', '1/off', '1/on']);
    for (const r of evals) {
      expect(r.questions).toBe(3);
      expect(r.datasets?.[0]?.dataset).toBe('world-0');
    }
    expect(summary.heldOut?.map((h) => h.skills).sort()).toEqual(['off', 'on']);

    const other: string[] = [];
    await train({ ...config('run-other', 5), evalEvery: 0, evalData: undefined }, { log: (l) => other.push(l) });
    expect(other.join('\n')).toMatch(/generated world of seed 5 \(300 passages/);
  });

  it('trains in several worlds, one a step, writes the reuse pool with every checkpoint, and resumes to the same bits', async () => {
    const base = { ...config('run-worlds', DEMO_WORLD.seed), trainingWorlds: 2, steps: 2, evalEvery: 0, evalData: undefined };
    const lines: string[] = [];
    const full = await train(base, { log: (l) => lines.push(l) });
    expect(lines.join('\n')).toMatch(/BM25 over 2 generated worlds, each its own corpus \(seeds 0, 1;/);
    expect(full.metrics.map((m) => m.corpus)).toEqual([0, 1]);
    for (const m of full.metrics) expect(m.solverQuestions + m.emptySlots).toBe(m.proposals);
    const poolFile = (dir: string, step: number): string => join(root, dir, 'checkpoints', `step-${step}`, 'reuse-pool.json');
    const pool = JSON.parse(readFileSync(poolFile('run-worlds', 2), 'utf8')) as { version: number; questions: unknown[] };
    expect(pool.version).toBe(1);
    expect(pool.questions.length).toBe(full.metrics.reduce((n, m) => n + m.solverQuestions, 0));
    // The same run stopped after step 1 and resumed gives the same adapters and pool.
    await train({ ...base, out: join(root, 'run-worlds-2'), steps: 1 }, { log: () => undefined });
    await train(undefined, { log: () => undefined }, join(root, 'run-worlds-2'), { steps: 2 });
    for (const f of ['reuse-pool.json', 'solver/adapter_model.safetensors', 'proposer/adapter_model.safetensors']) {
      expect(readFileSync(join(root, 'run-worlds-2', 'checkpoints', 'step-2', f)).equals(readFileSync(join(root, 'run-worlds', 'checkpoints', 'step-2', f))), f).toBe(true);
    }
  });

  it("a resumed run draws from its checkpoint's reuse pool: every empty slot of the next step takes one of its questions", async () => {
    const dir = join(root, 'run-pool');
    await train({ ...config('run-pool', DEMO_WORLD.seed), trainingWorlds: 2, steps: 1, evalEvery: 0, evalData: undefined }, { log: () => undefined });
    // The random model writes no valid question, so its pool is empty: put two world-1 questions in the
    // checkpoint's pool (and its manifest), as a run whose proposer had written them would have.
    const ckpt = join(dir, 'checkpoints', 'step-1');
    const w1 = new World({ seed: 1, passages: DEMO_WORLD.passages });
    const pooled = w1.heldOut.slice(0, 2).map((h) => ({ question: h.question, answer: h.golden_answers[0] as string, hops: h.hops, corpus: 1, successRate: 0.4, step: 1 }));
    writeFileSync(join(ckpt, 'reuse-pool.json'), JSON.stringify({ version: 1, questions: pooled }));
    writeManifest(ckpt);
    const lines: string[] = [];
    const s = await train(undefined, { log: (l) => lines.push(l) }, dir, { steps: 2 });
    expect(lines.join('\n')).toContain('reuse pool: 2 questions (from checkpoint step 1)');
    const m = s.metrics[0] as (typeof s.metrics)[number];
    expect([m.step, m.validQuestions, m.reusedQuestions, m.solverQuestions, m.emptySlots]).toEqual([2, 0, 2, 2, 0]);
    const after = JSON.parse(readFileSync(join(dir, 'checkpoints', 'step-2', 'reuse-pool.json'), 'utf8')) as { questions: Array<{ question: string; step: number }> };
    expect(after.questions.length).toBe(4);
    expect(after.questions.slice(2).every((q) => q.step === 2 && pooled.some((p) => p.question === q.question))).toBe(true);
  });

  it("a step worker RAG-checks each question with its own training world's reader", async () => {
    const cfg: TrainConfig = { ...config('unused', DEMO_WORLD.seed), trainingWorlds: 2 };
    const model = await CausalLM.load(modelDir);
    const adapter = LoraAdapter.create('solver', model.config, { r: 2, alpha: 4, dropout: 0, targets: ['q_proj'] }, { seed: 1 });
    try {
      const tasks = await createWorkerTasks({ rank: 0, worldSize: 1, modelDir, model, adapter: () => adapter }, { config: cfg });
      // A question of world 1 with its supporting passages: world 1's reader follows its chain, world 0's cannot.
      const w1 = new World({ seed: 1, passages: DEMO_WORLD.passages });
      const q = w1.heldOut.find((h) => h.hops === 2) as (typeof w1.heldOut)[number];
      const docs = q.supporting_ids.map((id) => w1.passage(id) as Passage);
      const item = (corpus: number) => ({ shard: 0, messages: ragCheckMessages(q.question, docs), question: q.question, golds: q.golden_answers, corpus });
      const verdicts = (await tasks.run({ kind: 'rag', items: [item(1), item(0)], maxTokens: 64 })) as JudgeTaskResult;
      expect(verdicts.verdicts).toEqual([true, false]);
    } finally {
      adapter.dispose();
      model.dispose();
    }
  });

  it('refuses --eval-data world without --corpus world', async () => {
    await expect(train({ ...config('run-bad', 0), corpus: 'encyclopedia' }, { log: () => undefined })).rejects.toThrow(/--eval-data world needs --corpus world/);
  });
});
