// The trainer with --workers 2 (the step sharded over two worker processes: rollouts of seeds r, r + 2, … on
// worker r, data-parallel GRPO updates) against --workers 1, end to end through the CLI on a tiny random
// model: the same metrics apart from timings and the same adapters (≤ 1e-5) after 3 steps; a run whose parent
// is SIGKILLed resumes (its workers end with it) on 3 workers to the same result; a worker SIGKILLed mid-run
// stops the run with its error. A random model writes no valid question, so the solver phase is checked on the step itself:
// a scripted proposer (test double) writes valid questions and the tiny model solves them, in this process or
// on two workers, with the same rollouts, metrics and solver adapter after 3 steps. And --rollout-engine
// llama.cpp trains the demo world end to end.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descendantPids, killWhenExists, metricsWithoutTimings, startNode, stripTimings } from './helpers/cli-process.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { SafetensorsFile } from '../src/formats/safetensors.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { LoraAdapter, type LoraConfig } from '../src/model/lora.js';
import { ModelPolicy } from '../src/model/policy.js';
import { PolicyTextGenerator } from '../src/model/text-generator.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { DataParallelPool } from '../src/parallel/coordinator.js';
import { AdamW, type AdamWConfig } from '../src/rl/optimizer.js';
import { TRAIN_DEFAULTS, type TrainConfig, validateConfig } from '../src/settings/train.js';
import { DataParallelPolicyUpdater } from '../src/selfplay/data-parallel-updater.js';
import { AnswerJudge, exactMatch, type Judgement } from '../src/agent/judge.js';
import { type AnswerSeed, ProposerRole, SolverRole } from '../src/agent/roles.js';
import type { Rollout } from '../src/agent/rollout.js';
import { ragCheckMessages } from '../src/agent/prompts.js';
import { CountingTextGenerator, usableJudgeReply } from '../src/selfplay/role-health.js';
import { ShardedRolloutRunner, type RolloutTask, type TaskPool } from '../src/selfplay/rollout-runner.js';
import { type JudgeItem, localJudging, type RagItem, ShardedJudging } from '../src/selfplay/step-judging.js';
import { openEnvironment } from '../src/env/open.js';
import { type StepResult, sesaStep } from '../src/selfplay/step.js';
import { rolloutSettingsOf, stepSettingsOf } from '../src/selfplay/step-settings.js';
import { STEP_WORKER_MODULE } from '../src/selfplay/step-worker.js';
import { GrpoPolicyUpdater, type PolicyUpdater, type Role, type TrainedRole } from '../src/selfplay/updater.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend } from '../src/tensor/backend.js';
import { llamaCppMissing, llamaCppTitle } from './helpers/llama-cpp-reference.js';
import { type PolicyScript, ScriptedPolicy } from './helpers/scripted-policy.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
const TOL = 1e-5;
let root: string;
let modelDir: string;

function trainArgs(out: string, extra: string[] = [], steps = 3): string[] {
  return [
    CLI, 'train', '--model', modelDir, '--corpus', 'encyclopedia', '--steps', String(steps), '--seeds-per-step', '2', '--proposals-per-seed', '2',
    '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--embedder', 'lexical',
    '--lr', '1e-2', '--save-every', '1', '--micro-batch-size', '2', '--backend', 'wasm', '--seed', '6', '--out', join(root, out), ...extra,
  ];
}

/** Metrics compared at float tolerance: numbers within 1e-5 (relative to 1), everything else equal. */
function expectClose(a: unknown, b: unknown, path = ''): void {
  if (typeof a === 'number' && typeof b === 'number') {
    expect(Math.abs(a - b), path).toBeLessThanOrEqual(TOL * Math.max(1, Math.abs(a)));
    return;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    expect(Object.keys(a as object).sort(), path).toEqual(Object.keys(b as object).sort());
    for (const k of Object.keys(a as object)) expectClose((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    return;
  }
  expect(a, path).toEqual(b);
}

function adapterDiff(runA: string, runB: string, step: number, role: string): number {
  const file = (run: string): SafetensorsFile => new SafetensorsFile(join(root, run, 'checkpoints', `step-${step}`, role, 'adapter_model.safetensors'));
  const a = file(runA);
  const b = file(runB);
  let m = 0;
  for (const name of a.tensors.keys()) {
    const x = a.readFloat32(name);
    const y = b.readFloat32(name);
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs((x[i] as number) - (y[i] as number)));
  }
  return m;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-scale-out-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function start(args: string[]): ReturnType<typeof startNode> {
  return startNode(args, root, { XDG_CACHE_HOME: join(root, 'cache') });
}

const metricsOf = (run: string): unknown[] => metricsWithoutTimings(join(root, run));

describe('sesa-train --workers', () => {
  it('--workers 2 equals --workers 1 after 3 steps; a SIGKILLed parent resumes on 3 workers to the same result', async () => {
    const one = await start(trainArgs('w1', ['--workers', '1'])).done;
    expect(one.code, one.stderr).toBe(0);
    const two = await start(trainArgs('w2', ['--workers', '2'])).done;
    expect(two.code, two.stderr).toBe(0);
    expect(readFileSync(join(root, 'w2', 'train.log'), 'utf8')).toMatch(/step: sharded over 2 worker processes \(one wasm thread each\)/);
    expectClose(metricsOf('w2'), metricsOf('w1'));
    const trained = (metricsOf('w1') as Array<{ proposer?: unknown }>).filter((m) => m.proposer !== undefined).length;
    expect(trained, 'steps with a proposer update').toBeGreaterThan(0);
    for (const role of ['proposer', 'solver']) {
      const d = adapterDiff('w1', 'w2', 3, role);
      console.log(`${role}: max |adapter(N=2) − adapter(N=1)| after 3 steps = ${d.toExponential(2)}`);
      expect(d, role).toBeLessThanOrEqual(TOL);
    }

    // Kill the 2-worker run's parent right after its first checkpoint, then resume it on another number of
    // workers: a checkpoint holds nothing per worker.
    const killed = start(trainArgs('w2-killed', ['--workers', '2']));
    const marker = join(root, 'w2-killed', 'checkpoints', 'step-1', 'state.json');
    await killWhenExists(killed, marker);
    expect((await killed.done).signal).toBe('SIGKILL');
    const resumed = await start([CLI, 'train', '--resume', join(root, 'w2-killed'), '--workers', '3']).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(root, 'w2-killed', 'train.log'), 'utf8')).toMatch(/config change on resume: --workers 2 → 3[^]*step: sharded over 3 worker processes/);
    expectClose(metricsOf('w2-killed'), metricsOf('w2'));
    for (const role of ['proposer', 'solver']) expect(adapterDiff('w2', 'w2-killed', 3, role), role).toBeLessThanOrEqual(TOL);
  }, 1_200_000);

  it('--workers 2 (one wasm thread each); a worker SIGKILLed mid-run stops the run with its error (no hang); no worker outlives it', async () => {
    // (--gpus 2 is refused here: it needs the GPU backend, test/faults/gpus-without-gpu.test.ts.)
    const run = start(trainArgs('w2-worker-killed', ['--workers', '2'], 6));
    const pid = run.child.pid as number;
    let workers: number[] = [];
    // Once step 1 is checkpointed the run is in its next step: kill worker 1 there.
    await new Promise<void>((done, fail) => {
      const poll = setInterval(() => {
        if (!existsSync(join(root, 'w2-worker-killed', 'checkpoints', 'step-1', 'state.json'))) return;
        clearInterval(poll);
        workers = descendantPids(pid)
          .filter((p) => p.cmdline.includes('parallel/worker.ts'))
          .map((p) => p.pid);
        if (workers.length !== 2) return fail(new Error(`expected 2 worker processes under ${pid}, found ${workers.length}`));
        process.kill(workers[1] as number, 'SIGKILL');
        done();
      }, 20);
      void run.done.then(() => clearInterval(poll));
    });
    const r = await run.done;
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr).toMatch(/worker [01] exited \(signal SIGKILL\)/);
    const log = readFileSync(join(root, 'w2-worker-killed', 'train.log'), 'utf8');
    expect(log).toMatch(/step: sharded over 2 worker processes \(one wasm thread each\)/);
    expect(log).toMatch(/fatal: .*worker [01] exited \(signal SIGKILL\)/);
    // A worker that outlived the run would have been re-parented: look for the pids themselves.
    expect(workers.filter((w) => existsSync(`/proc/${w}`) && !/\) Z /.test(readFileSync(`/proc/${w}/stat`, 'utf8'))), 'workers still alive').toEqual([]);
    const steps = (metricsOf('w2-worker-killed') as Array<{ step: number }>).map((m) => m.step);
    expect(steps.length, 'the killed run stopped before its last step').toBeLessThan(6);
  }, 1_200_000);
});

/** A judge double: exact match first (what the RAG check needs), else every third answer it is asked about is correct, in the order asked (rank 0 judges in global-index order, the same for any number of workers). */
class EveryThirdJudge extends AnswerJudge {
  private asked = 0;

  constructor() {
    super(undefined);
  }

  override async judge(_question: string, golds: readonly string[], prediction: string | undefined): Promise<Judgement> {
    if (prediction !== undefined && exactMatch(prediction, golds)) return { correct: true, method: 'exact' };
    return { correct: this.asked++ % 3 === 0, method: 'semantic' };
  }
}

const STEP_LORA: LoraConfig = { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] };
const STEP_OPT: AdamWConfig = { lr: 1e-2, warmupSteps: 0, weightDecay: 0.01, maxGradNorm: 1 };

interface StepRun {
  results: StepResult[];
  /** The solver rollouts each update got, in order. */
  solverRollouts: Rollout[][];
  solver: Record<string, Float32Array>;
  initialSolver: Record<string, Float32Array>;
  /** With workers: the shards (seed indices) of the solver requests each rank got. */
  shardsByRank?: number[][];
}

/** 3 steps on the encyclopedia: a scripted proposer writes a valid question per seed; the tiny model solves them in this process (n = 1) or on n workers. */
async function shardedSteps(n: number): Promise<StepRun> {
  const config: TrainConfig = validateConfig({
    ...TRAIN_DEFAULTS, model: modelDir, corpus: 'encyclopedia', embedder: 'lexical', seedsPerStep: 4, proposalsPerSeed: 1, groupSize: 3, maxTurns: 2,
    maxNewTokens: 12, maxResponseTokens: 48, microBatchSize: 2, seed: 6, backend: 'wasm', workers: n,
  });
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  const { searcher, seeds } = await openEnvironment(config, () => undefined);
  const pool = seeds as AnswerSeed[];
  const byAnswer = new Map(pool.map((s, i) => [s.answer, i]));
  const question = (i: number): string => `Which name is written under archive entry number ${i} in the old ledger of the realm?`;
  // The proposer: two searches for its answer, then a question that names the seed by its pool index.
  const proposerScript: PolicyScript = (_text, turn, ctx) => {
    const answer = /whose correct answer is exactly: (.*)\n/.exec(ctx.prompt)?.[1] ?? '';
    const i = byAnswer.get(answer);
    if (i === undefined) throw new Error(`scripted proposer: unknown answer ${answer}`);
    return turn === 0 ? `<search>${answer} origin</search>` : turn === 1 ? `<search>${answer} history</search>` : `<question>${question(i)}</question>`;
  };
  const ragJudge = new ScriptedTextGenerator(
    [(messages) => `<answer>${pool[Number(/archive entry number (\d+)/.exec(messages.map((m) => m.content).join('\n'))?.[1])]?.answer}</answer>`],
    { cycle: true, name: 'scripted RAG judge (fake LLM)' },
  );
  const dir = mkdtempSync(join(root, `bank-${n}-`));
  const bank = await SkillBank.open(join(dir, 'skills.json'), { embedder: new LexicalEmbedder(), seedCards: true });
  const role = (name: Role, seed: number): TrainedRole => {
    const adapter = LoraAdapter.create(name, model.config, STEP_LORA, { seed });
    const params = Object.fromEntries(adapter.variables());
    return { adapter, params, optimizer: new AdamW(params, STEP_OPT) };
  };
  const roles = { proposer: role('proposer', 1), solver: role('solver', 2) };
  const snapshot = (r: TrainedRole): Record<string, Float32Array> => Object.fromEntries(Object.entries(r.params).map(([k, v]) => [k, v.dataSync().slice() as Float32Array]));
  const initialSolver = snapshot(roles.solver);
  const grpo = { microBatchSize: 2, klCoef: config.klCoef, clipLow: config.clipLow, clipHigh: config.clipHigh, dualClip: config.dualClip, aggregation: config.lossAggregation, maxLen: config.maxResponseTokens, padTokenId: tokenizer.padTokenId };
  let dp: DataParallelPool | undefined;
  let updater: PolicyUpdater = new GrpoPolicyUpdater(model, roles, grpo);
  let solverRunner: ShardedRolloutRunner | undefined;
  const shardsByRank: number[][] = Array.from({ length: n }, () => []);
  try {
    if (n > 1) {
      dp = await DataParallelPool.start({
        workers: n,
        init: { modelDir, backend: 'wasm', roles: { proposer: { lora: STEP_LORA, loraSeed: 0, optimizer: STEP_OPT }, solver: { lora: STEP_LORA, loraSeed: 0, optimizer: STEP_OPT } }, grpo, tasks: { module: STEP_WORKER_MODULE, init: { config } } },
      });
      const updaterDp = new DataParallelPolicyUpdater(dp, roles);
      await updaterDp.syncWorkers();
      updater = updaterDp;
      const real = dp;
      // The pool as the runner sees it, recording which seeds each rank was sent.
      const recording: TaskPool = {
        size: real.size,
        tasks: (task) =>
          real.tasks((rank) => {
            const t = task(rank) as RolloutTask;
            shardsByRank[rank]?.push(...t.requests.map((q) => q.shard as number));
            return t;
          }),
      };
      solverRunner = new ShardedRolloutRunner(recording, 'solver');
    }
    const solverRollouts: Rollout[][] = [];
    const inner = updater;
    // The scripted proposer's char-level ids are not the model's: only the solver is trained here.
    const solverOnly: PolicyUpdater = {
      update: async (r, groups) => {
        if (r !== 'solver') return undefined;
        solverRollouts.push(groups.flatMap((g) => g.rollouts));
        return inner.update(r, groups);
      },
    };
    const deps = {
      proposer: new ProposerRole(new ScriptedPolicy(proposerScript, { name: 'scripted proposer (test double)' }), searcher, { ...rolloutSettingsOf(config, 'proposer'), maxTurns: 4, maxTokensPerTurn: 2000, maxResponseTokens: 8000 }),
      solver: new SolverRole(new ModelPolicy('solver', model, tokenizer, roles.solver.adapter), searcher, bank, rolloutSettingsOf(config, 'solver'), solverRunner),
      skills: bank,
      judge: new EveryThirdJudge(),
      ragJudge,
      updater: solverOnly,
    };
    const results: StepResult[] = [];
    for (let step = 1; step <= 3; step++) results.push(await sesaStep(step, pool, deps, stepSettingsOf(config)));
    return { results, solverRollouts, solver: snapshot(roles.solver), initialSolver, ...(n > 1 ? { shardsByRank } : {}) };
  } finally {
    await dp?.close();
    await bank.dispose();
    for (const r of Object.values(roles)) {
      r.optimizer.dispose();
      r.adapter.dispose();
    }
    model.dispose();
  }
}

function maxAbsDiff(a: Record<string, Float32Array>, b: Record<string, Float32Array>): number {
  let m = 0;
  for (const [k, x] of Object.entries(a)) {
    const y = b[k] as Float32Array;
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs((x[i] as number) - (y[i] as number)));
  }
  return m;
}

describe('the step sharded over workers', () => {
  it('2 workers solve the valid questions of seeds r, r + 2, … on worker r and equal the in-process step after 3 steps', async () => {
    await initBackend('wasm');
    const one = await shardedSteps(1);
    const two = await shardedSteps(2);
    const valid = one.results.reduce((a, r) => a + r.metrics.validQuestions, 0);
    expect(valid, 'valid questions over 3 steps').toBeGreaterThanOrEqual(6);
    // Every rank got work, and only its own seeds.
    const shards = two.shardsByRank as number[][];
    shards.forEach((list, rank) => {
      expect(list.length, `requests sent to worker ${rank}`).toBeGreaterThan(0);
      expect(list.every((s) => s % 2 === rank), `worker ${rank} got only seeds ≡ ${rank} (mod 2)`).toBe(true);
    });
    expect(shards.flat().length).toBe(valid * 3);
    // The same rollouts (tokens exactly, log-probs to float tolerance), proposals and metrics apart from timings.
    expect(two.solverRollouts.length).toBe(one.solverRollouts.length);
    one.solverRollouts.forEach((batch, u) => {
      const other = two.solverRollouts[u] as Rollout[];
      expect(other.map((r) => r.responseIds)).toEqual(batch.map((r) => r.responseIds));
      expect(other.map((r) => r.id)).toEqual(batch.map((r) => r.id));
      batch.forEach((r, i) => r.logprobs.forEach((lp, t) => expect(Math.abs(lp - ((other[i] as Rollout).logprobs[t] as number))).toBeLessThanOrEqual(TOL)));
    });
    expectClose(two.results.map((r) => r.proposals), one.results.map((r) => r.proposals));
    expectClose(stripTimings(two.results.map((r) => r.metrics)), stripTimings(one.results.map((r) => r.metrics)));
    const moved = maxAbsDiff(one.solver, one.initialSolver);
    const d = maxAbsDiff(one.solver, two.solver);
    console.log(`sharded step: solver adapter moved ${moved.toExponential(2)}; |N=2 − N=1| after 3 steps = ${d.toExponential(2)}`);
    expect(moved).toBeGreaterThan(1e-4);
    expect(d).toBeLessThanOrEqual(TOL);
  }, 1_200_000);

  it("2 workers run the RAG checks and judge the answers of seeds r, r + 2, … with the trainer's judge (here the base model): the same verdicts and counted calls as in process", async () => {
    await initBackend('wasm');
    const config: TrainConfig = validateConfig({ ...TRAIN_DEFAULTS, model: modelDir, corpus: 'encyclopedia', embedder: 'lexical', backend: 'wasm', workers: 2 });
    const golds = ['Joris River', 'the Joris'];
    const q = 'Which river runs past the old mill of Grimane, south of the capital?';
    // Exact, semantic (the base model's reply is read, and counted when it is no verdict) and no answer.
    const predictions = ['joris river', 'The river Joris', undefined, 'Grimane', 'a long river in the south', ''];
    const judgeItems: JudgeItem[] = predictions.map((prediction, i) => ({ shard: i, question: q, golds, prediction }));
    const passages = [{ id: 'd1', title: 'Joris River', text: 'The Joris River runs past the old mill of Grimane.' }];
    const ragItems: RagItem[] = [0, 1, 2].map((i) => ({ shard: i + 1, messages: ragCheckMessages(`${q} (${i})`, passages), question: q, golds }));

    const model = await CausalLM.load(modelDir);
    const tokenizer = await loadTokenizer(modelDir);
    const counting = new CountingTextGenerator(new PolicyTextGenerator(new ModelPolicy('base', model, tokenizer, undefined, { enableThinking: config.enableThinking })), usableJudgeReply);
    const localJudge = new AnswerJudge(counting, config.judgeMaxTokens);
    const local = localJudging(localJudge, counting);
    const localVerdicts = await local.judge(judgeItems);
    const localRag = await local.ragCheck(ragItems, config.ragMaxTokens);
    const localCalls = counting.take();
    model.dispose();

    const pool = await DataParallelPool.start({
      workers: 2,
      init: { modelDir, backend: 'wasm', roles: { solver: { lora: STEP_LORA, loraSeed: 0, optimizer: STEP_OPT } }, grpo: { microBatchSize: 2, padTokenId: tokenizer.padTokenId }, tasks: { module: STEP_WORKER_MODULE, init: { config } } },
    });
    try {
      const calls = { calls: 0, failed: 0, unusable: 0 };
      let unparsed = 0;
      const seen: number[][] = [[], []];
      const recording: TaskPool = {
        size: pool.size,
        tasks: (task) =>
          pool.tasks((rank) => {
            const t = task(rank) as { items: Array<{ shard: number }> };
            seen[rank]?.push(...t.items.map((it) => it.shard));
            return t;
          }),
      };
      const sharded = new ShardedJudging(recording, (c, u) => {
        calls.calls += c.calls;
        calls.failed += c.failed;
        calls.unusable += c.unusable;
        unparsed += u;
      });
      expect(await sharded.judge(judgeItems)).toEqual(localVerdicts);
      expect(await sharded.ragCheck(ragItems, config.ragMaxTokens)).toEqual(localRag);
      expect(calls).toEqual({ calls: localCalls.calls, failed: localCalls.failed, unusable: localCalls.unusable });
      expect(unparsed).toBe(localJudge.unparsedReplies);
      expect(localCalls.calls, 'semantic judge and RAG reader calls').toBeGreaterThanOrEqual(3 + 3);
      expect(seen).toEqual([[0, 2, 4, 2], [1, 3, 5, 1, 3]]);
    } finally {
      await pool.close();
    }
  }, 600_000);
});

describe.skipIf(llamaCppMissing !== undefined)(llamaCppTitle('sesa-train --rollout-engine llama.cpp'), () => {
  it('trains the demo world end to end and checkpoints both adapters', async () => {
    // --threads reaches llama.cpp's contexts too (it used to open them on all cores whatever was asked).
    const r = await start(trainArgs('llama', ['--rollout-engine', 'llama.cpp', '--threads', '1'], 2)).done;
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(root, 'llama', 'train.log'), 'utf8')).toMatch(/rollouts: llama\.cpp \(cpu build, 1 thread\)/);
    expect(metricsOf('llama')).toHaveLength(2);
    expect(existsSync(join(root, 'llama', 'checkpoints', 'step-2', 'solver', 'adapter_model.safetensors'))).toBe(true);
  }, 1_200_000);
});
