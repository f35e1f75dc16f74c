// Retrieval faults after the run has started, one SESA step after another (scripted test doubles for the
// proposer and solver policies, a real skill bank, the trainer's RoleWatch) with the real Search-R1 client
// against the local fault-injecting server: a server that starts failing (HTTP 500) or answering garbage after
// the first step gives those searches no passages, is counted and warned about at every step, and stops the
// run after K steps with an error naming --retriever-url; a server that recovers resets the count.
import { mkdtempSync, rmSync } from 'node:fs';
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
