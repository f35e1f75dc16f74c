// Roles that fail or talk nonsense are never silent: one SESA step after another (test doubles for the
// proposer and solver policies, the FakeSearcher, a real skill bank), with the judge or the distiller served
// by the local fault-injecting server through the real OpenAI-compatible client, watched by the trainer's
// RoleWatch. Each step gets a warning with the counts; K consecutive steps of failure stop with a clear error.
import { stepSettingsOf } from '../../src/selfplay/step-settings.js';
import { TRAIN_DEFAULTS } from '../../src/settings/train.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAIChatClient } from '../../src/llm/openai.js';
import { ScriptedTextGenerator } from '../../src/llm/scripted.js';
import type { TextGenerator } from '../../src/llm/types.js';
import { AnswerJudge } from '../../src/agent/judge.js';
import { PROPOSER_REWARD_DEFAULTS } from '../../src/selfplay/rewards.js';
import { RoleFailureError, RoleWatch } from '../../src/selfplay/role-health.js';
import { ProposerRole, type RolloutSettings, SolverRole } from '../../src/agent/roles.js';
import { type StepDeps, sesaStep } from '../../src/selfplay/step.js';
import type { PolicyUpdater, RoleUpdateMetrics } from '../../src/selfplay/updater.js';
import { SkillBank } from '../../src/skills/bank.js';
import { LexicalEmbedder } from '../../src/skills/lexical.js';
import { FakeSearcher } from '../helpers/fake-searcher.js';
import { CARD_A } from '../skills-helpers.js';
import { ScriptedPolicy } from '../helpers/scripted-policy.js';
import { FaultServer } from './fault-server.js';

const ANSWER = 'Hamlet Tarnorn';
const QUESTION = 'Which hamlet is listed under ledger entry number seven in the old archive of the valley?';
const G = 4;
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
  server.chat = 'ok';
  server.status = 500;
  server.statusBody = '{"error": "internal server error"}';
});

/** A no-op updater (a test double): this test is about the calls around the update. */
class NoUpdate implements PolicyUpdater {
  async update(): Promise<RoleUpdateMetrics | undefined> {
    return undefined;
  }
}

function endpoint(): TextGenerator {
  return new OpenAIChatClient({ url: `${server.url}/v1`, model: 'm', maxRetries: 0, timeoutMs: 2000 });
}

/** One seed whose question is always valid; the solver answers right G/2 times (so failures are queued). */
async function world(opts: { judge: TextGenerator; judgeUrl?: string; distiller?: TextGenerator; distillerUrl?: string }) {
  const proposer = new ScriptedPolicy((_t, turn) => (turn === 0 ? `<search>${ANSWER} origin</search>` : turn === 1 ? `<search>${ANSWER} history</search>` : `<question>${QUESTION}</question>`), {
    name: 'scripted proposer (test double)',
  });
  const solver = new ScriptedPolicy((_t, turn, ctx) => (turn === 0 ? `<search>${ANSWER} ledger</search>` : ctx.row % G < G / 2 ? `<answer>${ANSWER}</answer>` : '<answer>Nobody Known</answer>'), {
    name: 'scripted solver (test double)',
  });
  const searcher = new FakeSearcher([{ id: 'd1', title: ANSWER, text: `${ANSWER} is a hamlet in the Tarn valley, recorded in the ledger.` }]);
  const dir = mkdtempSync(join(tmpdir(), 'sesa-roles-'));
  dirs.push(dir);
  // Consolidation every step from one pending failure, so the distiller is called at every step.
  const bank = await SkillBank.open(join(dir, 'bank.json'), { embedder: new LexicalEmbedder(), config: { consolidateEvery: 1, minPending: 1 } });
  const watch = new RoleWatch({ ...opts, searcher, bank, stopAfter: 2 });
  const rollout: RolloutSettings = { maxTurns: 4, maxTokensPerTurn: 400, maxResponseTokens: 4000, temperature: 1, passagesPerQuery: 3 };
  const deps: StepDeps = {
    proposer: new ProposerRole(proposer, watch.searcher, rollout),
    solver: new SolverRole(solver, watch.searcher, bank, rollout),
    judge: new AnswerJudge(watch.judge),
    ragJudge: watch.judge,
    skills: bank,
    updater: new NoUpdate(),
    ...(watch.distiller ? { distiller: watch.distiller } : {}),
  };
  const settings = { ...stepSettingsOf(TRAIN_DEFAULTS), seedsPerStep: 1, proposalsPerSeed: 1, groupSize: G, reward: { ...PROPOSER_REWARD_DEFAULTS }, seed: 7, ragDistractorBlocks: 4 };
  const step = async (n: number) => {
    watch.beginStep();
    const r = await sesaStep(n, [{ answer: ANSWER, hops: 1 }], deps, settings);
    return { metrics: r.metrics, ...watch.endStep(n) };
  };
  return { step, bank };
}

const goodJudge = (): ScriptedTextGenerator => new ScriptedTextGenerator([(m) => (m.some((x) => x.content.includes('Question:')) && m.some((x) => /passages|Doc 1/.test(x.content)) ? `<answer>${ANSWER}</answer>` : 'Wrong')], { cycle: true, name: 'scripted judge (fake LLM)' });

describe('a judge endpoint that replies nonsense', () => {
  it('is warned about with counts at every step and stops the run after K steps', async () => {
    server.chat = 'gibberish';
    const w = await world({ judge: endpoint(), judgeUrl: `${server.url}/v1` });
    const s1 = await w.step(1);
    // The RAG check got no <answer>, its semantic match no verdict: the question is marked failed.
    expect(s1.metrics.invalidReasons).toEqual({ 'rag-check-failed': 1 });
    expect(s1.calls.judge).toEqual({ calls: 2, failed: 0, unusable: 2 });
    expect(s1.warnings).toEqual(['step 1: judge: 2 of 2 replies unusable']);
    const err = await w.step(2).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RoleFailureError);
    expect((err as RoleFailureError).message).toBe(
      `judge failed or replied unusably on every call for 2 consecutive steps (1–2); last error: none (replies unusable). Check --judge-url ${server.url}/v1, or change --stop-after-failed-steps (now 2)`,
    );
    // The stopping step's counts and warning travel with the error, for the trainer to record before it stops.
    expect((err as RoleFailureError).stepCalls?.calls.judge).toEqual({ calls: 2, failed: 0, unusable: 2 });
    expect((err as RoleFailureError).stepCalls?.warnings).toEqual(['step 2: judge: 2 of 2 replies unusable']);
  });
});

describe('a judge endpoint that fails mid-run after its retries', () => {
  it('HTTP 500: each failed call is counted and warned about, read as no verdict, and K steps stop the run naming --judge-url', async () => {
    server.chat = 'status';
    const w = await world({ judge: endpoint(), judgeUrl: `${server.url}/v1` });
    const s1 = await w.step(1);
    // The RAG check's reader call failed: the question is marked failed, the step ends normally.
    expect(s1.metrics.invalidReasons).toEqual({ 'rag-check-failed': 1 });
    expect(s1.calls.judge).toMatchObject({ calls: 1, failed: 1, unusable: 0 });
    expect(s1.warnings).toHaveLength(1);
    expect(s1.warnings[0]).toMatch(/^step 1: judge: 1 of 1 calls failed \(last: openai:http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions m: HTTP 500: .*\(gave up after 1 attempt\)\)$/);
    await expect(w.step(2)).rejects.toThrow(/^judge failed on every call for 2 consecutive steps \(1–2\); last error: .*HTTP 500.*Check --judge-url http:\/\/127\.0\.0\.1:\d+\/v1, or change --stop-after-failed-steps \(now 2\)$/);
  });

  it('a timeout is counted as a failed call the same way; a step where the judge answers again resets the count', async () => {
    server.chat = 'hang';
    const w = await world({ judge: endpoint(), judgeUrl: `${server.url}/v1` });
    const s1 = await w.step(1);
    expect(s1.calls.judge).toMatchObject({ calls: 1, failed: 1 });
    expect(s1.warnings[0]).toMatch(/judge: 1 of 1 calls failed \(last: .*no reply within 2000 ms/);
    server.chat = 'ok';
    server.chatReply = `<answer>${ANSWER}</answer>`;
    const s2 = await w.step(2);
    expect(s2.calls.judge).toMatchObject({ failed: 0 });
    expect(s2.metrics.validQuestions).toBe(1);
    server.chat = 'hang';
    expect((await w.step(3)).calls.judge).toMatchObject({ failed: 1 });
  });
});

describe('a distiller endpoint that answers HTTP 500', () => {
  it('is warned about with counts (its records stay queued) and stops the run after K steps', async () => {
    server.chat = 'status';
    const w = await world({ judge: goodJudge(), distiller: endpoint(), distillerUrl: `${server.url}/v1` });
    const s1 = await w.step(1);
    expect(s1.metrics.validQuestions).toBe(1);
    expect(s1.metrics.failuresQueued).toBe(G / 2);
    expect(s1.calls.distiller).toMatchObject({ calls: 1, failed: 1, unusable: 0 });
    expect(s1.warnings).toHaveLength(1);
    expect(s1.warnings[0]).toMatch(/^step 1: distiller: 1 of 1 calls failed \(last: openai:http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions m: HTTP 500: \{"error": "internal server error"\} \(gave up after 1 attempt\)\)$/);
    expect(w.bank.pendingFailures()).toHaveLength(1);
    expect(w.bank.counters.failed).toBe(1);
    await expect(w.step(2)).rejects.toThrow(/^distiller failed on every call for 2 consecutive steps \(1–2\); last error: .*HTTP 500.*Check --distiller-url http:\/\/127\.0\.0\.1:\d+\/v1, or change --stop-after-failed-steps \(now 2\)$/);
  });

  it('a step where the distiller works again resets the count; an unusable reply from it counts as a failure', async () => {
    server.chat = 'status';
    const w = await world({ judge: goodJudge(), distiller: endpoint(), distillerUrl: `${server.url}/v1` });
    expect((await w.step(1)).warnings).toHaveLength(1);
    server.chat = 'ok';
    server.chatReply = JSON.stringify(CARD_A);
    const s2 = await w.step(2);
    expect(s2.calls.distiller).toMatchObject({ calls: 1, failed: 0, unusable: 0 });
    expect(s2.warnings).toEqual([]);
    server.chat = 'status';
    const s3 = await w.step(3);
    expect(s3.warnings).toHaveLength(1);
    server.chat = 'ok';
    server.chatReply = 'no card here';
    await expect(w.step(4)).rejects.toThrow(/^distiller failed or replied unusably on every call for 2 consecutive steps \(3–4\)/);
  });
});
