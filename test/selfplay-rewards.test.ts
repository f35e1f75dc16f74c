// Rewards and judging (docs/method.md, "Judging answers" and "Rewards") with exact values.
import { describe, expect, it } from 'vitest';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { AnswerJudge, exactMatch, normalizeAnswer, parseVerdict } from '../src/agent/judge.js';
import { PROPOSER_REWARD_DEFAULTS, proposerReward, solverReward, successRate } from '../src/selfplay/rewards.js';

describe('proposer reward', () => {
  const G = 5;
  const group = (correct: number): number[] => Array.from({ length: G }, (_, i) => solverReward(i < correct));

  it('defaults: λ = 0.5, r_invalid = −1, frontier shaping on', () => {
    expect(PROPOSER_REWARD_DEFAULTS).toEqual({ lambda: 0.5, invalidReward: -1, frontier: true });
  });

  it('p̂ from a solver group of G = 5, and r_p = −λ at 0 and 1, else 4·p̂·(1−p̂)', () => {
    expect([0, 1, 2, 3, 4, 5].map((k) => successRate(group(k)))).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    const r = [0, 1, 2, 3, 4, 5].map((k) => proposerReward(successRate(group(k)), PROPOSER_REWARD_DEFAULTS));
    expect(r[0]).toBe(-0.5);
    expect(r[5]).toBe(-0.5);
    // 0.64 and 0.96 up to the last bit of a double (4·0.2·0.8 = 0.6400000000000001 in IEEE arithmetic).
    for (const [i, want] of [[1, 0.64], [2, 0.96], [3, 0.96], [4, 0.64]] as const) expect(r[i]).toBeCloseTo(want, 14);
    // The reward takes exactly three values with G = 5.
    expect(new Set(r.map((x) => x.toFixed(12)))).toEqual(new Set(['-0.500000000000', '0.640000000000', '0.960000000000']));
  });

  it('λ is configurable and applies at both endpoints only', () => {
    const cfg = { ...PROPOSER_REWARD_DEFAULTS, lambda: 0.25 };
    expect([proposerReward(0, cfg), proposerReward(1, cfg)]).toEqual([-0.25, -0.25]);
    expect(proposerReward(0.4, cfg)).toBeCloseTo(0.96, 14);
  });

  it('frontier: false gives 1 − p̂ (the ablation)', () => {
    const cfg = { ...PROPOSER_REWARD_DEFAULTS, frontier: false };
    expect([0, 0.2, 0.4, 0.6, 0.8, 1].map((p) => proposerReward(p, cfg))).toEqual([1, 0.8, 0.6, 1 - 0.6, 1 - 0.8, 0]);
  });

  it('the solver reward is 1 or 0, and p̂ counts rewards > 0', () => {
    expect([solverReward(true), solverReward(false)]).toEqual([1, 0]);
    expect(successRate([1, 0, 0, 1, 0])).toBe(0.4);
    expect(() => successRate([])).toThrow(/empty/);
  });
});

describe('judge', () => {
  it('normalizes: lowercase, strip punctuation, drop a/an/the, collapse whitespace', () => {
    expect(normalizeAnswer('  The   Duke of  Orlen-Vasse! ')).toBe('duke of orlenvasse');
    expect(normalizeAnswer("O'Brien")).toBe('obrien');
    expect(normalizeAnswer('An apple, a PEAR.')).toBe('apple pear');
    expect(normalizeAnswer('Theodore')).toBe('theodore');
  });

  it('exact match against any gold answer after normalization; empty never matches', () => {
    expect(exactMatch('the Duke of OrlenVasse.', ['Duke of Orlen-Vasse'])).toBe(true);
    expect(exactMatch('Vasse', ['Duke of Orlen-Vasse', 'vasse'])).toBe(true);
    expect(exactMatch('Orlen', ['Duke of Orlen-Vasse'])).toBe(false);
    expect(exactMatch('the', ['a'])).toBe(false);
  });

  // The reply parser: after <think>…</think> is removed, the trimmed reply must be exactly Correct or Wrong
  // (any case, at most one trailing period); anything else is unparsed (undefined).
  const VERDICTS: Array<[string, boolean | undefined]> = [
    ['Correct', true],
    ['correct', true],
    ['CORRECT.', true],
    ['  Correct  \n', true],
    ['Wrong', false],
    ['wrong.', false],
    ['\nWRONG\n', false],
    ['<think>The prediction names the same city.</think>\nCorrect', true],
    ['<think>Is it correct?</think> Wrong', false],
    ['<think>\nhmm, correct or wrong\n</think>\n\nwrong.', false],
    ['<think></think>Correct', true],
    ['Correct..', undefined],
    ['Correct!', undefined],
    ['Incorrect', undefined],
    ['Not correct.', undefined],
    ['It is not the correct answer.', undefined],
    ["isn't correct", undefined],
    ['The correct answer is Paris; Wrong', undefined],
    ['Correct. The prediction matches.', undefined],
    ['Wrong, it names another river', undefined],
    ['Correct Wrong', undefined],
    ['<think>thinking without an end', undefined],
    ['<think>Correct</think>', undefined],
    ['', undefined],
    ['I cannot tell', undefined],
    ['"Correct"', undefined],
  ];
  it.each(VERDICTS)('parses the judge reply %j as %s', (reply, want) => {
    expect(parseVerdict(reply)).toBe(want);
  });

  it('AnswerJudge: exact match first, then the semantic reply; no answer is never correct', async () => {
    const semantic = new ScriptedTextGenerator(['Correct', 'Incorrect', 'Wrong']);
    const judge = new AnswerJudge(semantic);
    expect(await judge.judge('Q?', ['Qux'], ' the qux ')).toEqual({ correct: true, method: 'exact' });
    expect(await judge.judge('Q?', ['Qux'], undefined)).toEqual({ correct: false, method: 'no-answer' });
    expect(await judge.judge('Q?', ['Qux'], '   ')).toEqual({ correct: false, method: 'no-answer' });
    expect(semantic.calls.length).toBe(0);
    expect(await judge.judge('Q?', ['Qux'], 'the city of Qux')).toEqual({ correct: true, method: 'semantic' });
    expect(await judge.judge('Q?', ['Qux'], 'Quxville')).toEqual({ correct: false, method: 'semantic' });
    expect(await judge.judge('Q?', ['Qux'], 'Mora')).toEqual({ correct: false, method: 'semantic' });
    // "Incorrect" is not a verdict: unparsed, counted, and read as Wrong.
    expect(judge.unparsedReplies).toBe(1);
    expect(await new AnswerJudge(new ScriptedTextGenerator(['maybe'])).judge('Q?', ['Qux'], 'Mora')).toEqual({ correct: false, method: 'semantic' });
    expect(semantic.calls.length).toBe(3);
    expect(semantic.calls[0]?.[0]?.content).toContain('Gold answer: Qux\nPredicted answer: the city of Qux');
    // Without a semantic model, only exact matches count.
    expect(await new AnswerJudge(undefined).judge('Q?', ['Qux'], 'the city of Qux')).toEqual({ correct: false, method: 'exact' });
  });
});
