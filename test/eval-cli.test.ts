// `sesa-train eval` end to end through the CLI on a tiny random model: 20 MuSiQue questions from the shared
// data, searched through a local Search-R1-compatible server (BM25 over the MuSiQue passages) that this test
// starts; a run SIGKILLed mid-way and rerun ends with every question scored once and the same predictions as
// an uninterrupted run; `--data encyclopedia`; `--score`; and the bad inputs that must fail before any question runs.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { Bm25Index } from '../src/search/bm25-index.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { sharedDataPath, sharedDataSkipReason } from '../src/util/shared-data.js';
import { type LocalRetriever, startSearchR1Server } from './helpers/searchr1-server.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
const QA = sharedDataPath('qa', 'musique.jsonl');
const CORPUS = sharedDataPath('corpus', 'musique', 'corpus.jsonl');

let root: string;
let modelDir: string;
let retriever: LocalRetriever | undefined;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function start(args: string[]): { child: ChildProcess; done: Promise<Exit> } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, env: { ...process.env, XDG_CACHE_HOME: join(root, 'cache'), SESA_HOME: join(root, 'home') }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Exit>((res) => child.on('exit', (code, signal) => res({ code, signal, stdout, stderr })));
  return { child, done };
}

const TINY = ['--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--backend', 'wasm'];

function predictionLines(out: string): Array<Record<string, unknown>> {
  const file = join(root, out, 'predictions.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-eval-cli-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
});
afterAll(async () => {
  await retriever?.close();
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!QA || !CORPUS)(`eval on 20 MuSiQue questions through a local Search-R1 server (${!QA || !CORPUS ? sharedDataSkipReason('corpus', 'musique', 'corpus.jsonl') : 'shared data present'})`, () => {
  it('completes, resumes after SIGKILL with no question scored twice, and matches an uninterrupted run', async () => {
    const index = await Bm25Index.open(CORPUS as string, { cacheDir: null });
    retriever = await startSearchR1Server(index);
    const args = (out: string): string[] => [
      'eval', '--model', modelDir, '--data', 'musique', '--data-dir', join(QA as string, '..'), '--limit', '20', '--sample-seed', '0',
      '--retriever-url', retriever?.url as string, '--batch-size', '2', ...TINY, '--out', out,
    ];

    const full = await start([...args('full'), '--json']).done;
    expect(full.code, full.stderr).toBe(0);
    const fullLines = predictionLines('full');
    expect(fullLines).toHaveLength(20);
    expect(new Set(fullLines.map((l) => l.id)).size).toBe(20);
    expect(fullLines.every((l) => l.dataset === 'musique' && Array.isArray(l.golden_answers) && typeof l.em === 'number' && typeof l.f1 === 'number')).toBe(true);
    // The questions come from the shared MuSiQue file, with its golden answers.
    const source = new Map(
      readFileSync(QA as string, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { id: string; golden_answers: string[] })
        .map((q) => [q.id, q.golden_answers]),
    );
    for (const l of fullLines) expect(l.golden_answers).toEqual(source.get(l.id as string));
    const printed = JSON.parse(full.stdout) as { complete: boolean; datasets: Array<{ dataset: string; questions: number }> };
    expect(printed.complete).toBe(true);
    expect(printed.datasets).toEqual([expect.objectContaining({ dataset: 'musique', questions: 20 })]);
    expect(readFileSync(join(root, 'full', 'results.md'), 'utf8')).toMatch(/\| musique \| 20 \|/);
    // The probe (and any query the model wrote) went through the server.
    expect(retriever.queries.length).toBeGreaterThan(0);

    // Kill a second run once some but not all questions are scored, then rerun it.
    const killed = start(args('resumed'));
    let seenAtKill = 0;
    await new Promise<void>((res, rej) => {
      const poll = setInterval(() => {
        const n = predictionLines('resumed').length;
        if (n >= 2 && n < 20) {
          clearInterval(poll);
          seenAtKill = n;
          killed.child.kill('SIGKILL');
          res();
        }
      }, 10);
      void killed.done.then((r) => {
        clearInterval(poll);
        if (r.signal !== 'SIGKILL') rej(new Error(`the eval ended on its own (code ${r.code}) before it could be killed: ${r.stderr}`));
      });
    });
    await killed.done;
    const before = predictionLines('resumed');
    expect(before.length).toBeGreaterThanOrEqual(seenAtKill);
    expect(before.length).toBeLessThan(20);
    const resumed = await start(args('resumed')).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`${before.length} already scored`);
    const after = predictionLines('resumed');
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after).toHaveLength(20);
    expect(new Set(after.map((l) => l.id)).size).toBe(20);
    // Greedy decoding: the resumed run predicts exactly what the uninterrupted one did.
    const byId = (ls: Array<Record<string, unknown>>) => new Map(ls.map((l) => [l.id, l]));
    expect(byId(after)).toEqual(byId(fullLines));
    expect(JSON.parse(readFileSync(join(root, 'resumed', 'results.json'), 'utf8')).average).toEqual(JSON.parse(readFileSync(join(root, 'full', 'results.json'), 'utf8')).average);

    // Other settings in the same folder are refused before any question runs.
    const other = await start([...args('full').map((a) => (a === '20' ? '10' : a))]).done;
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/holds an evaluation with other settings \(limit: 20 there, 10 now\)/);
  }, 300_000);
});

describe('eval on the embedded encyclopedia and the bad inputs', () => {
  it('--data encyclopedia writes the three outputs', async () => {
    const r = await start(['eval', '--model', modelDir, '--data', 'encyclopedia', '--limit', '4', '--batch-size', '4', ...TINY, '--out', 'encyclopedia', '--json']).done;
    expect(r.code, r.stderr).toBe(0);
    for (const f of ['predictions.jsonl', 'results.json', 'results.md']) expect(existsSync(join(root, 'encyclopedia', f)), f).toBe(true);
    expect(predictionLines('encyclopedia').map((l) => l.dataset)).toEqual(['encyclopedia', 'encyclopedia', 'encyclopedia', 'encyclopedia']);
    expect((JSON.parse(r.stdout) as { average: { questions: number } }).average.questions).toBe(4);
  }, 120_000);

  it('--score scores a foreign predictions file', async () => {
    const file = join(root, 'foreign.jsonl');
    writeFileSync(file, '{"id":"1","prediction":"the Beatles","golden_answers":["Beatles"],"dataset":"nq"}\n{"id":"2","prediction":"x","golden_answers":["y"],"dataset":"nq"}\n');
    const r = await start(['eval', '--score', file, '--json']).done;
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { lines: number; average: { em: number } };
    expect(out.lines).toBe(2);
    expect(out.average.em).toBe(0.5);
  }, 60_000);

  it('fails before any question with a clear error naming the file, URL or field', async () => {
    const data = join(root, 'bad');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'no-golden.jsonl'), '{"id":"1","question":"Q?","golden_answers":["a"]}\n{"id":"2","question":"Q2?"}\n');
    writeFileSync(join(data, 'empty.jsonl'), '\n');
    // An adapter made for another base model (hidden 48 instead of 32).
    const otherBase = makeTinyCheckpoint({ out: join(root, 'other-model'), arch: 'qwen3', vocab: 400, hidden: 48, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 4 }).dir;
    const adapter = join(root, 'other-adapter');
    const init = await start(['lora-init', '--model', otherBase, '--out', adapter, '--r', '4', '--alpha', '8']).done;
    expect(init.code, init.stderr).toBe(0);
    // A bank recorded with another embedder (lexical, 128 dimensions), evaluated with --embedder e5.
    const bankPath = join(root, 'bank-lexical.json');
    await (await SkillBank.open(bankPath, { embedder: new LexicalEmbedder({ dim: 128 }) })).dispose();

    const cases: Array<{ args: string[]; error: RegExp; out: string }> = [
      { out: 'e1', args: ['--data', join(data, 'no-golden.jsonl'), '--corpus', 'encyclopedia'], error: /no-golden\.jsonl: line 2: field 'golden_answers' must be a non-empty list/ },
      { out: 'e2', args: ['--data', join(data, 'empty.jsonl'), '--corpus', 'encyclopedia'], error: /empty\.jsonl: the dataset is empty/ },
      { out: 'e3', args: ['--data', 'encyclopedia', '--adapter', adapter], error: /other-adapter.*tensor '.*' has shape \[.*\], expected \[.*\]/ },
      { out: 'e4', args: ['--data', 'encyclopedia', '--skills', bankPath, '--embedder', 'e5'], error: /skill bank .*bank-lexical\.json: embedder: recorded with lexical/ },
      { out: 'e5', args: ['--data', 'encyclopedia', '--retriever-url', 'http://127.0.0.1:9/retrieve'], error: /search tool not usable \(Search-R1 retrieval server at http:\/\/127\.0\.0\.1:9\/retrieve\)/ },
      { out: 'e6', args: ['--data', 'nq', '--data-dir', data, '--corpus', 'encyclopedia'], error: /--data nq: not found in the data folder/ },
      // The encyclopedia's old name (demo names only the demo world's model now) is refused naming the new one.
      { out: 'e7', args: ['--data', 'demo'], error: /--data demo was renamed encyclopedia \(.*\): use --data encyclopedia/ },
      { out: 'e8', args: ['--data', 'encyclopedia', '--corpus', 'demo'], error: /--corpus demo was renamed encyclopedia \(.*\): use --corpus encyclopedia/ },
    ];
    for (const c of cases) {
      const r = await start(['eval', '--model', modelDir, ...c.args, ...TINY, '--out', c.out]).done;
      expect(r.code, `${c.out}: ${r.stderr}`).toBe(1);
      expect(r.stderr, c.out).toMatch(c.error);
      expect(predictionLines(c.out), c.out).toEqual([]);
    }
  }, 240_000);
});
