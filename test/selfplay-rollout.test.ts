// The rollout engine (docs/method.md, "Rollouts") driven by ScriptedPolicy, a scripted test double of the policy, and an
// in-memory FakeSearcher: every branch with exact token ids, masks, log-probs and records.
import { describe, expect, it } from 'vitest';
import { type FinalTag, invalidActionText, observationText, type Rollout, type RolloutConfig, runRollouts } from '../src/agent/rollout.js';
import { renderResults } from '../src/search/types.js';
import { FakeSearcher } from './helpers/fake-searcher.js';
import { EOS, EOS_ID, type PolicyScript, ScriptedPolicy } from './helpers/scripted-policy.js';

const PASSAGES = [
  { id: 'p1', title: 'Zed', text: 'Zed is a city whose capital is Qux.' },
  { id: 'p2', title: 'Qux', text: 'Qux lies on the river Mora.' },
  { id: 'p3', title: 'Mora', text: 'The Mora flows north into the sea.' },
];

/** Position-dependent log-probs, so a misaligned array cannot pass. */
const logprob = (id: number, index: number): number => -((id % 89) + 1) / 100 - index / 10_000;
const lps = (text: string): number[] => [...text].map((c, i) => logprob(c.charCodeAt(0), i));
const codes = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));
const ones = (text: string): number[] => codes(text).map(() => 1);
const zeros = (text: string): number[] => codes(text).map(() => 0);

function config(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return { maxTurns: 10, maxTokensPerTurn: 200, maxResponseTokens: 2000, temperature: 1, passagesPerQuery: 3, finalTag: 'answer', seed: 7, ...over };
}

function setup(script: PolicyScript, questions: string[]): { policy: ScriptedPolicy; searcher: FakeSearcher; requests: Array<{ id: string; promptIds: number[] }> } {
  const policy = new ScriptedPolicy(script, { logprob });
  const searcher = new FakeSearcher(PASSAGES);
  const requests = questions.map((q, i) => ({ id: `r${i}`, promptIds: policy.renderChat([{ role: 'user', content: q }]) }));
  return { policy, searcher, requests };
}

/** The turn-by-turn script of the row whose user message is `key`. */
function byQuestion(table: Record<string, string[]>): PolicyScript {
  return (_text, turn, ctx) => {
    const key = Object.keys(table).find((k) => ctx.prompt.includes(`\n${k}\n`));
    if (key === undefined) throw new Error(`no script for prompt ${ctx.prompt}`);
    const reply = (table[key] as string[])[turn];
    if (reply === undefined) throw new Error(`no script for ${key} turn ${turn}`);
    return reply;
  };
}

describe('ScriptedPolicy (the test double itself)', () => {
  it('stops like the real generator: first stop string, EOS, or length', async () => {
    const policy = new ScriptedPolicy((_t, _turn, ctx) => ['a</search>b</answer>', 'x</answer>y</search>', 'done' + EOS, 'abcdefgh'][ctx.row] as string);
    const prompts = [0, 1, 2, 3].map(() => policy.encode('p'));
    const gens = await policy.generate(prompts, { maxNewTokens: 6, temperature: 1, seed: 0, stopStrings: ['</search>', '</answer>'] });
    expect(gens.map((g) => [policy.decode(g.ids), g.finishReason, g.stopString])).toEqual([
      ['a</sea', 'length', undefined],
      ['x</ans', 'length', undefined],
      ['done', 'eos', undefined],
      ['abcdef', 'length', undefined],
    ]);
    const wide = await policy.generate(prompts.slice(0, 3), { maxNewTokens: 50, temperature: 1, seed: 0, stopStrings: ['</search>', '</answer>'] });
    expect(wide.map((g) => [policy.decode(g.ids), g.finishReason, g.stopString])).toEqual([
      ['a</search>', 'stop', '</search>'],
      ['x</answer>', 'stop', '</answer>'],
      ['done', 'eos', undefined],
    ]);
    expect(wide[2]?.ids).toEqual([...policy.encode('done'), EOS_ID]);
    // A script that ends with no stop, no EOS and tokens to spare is a broken test script.
    await expect(policy.generate(prompts, { maxNewTokens: 50, temperature: 1, seed: 0, stopStrings: [] })).rejects.toThrow(/without a stop string or EOS/);
  });
});

describe('runRollouts', () => {
  it('a search then an answer: the observation is spliced with mask 0, log-probs aligned, records kept', async () => {
    const gen0 = '<think>find Zed</think>\n<search>capital of Zed</search>';
    const gen1 = '<answer>Qux</answer>';
    // Text past a stop string is never emitted.
    const { policy, searcher, requests } = setup(byQuestion({ 'Q-1': [`${gen0} IGNORED`, `${gen1} IGNORED`] }), ['Q-1']);
    const [r] = await runRollouts(policy, searcher, requests, config());
    const obs = '\n<information>\nDoc 1(Title: "Zed") Zed is a city whose capital is Qux.\n\n</information>\n\n';
    expect(observationText(renderResults([PASSAGES[0] as (typeof PASSAGES)[number]]))).toBe(obs);
    expect(r).toEqual<Rollout>({
      id: 'r0',
      promptIds: requests[0]?.promptIds as number[],
      responseIds: codes(gen0 + obs + gen1),
      responseMask: [...ones(gen0), ...zeros(obs), ...ones(gen1)],
      samplingTemperature: 1,
      logprobs: [...lps(gen0), ...zeros(obs), ...lps(gen1)],
      queries: ['capital of Zed'],
      retrieved: [[{ ...(PASSAGES[0] as (typeof PASSAGES)[number]), score: 2 }]],
      final: 'Qux',
      outcome: 'final',
      turns: 2,
      invalidActions: 0,
      text: gen0 + obs + gen1,
    });
    // The second turn continues the same assistant turn: prompt + generated + observation.
    const prompt = policy.decode(requests[0]?.promptIds as number[]);
    expect(policy.prompts).toEqual([prompt, prompt + gen0 + obs]);
    expect(policy.calls.map((c) => c.opts)).toEqual([
      { maxNewTokens: 200, temperature: 1, seed: 7 * 1009, stopStrings: ['</search>', '</answer>'] },
      { maxNewTokens: 200, temperature: 1, seed: 7 * 1009 + 1, stopStrings: ['</search>', '</answer>'] },
    ]);
    expect(searcher.batches).toEqual([{ queries: ['capital of Zed'], k: 3 }]);
  });

  it('sends all pending searches of a turn in one batch, and finished rows leave the batch', async () => {
    const { policy, searcher, requests } = setup(
      byQuestion({
        'Q-A': ['<search>zed</search>', '<answer>Qux</answer>'],
        'Q-B': ['<search>qux</search>', '<search>mora river</search>', '<answer>north</answer>'],
        'Q-C': ['<answer>unknown</answer>'],
      }),
      ['Q-A', 'Q-B', 'Q-C'],
    );
    const rs = await runRollouts(policy, searcher, requests, config());
    expect(searcher.batches).toEqual([
      { queries: ['zed', 'qux'], k: 3 },
      { queries: ['mora river'], k: 3 },
    ]);
    expect(policy.calls.map((c) => c.prompts.length)).toEqual([3, 2, 1]);
    expect(rs.map((r) => [r.id, r.outcome, r.turns, r.final, r.queries, r.retrieved.map((l) => l.map((p) => p.id))])).toEqual([
      ['r0', 'final', 2, 'Qux', ['zed'], [['p1']]],
      ['r1', 'final', 3, 'north', ['qux', 'mora river'], [['p1', 'p2'], ['p2', 'p3']]],
      ['r2', 'final', 1, 'unknown', [], []],
    ]);
  });

  it('an invalid action (empty query, or a turn that runs out of tokens) gets the corrective observation, mask 0', async () => {
    const gen0 = '<search>   </search>';
    const long = 'I am thinking about this without any tags at all for a long time';
    const gen2 = '<answer>Qux</answer>';
    const { policy, searcher, requests } = setup(byQuestion({ 'Q-1': [gen0, long, gen2] }), ['Q-1']);
    const [r] = await runRollouts(policy, searcher, requests, config({ maxTokensPerTurn: 30 }));
    const gen1 = long.slice(0, 30);
    const inv = invalidActionText('answer');
    expect(inv).toBe(
      '\n<information>\nNo valid action. To search, put a query between <search> and </search>. To finish, put the final answer between <answer> and </answer>.\n</information>\n\n',
    );
    expect(r?.text).toBe(gen0 + inv + gen1 + inv + gen2);
    expect(r?.responseIds).toEqual(codes(gen0 + inv + gen1 + inv + gen2));
    expect(r?.responseMask).toEqual([...ones(gen0), ...zeros(inv), ...ones(gen1), ...zeros(inv), ...ones(gen2)]);
    expect(r?.logprobs).toEqual([...lps(gen0), ...zeros(inv), ...lps(gen1), ...zeros(inv), ...lps(gen2)]);
    expect([r?.invalidActions, r?.outcome, r?.final, r?.turns, r?.queries]).toEqual([2, 'final', 'Qux', 3, []]);
    expect(searcher.batches).toEqual([]);
  });

  it('EOS without an answer ends the rollout with outcome eos; the EOS token is generated (mask 1)', async () => {
    const { policy, searcher, requests } = setup(byQuestion({ 'Q-1': [`I do not know.${EOS}`] }), ['Q-1']);
    const [r] = await runRollouts(policy, searcher, requests, config());
    expect(r?.outcome).toBe('eos');
    expect(r?.final).toBeUndefined();
    expect(r?.text).toBe('I do not know.');
    expect(r?.responseIds).toEqual([...codes('I do not know.'), EOS_ID]);
    expect(r?.responseMask).toEqual([...ones('I do not know.'), 1]);
    expect(r?.logprobs).toEqual([...lps('I do not know.'), logprob(EOS_ID, 14)]);
    expect([r?.turns, r?.invalidActions]).toEqual([1, 0]);
  });

  it('stops after maxTurns with outcome max-turns', async () => {
    const { policy, searcher, requests } = setup(() => '<search>zed</search>', ['Q-1']);
    const [r] = await runRollouts(policy, searcher, requests, config({ maxTurns: 3 }));
    expect([r?.outcome, r?.turns, r?.queries, r?.final]).toEqual(['max-turns', 3, ['zed', 'zed', 'zed'], undefined]);
    expect(policy.calls.length).toBe(3);
    expect(searcher.batches.length).toBe(3);
    const obs = observationText(renderResults([PASSAGES[0] as (typeof PASSAGES)[number]]));
    expect(r?.text).toBe(`<search>zed</search>${obs}`.repeat(3));
    expect(r?.responseMask.reduce((a, b) => a + b, 0)).toBe(3 * '<search>zed</search>'.length);
  });

  it('keeps each row within its own response budget, tool output included, and ends it with outcome budget', async () => {
    // A and B search for something absent; B's longer query leaves it less budget for turn 1. C's search
    // finds a passage whose observation does not fit in what is left of its budget.
    const genA0 = '<search>xx</search>';
    const genB0 = '<search>yy yy yy yy yy yy</search>';
    const genC0 = '<search>zed</search>';
    const obs = observationText('');
    const obsC = observationText(renderResults([PASSAGES[0] as (typeof PASSAGES)[number]]));
    expect([obs.length, genC0.length + obsC.length]).toEqual([32, 108]);
    const { policy, searcher, requests } = setup(
      byQuestion({
        'Q-A': [genA0, '<answer>ok</answer>'],
        'Q-B': [genB0, 'b'.repeat(60)],
        'Q-C': [genC0],
      }),
      ['Q-A', 'Q-B', 'Q-C'],
    );
    const [a, b, c] = await runRollouts(policy, searcher, requests, config({ maxTokensPerTurn: 40, maxResponseTokens: 100 }));
    expect(searcher.batches).toEqual([{ queries: ['xx', 'yy yy yy yy yy yy', 'zed'], k: 3 }]);
    // Turn 1: A may write min(40, 100 − 51) = 40 tokens, B min(40, 100 − 66) = 34; the batch asks for the larger.
    expect(policy.calls.map((x) => x.opts.maxNewTokens)).toEqual([40, 40]);
    expect([a?.outcome, a?.final, a?.responseIds.length]).toEqual(['final', 'ok', 51 + '<answer>ok</answer>'.length]);
    // B keeps only its 34 tokens; the budget is then spent, so no corrective observation fits.
    expect(b?.outcome).toBe('budget');
    expect(b?.text).toBe(genB0 + obs + 'b'.repeat(34));
    expect(b?.responseIds).toEqual(codes(genB0 + obs + 'b'.repeat(34)));
    expect(b?.responseMask).toEqual([...ones(genB0), ...zeros(obs), ...ones('b'.repeat(34))]);
    expect(b?.logprobs).toEqual([...lps(genB0), ...zeros(obs), ...lps('b'.repeat(34))]);
    expect([b?.invalidActions, b?.turns]).toEqual([1, 2]);
    // C's observation is cut where the budget ends (mask 0); the search itself is recorded.
    const cut = obsC.slice(0, 100 - genC0.length);
    expect([c?.outcome, c?.turns, c?.queries, c?.text]).toEqual(['budget', 1, ['zed'], genC0 + cut]);
    expect(c?.responseIds).toEqual(codes(genC0 + cut));
    expect(c?.responseMask).toEqual([...ones(genC0), ...zeros(cut)]);
    expect(c?.logprobs).toEqual([...lps(genC0), ...zeros(cut)]);
    for (const r of [a, b, c]) expect(r?.responseIds.length).toBeLessThanOrEqual(100);
  });

  it('a search that ends exactly at the budget gets no observation at all (nothing fits) and ends the rollout', async () => {
    // room = 0 after the turn: the observation is cut to no tokens. The policy is asked to decode that empty
    // span, which the real tokenizer must answer with '' (test/tokenizer.test.ts).
    const gen = '<search>zed</search>';
    const { policy, searcher, requests } = setup(byQuestion({ 'Q-D': [gen] }), ['Q-D']);
    const [d] = await runRollouts(policy, searcher, requests, config({ maxTokensPerTurn: 40, maxResponseTokens: gen.length }));
    expect([d?.outcome, d?.turns, d?.queries, d?.text]).toEqual(['budget', 1, ['zed'], gen]);
    expect([d?.responseIds, d?.responseMask]).toEqual([codes(gen), ones(gen)]);
  });

  it('the proposer stops at </question>, not at </answer>', async () => {
    const gen1 = 'Draft <answer>no</answer> then <question>Which city has Qux as its capital?</question>';
    const { policy, searcher, requests } = setup(byQuestion({ 'Q-P': ['<search>zed</search>', `${gen1} trailing`] }), ['Q-P']);
    const finalTag: FinalTag = 'question';
    const [r] = await runRollouts(policy, searcher, requests, config({ finalTag }));
    expect(policy.calls[0]?.opts.stopStrings).toEqual(['</search>', '</question>']);
    expect([r?.outcome, r?.final, r?.turns, r?.queries]).toEqual(['final', 'Which city has Qux as its capital?', 2, ['zed']]);
    expect(r?.text.endsWith(gen1)).toBe(true);
    expect(invalidActionText('question')).toContain('put the final question between <question> and </question>');
  });
});
