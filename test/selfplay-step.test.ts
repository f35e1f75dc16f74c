// The SESA step (docs/method.md, "One step") driven end to end by test doubles: ScriptedPolicy (a scripted test double of the
// policy) for the proposer and the solver, a FakeSearcher, ScriptedTextGenerators as the judge, the RAG judge
// and the distiller, a recording PolicyUpdater double, and a real SkillBank on the lexical embedder in a temp
// dir. Every value checked is exact.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/llm/types.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import type { Passage } from '../src/search/types.js';
import { AnswerJudge } from '../src/agent/judge.js';
import { PROPOSER_REWARD_DEFAULTS } from '../src/selfplay/rewards.js';
import { type AnswerSeed, ProposerRole, type RolloutSettings, SolverRole } from '../src/agent/roles.js';
import { type StepDeps, type StepResult, type StepSettings, sesaStep } from '../src/selfplay/step.js';
import { advantagesOf, type PolicyUpdater, type Role, type RoleUpdateMetrics, type RolloutGroup } from '../src/selfplay/updater.js';
import { resolveTrainConfig } from '../src/cli/train.js';
import { stepSettingsOf } from '../src/selfplay/step-settings.js';
import { initBackend } from '../src/tensor/backend.js';
import type { Rollout } from '../src/agent/rollout.js';
import { checkQuestion, type InvalidReason, QUESTION_RULES } from '../src/selfplay/validate.js';
import { SkillBank } from '../src/skills/bank.js';
import { questionKey, ReusePool } from '../src/selfplay/reuse-pool.js';
import { hopQuotas } from '../src/selfplay/seed-draw.js';
import { Rng } from '../src/util/rng.js';
import { DEFAULT_RENDER_HEADER } from '../src/skills/render.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { FakeSearcher } from './helpers/fake-searcher.js';
import { EOS, type PolicyScript, ScriptedPolicy } from './helpers/scripted-policy.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const G = 5;
const WRONG = 'Nobody Known';

/** What the scripted proposer does for one proposal: write a valid question, or fail in one way. */
type ProposalKind = 'valid' | InvalidReason | 'contains-alias';

interface Plan {
  answer: string;
  hops?: number;
  aliases?: string[];
  /** The kind of proposal j of this seed (the last one repeats). */
  kinds?: ProposalKind[];
  /** Solver rollouts j < correct answer right (with the first alias when `aliasCorrect`), the next `malformed` write no answer, the rest are wrong. */
  correct: number;
  malformed?: number;
  aliasCorrect?: boolean;
  /** With firstSearchCheck: the scripted reader answers this plan's question from its first search alone. */
  firstSearchAnswers?: boolean;
}

/** The question the scripted proposer writes for plan `idx` (≥ 10 words, never the answer). */
function questionOf(idx: number, tag: string): string {
  return `Which hamlet is listed under ledger entry number ${idx}${tag} in the old archive?`;
}

function planIndexOf(question: string): number {
  const m = /entry number (\d+)/.exec(question);
  if (!m) throw new Error(`not a scripted question: ${question}`);
  return Number(m[1]);
}

function passagesOf(plans: readonly Plan[]): Passage[] {
  return plans.map((p) => ({ id: `doc-${p.answer}`, title: p.answer, text: `${p.answer} is a hamlet in the Tarn valley, recorded in the ledger.` }));
}

/** The proposer's turns for one proposal. */
function proposerTurn(plan: Plan, idx: number, kind: ProposalKind, turn: number, tag: string): string {
  const a = plan.answer;
  const q = questionOf(idx, tag);
  const searches: Record<number, string> =
    kind === 'too-few-searches'
      ? { 0: `<search>${a} origin</search>`, 1: `<search>  ${a.toLowerCase()} ORIGIN </search>` }
      : kind === 'nothing-retrieved'
        ? { 0: '<search>zzq vvx</search>', 1: '<search>qqp mmx</search>' }
        : { 0: `<think>start from the answer</think><search>${a} origin</search>`, 1: `<search>${a} history</search>` };
  if (turn < 2) return searches[turn] as string;
  // A repeated query: a third search that repeats the first (turn 2), then the question (turn 3).
  if (kind === 'repeated-query' && turn === 2) return `<search>${a.toLowerCase()} ORIGIN</search>`;
  if (turn > (kind === 'repeated-query' ? 3 : 2)) throw new Error('the scripted proposer finishes at turn 2 (3 with a repeated query)');
  switch (kind) {
    case 'no-question':
      return `I cannot write one.${EOS}`;
    case 'too-short':
      return '<question>Who is it</question>';
    case 'too-long':
      return `<question>${'Which hamlet of the valley '.repeat(40)}is it?</question>`;
    case 'too-few-words':
      return '<question>Which hamlet holds ledger entry seven?</question>';
    case 'contains-answer':
      return `<question>Which hamlet, later renamed ${a.toUpperCase()}, is listed in the old archive records?</question>`;
    case 'contains-alias':
      return `<question>Which hamlet, later renamed ${(plan.aliases?.[0] as string).toLowerCase()}, is listed in the old archive records?</question>`;
    default:
      return `<think>done</think><question>${q}</question>`;
  }
}

class RecordingUpdater implements PolicyUpdater {
  readonly calls: Array<{ role: Role; ids: string[][]; rewards: number[][]; bankVersion: number | undefined; bankCards: number | undefined; inFlight: boolean | undefined }> = [];
  onUpdate: ((role: Role) => void) | undefined;

  constructor(private readonly bank: SkillBank | undefined) {}

  async update(role: Role, groups: readonly RolloutGroup[]): Promise<RoleUpdateMetrics | undefined> {
    this.calls.push({
      role,
      ids: groups.map((g) => g.rollouts.map((r) => r.id)),
      rewards: groups.map((g) => [...g.rewards]),
      bankVersion: this.bank?.version,
      bankCards: this.bank?.cards.length,
      inFlight: this.bank?.consolidationInFlight,
    });
    this.onUpdate?.(role);
    if (groups.length === 0) return undefined;
    return { loss: 0.5, pgLoss: 0.25, kl: 0.01, clipFrac: 0, entropy: 1, gradNorm: 0.1, lr: 1e-5, tokensPerSecond: 100, sequences: groups.reduce((n, g) => n + g.rollouts.length, 0) };
  }
}

interface World {
  deps: StepDeps;
  settings: StepSettings;
  seedPool: AnswerSeed[];
  plans: Plan[];
  proposerPolicy: ScriptedPolicy;
  solverPolicy: ScriptedPolicy;
  searcher: FakeSearcher;
  /** With corpora: each corpus's searcher and RAG reader (corpus k holds the plans corpusOf maps to k). */
  searchers: FakeSearcher[];
  ragJudges: ScriptedTextGenerator[];
  ragJudge: ScriptedTextGenerator;
  semantic: ScriptedTextGenerator;
  updater: RecordingUpdater;
  bank: SkillBank;
}

function userText(messages: ChatMessage[]): string {
  return messages.map((m) => m.content).join('\n');
}

interface WorldOptions {
  seedsPerStep?: number;
  proposalsPerSeed?: number;
  seed?: number;
  tagQuestions?: boolean;
  distiller?: ScriptedTextGenerator;
  skipUniformGroups?: boolean;
  /** Plan i's corpus: the seeds name it, and each corpus has its own searcher and RAG reader. */
  corpusOf?: (planIndex: number) => number;
  /** SSP's reuse (a pool in the deps, its rules in the settings). */
  reuse?: { threshold: number; clearEvery: number; byHops?: boolean };
  solverBatch?: number;
  hopMix?: number[];
  /** --min-informative-groups and --resample-rounds. */
  resample?: { minGroups: number; rounds: number };
  /** No skill bank (as the SSP recipe). */
  noSkills?: boolean;
  /**
   * --hop-check: the step gets the search tools and the check's settings, and the RAG reader reads as a reader
   * that can only answer from what it is shown: right exactly when the answer's own passage is among the documents.
   */
  hopCheck?: boolean;
  /**
   * --first-search-check, with a RAG reader that answers a plan marked firstSearchAnswers from any documents and
   * every other plan only from more than one search's passages (more than the 3 a search returns).
   */
  firstSearchCheck?: boolean;
  /** --step-corpora all: a step's seeds from every corpus. */
  stepCorporaAll?: boolean;
}

async function makeWorld(plans: Plan[], opts: WorldOptions = {}): Promise<World> {
  const proposalsPerSeed = opts.proposalsPerSeed ?? 1;
  const byAnswer = new Map(plans.map((p, i) => [p.answer, i]));
  const proposerScript: PolicyScript = (_text, turn, ctx) => {
    const answer = /whose correct answer is exactly: (.*)\n/.exec(ctx.prompt)?.[1];
    const idx = byAnswer.get(answer ?? '');
    if (idx === undefined) throw new Error(`scripted proposer: unknown answer ${answer}`);
    const plan = plans[idx] as Plan;
    const kinds = plan.kinds ?? ['valid'];
    const kind = kinds[Math.min(ctx.row % proposalsPerSeed, kinds.length - 1)] as ProposalKind;
    // With tagQuestions, each step's questions differ (the generate call count grows by 3 per step).
    return proposerTurn(plan, idx, kind, turn, opts.tagQuestions ? ` tag ${ctx.call}` : '');
  };
  const solverScript: PolicyScript = (_text, turn, ctx) => {
    const question = /\nQuestion: (.*)\n<\|end\|>/.exec(ctx.prompt)?.[1] ?? '';
    const plan = plans[planIndexOf(question)] as Plan;
    if (turn === 0) return `<search>${plan.answer} origin</search>`;
    // All rows of a solve call run in lockstep, so the row index within a question's group is row % G.
    const j = ctx.row % G;
    if (j < plan.correct) return `<answer>${plan.aliasCorrect ? (plan.aliases?.[0] as string) : plan.answer}</answer>`;
    if (j < plan.correct + (plan.malformed ?? 0)) return `I am not sure.${EOS}`;
    return `<answer>${WRONG}</answer>`;
  };
  const proposerPolicy = new ScriptedPolicy(proposerScript, { name: 'scripted proposer (test double)' });
  const solverPolicy = new ScriptedPolicy(solverScript, { name: 'scripted solver (test double)' });
  const searcher = new FakeSearcher(passagesOf(plans));
  const corpusCount = opts.corpusOf ? Math.max(...plans.map((_, i) => (opts.corpusOf as (i: number) => number)(i))) + 1 : 0;
  const searchers = Array.from({ length: corpusCount }, (_, k) => new FakeSearcher(passagesOf(plans.filter((_, i) => opts.corpusOf?.(i) === k))));
  const dir = mkdtempSync(join(tmpdir(), 'sesa-step-'));
  dirs.push(dir);
  const bank = await SkillBank.open(join(dir, 'bank.json'), { embedder: new LexicalEmbedder() });
  const rollout: RolloutSettings = { maxTurns: 4, maxTokensPerTurn: 2000, maxResponseTokens: 8000, temperature: 1, passagesPerQuery: 3 };
  // The RAG check reaches the answer, except for the plan scripted to fail it.
  const ragJudge = new ScriptedTextGenerator(
    [
      (messages) => {
        const plan = plans[planIndexOf(/\nQuestion: (.*)$/m.exec(userText(messages))?.[1] ?? '')] as Plan;
        if (plan.kinds?.[0] === 'rag-check-failed') return `<answer>${WRONG}</answer>`;
        if (opts.hopCheck && !userText(messages).includes(`(Title: "${plan.answer}")`)) return `<answer>${WRONG}</answer>`;
        if (opts.firstSearchCheck && !plan.firstSearchAnswers && (userText(messages).match(/^Doc \d+/gm) ?? []).length <= 3) return `<answer>${WRONG}</answer>`;
        return `<answer>${plan.answer}</answer>`;
      },
    ],
    { cycle: true, name: 'scripted RAG judge (fake LLM)' },
  );
  const ragJudges = searchers.map(
    (_, k) =>
      new ScriptedTextGenerator(
        [
          (messages) => {
            const plan = plans[planIndexOf(/\nQuestion: (.*)$/m.exec(userText(messages))?.[1] ?? '')] as Plan;
            return `<answer>${plan.answer}</answer>`;
          },
        ],
        { cycle: true, name: `scripted RAG reader of corpus ${k} (fake LLM)` },
      ),
  );
  const semantic = new ScriptedTextGenerator(['Wrong'], { cycle: true, name: 'scripted semantic judge (fake LLM)' });
  const updater = new RecordingUpdater(opts.noSkills ? undefined : bank);
  const tools = corpusCount > 0 ? searchers : searcher;
  const deps: StepDeps = {
    proposer: new ProposerRole(proposerPolicy, tools, rollout),
    solver: new SolverRole(solverPolicy, tools, opts.noSkills ? undefined : bank, rollout),
    skills: opts.noSkills ? undefined : bank,
    judge: new AnswerJudge(semantic),
    ragJudge,
    ...(corpusCount > 0 ? { ragJudges } : {}),
    ...(opts.reuse ? { reusePool: new ReusePool() } : {}),
    ...(opts.hopCheck ? { searchers: tools } : {}),
    updater,
    ...(opts.distiller ? { distiller: opts.distiller } : {}),
  };
  const settings: StepSettings = {
    seedsPerStep: opts.seedsPerStep ?? plans.length,
    proposalsPerSeed,
    groupSize: G,
    reward: { ...PROPOSER_REWARD_DEFAULTS },
    seed: opts.seed ?? 1234,
    ragDistractorBlocks: 4,
    ragMaxTokens: 64,
    rules: { ...QUESTION_RULES },
    failureEvidenceChars: 2000,
    skipUniformGroups: opts.skipUniformGroups ?? false,
    ...(opts.reuse ? { reuse: opts.reuse } : {}),
    ...(opts.solverBatch !== undefined ? { solverBatch: opts.solverBatch } : {}),
    ...(opts.hopMix ? { hopMix: opts.hopMix } : {}),
    ...(opts.resample ? { resample: opts.resample } : {}),
    ...(opts.hopCheck ? { hopCheck: { passages: 3 } } : {}),
    ...(opts.firstSearchCheck ? { firstSearchCheck: true } : {}),
    ...(opts.stepCorporaAll ? { stepCorpora: 'all' as const } : {}),
  };
  const seedPool = plans.map((p, i) => ({ answer: p.answer, hops: p.hops ?? 2, ...(p.aliases ? { aliases: p.aliases } : {}), ...(opts.corpusOf ? { corpus: opts.corpusOf(i) } : {}) }));
  return { deps, settings, seedPool, plans, proposerPolicy, solverPolicy, searcher, searchers, ragJudges, ragJudge, semantic, updater, bank };
}

function byAnswer(result: StepResult, answer: string): StepResult['proposals'] {
  return result.proposals.filter((p) => p.answer === answer);
}

describe('sesaStep: validation', () => {
  it('counts proposals and valid questions by the hop count their seed asked for', async () => {
    const mixed: Plan[] = [
      { answer: 'Hamletaorn', hops: 1, kinds: ['valid'], correct: 2 },
      { answer: 'Hamletborn', hops: 1, kinds: ['too-short'], correct: 2 },
      { answer: 'Hamletcorn', hops: 3, kinds: ['contains-answer'], correct: 2 },
      { answer: 'Hamletdorn', hops: 3, kinds: ['valid', 'too-few-words'], correct: 2 },
    ];
    const w = await makeWorld(mixed, { proposalsPerSeed: 2 });
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.metrics.validByHops).toEqual({ '1': { proposals: 4, valid: 2 }, '3': { proposals: 4, valid: 1 } });
    expect(r.metrics.validQuestions).toBe(3);
  });

  const kinds: ProposalKind[] = ['valid', 'no-question', 'too-short', 'too-long', 'too-few-words', 'contains-answer', 'too-few-searches', 'nothing-retrieved', 'rag-check-failed'];
  const plans: Plan[] = kinds.map((k, i) => ({ answer: `Hamlet${'ABCDEFGHI'[i]}orn`, kinds: [k], correct: 3 }));

  it('every invalid kind gets r_invalid = −1; the valid question is solved and rewarded', async () => {
    const w = await makeWorld(plans);
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.length).toBe(9);
    for (const [i, kind] of kinds.entries()) {
      const [p] = byAnswer(r, (plans[i] as Plan).answer);
      if (kind === 'valid') {
        expect(p?.invalid).toBeUndefined();
        expect(p?.question).toBe(questionOf(i, ''));
        expect(p?.pHat).toBe(0.6);
        expect(p?.reward).toBeCloseTo(0.96, 14);
        expect(p?.solverOutcomes).toEqual(['correct', 'correct', 'correct', 'wrong', 'wrong']);
      } else {
        expect([p?.invalid, p?.reward, p?.pHat, p?.solverOutcomes]).toEqual([kind, -1, undefined, undefined]);
        expect(p?.question === undefined).toBe(kind === 'no-question');
      }
    }
    expect(r.metrics.invalidReasons).toEqual(Object.fromEntries(kinds.filter((k) => k !== 'valid').map((k) => [k, 1])));
    expect(r.metrics.validityRate).toBe(1 / 9);
    expect(r.metrics.extractionRate).toBe(8 / 9);
    expect(r.metrics.validQuestions).toBe(1);
    expect(r.metrics.validByHops).toEqual({ '2': { proposals: 9, valid: 1 } });
    expect(r.metrics.solverRollouts).toBe(5);
    // The RAG check ran for the two proposals that passed the rules, each with its own passages (2) and 4
    // blocks of 2 from other rollouts (the one with nothing retrieved has no block to give): 10 documents.
    expect(w.ragJudge.calls.length).toBe(2);
    for (const call of w.ragJudge.calls) {
      const text = userText(call);
      expect(text).toContain('Doc 10(');
      expect(text).not.toContain('Doc 11(');
      const idx = planIndexOf(/\nQuestion: (.*)$/m.exec(text)?.[1] ?? '');
      expect(text.split(`${(plans[idx] as Plan).answer} is a hamlet`).length - 1).toBeGreaterThanOrEqual(2);
    }
    // Only the valid question reached the solver; each proposal is its own proposer group (n_p = 1).
    const [solverCall, proposerCall] = w.updater.calls;
    expect(solverCall?.role).toBe('solver');
    expect(solverCall?.rewards).toEqual([[1, 1, 1, 0, 0]]);
    expect(proposerCall?.role).toBe('proposer');
    expect(proposerCall?.rewards).toEqual(r.proposals.map((p) => [p.reward]));
    expect(proposerCall?.ids).toEqual(r.proposals.map((_, i) => [`seed${i}/p0`]));
  });

  it('r_invalid is the configured value', async () => {
    const w = await makeWorld(plans.slice(1, 3));
    const r = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, reward: { ...w.settings.reward, invalidReward: -2 } });
    expect(r.proposals.map((p) => p.reward)).toEqual([-2, -2]);
    expect(w.updater.calls.map((c) => [c.role, c.rewards])).toEqual([
      ['solver', []],
      ['proposer', [[-2], [-2]]],
    ]);
  });
});

describe('checkQuestion: the rule checks at their boundaries', () => {
  const rollout = (final: string | undefined, queries = ['first query', 'second query'], retrieved: Passage[][] = [[{ id: 'd', title: 'T', text: 'x' }], []]): Rollout => ({
    id: 'p',
    promptIds: [],
    responseIds: [],
    responseMask: [],
    logprobs: [],
    samplingTemperature: 1,
    queries,
    retrieved,
    ...(final !== undefined ? { final } : {}),
    outcome: 'final',
    turns: 3,
    invalidActions: 0,
    text: '',
  });
  const ten = 'one two three four five six seven eight nine ten';

  it('accepts 10 words and 10–1000 characters, and names the first rule broken', () => {
    expect(QUESTION_RULES).toEqual({ minChars: 10, maxChars: 1000, minWords: 10, minDistinctQueries: 2, rejectRepeatedQueries: true });
    expect(checkQuestion(rollout(`  ${ten}  `), 'Zed')).toEqual({ question: ten });
    expect(checkQuestion(rollout(undefined), 'Zed')).toEqual({ invalid: 'no-question' });
    expect(checkQuestion(rollout('   '), 'Zed')).toEqual({ invalid: 'no-question' });
    expect(checkQuestion(rollout('a b c d e'), 'Zed')).toEqual({ question: 'a b c d e', invalid: 'too-short' });
    const long = `${ten} ${'x'.repeat(1000 - ten.length - 1)}`;
    expect(long.length).toBe(1000);
    expect(checkQuestion(rollout(long), 'Zed').invalid).toBeUndefined();
    expect(checkQuestion(rollout(`${long}y`), 'Zed').invalid).toBe('too-long');
    expect(checkQuestion(rollout('one two three four five six seven eight nine'), 'Zed').invalid).toBe('too-few-words');
    expect(checkQuestion(rollout(`${ten} zEd`), ' Zed ').invalid).toBe('contains-answer');
    expect(checkQuestion(rollout(ten, [' Same Query ', 'same query', '']), 'Zed').invalid).toBe('too-few-searches');
    expect(checkQuestion(rollout(ten, ['a', 'b'], [[], []]), 'Zed').invalid).toBe('nothing-retrieved');
  });

  it('checks every alias of the answer, not only the main spelling', () => {
    expect(checkQuestion(rollout(`${ten} near fenn hollow`), 'Fennhollow', ['Fenn Hollow']).invalid).toBe('contains-answer');
    expect(checkQuestion(rollout(`${ten} near fenn hollow`), 'Fennhollow', ['Fenn Hollow']).question).toBe(`${ten} near fenn hollow`);
    expect(checkQuestion(rollout(`${ten} near fennhollow`), 'Fennhollow', ['Fenn Hollow']).invalid).toBe('contains-answer');
    expect(checkQuestion(rollout(`${ten} near the hollow`), 'Fennhollow', ['Fenn Hollow']).invalid).toBeUndefined();
  });

  it('a proposal that repeats a search query is invalid (repeated-query), unless the rule is off', () => {
    const queries = ['Zed origin', 'Zed history', '  zed ORIGIN '];
    expect(checkQuestion(rollout(ten, queries, [[{ id: 'd', title: 'T', text: 'x' }], [], []]), 'Qux').invalid).toBe('repeated-query');
    expect(checkQuestion(rollout(ten, queries, [[{ id: 'd', title: 'T', text: 'x' }], [], []]), 'Qux', [], { ...QUESTION_RULES, rejectRepeatedQueries: false }).invalid).toBeUndefined();
    // Two searches, one repeated: too few distinct searches comes first.
    expect(checkQuestion(rollout(ten, ['Zed origin', 'zed origin']), 'Qux').invalid).toBe('too-few-searches');
  });
});

describe('sesaStep: aliases, repeated queries and RAG distractors (SSP validity)', () => {
  it('rejects a question that names an alias of its answer, and one whose proposer repeated a query', async () => {
    const plans: Plan[] = [
      { answer: 'Fennhollow', aliases: ['Fenn Hollow'], kinds: ['contains-alias'], correct: 2 },
      { answer: 'Brennock', kinds: ['repeated-query'], correct: 2 },
    ];
    const w = await makeWorld(plans);
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.map((p) => [p.answer, p.invalid, p.reward])).toEqual([
      ['Fennhollow', 'contains-answer', -1],
      ['Brennock', 'repeated-query', -1],
    ]);
    expect(r.metrics.invalidReasons).toEqual({ 'contains-answer': 1, 'repeated-query': 1 });
    expect(w.ragJudge.calls.length).toBe(0);
  });

  it("draws RAG distractors only from other seeds' rollouts, and counts checks that got too few", async () => {
    // One seed, two proposals: the sibling's passages must not be mixed in, and there is no other seed.
    const w = await makeWorld([{ answer: 'Brennock', kinds: ['valid', 'valid'], correct: 2 }], { proposalsPerSeed: 2 });
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(w.ragJudge.calls.length).toBe(2);
    for (const call of w.ragJudge.calls) {
      const text = userText(call);
      // Its own two searches' passages only.
      expect(text).toContain('Doc 2(');
      expect(text).not.toContain('Doc 3(');
    }
    expect(r.metrics.ragChecks).toBe(2);
    expect(r.metrics.ragChecksShortOfDistractors).toBe(2);

    // Two seeds with two proposals each: each check gets the other seed's two rollouts (2 blocks of 2 passages)
    // and is still short of the 4 blocks asked for.
    const w2 = await makeWorld(
      [
        { answer: 'Brennock', kinds: ['valid', 'valid'], correct: 2 },
        { answer: 'Tessaly', kinds: ['valid', 'valid'], correct: 2 },
      ],
      { proposalsPerSeed: 2 },
    );
    const r2 = await sesaStep(1, w2.seedPool, w2.deps, w2.settings);
    for (const call of w2.ragJudge.calls) {
      const text = userText(call);
      const own = planIndexOf(/\nQuestion: (.*)$/m.exec(text)?.[1] ?? '') === 0 ? 'Brennock' : 'Tessaly';
      const other = own === 'Brennock' ? 'Tessaly' : 'Brennock';
      expect(text.split(`${own} is a hamlet`).length - 1).toBe(2);
      expect(text.split(`${other} is a hamlet`).length - 1).toBe(4);
    }
    expect([r2.metrics.ragChecks, r2.metrics.ragChecksShortOfDistractors]).toEqual([4, 4]);
    expect(r.proposals.every((p) => p.invalid === undefined)).toBe(true);
  });
});

describe('sesaStep: rewards, skill utility, failure queue, GRPO groups', () => {
  const plans: Plan[] = [
    { answer: 'Varrowen', correct: 0, kinds: ['valid', 'too-short'] },
    { answer: 'Quillmarsh', correct: 5, kinds: ['valid', 'too-short'] },
    { answer: 'Brennock', correct: 1, kinds: ['valid', 'valid'] },
    { answer: 'Tessaly', correct: 3, malformed: 1, kinds: ['valid', 'too-short'] },
    { answer: 'Ormwick', correct: 0, malformed: 5, kinds: ['valid', 'too-short'] },
    { answer: 'Fennhollow', aliases: ['Fenn Hollow'], aliasCorrect: true, correct: 2, kinds: ['valid', 'too-short'] },
  ];
  const expected: Record<string, { pHat: number; reward: number; outcomes: string[]; rewards: number[] }> = {
    Varrowen: { pHat: 0, reward: -0.5, outcomes: Array(5).fill('wrong'), rewards: [0, 0, 0, 0, 0] },
    Quillmarsh: { pHat: 1, reward: -0.5, outcomes: Array(5).fill('correct'), rewards: [1, 1, 1, 1, 1] },
    Brennock: { pHat: 0.2, reward: 0.64, outcomes: ['correct', 'wrong', 'wrong', 'wrong', 'wrong'], rewards: [1, 0, 0, 0, 0] },
    Tessaly: { pHat: 0.6, reward: 0.96, outcomes: ['correct', 'correct', 'correct', 'malformed', 'wrong'], rewards: [1, 1, 1, 0, 0] },
    Ormwick: { pHat: 0, reward: -0.5, outcomes: Array(5).fill('malformed'), rewards: [0, 0, 0, 0, 0] },
    Fennhollow: { pHat: 0.4, reward: 0.96, outcomes: ['correct', 'correct', 'wrong', 'wrong', 'wrong'], rewards: [1, 1, 0, 0, 0] },
  };

  it('gives exact rewards, queues only informative frontier failures, and counts skill utility', async () => {
    const w = await makeWorld(plans, { proposalsPerSeed: 2 });
    const statsBefore = new Map(w.bank.cards.map((c) => [c.id, { ...c.stats }]));
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);

    // Proposals: seed-major, n_p = 2; the second proposal is invalid except for Brennock (same question twice).
    expect(r.proposals.length).toBe(12);
    for (const p of r.proposals) {
      const e = expected[p.answer] as (typeof expected)[string];
      const second = r.proposals.filter((q) => q.seedIndex === p.seedIndex).indexOf(p) === 1;
      if (second && p.answer !== 'Brennock') {
        expect([p.invalid, p.reward]).toEqual(['too-short', -1]);
        continue;
      }
      expect(p.invalid).toBeUndefined();
      expect(p.pHat).toBe(e.pHat);
      expect(p.reward).toBeCloseTo(e.reward, 14);
      expect(p.solverOutcomes).toEqual(e.outcomes);
      // The skills of a question are the bank's top 3 for it.
      expect(p.skillIds).toEqual((await w.bank.retrieve(p.question as string)).map((x) => x.card.id));
      expect(p.skillIds?.length).toBe(3);
    }
    const valid = r.proposals.filter((p) => !p.invalid);
    expect(valid.length).toBe(7);

    // GRPO groups: the solver's are the G rollouts of one question, in proposal order; the proposer's are the
    // n_p proposals of one seed.
    const [solverCall, proposerCall] = w.updater.calls;
    expect(w.updater.calls.length).toBe(2);
    expect(solverCall?.role).toBe('solver');
    expect(solverCall?.rewards).toEqual(valid.map((p) => (expected[p.answer] as (typeof expected)[string]).rewards));
    expect(solverCall?.ids).toEqual(valid.map((_, i) => Array.from({ length: G }, (_, j) => `q${i}/s${j}`)));
    expect(proposerCall?.role).toBe('proposer');
    expect(proposerCall?.ids).toEqual(plans.map((_, i) => [`seed${i}/p0`, `seed${i}/p1`]));
    expect(proposerCall?.rewards.length).toBe(6);
    proposerCall?.rewards.forEach((g, i) => {
      const ps = r.proposals.filter((p) => p.seedIndex === i);
      expect(g).toEqual(ps.map((p) => p.reward));
      const e = expected[ps[0]?.answer as string] as (typeof expected)[string];
      if (ps[0]?.answer === 'Brennock') {
        expect(g[0]).toBeCloseTo(0.64, 14);
        expect(g[1]).toBeCloseTo(0.64, 14);
      } else {
        expect(g[0]).toBeCloseTo(e.reward, 14);
        expect(g[1]).toBe(-1);
      }
    });

    // Failure queue: well-formed wrong answers of questions with 0 < p̂ < 1 only. Brennock's question was
    // solved twice (4 + 4 failures in one record), Tessaly's malformed rollout is not a failure, Varrowen
    // (p̂ = 0), Quillmarsh (p̂ = 1) and Ormwick (malformed only) give none.
    expect(r.metrics.failuresQueued).toBe(8 + 1 + 3);
    const queue = w.bank.pendingFailures().sort((a, b) => a.target.localeCompare(b.target));
    const skillsOf = (answer: string): string[] | undefined => valid.find((p) => p.answer === answer)?.skillIds;
    const rec = (answer: string, count: number) => {
      const idx = plans.findIndex((p) => p.answer === answer);
      return {
        question: questionOf(idx, ''),
        key: questionOf(idx, '').toLowerCase(),
        target: answer,
        evidence: `${answer}: ${answer} is a hamlet in the Tarn valley, recorded in the ledger.`,
        prediction: WRONG,
        retrievedSkillIds: skillsOf(answer),
        // The failed rollout's searches, for the distiller.
        queries: [`${answer} origin`],
        count,
        firstStep: 1,
        lastStep: 1,
      };
    };
    expect(queue).toEqual([rec('Brennock', 8), rec('Fennhollow', 3), rec('Tessaly', 1)]);

    // Skill utility: per rollout, retrieved += 1 for each of its cards, helpful on correct, hurt on wrong.
    const want = new Map([...statsBefore].map(([id, s]) => [id, { ...s }]));
    for (const p of valid) {
      for (const id of p.skillIds ?? []) {
        const s = want.get(id) as { retrieved: number; helpful: number; hurt: number };
        s.retrieved += G;
        s.helpful += p.solverOutcomes?.filter((o) => o === 'correct').length ?? 0;
        s.hurt += p.solverOutcomes?.filter((o) => o === 'wrong').length ?? 0;
      }
    }
    expect(new Map(w.bank.cards.map((c) => [c.id, c.stats]))).toEqual(want);
    const used = new Set(valid.flatMap((p) => p.skillIds ?? []));
    expect([...used].some((id) => (want.get(id)?.retrieved ?? 0) > 0)).toBe(true);

    // Metrics.
    expect(r.metrics.pHatHistogram).toEqual({ '0.00': 2, '1.00': 1, '0.20': 2, '0.60': 1, '0.40': 1 });
    expect(r.metrics.solverAccuracy).toBe(12 / 35);
    expect(r.metrics.validQuestions).toBe(7);
    expect(r.metrics.invalidReasons).toEqual({ 'too-short': 5 });
    expect(r.metrics.queueLength).toBe(3);
    expect(r.metrics.activeSkills).toBe(used.size);
    expect(r.metrics.bankVersion).toBe(1);
    expect(r.metrics.consolidation).toEqual({ started: false });
    expect(r.metrics.solver?.sequences).toBe(35);
    // The semantic judge saw exactly the wrong answers (malformed ones never reach it; exact matches skip it).
    expect(w.semantic.calls.length).toBe(5 + 4 + 4 + 1 + 3);
  });

  it('with the cards in half of each group, the others are asked without them, and utility and failures count only the rollouts that had them', async () => {
    const w = await makeWorld(plans, { proposalsPerSeed: 2 });
    const statsBefore = new Map(w.bank.cards.map((c) => [c.id, { ...c.stats }]));
    const r = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, cardsInGroup: 'half' });
    const valid = r.proposals.filter((p) => !p.invalid);
    const half = Math.floor(G / 2);
    // The solver's first turn: per question, the first ⌊G/2⌋ prompts hold the rendered cards, the others none.
    const firstTurn = w.solverPolicy.calls.find((c) => c.prompts.length === valid.length * G) as { prompts: string[] };
    valid.forEach((_, i) => {
      const group = firstTurn.prompts.slice(i * G, (i + 1) * G);
      expect(group.map((t) => t.includes(DEFAULT_RENDER_HEADER))).toEqual(Array.from({ length: G }, (_, j) => j < half));
      // Otherwise the same prompt: the question and the protocol.
      expect(new Set(group.map((t) => t.slice(t.indexOf('Answer the question below.')))).size).toBe(1);
    });
    // Utility: retrieved counts the ⌊G/2⌋ rollouts with cards, helpful and hurt their outcomes only.
    const want = new Map([...statsBefore].map(([id, st]) => [id, { ...st }]));
    for (const p of valid) {
      const withCards = (p.solverOutcomes ?? []).slice(0, half);
      for (const id of p.skillIds ?? []) {
        const st = want.get(id) as { retrieved: number; helpful: number; hurt: number };
        st.retrieved += half;
        st.helpful += withCards.filter((o) => o === 'correct').length;
        st.hurt += withCards.filter((o) => o === 'wrong').length;
      }
    }
    expect(new Map(w.bank.cards.map((c) => [c.id, c.stats]))).toEqual(want);
    // A queued failure names the cards only when its rollout had them: Fennhollow's wrong rollouts are 2, 3
    // and 4 of G = 5, none of which had cards (its record names none); Tessaly's one wrong rollout is its last.
    const queue = new Map(w.bank.pendingFailures().map((f) => [f.target, f]));
    expect(queue.get('Fennhollow')).toMatchObject({ count: 3, retrievedSkillIds: [] });
    expect(queue.get('Tessaly')?.retrievedSkillIds).toEqual([]);
    // Rewards are the same as with all cards (the scripted solver ignores its prompt), so the split groups
    // contrast nothing here; with seed cards only in this bank no group has a learned card, and none is counted.
    expect(r.metrics.cardUse?.split).toBeUndefined();
    expect(r.metrics.solverAccuracy).toBe(12 / 35);
  });

  it("with --queue-failures all, every well-formed wrong answer is queued, also of questions no rollout solved", async () => {
    const w = await makeWorld(plans, { proposalsPerSeed: 2 });
    const r = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, queueFailures: 'all' });
    // The frontier's 8 + 1 + 3, and Varrowen's five (p̂ = 0); Quillmarsh (all right) and Ormwick (malformed) give none.
    expect(r.metrics.failuresQueued).toBe(8 + 1 + 3 + 5);
    expect(w.bank.pendingFailures().map((f) => f.target).sort()).toEqual(['Brennock', 'Fennhollow', 'Tessaly', 'Varrowen']);
  });

  it('with --skip-uniform-groups, only groups whose rewards differ reach the updates; the step is otherwise the same', async () => {
    const full = await makeWorld(plans, { proposalsPerSeed: 2 });
    const r0 = await sesaStep(1, full.seedPool, full.deps, full.settings);
    const w = await makeWorld(plans, { proposalsPerSeed: 2, skipUniformGroups: true });
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    // Same proposals, rewards and p̂: the filter acts on the updates only.
    expect(r.proposals.map((p) => [p.answer, p.invalid, p.pHat, p.reward])).toEqual(r0.proposals.map((p) => [p.answer, p.invalid, p.pHat, p.reward]));
    const differ = (rewards: number[]): boolean => new Set(rewards).size > 1;
    const [solverAll, proposerAll] = full.updater.calls;
    const [solverKept, proposerKept] = w.updater.calls;
    // Solver: Varrowen, Quillmarsh and Ormwick (all 0 or all 1) are left out; Brennock twice, Tessaly, Fennhollow stay.
    expect(solverKept?.rewards).toEqual(solverAll?.rewards.filter(differ));
    expect(solverKept?.rewards.length).toBe(4);
    expect(solverKept?.ids).toEqual(solverAll?.ids.filter((_, i) => differ(solverAll.rewards[i] as number[])));
    // Proposer: Brennock's two valid proposals share one reward (0.64, 0.64) and are left out; every other seed
    // has a valid and an invalid proposal.
    expect(proposerKept?.rewards).toEqual(proposerAll?.rewards.filter(differ));
    expect(proposerKept?.rewards.length).toBe(5);
  });

  it("with --proposer-baseline step, the proposer trains on one group of the step's proposals; the rest of the step is the same", async () => {
    const bySeed = await makeWorld(plans, { proposalsPerSeed: 2 });
    const a = await sesaStep(1, bySeed.seedPool, bySeed.deps, bySeed.settings);
    const w = await makeWorld(plans, { proposalsPerSeed: 2 });
    const b = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, proposerBaseline: 'step' });
    const [solverA, proposerA] = bySeed.updater.calls;
    const [solverB, proposerB] = w.updater.calls;
    expect(proposerA?.rewards.length).toBe(plans.length);
    expect(proposerB?.rewards).toEqual([proposerA?.rewards.flat()]);
    expect(proposerB?.ids).toEqual([proposerA?.ids.flat()]);
    expect(b.groups.proposer).toHaveLength(1);
    expect([solverB?.ids, solverB?.rewards]).toEqual([solverA?.ids, solverA?.rewards]);
    expect(b.proposals).toEqual(a.proposals);
  });

  it('with solver and proposer epochs, each role is updated that many times on the same groups, solver first', async () => {
    const once = await makeWorld(plans, { proposalsPerSeed: 2 });
    await sesaStep(1, once.seedPool, once.deps, once.settings);
    const w = await makeWorld(plans, { proposalsPerSeed: 2 });
    const r = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, epochs: { solver: 3, proposer: 2 } });
    const [solverOnce, proposerOnce] = once.updater.calls;
    expect(w.updater.calls.map((c) => c.role)).toEqual(['solver', 'solver', 'solver', 'proposer', 'proposer']);
    for (const c of w.updater.calls.slice(0, 3)) expect([c.ids, c.rewards]).toEqual([solverOnce?.ids, solverOnce?.rewards]);
    for (const c of w.updater.calls.slice(3)) expect([c.ids, c.rewards]).toEqual([proposerOnce?.ids, proposerOnce?.rewards]);
    expect(r.metrics.solver?.sequences).toBe(solverOnce?.ids.flat().length);
  });
});

describe('sesaStep: consolidation and the step boundary', () => {
  const CARD = {
    category: 'verification',
    description: 'For a question naming a ledger entry number in the old archive, search the listed hamlet with its entry number and confirm the listing before answering.',
    triggers: ['which hamlet is listed', 'ledger entry number', 'old archive'],
    avoid: ['answering with a hamlet from another ledger entry'],
    queries: ['[hamlet] ledger entry [number]'],
  };
  const plans: Plan[] = [
    { answer: 'Varrowen', correct: 2 },
    { answer: 'Quillmarsh', correct: 2 },
    { answer: 'Brennock', correct: 2 },
  ];

  it('consolidates at step 10 with ≥ 20 pending, commits only at the boundary, and skills never reach the proposer', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((res) => {
      release = res;
    });
    const updaterCallsAtReply: number[] = [];
    let updater: RecordingUpdater | undefined;
    const distiller = new ScriptedTextGenerator(
      [
        () => {
          updaterCallsAtReply.push(updater?.calls.length ?? -1);
          return `Here is the card:\n${JSON.stringify(CARD)}`;
        },
      ],
      { cycle: true, gate, name: 'scripted distiller (fake LLM)' },
    );
    const w = await makeWorld(plans, { tagQuestions: true, distiller });
    updater = w.updater;
    let step = 0;
    w.updater.onUpdate = (role) => {
      if (step === 10 && role === 'proposer') release();
    };
    const seedCount = w.bank.cards.length;
    const results: StepResult[] = [];
    for (step = 1; step <= 10; step++) {
      expect(w.bank.version).toBe(step - 1);
      const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
      results.push(r);
      // Three frontier questions (p̂ = 0.4) per step, each one queue record of 3 failures.
      expect(r.metrics.failuresQueued).toBe(9);
      expect(w.bank.version).toBe(step);
      if (step < 10) {
        // Not a consolidation step, even with ≥ 20 pending from step 7 on.
        expect(r.metrics.consolidation).toEqual({ started: false });
        expect(r.metrics.queueLength).toBe(3 * step);
        expect(distiller.calls.length).toBe(0);
      }
    }
    const last = results[9] as StepResult;
    const admitted = last.metrics.consolidation?.committed?.admitted ?? [];
    expect(last.metrics.consolidation).toEqual({ started: true, committed: { admitted, evicted: [], invalid: 0, consumed: 30, duplicates: 29 } });
    expect(admitted.length).toBe(1);
    expect(distiller.calls.length).toBe(30);
    // The distiller answered only after both updates of step 10 (the gate), and the updater saw the bank
    // of the step's start: same version, same cards, the job in flight.
    expect(updaterCallsAtReply.length).toBe(30);
    expect(new Set(updaterCallsAtReply)).toEqual(new Set([20]));
    expect(w.updater.calls.map((c) => c.bankVersion)).toEqual(Array.from({ length: 20 }, (_, i) => Math.floor(i / 2)));
    expect(w.updater.calls.map((c) => c.bankCards)).toEqual(Array(20).fill(seedCount));
    expect(w.updater.calls.map((c) => c.inFlight)).toEqual([...Array(18).fill(false), true, true]);
    // After the boundary: version + 1, the admitted card is in, the consumed records are gone.
    expect(w.bank.version).toBe(10);
    expect(last.metrics.bankVersion).toBe(10);
    expect(last.metrics.bankSize).toBe(seedCount + 1);
    expect(last.metrics.queueLength).toBe(0);
    const card = w.bank.card(admitted[0] as string);
    expect(card).toMatchObject({ ...CARD, source: 'distilled', createdStep: 10, bankVersion: 10, stats: { retrieved: 0, helpful: 0, hurt: 0 } });

    // Step 11: the new card reaches the solver (it is about exactly these questions).
    const r11 = await sesaStep(11, w.seedPool, w.deps, w.settings);
    results.push(r11);
    expect(r11.proposals.every((p) => p.skillIds?.includes(card?.id as string))).toBe(true);

    // No proposer prompt, over all 11 steps and every turn, carries any card text or the skills header...
    const descriptions = w.bank.cards.map((c) => c.description);
    expect(descriptions).toContain(CARD.description);
    expect(w.proposerPolicy.prompts.length).toBe(11 * 3 * 3);
    for (const prompt of w.proposerPolicy.prompts) {
      expect(prompt).not.toContain(DEFAULT_RENDER_HEADER);
      for (const d of descriptions) expect(prompt.includes(d)).toBe(false);
    }
    // ...while every solver prompt carries the descriptions of the cards retrieved for its question.
    expect(w.solverPolicy.prompts.length).toBe(11 * 3 * G * 2);
    const skillsOf = new Map(results.flatMap((r) => r.proposals.map((p) => [p.question as string, p.skillIds ?? []] as const)));
    for (const prompt of w.solverPolicy.prompts) {
      const q = /\nQuestion: (.*)\n<\|end\|>/.exec(prompt)?.[1] as string;
      const ids = skillsOf.get(q) as string[];
      expect(ids.length).toBe(3);
      expect(prompt).toContain(DEFAULT_RENDER_HEADER);
      for (const id of ids) expect(prompt).toContain((w.bank.card(id) as { description: string }).description);
    }
  });
});

describe('sesaStep: the consolidation threshold and the SSP baseline', () => {
  const plans: Plan[] = [
    { answer: 'Varrowen', correct: 0 },
    { answer: 'Quillmarsh', correct: 5 },
  ];

  it('starts no consolidation at step 10 with 19 pending, and starts one with 20', async () => {
    const distiller = new ScriptedTextGenerator(['not a card'], { cycle: true, name: 'scripted distiller (fake LLM)' });
    const w = await makeWorld(plans, { distiller });
    const fill = (from: number, to: number): void => {
      for (let i = from; i < to; i++) w.bank.enqueueFailure({ question: `Old failed question number ${i}?`, target: 't', evidence: '', prediction: 'p', retrievedSkillIds: [] }, 1);
    };
    fill(0, 19);
    // p̂ is 0 and 1 here: these steps queue nothing of their own.
    const r10 = await sesaStep(10, w.seedPool, w.deps, w.settings);
    expect([r10.metrics.failuresQueued, r10.metrics.queueLength, r10.metrics.consolidation]).toEqual([0, 19, { started: false }]);
    expect(distiller.calls.length).toBe(0);
    fill(19, 20);
    const r20 = await sesaStep(20, w.seedPool, w.deps, w.settings);
    // Every reply is invalid: nothing admitted, the 20 records consumed.
    expect(r20.metrics.consolidation).toEqual({ started: true, committed: { admitted: [], evicted: [], invalid: 20, consumed: 20, duplicates: 0 } });
    expect(distiller.calls.length).toBe(20);
    expect(r20.metrics.queueLength).toBe(0);
  });

  it('skills off (no bank): the solver prompts carry no skills and the step records no bank metrics', async () => {
    const w = await makeWorld([{ answer: 'Brennock', correct: 2 }]);
    const rollout: RolloutSettings = { maxTurns: 4, maxTokensPerTurn: 2000, maxResponseTokens: 8000, temperature: 1, passagesPerQuery: 3 };
    const deps: StepDeps = { ...w.deps, solver: new SolverRole(w.solverPolicy, w.searcher, undefined, rollout), skills: undefined };
    const r = await sesaStep(1, w.seedPool, deps, w.settings);
    expect(r.proposals.map((p) => [p.pHat, p.skillIds])).toEqual([[0.4, []]]);
    expect(r.metrics.failuresQueued).toBe(0);
    for (const k of ['bankSize', 'activeSkills', 'bankVersion', 'queueLength', 'consolidation'] as const) expect(r.metrics[k]).toBeUndefined();
    for (const prompt of w.solverPolicy.prompts) expect(prompt).not.toContain(DEFAULT_RENDER_HEADER);
    expect(w.bank.version).toBe(0);
  });
});

describe('sesaStep: determinism', () => {
  const plans: Plan[] = ['valid', 'valid', 'too-short', 'rag-check-failed', 'valid', 'contains-answer'].map((k, i) => ({
    answer: `Hamlet${'ABCDEF'[i]}orn`,
    kinds: [k as ProposalKind],
    correct: [1, 3, 0, 0, 5, 0][i] as number,
  }));

  async function run(seed: number) {
    const w = await makeWorld(plans, { seedsPerStep: 4, seed });
    const results = [await sesaStep(1, w.seedPool, w.deps, w.settings), await sesaStep(2, w.seedPool, w.deps, w.settings)];
    return {
      // Wall-clock phase times are the only thing allowed to differ.
      results: results.map((r) => ({ ...r, metrics: { ...r.metrics, seconds: undefined } })),
      rag: w.ragJudge.calls,
      generateOpts: [...w.proposerPolicy.calls, ...w.solverPolicy.calls].map((c) => c.opts),
      updates: w.updater.calls,
      queue: w.bank.pendingFailures(),
      stats: w.bank.cards.map((c) => c.stats),
    };
  }

  it('the same step with the same seed gives identical records', async () => {
    const a = await run(42);
    const b = await run(42);
    expect(b).toEqual(a);
    // The seed matters: the seeds of a step are drawn from (seed, step).
    const c = await run(43);
    expect(c.results.map((r) => r.proposals.map((p) => p.answer))).not.toEqual(a.results.map((r) => r.proposals.map((p) => p.answer)));
  });
});

describe('sesaStep under --recipe ssp (the SSP baseline)', () => {
  it('rewards 1 − p̂, one proposal per seed with A = R, no skill ever retrieved, r_invalid 0, repeated queries rejected', async () => {
    await initBackend('cpu');
    const plans: Plan[] = [
      { answer: 'Varrowen', correct: 0 },
      { answer: 'Brennock', correct: 2 },
      { answer: 'Quillmarsh', correct: 5 },
      { answer: 'Tessaly', correct: 4 },
      { answer: 'Ormwick', kinds: ['repeated-query'], correct: 1 },
      { answer: 'Fennhollow', kinds: ['too-short'], correct: 1 },
    ];
    // The settings come from the recipe, as the trainer builds them.
    const { config } = resolveTrainConfig({ json: false, recipe: 'ssp', model: 'qwen3-4b', groupSize: G, seedsPerStep: plans.length }, new Set(['recipe', 'model', 'groupSize', 'seedsPerStep']));
    expect(config).toMatchObject({ skills: false, frontier: false, proposalsPerSeed: 1, invalidReward: 0, rejectRepeatedQueries: true });
    const w = await makeWorld(plans);
    const statsBefore = w.bank.cards.map((c) => ({ ...c.stats }));
    const rollout: RolloutSettings = { maxTurns: 4, maxTokensPerTurn: 2000, maxResponseTokens: 8000, temperature: 1, passagesPerQuery: 3 };
    // skills off: the trainer builds no bank, so neither the solver nor the step has one.
    const deps: StepDeps = { ...w.deps, solver: new SolverRole(w.solverPolicy, w.searcher, undefined, rollout), skills: undefined };
    const settings = { ...stepSettingsOf(config), seed: 1234 };
    const results = [await sesaStep(1, w.seedPool, deps, settings), await sesaStep(2, w.seedPool, deps, settings)];
    for (const r of results) {
      const by = (a: string) => byAnswer(r, a)[0];
      expect(r.proposals.length).toBe(plans.length);
      expect([by('Varrowen')?.pHat, by('Varrowen')?.reward]).toEqual([0, 1]);
      expect(by('Brennock')?.pHat).toBe(0.4);
      expect(by('Brennock')?.reward).toBeCloseTo(0.6, 14);
      expect([by('Quillmarsh')?.pHat, by('Quillmarsh')?.reward]).toEqual([1, 0]);
      expect(by('Tessaly')?.reward).toBeCloseTo(0.2, 14);
      expect([by('Ormwick')?.invalid, by('Ormwick')?.reward]).toEqual(['repeated-query', 0]);
      expect([by('Fennhollow')?.invalid, by('Fennhollow')?.reward]).toEqual(['too-short', 0]);
      for (const p of r.proposals) expect(p.skillIds ?? []).toEqual([]);
      for (const k of ['bankSize', 'activeSkills', 'bankVersion', 'queueLength', 'consolidation'] as const) expect(r.metrics[k]).toBeUndefined();
    }
    // n_p = 1: every proposer group holds one proposal, and its advantage is its reward (A = R).
    const proposerCalls = w.updater.calls.filter((c) => c.role === 'proposer');
    expect(proposerCalls.length).toBe(2);
    for (const call of proposerCalls) {
      expect(call.rewards.every((g) => g.length === 1)).toBe(true);
      const groups = call.rewards.map((rewards) => ({ rollouts: [], rewards }));
      expect(await advantagesOf(groups)).toEqual(call.rewards.map((g) => [Math.fround(g[0] as number)]));
    }
    // No skill was ever retrieved or shown: no solver prompt carries the skills header, no card was counted.
    for (const prompt of w.solverPolicy.prompts) expect(prompt).not.toContain(DEFAULT_RENDER_HEADER);
    expect(w.bank.cards.map((c) => c.stats)).toEqual(statsBefore);
    expect(w.bank.pendingFailures()).toEqual([]);
  });
});

describe('the reuse pool (SSP extraction_failure = reuse)', () => {
  const q = (question: string, successRate: number, step = 1): Parameters<ReusePool['add']>[0][number] => ({ question, answer: `A ${question}`, hops: 2, successRate, step });

  it('is emptied before every step whose number is a multiple of the clear interval, and draws only questions at most the threshold', () => {
    const pool = new ReusePool();
    expect(pool.beginStep(10, 10)).toBe(false);
    pool.add([q('easy', 1), q('mid', 0.4), q('hard', 0)]);
    expect(pool.beginStep(11, 10)).toBe(false);
    expect(pool.size).toBe(3);
    const rng = new Rng(7);
    const drawn = pool.draw(200, 0.5, rng);
    expect(drawn.length).toBe(200);
    expect(new Set(drawn.map((d) => d.question))).toEqual(new Set(['mid', 'hard']));
    // Each slot is its own draw: both eligible questions come up, some twice.
    expect(pool.draw(3, 0, rng).map((d) => d.question)).toEqual(['hard', 'hard', 'hard']);
    expect(new ReusePool([q('easy', 1)]).draw(4, 0.99, rng)).toEqual([]);
    expect(pool.beginStep(20, 10)).toBe(true);
    expect(pool.size).toBe(0);
    expect(pool.draw(2, 1, rng)).toEqual([]);
  });

  it('by hops (--reuse-by-hops): each slot draws from the questions of its hop count, from all where the pool has none of it', () => {
    const pool = new ReusePool([{ ...q('one', 0.2), hops: 1 }, { ...q('two', 0.4), hops: 2 }, { ...q('three', 0.6), hops: 3 }, { ...q('three-b', 1), hops: 3 }]);
    const rng = new Rng(11);
    const drawn = pool.drawByHops(Array.from({ length: 300 }, (_, i) => [1, 2, 3][i % 3]), 0.9, rng);
    drawn.forEach((d, i) => expect(d.hops, `slot ${i}`).toBe([1, 2, 3][i % 3]));
    // three-b is above the threshold: never drawn, so every 3-hop slot gets 'three'.
    expect(drawn.filter((d) => d.hops === 3).every((d) => d.question === 'three')).toBe(true);
    // A hop count the pool lacks (4), or none asked (undefined), draws from every eligible question.
    const open = pool.drawByHops(Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? 4 : undefined)), 0.9, rng);
    expect(new Set(open.map((d) => d.question))).toEqual(new Set(['one', 'two', 'three']));
    expect(new ReusePool([q('easy', 1)]).drawByHops([2, 2], 0.5, rng)).toEqual([]);
  });

  it('a resampling draw (drawDistinct): distinct questions, without replacement, none excluded or above the threshold', () => {
    const pool = new ReusePool([q('a', 0.2), q('b', 1), q('a', 0.6), q('c', 0.4), q('d', 0), q('e', 0.8)]);
    const rng = new Rng(5);
    for (let i = 0; i < 50; i++) {
      const drawn = pool.drawDistinct(3, 0.9, rng, new Set([questionKey({ question: 'c' })])).map((d) => d.question);
      expect(drawn.length).toBe(3);
      expect(new Set(drawn).size).toBe(3);
      for (const d of drawn) expect(['a', 'd', 'e']).toContain(d);
    }
    // More asked than there are: all of them once; the pool itself is unchanged.
    expect(
      pool
        .drawDistinct(10, 1, rng, new Set())
        .map((d) => d.question)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(pool.size).toBe(6);
    expect(pool.drawDistinct(4, 0.9, rng, new Set(['a', 'c', 'd', 'e'].map((question) => questionKey({ question }))))).toEqual([]);
    // The same text in two corpora is two questions.
    const twoWorlds = new ReusePool([{ ...q('same', 0.5), corpus: 0 }, { ...q('same', 0.5), corpus: 1 }]);
    expect(twoWorlds.drawDistinct(5, 1, rng, new Set([questionKey({ question: 'same', corpus: 1 })])).map((d) => d.corpus)).toEqual([0]);
    expect(twoWorlds.drawDistinct(5, 1, rng, new Set()).length).toBe(2);
  });

  it('round-trips through its file, and a malformed file names the file and the question', () => {
    const pool = new ReusePool([{ ...q('mid', 0.4, 3), aliases: ['a'], corpus: 2 }]);
    const back = ReusePool.fromFile(JSON.parse(JSON.stringify(pool.toFile())), 'p.json');
    expect(back.entries()).toEqual(pool.entries());
    expect(() => ReusePool.fromFile({ version: 1, questions: [{ ...q('x', 1.5) }] }, 'p.json')).toThrow("p.json: question 0: field 'successRate' must be in [0, 1]");
    expect(() => ReusePool.fromFile([], 'p.json')).toThrow('p.json: not a reuse pool');
  });
});

/** The reuse pool's suites: seeds 0–2 write valid questions (p̂ 0.4, 1 and 0.2), seeds 3–5 never do. */
const POOL_PLANS: Plan[] = [
  { answer: 'Varrowen', correct: 2 },
  { answer: 'Quillmarsh', correct: 5 },
  { answer: 'Brennock', correct: 1 },
  { answer: 'Tessaly', kinds: ['too-short'], correct: 3 },
  { answer: 'Ormwick', kinds: ['no-question'], correct: 3 },
  { answer: 'Fennhollow', kinds: ['too-few-words'], correct: 3 },
];

describe('sesaStep: the solver batch and the reuse pool', () => {
  // Seeds 0–2 write valid questions (p̂ 0.4, 1 and 0.2), seeds 3–5 never do; four seeds a step, one proposal each.
  const plans = POOL_PLANS;
  const pHatOf: Record<string, number> = { Varrowen: 0.4, Quillmarsh: 1, Brennock: 0.2 };

  it('fills every empty slot from the pool once it holds a question (exactly N questions), clears it every K steps, and never reuses a question above the threshold', async () => {
    const w = await makeWorld(plans, { seedsPerStep: 4, reuse: { threshold: 0.5, clearEvery: 5 }, skipUniformGroups: false });
    const pool = w.deps.reusePool as ReusePool;
    const N = 4;
    let reusedAny = 0;
    for (let step = 1; step <= 12; step++) {
      const before = step % 5 === 0 ? [] : pool.entries();
      const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
      const m = r.metrics;
      const valid = r.proposals.filter((p) => !p.invalid).length;
      expect(m.validQuestions).toBe(valid);
      expect(m.reusePoolCleared).toBe(step % 5 === 0 && step > 1);
      const eligible = before.filter((e) => e.successRate <= 0.5);
      if (eligible.length > 0) {
        // The invariant: a full solver batch, every empty slot filled.
        expect(m.solverQuestions, `step ${step}`).toBe(N);
        expect([m.reusedQuestions, m.emptySlots]).toEqual([N - valid, 0]);
      } else {
        expect([m.solverQuestions, m.reusedQuestions, m.emptySlots]).toEqual([valid, 0, N - valid]);
      }
      // A reused question is one the pool held, at most the threshold: never Quillmarsh's (p̂ = 1).
      for (const q of r.reused) {
        expect(before).toContainEqual(q);
        expect(q.successRate).toBeLessThanOrEqual(0.5);
        expect(q.answer).not.toBe('Quillmarsh');
      }
      reusedAny += r.reused.length;
      // The pool grows by every question solved (valid and reused), with this step's p̂.
      expect(pool.size).toBe(before.length + m.solverQuestions);
      for (const e of pool.entries().slice(before.length)) expect([e.step, e.successRate]).toEqual([step, pHatOf[e.answer]]);
      expect(m.reusePool).toBe(pool.size);
      // The solver trains on every group of the batch; the proposer's rewards come from its own questions only.
      const solverCall = w.updater.calls.filter((c) => c.role === 'solver').at(-1);
      expect(solverCall?.rewards.length).toBe(m.solverQuestions);
      expect(m.solverRollouts).toBe(m.solverQuestions * G);
      for (const p of r.proposals) {
        if (p.invalid) expect(p.reward).toBe(-1);
        else expect(p.pHat).toBe(pHatOf[p.answer]);
      }
    }
    expect(reusedAny).toBeGreaterThan(0);
  });

  it('a reused question is judged against its own answer and queued as a failure of it; the proposer group of the failed slot still gets r_invalid', async () => {
    const w = await makeWorld(plans, { seedsPerStep: 6, reuse: { threshold: 1, clearEvery: 10 } });
    await sesaStep(1, w.seedPool, w.deps, w.settings);
    const r = await sesaStep(2, w.seedPool, w.deps, w.settings);
    expect(r.metrics.reusedQuestions).toBe(3);
    expect(r.metrics.solverQuestions).toBe(6);
    // Its outcomes follow its own plan (the scripted solver answers by the question), judged by its answer.
    const solverCall = w.updater.calls.filter((c) => c.role === 'solver').at(-1);
    const expectedRewards = (answer: string): number[] => Array.from({ length: G }, (_, j) => (j < ((plans.find((p) => p.answer === answer) as Plan).correct ?? 0) ? 1 : 0));
    const reusedRewards = r.reused.map((q) => expectedRewards(q.answer));
    for (const rw of reusedRewards) expect(solverCall?.rewards).toContainEqual(rw);
    expect(r.metrics.validQuestionRollouts).toBe(3 * G);
    expect(r.metrics.solverRollouts).toBe(6 * G);
    // Invalid proposals keep r_invalid whatever question filled their slot.
    expect(r.proposals.filter((p) => p.invalid).map((p) => p.reward)).toEqual([-1, -1, -1]);
    const proposerCall = w.updater.calls.filter((c) => c.role === 'proposer').at(-1);
    expect(proposerCall?.rewards).toEqual(r.proposals.map((p) => [p.reward]));
  });

  it('--solver-batch N tops the valid questions up to N, and --extraction-failure dummy (no pool) leaves the slots empty', async () => {
    const w = await makeWorld(plans, { seedsPerStep: 6, reuse: { threshold: 1, clearEvery: 10 }, solverBatch: 8 });
    await sesaStep(1, w.seedPool, w.deps, w.settings);
    const r = await sesaStep(2, w.seedPool, w.deps, w.settings);
    expect([r.metrics.validQuestions, r.metrics.reusedQuestions, r.metrics.solverQuestions, r.metrics.emptySlots]).toEqual([3, 5, 8, 0]);
    const d = await makeWorld(plans, { seedsPerStep: 6 });
    await sesaStep(1, d.seedPool, d.deps, d.settings);
    const e = await sesaStep(2, d.seedPool, d.deps, d.settings);
    expect([e.metrics.solverQuestions, e.metrics.reusedQuestions, e.metrics.emptySlots, e.metrics.reusePool]).toEqual([3, 0, 3, undefined]);
  });

  it('resumes bit-exact: steps 3–4 after the pool went through its file give the records of an uninterrupted run', async () => {
    const strip = (r: StepResult) => ({ ...r, metrics: { ...r.metrics, seconds: undefined } });
    const run = async (resumeAt?: number) => {
      let w = await makeWorld(plans, { seedsPerStep: 3, reuse: { threshold: 1, clearEvery: 3 }, noSkills: true });
      const out: unknown[] = [];
      for (let step = 1; step <= 4; step++) {
        if (step === resumeAt) {
          // A new process: fresh roles and updater, the pool read back from the checkpoint's file.
          const file = JSON.parse(JSON.stringify((w.deps.reusePool as ReusePool).toFile()));
          w = await makeWorld(plans, { seedsPerStep: 3, reuse: { threshold: 1, clearEvery: 3 }, noSkills: true });
          w.deps.reusePool = ReusePool.fromFile(file, 'reuse-pool.json');
        }
        const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
        if (step >= 3) out.push({ r: strip(r), updates: w.updater.calls.slice(-2), pool: (w.deps.reusePool as ReusePool).entries() });
      }
      return out;
    };
    const full = await run();
    expect(await run(3)).toEqual(full);
    expect(JSON.stringify(full)).toContain('"reusedQuestions":');
  });
});

describe('sesaStep: resampling to a minimum of informative groups (--min-informative-groups)', () => {
  // Seeds 0–2 write valid questions (p̂ 0.4, 1 and 0.2); seeds 3–5 never do. Each step's questions differ (tagged).
  const plans = POOL_PLANS;
  const informativeOf: Record<string, boolean> = { Varrowen: true, Quillmarsh: false, Brennock: true };
  const world = (resample?: { minGroups: number; rounds: number }) =>
    makeWorld(plans, { seedsPerStep: 6, tagQuestions: true, reuse: { threshold: 1, clearEvery: 10 }, noSkills: true, ...(resample ? { resample } : {}) });

  it('while too few groups carry a signal, rounds solve distinct pooled questions not yet in the step; all of them judged, pooled and trained', async () => {
    const w = await world({ minGroups: 20, rounds: 3 });
    const pool = w.deps.reusePool as ReusePool;
    // Step 1: the pool is empty, so no round runs. It then holds step 1's three valid questions.
    const first = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect([first.metrics.resampleRounds, first.metrics.resampledQuestions, first.metrics.solverQuestions]).toEqual([0, 0, 3]);
    await sesaStep(2, w.seedPool, w.deps, w.settings);
    await sesaStep(3, w.seedPool, w.deps, w.settings);
    const before = pool.entries();
    const r = await sesaStep(4, w.seedPool, w.deps, w.settings);
    const m = r.metrics;
    // Round 0: 3 valid + 3 reused (drawn with replacement). The rounds then take every other pooled question
    // once, a batch (6) per round, until none is left or the rounds run out.
    const firstRoundTexts = new Set([...r.proposals.filter((p) => !p.invalid).map((p) => p.question as string), ...r.reused.map((q) => q.question)]);
    const left = new Set(before.map((e) => e.question).filter((t) => !firstRoundTexts.has(t)));
    expect(left.size).toBeGreaterThan(6);
    expect(m.resampledQuestions).toBe(Math.min(left.size, 6 * 3));
    expect(m.resampleRounds).toBe(Math.min(3, Math.ceil(left.size / 6)));
    expect([m.reusedQuestions, m.emptySlots]).toEqual([3, 0]);
    expect(m.solverQuestions).toBe(6 + m.resampledQuestions);
    expect(m.solverRollouts).toBe(m.solverQuestions * G);
    // Every question went into the pool with its own p̂, and the solver update got every group's rewards, in order.
    const added = pool.entries().slice(before.length);
    expect(added.length).toBe(m.solverQuestions);
    const resampled = added.slice(6).map((e) => e.question);
    expect(new Set(resampled).size).toBe(resampled.length);
    for (const t of resampled) expect(left.has(t)).toBe(true);
    const solverCall = w.updater.calls.filter((c) => c.role === 'solver').at(-1);
    expect(solverCall?.rewards).toEqual(added.map((e) => Array.from({ length: G }, (_, j) => (j < ((plans.find((p) => p.answer === e.answer) as Plan).correct ?? 0) ? 1 : 0))));
    expect(m.informativeGroups).toBe(added.filter((e) => informativeOf[e.answer]).length);
    // The proposer's rewards are its own questions' only.
    expect(w.updater.calls.filter((c) => c.role === 'proposer').at(-1)?.rewards).toEqual(r.proposals.map((p) => [p.reward]));
  });

  it('a round counts toward the minimum (no round after it is reached), and --resample-rounds caps the rounds; the phases run solve, judge per round', async () => {
    // Three identical worlds, 7 steps without resampling (the pool then holds 21 distinct questions), then step 8.
    const at8 = async (resample?: { minGroups: number; rounds: number }) => {
      const w = await world();
      for (let step = 1; step <= 7; step++) await sesaStep(step, w.seedPool, w.deps, w.settings);
      const phases: string[] = [];
      const deps = { ...w.deps, onPhase: (_s: number, phase: string, state: string) => phases.push(`${phase} ${state}`) };
      const r = await sesaStep(8, w.seedPool, deps, { ...w.settings, ...(resample ? { resample } : {}) });
      return { m: r.metrics, phases };
    };
    const off = await at8();
    expect(off.m.resampleRounds).toBe(0);
    expect(off.phases).toEqual(['propose', 'validate', 'solve', 'judge', 'update', 'consolidate'].flatMap((p) => [`${p} start`, `${p} end`]));
    // One more informative group than the first round has: one round of 6 pooled questions reaches it, so no second.
    const n0 = off.m.informativeGroups;
    const one = await at8({ minGroups: n0 + 1, rounds: 3 });
    expect([one.m.resampleRounds, one.m.resampledQuestions]).toEqual([1, 6]);
    expect(one.m.informativeGroups).toBeGreaterThanOrEqual(n0 + 1);
    expect(one.phases.slice(4, 12)).toEqual(['solve start', 'solve end', 'judge start', 'judge end', 'solve start', 'solve end', 'judge start', 'judge end']);
    // Never reached: the rounds stop at the cap, with pooled questions left.
    const capped = await at8({ minGroups: 100, rounds: 2 });
    expect([capped.m.resampleRounds, capped.m.resampledQuestions]).toEqual([2, 12]);
  });

  it('a step that already has enough informative groups runs no round: its records equal those of a run without the setting', async () => {
    const strip = (r: StepResult) => ({ ...r, metrics: { ...r.metrics, seconds: undefined } });
    const run = async (resample?: { minGroups: number; rounds: number }) => {
      const w = await world(resample);
      const out: unknown[] = [];
      for (let step = 1; step <= 3; step++) out.push({ r: strip(await sesaStep(step, w.seedPool, w.deps, w.settings)), updates: w.updater.calls.slice(-2) });
      return out;
    };
    // Varrowen and Brennock give two informative groups every step, so one is always enough.
    const off = await run();
    expect(await run({ minGroups: 1, rounds: 3 })).toEqual(off);
    expect(JSON.stringify(off)).toContain('"resampleRounds":0');
  });
});

describe('sesaStep: reuse by hops (--reuse-by-hops)', () => {
  it("a failed proposal's slot takes a pooled question of its seed's hop count", async () => {
    const plans: Plan[] = [
      { answer: 'Hamletaorn', hops: 1, correct: 2 },
      { answer: 'Hamletborn', hops: 2, correct: 2 },
      { answer: 'Hamletcorn', hops: 1, kinds: ['too-short'], correct: 2 },
      { answer: 'Hamletdorn', hops: 2, kinds: ['too-short'], correct: 2 },
    ];
    for (const byHops of [true, false]) {
      const w = await makeWorld(plans, { seedsPerStep: 4, hopMix: [1, 1], reuse: { threshold: 1, clearEvery: 10, byHops } });
      await sesaStep(1, w.seedPool, w.deps, w.settings);
      const hopsOfReused: number[][] = [];
      for (let step = 2; step <= 6; step++) {
        const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
        const failedHops = r.proposals.filter((p) => p.invalid).map((p) => p.hops);
        expect(r.reused.length).toBe(failedHops.length);
        hopsOfReused.push(failedHops, r.reused.map((q) => q.hops));
      }
      const pairs = hopsOfReused.filter((_, i) => i % 2 === 0).map((f, i) => [f, hopsOfReused[2 * i + 1]]);
      // By hops, every reused question has its slot's hop count; drawn from the whole pool, some do not.
      if (byHops) for (const [f, got] of pairs) expect(got).toEqual(f);
      else expect(pairs.some(([f, got]) => JSON.stringify(f) !== JSON.stringify(got))).toBe(true);
    }
  });
});

describe('sesaStep: the first-search check (--first-search-check)', () => {
  const plans: Plan[] = [
    { answer: 'Hamletaorn', hops: 2, correct: 2, firstSearchAnswers: true },
    { answer: 'Hamletborn', hops: 3, correct: 2 },
    { answer: 'Hamletcorn', hops: 1, correct: 2, firstSearchAnswers: true },
    { answer: 'Hamletdorn', hops: 2, correct: 2 },
    { answer: 'Hamletforn', hops: 3, correct: 2, firstSearchAnswers: true },
  ];

  it("a multi-hop question the reader answers from the proposer's first search alone is invalid; one-hop questions are not read again", async () => {
    const w = await makeWorld(plans, { firstSearchCheck: true });
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.map((p) => [p.answer, p.invalid ?? 'valid']).sort()).toEqual([
      ['Hamletaorn', 'answerable-from-first-search'],
      ['Hamletborn', 'valid'],
      ['Hamletcorn', 'valid'],
      ['Hamletdorn', 'valid'],
      ['Hamletforn', 'answerable-from-first-search'],
    ]);
    expect(r.metrics.firstSearchChecks).toBe(4);
    expect(r.metrics.invalidReasons).toEqual({ 'answerable-from-first-search': 2 });
    // Five RAG checks, then four first-search readings, each of exactly the passages of the first search (its query `<answer> origin`).
    expect(w.ragJudge.calls.length).toBe(9);
    const readings = w.ragJudge.calls.slice(5).map((c) => userText(c));
    for (const p of r.proposals.filter((x) => x.hops >= 2)) {
      const first = w.searcher.match(`${p.answer} origin`, 3).map((x) => `(Title: "${x.title}")`);
      expect(first.length).toBeGreaterThan(0);
      const reading = readings.find((t) => t.includes(questionOf(plans.findIndex((x) => x.answer === p.answer), '')));
      expect(reading, p.answer).toBeDefined();
      expect((reading?.match(/^Doc \d+/gm) ?? []).length).toBe(first.length);
      for (const f of first) expect(reading).toContain(f);
    }
    expect(w.updater.calls.find((c) => c.role === 'solver')?.rewards.length).toBe(3);
  });

  it('off, the same proposals are all valid and nothing more is read', async () => {
    const w = await makeWorld(plans);
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.every((p) => p.invalid === undefined)).toBe(true);
    expect(r.metrics.firstSearchChecks).toBe(0);
    expect(w.ragJudge.calls.length).toBe(5);
  });
});

describe('sesaStep: the hop check (--hop-check)', () => {
  // Every scripted question shares five words with every passage, so one search for any of them returns the
  // first three plans' passages (ties keep the passages' order): the reader answers plans 0-2 from it, not 3-4.
  const plans: Plan[] = [
    { answer: 'Hamletaorn', hops: 2, correct: 2 },
    { answer: 'Hamletborn', hops: 3, correct: 2 },
    { answer: 'Hamletcorn', hops: 1, correct: 2 },
    { answer: 'Hamletdorn', hops: 2, correct: 2 },
    { answer: 'Hamletforn', hops: 3, correct: 2 },
  ];

  it('a multi-hop question answered from one search for itself is invalid; one-hop questions are not searched', async () => {
    const w = await makeWorld(plans, { hopCheck: true });
    expect(w.searcher.match(questionOf(0, ''), 3).map((p) => p.title)).toEqual(['Hamletaorn', 'Hamletborn', 'Hamletcorn']);
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.map((p) => [p.answer, p.invalid ?? 'valid', p.reward]).sort()).toEqual([
      ['Hamletaorn', 'answerable-in-one-search', -1],
      ['Hamletborn', 'answerable-in-one-search', -1],
      ['Hamletcorn', 'valid', 0.96],
      ['Hamletdorn', 'valid', 0.96],
      ['Hamletforn', 'valid', 0.96],
    ]);
    expect(r.metrics.hopChecks).toBe(4);
    expect(r.metrics.invalidReasons).toEqual({ 'answerable-in-one-search': 2 });
    expect(r.metrics.validByHops).toEqual({ '1': { proposals: 1, valid: 1 }, '2': { proposals: 2, valid: 1 }, '3': { proposals: 2, valid: 1 } });
    // One batch of the four multi-hop questions as written, at the check's passage count; five RAG checks, four hop checks.
    const questions = r.proposals.filter((p) => p.hops >= 2).map((p) => p.question);
    expect(questions.length).toBe(4);
    expect(w.searcher.batches.filter((b) => b.queries.some((q) => q.startsWith('Which hamlet')))).toEqual([{ queries: questions, k: 3 }]);
    expect(w.ragJudge.calls.length).toBe(9);
    // The solver batch holds the three valid questions only.
    expect(w.updater.calls.find((c) => c.role === 'solver')?.rewards.length).toBe(3);
  });

  it('off, the same proposals are all valid and nothing more is searched or read', async () => {
    const w = await makeWorld(plans);
    const r = await sesaStep(1, w.seedPool, w.deps, w.settings);
    expect(r.proposals.every((p) => p.invalid === undefined)).toBe(true);
    expect(r.metrics.hopChecks).toBe(0);
    expect(w.searcher.batches.some((b) => b.queries.some((q) => q.startsWith('Which hamlet')))).toBe(false);
    expect(w.ragJudge.calls.length).toBe(5);
  });

  it('without the search tools in the step it refuses, naming the setting', async () => {
    const w = await makeWorld(plans, { hopCheck: true });
    const { searchers: _unused, ...deps } = w.deps;
    await expect(sesaStep(1, w.seedPool, deps, w.settings)).rejects.toThrow(/--hop-check.*StepDeps\.searchers/);
  });

  it('the setting reaches the step with the run\'s passages per search', () => {
    const { config } = resolveTrainConfig({ json: false, model: 'qwen3-4b', hopCheck: true, passagesPerQuery: 4 }, new Set(['model', 'hopCheck', 'passagesPerQuery']));
    expect(stepSettingsOf(config).hopCheck).toEqual({ passages: 4 });
    const { config: off } = resolveTrainConfig({ json: false, model: 'qwen3-4b' }, new Set(['model']));
    expect(stepSettingsOf(off).hopCheck).toBeUndefined();
  });
});

describe('sesaStep: the hop mix and the training corpora', () => {
  it('draws each hop count its share of the step (largest remainder), shuffled together', async () => {
    expect(hopQuotas(8, [1, 1, 1])).toEqual([3, 3, 2]);
    expect(hopQuotas(256, [1, 1, 1])).toEqual([86, 85, 85]);
    expect(hopQuotas(5, [0, 1, 0])).toEqual([0, 5, 0]);
    expect(hopQuotas(7, [1, 2])).toEqual([2, 5]);
    const plans: Plan[] = Array.from({ length: 12 }, (_, i) => ({ answer: `Hamlet${'ABCDEFGHIJKL'[i]}orn`, hops: 1 + (i % 3), correct: 2 }));
    const w = await makeWorld(plans, { seedsPerStep: 6, hopMix: [1, 1, 1] });
    for (let step = 1; step <= 3; step++) {
      const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
      expect(r.metrics.validByHops).toEqual({ '1': { proposals: 2, valid: 2 }, '2': { proposals: 2, valid: 2 }, '3': { proposals: 2, valid: 2 } });
    }
    // A mix whose hop count has no seed is refused, naming it.
    const two = await makeWorld(plans.filter((p) => p.hops !== 3), { seedsPerStep: 3, hopMix: [1, 1, 1] });
    await expect(sesaStep(1, two.seedPool, two.deps, two.settings)).rejects.toThrow('--hop-mix 1,1,1 asks for 3-hop answer seeds, but the pool has none');
  });

  it('step s proposes in corpus (s − 1) mod C; every search and RAG check of a question goes to its own corpus, a reused one too', async () => {
    const plans: Plan[] = Array.from({ length: 9 }, (_, i) => ({ answer: `Hamlet${'ABCDEFGHI'[i]}orn`, correct: 2, kinds: i % 3 === 2 ? ['too-short'] : ['valid'] }));
    const corpusOf = (i: number): number => Math.floor(i / 3);
    const w = await makeWorld(plans, { seedsPerStep: 3, corpusOf, reuse: { threshold: 1, clearEvery: 10 } });
    const answersIn = (k: number): Set<string> => new Set(plans.filter((_, i) => corpusOf(i) === k).map((p) => p.answer.toLowerCase()));
    const seen = w.searchers.map(() => 0);
    for (let step = 1; step <= 4; step++) {
      const calls = w.ragJudges.map((j) => j.calls.length);
      const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
      const k = (step - 1) % 3;
      expect(r.metrics.corpus).toBe(k);
      // The step's seeds are all of its corpus.
      for (const p of r.proposals) expect(answersIn(k).has(p.answer.toLowerCase())).toBe(true);
      // Only the step's corpus's reader ran the RAG checks.
      w.ragJudges.forEach((j, c) => expect(j.calls.length - calls[c]!, `reader ${c} at step ${step}`).toBe(c === k ? 2 : 0));
      // From step 2 on a question reused from an earlier step (another corpus) fills the invalid slot.
      if (step > 1) expect(r.reused.length).toBe(1);
      for (const q of r.reused) expect(answersIn(q.corpus as number).has(q.answer.toLowerCase())).toBe(true);
    }
    // Every query a corpus's searcher got names one of its own answers (the scripted agents search the answer).
    w.searchers.forEach((s, c) => {
      for (const b of s.batches) for (const query of b.queries) expect([...answersIn(c)].some((a) => query.toLowerCase().includes(a)), `corpus ${c}: ${query}`).toBe(true);
      seen[c] = s.batches.length;
    });
    expect(seen.every((n) => n > 0)).toBe(true);
    expect(w.searcher.batches).toEqual([]);
  });
});

describe('sesaStep: a step over every training corpus (--step-corpora all)', () => {
  it("draws a step's seeds from every corpus; each question is checked by its corpus's reader against distractors of its corpus only", async () => {
    const plans: Plan[] = Array.from({ length: 9 }, (_, i) => ({ answer: `Hamlet${'ABCDEFGHI'[i]}orn`, correct: 2 }));
    const corpusOf = (i: number): number => Math.floor(i / 3);
    const answersIn = (k: number): Set<string> => new Set(plans.filter((_, i) => corpusOf(i) === k).map((p) => p.answer));
    const w = await makeWorld(plans, { seedsPerStep: 6, corpusOf, stepCorporaAll: true });
    const corporaSeen: number[] = [];
    for (let step = 1; step <= 3; step++) {
      const r = await sesaStep(step, w.seedPool, w.deps, w.settings);
      expect(r.metrics.corpus).toBeUndefined();
      const corpora = new Set(r.proposals.map((p) => corpusOf(plans.findIndex((q) => q.answer === p.answer))));
      corporaSeen.push(corpora.size);
      expect(r.metrics.validQuestions).toBe(6);
    }
    // Six of nine seeds a step always span at least two corpora of three seeds each.
    expect(Math.min(...corporaSeen)).toBeGreaterThanOrEqual(2);
    // Every document a corpus's reader was shown is a passage of that corpus (the question's own and its distractors).
    let checks = 0;
    w.ragJudges.forEach((j, c) => {
      for (const call of j.calls) {
        checks++;
        const titles = [...userText(call).matchAll(/\(Title: "([^"]+)"\)/g)].map((m) => m[1] as string);
        expect(titles.length).toBeGreaterThan(0);
        for (const t of titles) expect(answersIn(c).has(t), `reader ${c} shown ${t}`).toBe(true);
      }
    });
    expect(checks).toBe(18);
  });

  it("'one' (the default) is the draw of before: step s in corpus (s − 1) mod C", async () => {
    const plans: Plan[] = Array.from({ length: 6 }, (_, i) => ({ answer: `Hamlet${'ABCDEF'[i]}orn`, correct: 2 }));
    const w = await makeWorld(plans, { seedsPerStep: 2, corpusOf: (i) => Math.floor(i / 3) });
    for (let step = 1; step <= 2; step++) expect((await sesaStep(step, w.seedPool, w.deps, w.settings)).metrics.corpus).toBe(step - 1);
    const { config } = resolveTrainConfig({ json: false, model: 'qwen3-4b', stepCorpora: 'all' }, new Set(['model', 'stepCorpora']));
    expect(stepSettingsOf(config).stepCorpora).toBe('all');
    const { config: one } = resolveTrainConfig({ json: false, model: 'qwen3-4b' }, new Set(['model']));
    expect(stepSettingsOf(one).stepCorpora).toBeUndefined();
  });
});

describe('sesaStep: counterfactual card utility (--card-utility counterfactual)', () => {
  it('counts one retrieval per split group, helpful when the half with cards earned more, hurt when less', async () => {
    // G = 5, the first ⌊5/2⌋ = 2 rollouts get the cards: correct 2 → with 1.0, without 0 (helpful); correct 0 → equal (neither).
    const plans: Plan[] = [
      { answer: 'Varrowen', correct: 2 },
      { answer: 'Brennock', correct: 0 },
    ];
    const w = await makeWorld(plans);
    const before = new Map(w.bank.cards.map((c) => [c.id, { ...c.stats }]));
    const r = await sesaStep(1, w.seedPool, w.deps, { ...w.settings, cardsInGroup: 'half', cardUtility: 'counterfactual' });
    const want = new Map([...before].map(([id, s]) => [id, { ...s }]));
    for (const p of r.proposals) {
      for (const id of p.skillIds ?? []) {
        const s = want.get(id) as { retrieved: number; helpful: number; hurt: number };
        s.retrieved += 1;
        if (p.answer === 'Varrowen') s.helpful += 1;
      }
    }
    expect(new Map(w.bank.cards.map((c) => [c.id, c.stats]))).toEqual(want);
    expect(r.metrics.activeCards).toBe(w.bank.cards.filter((c) => c.stats.retrieved > 0).length);
  });
});
