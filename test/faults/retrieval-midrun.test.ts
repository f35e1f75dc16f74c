// Retrieval faults after the run has started, one SESA step after another (scripted test doubles for the
// proposer and solver policies, a real skill bank, the trainer's RoleWatch) with the real Search-R1 client
// against the local fault-injecting server: a server that starts failing (HTTP 500) or answering garbage after
// the first step gives those searches no passages, is counted and warned about at every step, and stops the
// run after K steps with an error naming --retriever-url; a server that recovers resets the count. Through the
// CLI (the shipped warm start on a retrieval server that fails after the start's probe): the step that stops
// the run is recorded in metrics.jsonl with its failed searches, its warning is printed, and a checkpoint is
// written before the run ends.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ScriptedTextGenerator } from '../../src/llm/scripted.js';
import { SearchR1Client } from '../../src/search/searchr1-client.js';
import { TRAIN_DEFAULTS } from '../../src/settings/train.js';
import { AnswerJudge } from '../../src/agent/judge.js';
import { PROPOSER_REWARD_DEFAULTS } from '../../src/selfplay/rewards.js';
import { RoleWatch } from '../../src/selfplay/role-health.js';
import { ProposerRole, type RolloutSettings, SolverRole } from '../../src/agent/roles.js';
import { type StepDeps, sesaStep } from '../../src/selfplay/step.js';
import { stepSettingsOf } from '../../src/selfplay/step-settings.js';
import type { PolicyUpdater, RoleUpdateMetrics } from '../../src/selfplay/updater.js';
import { SkillBank } from '../../src/skills/bank.js';
import { LexicalEmbedder } from '../../src/skills/lexical.js';
import { ScriptedPolicy } from '../helpers/scripted-policy.js';
import { FaultServer } from './fault-server.js';
import { CLI, faultRoot, run } from './cli.js';
import { demoModelDir } from '../../src/world/setup.js';

const ANSWER = 'Probe Title';
const QUESTION = 'Which entry is named first in the passages that the two searches of this proposal returned?';
const server = new FaultServer();
const dirs: string[] = [];

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeEach(() => {
  server.retrieve = 'ok';
  server.status = 500;
  server.statusBody = '{"error": "internal server error"}';
});

/** A no-op updater (a test double): this test is about the searches. */
class NoUpdate implements PolicyUpdater {
  async update(): Promise<RoleUpdateMetrics | undefined> {
    return undefined;
  }
}

async function world() {
  const proposer = new ScriptedPolicy((_t, turn) => (turn === 0 ? `<search>${ANSWER} origin</search>` : turn === 1 ? `<search>${ANSWER} history</search>` : `<question>${QUESTION}</question>`), { name: 'scripted proposer (test double)' });
  const solver = new ScriptedPolicy((_t, turn) => (turn === 0 ? `<search>${ANSWER} ledger</search>` : `<answer>${ANSWER}</answer>`), { name: 'scripted solver (test double)' });
  const url = `${server.url}/retrieve`;
  const searcher = new SearchR1Client({ url, attempts: 2, backoffMs: 1, maxBackoffMs: 2, timeoutMs: 2000 });
  const dir = mkdtempSync(join(tmpdir(), 'sesa-retrieval-'));
  dirs.push(dir);
  const bank = await SkillBank.open(join(dir, 'bank.json'), { embedder: new LexicalEmbedder() });
  const judge = new ScriptedTextGenerator([() => `<answer>${ANSWER}</answer>`], { cycle: true, name: 'scripted judge (fake LLM)' });
  const watch = new RoleWatch({ judge, searcher, retrieverUrl: url, bank, stopAfter: 2 });
  const rollout: RolloutSettings = { maxTurns: 4, maxTokensPerTurn: 400, maxResponseTokens: 4000, temperature: 1, passagesPerQuery: 3 };
  const deps: StepDeps = {
    proposer: new ProposerRole(proposer, watch.searcher, rollout),
    solver: new SolverRole(solver, watch.searcher, bank, rollout),
    judge: new AnswerJudge(watch.judge),
    ragJudge: watch.judge,
    skills: bank,
    updater: new NoUpdate(),
  };
  const settings = { ...stepSettingsOf(TRAIN_DEFAULTS), seedsPerStep: 1, proposalsPerSeed: 1, groupSize: 2, reward: { ...PROPOSER_REWARD_DEFAULTS }, seed: 7, ragDistractorBlocks: 0 };
  const step = async (n: number) => {
    watch.beginStep();
    const r = await sesaStep(n, [{ answer: ANSWER, hops: 1 }], deps, settings);
    return { metrics: r.metrics, ...watch.endStep(n) };
  };
  return { step, url };
}

describe('a retrieval server that starts failing after the first step', () => {
  it('HTTP 500: the searches come back empty, counted and warned about, and K steps stop the run naming --retriever-url', async () => {
    const w = await world();
    const s1 = await w.step(1);
    expect(s1.searches).toEqual({ queries: 4, empty: 0, failed: 0 });
    expect(s1.metrics.validQuestions).toBe(1);
    expect(s1.warnings).toEqual([]);
    server.retrieve = 'status';
    const s2 = await w.step(2);
    expect(s2.searches).toMatchObject({ queries: 2, empty: 2, failed: 2 });
    expect(s2.warnings).toHaveLength(1);
    expect(s2.warnings[0]).toMatch(/^step 2: search: 2 of 2 calls failed \(last: retriever http:\/\/127\.0\.0\.1:\d+\/retrieve: HTTP 500 .*internal server error.* after 2 attempts\)$/);
    await expect(w.step(3)).rejects.toThrow(/^search failed on every call for 2 consecutive steps \(2–3\); last error: .*HTTP 500.*Check --retriever-url http:\/\/127\.0\.0\.1:\d+\/retrieve, or change --stop-after-failed-steps \(now 2\)$/);
  });

  it('garbage: a reply that is not a result counts as a failed search; a server that recovers resets the count', async () => {
    const w = await world();
    await w.step(1);
    server.retrieve = 'nonsense';
    const s2 = await w.step(2);
    expect(s2.searches).toMatchObject({ failed: 2 });
    expect(s2.warnings[0]).toMatch(/search: 2 of 2 calls failed \(last: .*malformed response: body is not JSON/);
    server.retrieve = 'ok';
    const s3 = await w.step(3);
    expect(s3.searches).toMatchObject({ failed: 0 });
    expect(s3.warnings).toEqual([]);
    server.retrieve = 'nonsense';
    expect((await w.step(4)).searches).toMatchObject({ failed: 2 });
  });
});

describe('the trainer, when a retrieval server fails after the start', () => {
  it('records the stopping step with its failed searches and warning, writes its checkpoint, then stops naming --resume', async () => {
    const root = faultRoot('retrieval-stop');
    dirs.push(root);
    const seeds = join(root, 'seeds.jsonl');
    writeFileSync(seeds, '{"answer":"Probe Title","hops":1}\n');
    server.retrieve = 'status';
    server.failRetrieveAfter(1); // the probe before step 1 is answered; every search of the step fails
    const out = join(root, 'run');
    const r = await run(root, [
      CLI, 'train', '--model', demoModelDir(), '--retriever-url', `${server.url}/retrieve`, '--seeds', seeds, '--steps', '2', '--seeds-per-step', '1',
      '--proposals-per-seed', '2', '--group-size', '2', '--eval-every', '0', '--embedder', 'lexical', '--max-response-tokens', '512', '--max-new-tokens', '64',
      '--stop-after-failed-steps', '1', '--retriever-retries', '0', '--backend', 'wasm', '--threads', '1', '--out', out,
    ]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^warning: step 1: search: (\d+) of \1 calls failed \(last: retriever http:\/\/127\.0\.0\.1:\d+\/retrieve: HTTP 500 /m);
    expect(r.stderr).toMatch(/search failed on every call for 1 consecutive steps \(1–1\).*Checkpoint step 1 was written; continue with --resume /);
    const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; searches?: { queries: number; failed: number } });
    expect(rows.map((m) => m.step)).toEqual([1]);
    expect(rows[0]?.searches?.failed).toBeGreaterThan(0);
    expect(rows[0]?.searches?.failed).toBe(rows[0]?.searches?.queries);
    expect(existsSync(join(out, 'checkpoints', 'step-1', 'manifest.json'))).toBe(true);
  }, 120_000);
});
