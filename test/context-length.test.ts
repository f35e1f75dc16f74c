// Inputs longer than the model's context (issue 48, finding 2): an eval question whose prompt, cards and
// response budget cannot fit max_position_embeddings is refused before anything runs, naming the file, the
// question and the field; `score` refuses a text longer than the context and `generate` a prompt whose
// continuation would pass it (saying how many new tokens fit).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvalQuestion } from '../src/eval/dataset.js';
import { questionsOverContext } from '../src/eval/context.js';
import { contextProblem } from '../src/model/context.js';
import { solverMessages } from '../src/agent/prompts.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-context-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((res) => child.on('exit', (code) => res({ code, stderr })));
}

const q = (id: string, words: number): EvalQuestion => ({ id, dataset: 'nq', question: Array.from({ length: words }, (_, i) => `w${i}`).join(' '), goldenAnswers: ['x'] });

describe('questions over the context (a scripted tokenizer: one token a word)', () => {
  const renderChat = (m: Array<{ content: string }>): number[] => m.flatMap((x) => x.content.split(/\s+/).map(() => 0));
  // The solver's prompt of an empty question, then room for 100 words of question and 64 response tokens.
  const base = renderChat(solverMessages('')).length;
  const config = { maxPositionEmbeddings: base + 100 + 64 };

  it('counts the prompt, the cards and the response budget, and names the file, the question and the field', () => {
    const budget = { renderChat, cardTokens: 0, responseTokens: 64 };
    expect(questionsOverContext([q('a', 10)], budget, config, '/m', () => 'nq.jsonl')).toBeUndefined();
    const over = questionsOverContext([q('a', 10), q('b', 300), q('c', 400), q('d', 500), q('e', 600)], budget, config, '/m', () => 'nq.jsonl') as string;
    expect(over).toContain(`4 questions cannot fit the model's context of ${config.maxPositionEmbeddings} positions (max_position_embeddings in /m/config.json) with the 64-token response budget (--max-response-tokens)`);
    expect(over).toContain("nq.jsonl: question b (field 'question'");
    expect(over).toContain('and 1 more');
    expect(over).not.toContain('question a ');
    // With skills on, the cards' budget counts too: a question that fits without them does not with them.
    const fits = q('f', 80);
    expect(questionsOverContext([fits], budget, config, '/m', () => 'nq.jsonl')).toBeUndefined();
    expect(questionsOverContext([fits], { ...budget, cardTokens: 120 }, config, '/m', () => 'nq.jsonl')).toContain("the skill cards' 120 tokens");
  });

  it('contextProblem names what is too long and where the limit comes from', () => {
    expect(contextProblem('--text', 2048, { maxPositionEmbeddings: 2048 }, '/m')).toBeUndefined();
    expect(contextProblem('--text', 15_003, { maxPositionEmbeddings: 2048 }, '/m')).toBe("--text: 15,003 positions, more than the model's context of 2,048 (max_position_embeddings in /m/config.json); past it the model's output is noise");
  });
});

describe('through the CLI, on the demo model (context 2,048)', () => {
  it('eval refuses a FlashRAG question of ~35,000 tokens before any rollout', async () => {
    const data = join(root, 'long.jsonl');
    writeFileSync(data, `${JSON.stringify({ id: 'q1', question: 'Who wrote it?', golden_answers: ['x'] })}\n${JSON.stringify({ id: 'long7', question: Array.from({ length: 6000 }, (_, i) => `word${i}`).join(' '), golden_answers: ['x'] })}\n`);
    const r = await cli(['eval', '--model', 'demo', '--data', data, '--corpus', 'encyclopedia', '--threads', '1', '--out', join(root, 'eval')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: 1 question cannot fit the model's context of 2,048 positions`);
    expect(r.stderr).toContain(`${data}: question long7 (field 'question', 52,889 characters)`);
    expect(r.stderr).not.toMatch(/eval: \d+\/2/);
    // The demo model on a real QA file: said to know only its generated worlds (issue 48, finding 10).
    expect(r.stderr).toContain(`warning: --model demo is the demo world's small warm start: it knows only the words and facts of its generated worlds (docs/world.md), so on ${data} it scores about 0`);
  }, 120_000);

  it('score refuses a text longer than the context; generate says how many new tokens fit', async () => {
    const score = await cli(['score', '--model', 'demo', '--ids', Array.from({ length: 3000 }, () => '5').join(','), '--threads', '1']);
    expect(score.code).toBe(1);
    expect(score.stderr).toContain("--ids: 3,000 positions, more than the model's context of 2,048");
    const gen = await cli(['generate', '--model', 'demo', '--prompt-ids', Array.from({ length: 2000 }, () => '5').join(','), '--max-new-tokens', '64', '--threads', '1']);
    expect(gen.code).toBe(1);
    expect(gen.stderr).toContain('--prompt-ids (2000 tokens) with --max-new-tokens 64: 2,064 positions');
    expect(gen.stderr).toContain('give --max-new-tokens 48 or fewer');
  }, 120_000);
});
