// The step-0 held-out eval cache (src/eval/held-out-cache.ts, src/selfplay/held-out-cache-key.ts): its key
// ignores what only shapes training and counts what reaches the eval; an entry that is damaged or of another
// digest is reported and recomputed; and, through the CLI on a tiny random model, a run with another seed and
// learning rate reads the first run's entry, whose predictions equal, byte for byte, those the run computes
// itself with --no-eval-cache (the invariant the cache rests on).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode } from './helpers/cli-process.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { heldOutCacheDigest, heldOutCacheFile, readHeldOutCache, writeHeldOutCache } from '../src/eval/held-out-cache.js';
import type { HeldOutEval } from '../src/eval/held-out.js';
import { stepZeroEvalInputs } from '../src/selfplay/held-out-cache-key.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { LoraAdapter } from '../src/model/lora.js';
import { loadModelConfig } from '../src/model/config.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import type { EvalSet } from '../src/agent/environment.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
let modelDir: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sesa-heldout-cache-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
  await initBackend('wasm', { threads: 1 });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const evalOf = (questions: number): HeldOutEval => ({
  row: { kind: 'eval', step: 0, skills: 'off', questions, em: 0.5, f1: 0.5, judged: null, datasets: [], seconds: 1.5 },
  records: Array.from({ length: questions }, (_, i) => ({ id: `q${i}`, dataset: 'd', question: 'q', golden_answers: ['a'], prediction: 'a', outcome: 'final', turns: 1, queries: [], retrieved: [], skills: [], em: 1, f1: 1, judged: null })),
});

describe('the held-out cache file', () => {
  it('digests inputs whatever their key order; an entry round-trips; a damaged or foreign one is reported and not used', () => {
    expect(heldOutCacheDigest({ a: 1, b: { c: 2, d: [1, 2] } })).toBe(heldOutCacheDigest({ b: { d: [1, 2], c: 2 }, a: 1 }));
    expect(heldOutCacheDigest({ a: 1 })).not.toBe(heldOutCacheDigest({ a: 2 }));
    const dir = join(root, 'cache-unit');
    const digest = heldOutCacheDigest({ x: 1 });
    const file = heldOutCacheFile(dir, digest);
    const warnings: string[] = [];
    const warn = (w: string): void => void warnings.push(w);
    expect(readHeldOutCache(file, digest, warn)).toBeUndefined();
    expect(warnings).toEqual([]);
    writeHeldOutCache(file, digest, { x: 1 }, [evalOf(3)], warn);
    expect(readHeldOutCache(file, digest, warn)).toEqual([evalOf(3)]);
    expect(readHeldOutCache(file, heldOutCacheDigest({ x: 2 }), warn)).toBeUndefined();
    expect(warnings.at(-1)).toMatch(/unusable \(its digest is not the one asked for\); computing the eval again/);
    writeHeldOutCache(file, digest, { x: 1 }, [{ ...evalOf(3), records: evalOf(2).records }], warn);
    expect(readHeldOutCache(file, digest, warn)).toBeUndefined();
    expect(warnings.at(-1)).toMatch(/field 'evals' is not a list of step-0 eval rows with their predictions/);
    writeFileSync(file, '{"format": 1, "dig');
    expect(readHeldOutCache(file, digest, warn)).toBeUndefined();
    expect(warnings.at(-1)).toContain(`${file} cannot be read`);
  });
});

describe('the step-0 eval inputs', () => {
  const searcher = (digest: string | undefined): EvalSet['searcher'] => ({ search: async (q) => q.map(() => []), describe: () => 'scripted searcher (test double)', ...(digest ? { contentDigest: digest } : {}) });
  const sets = (digest: string | undefined): EvalSet[] => [{ dataset: 'd', questions: [{ id: '1', dataset: 'd', question: 'Who?', goldenAnswers: ['A'] }], searcher: searcher(digest) }];
  const backend = { name: 'wasm', provider: 'test', reason: 'requested', threads: 1 } as const;

  it('ignore what only shapes training, and count the eval settings, the adapter, the questions and the search tool', async () => {
    const modelConfig = loadModelConfig(modelDir);
    const lora = { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] };
    const a = LoraAdapter.create('solver', modelConfig, lora as never, { seed: 1 });
    const b = LoraAdapter.create('solver', modelConfig, lora as never, { seed: 2 });
    const config = { ...TRAIN_DEFAULTS, model: modelDir };
    const digestOf = async (over: Record<string, unknown>, adapter = a, s = sets('c1')): Promise<string> => {
      const r = await stepZeroEvalInputs({ config: { ...config, ...over } as typeof config, modelDir, adapter, sets: s, backend: backend as never });
      if ('reason' in r) throw new Error(r.reason);
      return heldOutCacheDigest(r.inputs);
    };
    const base = await digestOf({});
    // Another seed (and so another A: B is zero), learning rate, step count or reward: the same eval.
    expect(await digestOf({ seed: 9, solverLr: 0.01, steps: 77, frontier: false }, b)).toBe(base);
    // The eval's own settings, the questions' search tool and the questions change it.
    expect(await digestOf({ evalBatchSize: 3 })).not.toBe(base);
    expect(await digestOf({ maxTurns: 2 })).not.toBe(base);
    expect(await digestOf({}, a, sets('c2'))).not.toBe(base);
    const other = sets('c1');
    (other[0] as EvalSet).questions[0] = { id: '1', dataset: 'd', question: 'Who else?', goldenAnswers: ['A'] };
    expect(await digestOf({}, a, other)).not.toBe(base);
    // An adapter whose B is not zero changes what the solver answers: it counts by its values.
    const [, firstB] = [...a.variables()].find(([n]) => n.endsWith('.lora_B')) as [string, tf.Variable];
    firstB.assign(tf.onesLike(firstB));
    expect(await digestOf({})).not.toBe(base);
    // A search tool without a content digest (a retrieval server) is not cached, and says why.
    const blind = await stepZeroEvalInputs({ config, modelDir, adapter: b, sets: sets(undefined), backend: backend as never });
    expect(blind).toEqual({ reason: 'the search tool of d (scripted searcher (test double)) has no content digest' });
    a.dispose();
    b.dispose();
  });
});

describe('sesa-train reuses the step-0 eval (tiny random model, CLI)', () => {
  const args = (out: string, seed: number, extra: string[] = []): string[] => [
    CLI, 'train', '--model', modelDir, '--corpus', 'encyclopedia', '--eval-data', 'encyclopedia', '--eval-every', '1', '--eval-limit', '3', '--steps', '1',
    '--seeds-per-step', '1', '--proposals-per-seed', '2', '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '16', '--max-response-tokens', '64',
    '--embedder', 'lexical', '--backend', 'wasm', '--threads', '1', '--seed', String(seed), '--out', join(root, 'runs', out), ...extra,
  ];
  const run = (a: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => startNode(a, root, { XDG_CACHE_HOME: join(root, 'xdg'), SESA_HOME: join(root, 'home') }).done;
  const predictions = (out: string, skills: string): string => readFileSync(join(root, 'runs', out, 'eval', `step-0-skills-${skills}.jsonl`), 'utf8');

  it('a second run with another seed and learning rate reads the first one\'s entry, equal to what it computes itself', async () => {
    const first = await run(args('first', 1));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toMatch(/held-out eval at step 0, skills \w+: .*from /);
    const second = await run(args('second', 2, ['--solver-lr', '0.003']));
    expect(second.code, second.stderr).toBe(0);
    const out = second.stdout + second.stderr;
    expect(out).toMatch(/held-out eval at step 0, skills on: .*\(from \S+\.held-out-cache\/step0-[0-9a-f]{32}\.json, computed in [\d.]+ s by an earlier run with the same inputs\)/);
    const rows = readFileSync(join(root, 'runs', 'second', 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"kind":"eval"')).map((l) => JSON.parse(l) as { step: number; cachedFrom?: string });
    expect(rows.filter((r) => r.step === 0).every((r) => typeof r.cachedFrom === 'string')).toBe(true);
    expect(rows.filter((r) => r.step === 1).every((r) => r.cachedFrom === undefined)).toBe(true);
    const computed = await run(args('computed', 2, ['--solver-lr', '0.003', '--no-eval-cache']));
    expect(computed.code, computed.stderr).toBe(0);
    for (const skills of ['on', 'off']) expect(predictions('second', skills)).toBe(predictions('computed', skills));
    expect(predictions('second', 'off')).toBe(predictions('first', 'off'));
  });
});
