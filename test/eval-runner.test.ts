// The eval runner's control logic with ScriptedPolicy (a scripted test double of the policy), FakeSearcher and
// a lexical skill bank: the solver's training prompt, greedy decoding, one rollout per question, the record
// fields, skills on vs off, the judge after EM, batching; plus dataset parsing, sampling and the output folder.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDatasetText, resolveDatasets, sampleQuestions, type EvalQuestion } from '../src/eval/dataset.js';
import { EvalFolder } from '../src/eval/eval-folder.js';
import { aggregateResults, resultsMarkdown } from '../src/eval/results.js';
import { evaluateSolver } from '../src/eval/runner.js';
import { scorePredictionsText } from '../src/eval/score-file.js';
import type { ChatMessage, TextGenerator } from '../src/llm/types.js';
import { solverMessages } from '../src/agent/prompts.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import * as tf from '@tensorflow/tfjs';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { initBackend } from '../src/tensor/backend.js';
import { FakeSearcher } from './helpers/fake-searcher.js';
import { ScriptedPolicy } from './helpers/scripted-policy.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-eval-runner-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PASSAGES = [
  { id: 'p1', title: 'Zed', text: 'Zed is a city whose capital is Qux.' },
  { id: 'p2', title: 'Qux', text: 'Qux lies on the river Mora.' },
];

const QUESTIONS: EvalQuestion[] = [
  { id: 'a', dataset: 'toy', question: 'What is the capital of Zed?', goldenAnswers: ['Qux'] },
  { id: 'b', dataset: 'toy', question: 'Which river flows by Qux?', goldenAnswers: ['the Mora river', 'Mora'] },
  { id: 'c', dataset: 'other', question: 'Who painted the sky?', goldenAnswers: ['Nobody Known'] },
];

/** Question a searches then answers; b answers "Mora." at once; c writes text with no answer tag. */
function script(): ScriptedPolicy {
  return new ScriptedPolicy((prompt, turn) => {
    if (prompt.includes('capital of Zed')) return turn === 0 ? '<search>capital of Zed</search>' : '<answer>Qux</answer>';
    if (prompt.includes('river flows')) return '<answer>Mora.</answer>';
    return { text: 'I am not sure', eos: true };
  });
}

const SETTINGS = { maxTurns: 4, maxTokensPerTurn: 200, maxResponseTokens: 2000, batchSize: 2, passagesPerQuery: 3 };

describe('evaluateSolver', () => {
  it('runs one greedy rollout per question with the training prompt and scores it', async () => {
    const policy = script();
    const searcher = new FakeSearcher(PASSAGES);
    const batches: number[] = [];
    const { records, results } = await evaluateSolver({ policy, searcher }, QUESTIONS, SETTINGS, { onBatch: (r) => batches.push(r.length) });
    expect(batches).toEqual([2, 1]);
    // Every generate call is greedy, and each question's prompt is the solver's training prompt, skills off.
    expect(policy.calls.every((c) => c.opts.temperature === 0)).toBe(true);
    for (const q of QUESTIONS) expect(policy.prompts).toContain(ScriptedPolicy.renderChatText(solverMessages(q.question)));
    expect(records.map((r) => [r.id, r.prediction, r.em, r.f1, r.outcome, r.turns, r.queries, r.retrieved, r.skills, r.judged])).toEqual([
      ['a', 'Qux', 1, 1, 'final', 2, ['capital of Zed'], [['p1']], [], null],
      ['b', 'Mora.', 1, 1, 'final', 1, [], [], [], null],
      ['c', null, 0, 0, 'eos', 1, [], [], [], null],
    ]);
    expect(records[1]?.golden_answers).toEqual(['the Mora river', 'Mora']);
    expect(results.datasets.map((d) => [d.dataset, d.questions, d.em, d.answered])).toEqual([
      ['toy', 2, 1, 1],
      ['other', 1, 0, 0],
    ]);
    // Equal weight over datasets: (1 + 0) / 2, not 2/3.
    expect(results.average.em).toBe(0.5);
  });

  it('with a bank, prepends the retrieved cards exactly as training renders them and records their ids', async () => {
    const bank = await SkillBank.open(join(root, 'bank.json'), { embedder: new LexicalEmbedder() });
    const policy = script();
    const { records } = await evaluateSolver({ policy, searcher: new FakeSearcher(PASSAGES), bank }, QUESTIONS.slice(0, 1), SETTINGS);
    const retrieved = await bank.retrieve(QUESTIONS[0]?.question as string);
    const rendered = bank.render(retrieved);
    expect(rendered.cardIds.length).toBeGreaterThan(0);
    expect(records[0]?.skills).toEqual(rendered.cardIds);
    expect(policy.calls[0]?.prompts[0]).toBe(ScriptedPolicy.renderChatText(solverMessages(QUESTIONS[0]?.question as string, rendered.text)));
    await bank.dispose();
  });

  it('asks the judge only when EM fails and there is an answer; a whole-word Correct counts, Incorrect does not', async () => {
    const asked: string[] = [];
    const judge = {
      name: 'scripted judge (test double)',
      complete: async (messages: ChatMessage[]) => {
        const content = messages[0]?.content ?? '';
        asked.push(content);
        return content.includes('Predicted answer: River Mora') ? 'Correct' : 'Incorrect.';
      },
    } satisfies TextGenerator;
    const policy = new ScriptedPolicy((prompt) =>
      prompt.includes('capital') ? '<answer>Qux</answer>' : prompt.includes('river') ? '<answer>River Mora</answer>' : '<answer>Somebody</answer>',
    );
    const { records, results } = await evaluateSolver({ policy, searcher: new FakeSearcher(PASSAGES), judge }, QUESTIONS, SETTINGS);
    expect(records.map((r) => [r.em, r.judged])).toEqual([
      [1, true],
      [0, true],
      [0, false],
    ]);
    expect(asked).toHaveLength(2);
    expect(results.datasets.map((d) => d.judged)).toEqual([1, 0]);
    expect(results.average.judged).toBe(0.5);
    // Without a judge nothing is judged and the average says so.
    const plain = await evaluateSolver({ policy, searcher: new FakeSearcher(PASSAGES) }, QUESTIONS, SETTINGS);
    expect(plain.results.average.judged).toBeNull();
  });
});

describe('evaluateSolver on a real tiny model', () => {
  it('is greedy (the same records twice) and leaves no tensor behind', async () => {
    await initBackend('cpu');
    const dir = makeTinyCheckpoint({ out: join(root, 'tiny'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 5 }).dir;
    const model = await CausalLM.load(dir);
    const policy = new ModelPolicy('solver', model, await loadTokenizer(dir), undefined);
    const settings = { maxTurns: 2, maxTokensPerTurn: 6, maxResponseTokens: 40, batchSize: 2, passagesPerQuery: 3 };
    const first = await evaluateSolver({ policy, searcher: new FakeSearcher(PASSAGES) }, QUESTIONS, settings);
    const before = tf.memory().numTensors;
    const second = await evaluateSolver({ policy, searcher: new FakeSearcher(PASSAGES) }, QUESTIONS, settings);
    expect(tf.memory().numTensors).toBe(before);
    expect(second.records).toEqual(first.records);
    expect(first.records.every((r) => r.turns >= 1)).toBe(true);
    model.dispose();
  }, 120_000);
});

describe('datasets', () => {
  it('parses FlashRAG lines and names the file, line and field of a bad one', () => {
    const good = '{"id": 1, "question": "Q?", "golden_answers": ["A", 1990]}\n\n';
    expect(parseDatasetText(good, 'x.jsonl', 'x')).toEqual([{ id: '1', dataset: 'x', question: 'Q?', goldenAnswers: ['A', '1990'] }]);
    expect(() => parseDatasetText(`${good}{"id": 2, "question": "Q2?"}\n`, 'x.jsonl', 'x')).toThrow(/x\.jsonl: line 3: field 'golden_answers' must be a non-empty list/);
    expect(() => parseDatasetText(`${good}{"id": 2, "question": "Q2?", "golden_answers": []}\n`, 'x.jsonl', 'x')).toThrow(/line 3: field 'golden_answers'/);
    expect(() => parseDatasetText(`${good}{"id": 1, "question": "Q?", "golden_answers": ["A"]}`, 'x.jsonl', 'x')).toThrow(/line 3: field 'id': "1" appears twice/);
    expect(() => parseDatasetText('\n\n', 'empty.jsonl', 'empty')).toThrow(/empty\.jsonl: the dataset is empty/);
    expect(() => parseDatasetText('{"id": 1, "golden_answers": ["A"]}', 'x.jsonl', 'x')).toThrow(/line 1: field 'question'/);
    expect(() => parseDatasetText('{"id": 1,', 'x.jsonl', 'x')).toThrow(/line 1: not valid JSON/);
  });

  it('resolves benchmark names in a data folder and lists what is missing', () => {
    const dir = join(root, 'data');
    rmSync(dir, { recursive: true, force: true });
    writeFileSync(join(root, 'nq-x.jsonl'), '');
    expect(() => resolveDatasets(['nq', 'bamboogle'], dir)).toThrow(/--data nq: not found in the data folder .*nq\.jsonl.*nq\/test\.jsonl[^]*--data bamboogle: not found/);
    expect(() => resolveDatasets(['nq'], undefined)).toThrow(/--data-dir DIR or set \$SESA_DATA/);
    expect(() => resolveDatasets(['wikiqa'], dir)).toThrow(/not a file and not a known dataset name/);
    const encyclopedia = resolveDatasets(['encyclopedia'], undefined);
    expect(encyclopedia[0]?.name).toBe('encyclopedia');
    expect(encyclopedia[0]?.questions.length).toBeGreaterThan(100);
    expect(encyclopedia[0]?.questions.every((q) => q.goldenAnswers.length > 0)).toBe(true);
    // Its old name, demo, now names only the demo world's model: refused naming the new one.
    expect(() => resolveDatasets(['demo'], undefined)).toThrow(/^--data demo was renamed encyclopedia \(the embedded synthetic encyclopedia; .*\): use --data encyclopedia$/);
  });

  it('samples a seeded subset in file order; a small dataset is kept whole', () => {
    const qs = Array.from({ length: 50 }, (_, i) => ({ id: String(i), dataset: 'd', question: `q${i}`, goldenAnswers: ['a'] }));
    const a = sampleQuestions(qs, 10, 0);
    expect(a).toHaveLength(10);
    expect(new Set(a.map((q) => q.id)).size).toBe(10);
    expect(a.map((q) => Number(q.id))).toEqual([...a.map((q) => Number(q.id))].sort((x, y) => x - y));
    expect(sampleQuestions(qs, 10, 0)).toEqual(a);
    expect(sampleQuestions(qs, 10, 1)).not.toEqual(a);
    expect(sampleQuestions(qs, 500, 0)).toEqual(qs);
  });
});

describe('the output folder and --score', () => {
  it('keeps scored questions across reopenings and refuses other settings or a question twice', () => {
    const dir = join(root, 'out');
    const f = EvalFolder.open(dir, { model: 'm', data: ['x'] });
    const rec = { id: 'a', dataset: 'toy', question: 'q', golden_answers: ['x'], prediction: 'x', outcome: 'final', turns: 1, queries: [], retrieved: [], skills: [], em: 1, f1: 1, judged: null };
    f.append([rec]);
    const again = EvalFolder.open(dir, { model: 'm', data: ['x'] });
    expect(again.records).toEqual([rec]);
    expect(again.pending(QUESTIONS.map((q) => ({ ...q, dataset: 'toy' }))).map((q) => q.id)).toEqual(['b', 'c']);
    expect(() => again.append([rec])).toThrow(/would be scored twice/);
    expect(() => EvalFolder.open(dir, { model: 'other', data: ['x'] })).toThrow(/holds an evaluation with other settings \(model: "m" there, "other" now\)/);
    expect(readFileSync(join(dir, 'predictions.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('takes over a folder whose earlier run failed before its first question', () => {
    const dir = join(root, 'out-failed');
    EvalFolder.open(dir, { model: 'm', adapter: '/wrong/path' });
    const again = EvalFolder.open(dir, { model: 'm', adapter: '/right/path' });
    expect(again.records).toEqual([]);
    expect(JSON.parse(readFileSync(join(dir, 'settings.json'), 'utf8'))).toEqual({ model: 'm', adapter: '/right/path' });
  });

  it('scores foreign predictions with the same metric code, a dataset per line or the file name', () => {
    const text = [
      '{"id": "1", "prediction": "The Beatles", "golden_answers": ["Beatles"], "dataset": "nq"}',
      '{"id": "2", "prediction": "New York City", "golden_answers": ["New York"], "dataset": "nq"}',
      '{"id": "3", "prediction": null, "golden_answers": ["x"]}',
    ].join('\n');
    const lines = scorePredictionsText(text, '/tmp/other-system.jsonl');
    expect(lines.map((l) => [l.dataset, l.em, l.f1])).toEqual([
      ['nq', 1, 1],
      ['nq', 0, 0.8],
      ['other-system', 0, 0],
    ]);
    const results = aggregateResults(lines);
    expect(results.datasets[0]?.f1).toBeCloseTo(0.9, 12);
    expect(results.average.f1).toBeCloseTo(0.45, 12);
    expect(resultsMarkdown(results, 't')).toContain('| nq | 2 | 50.0 | 90.0 |');
    expect(() => scorePredictionsText('{"id": "1", "prediction": "x"}', 'f.jsonl')).toThrow(/f\.jsonl: line 1: field 'golden_answers'/);
    expect(() => scorePredictionsText('{"id": "1", "prediction": 3, "golden_answers": ["x"]}', 'f.jsonl')).toThrow(/field 'prediction'/);
  });
});
