// The trainer end to end on a real (tiny, random) model through the CLI: steps complete and checkpoints are
// written; a run killed with SIGKILL and resumed (its config.json with the encyclopedia's old name, demo) gives
// the same metrics, bank and adapters as an uninterrupted run with the same seed.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killWhenExists, metricsWithoutTimings, startNode } from './helpers/cli-process.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { generateSyntheticCorpus } from '../src/corpus/synthetic/index.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
let modelDir: string;

function trainArgs(out: string): string[] {
  return [
    CLI, 'train', '--model', modelDir, '--corpus', 'encyclopedia', '--steps', '3', '--seeds-per-step', '1', '--proposals-per-seed', '2',
    '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '16', '--max-response-tokens', '64', '--embedder', 'lexical',
    '--lr', '1e-3', '--save-every', '1', '--micro-batch-size', '8', '--backend', 'wasm', '--seed', '4', '--out', out,
  ];
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-e2e-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function start(args: string[]): ReturnType<typeof startNode> {
  return startNode(args, root, { XDG_CACHE_HOME: join(root, 'cache'), SESA_HOME: join(root, 'home') });
}

const metricsOf = (run: string): unknown[] => metricsWithoutTimings(join(root, run));

describe('sesa-train end to end (tiny random model)', () => {
  it('runs steps, writes checkpoints, and a SIGKILLed run resumes to the same result as an uninterrupted one', async () => {
    const full = await start(trainArgs('run-full')).done;
    expect(full.code, full.stderr).toBe(0);
    for (const step of [1, 2, 3]) {
      const ck = join(root, 'run-full', 'checkpoints', `step-${step}`);
      for (const f of ['state.json', 'skills.json', 'proposer/adapter_model.safetensors', 'proposer/adapter_config.json', 'solver/optimizer.safetensors']) {
        expect(existsSync(join(ck, f)), `${ck}/${f}`).toBe(true);
      }
    }
    expect(metricsOf('run-full')).toHaveLength(3);
    // The summary counts the bank's admissions and utility evidence, and the run's report is written.
    expect(full.stdout).toMatch(/skill bank: \d+ → \d+ cards \(version \d+\); \d+ distilled cards? admitted; \d+ cards? with utility evidence from retrievals/);
    const report = join(root, 'run-full', 'report.html');
    expect(full.stdout).toMatch(/^report: \S*run-full\/report\.html$/m);
    expect(readFileSync(report, 'utf8')).toMatch(/^<!doctype html>/i);

    // Kill the second run as soon as its first checkpoint is complete (it is then inside step 2).
    const killed = start(trainArgs('run-killed'));
    const marker = join(root, 'run-killed', 'checkpoints', 'step-1', 'state.json');
    await killWhenExists(killed, marker);
    const k = await killed.done;
    expect(k.signal).toBe('SIGKILL');

    // Its config.json as a version before the encyclopedia's rename wrote it (corpus "demo"): the run still
    // resumes, in the encyclopedia (docs/evaluation.md, "Inputs").
    const configPath = join(root, 'run-killed', 'config.json');
    const saved = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    expect(saved.corpus).toBe('encyclopedia');
    writeFileSync(configPath, `${JSON.stringify({ ...saved, corpus: 'demo' }, null, 2)}\n`);
    const resumed = await start([CLI, 'train', '--resume', join(root, 'run-killed')]).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resumed from step \d/);
    expect(metricsOf('run-killed')).toEqual(metricsOf('run-full'));
    // The resumed run's summary covers the whole run, as the uninterrupted one's does, and says what was resumed.
    expect(resumed.stdout).toMatch(/^steps 1–3 \(steps 1–\d before the resume from checkpoint step \d, \d–3 trained now\)$/m);
    const pooled = (out: string): string[] => out.split('\n').filter((l) => /^(valid questions|solver accuracy|p̂ of valid questions)/.test(l));
    expect(pooled(full.stdout).length).toBeGreaterThan(0);
    expect(pooled(resumed.stdout)).toEqual(pooled(full.stdout));
    const bank = (run: string): unknown => {
      const b = JSON.parse(readFileSync(join(root, run, 'skills.json'), 'utf8')) as { version: number; cards: unknown; queue: unknown };
      return { version: b.version, cards: b.cards, queue: b.queue };
    };
    expect(bank('run-killed')).toEqual(bank('run-full'));
    for (const role of ['proposer', 'solver']) {
      const a = readFileSync(join(root, 'run-full', 'checkpoints', 'step-3', role, 'adapter_model.safetensors'));
      const b = readFileSync(join(root, 'run-killed', 'checkpoints', 'step-3', role, 'adapter_model.safetensors'));
      expect(a.equals(b), `${role} adapter`).toBe(true);
    }
  });

  it('trains on a JSONL corpus file with no --seeds (answers from its titles) and the skill bank off', async () => {
    const corpus = join(root, 'corpus.jsonl');
    const { corpus: rows } = generateSyntheticCorpus({ seed: 5, passages: 300 });
    writeFileSync(corpus, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const args = trainArgs('run-file').map((a) => (a === 'encyclopedia' ? corpus : a === '3' ? '1' : a));
    const r = await start([...args, '--skills', 'off']).done;
    expect(r.code, r.stderr).toBe(0);
    const [m] = metricsOf('run-file') as Array<Record<string, unknown>>;
    expect(m).toMatchObject({ step: 1, seeds: 1, proposals: 2 });
    expect(m).not.toHaveProperty('bankSize');
    expect(existsSync(join(root, 'run-file', 'skills.json'))).toBe(false);
    expect(existsSync(join(root, 'run-file', 'checkpoints', 'step-1', 'state.json'))).toBe(true);
  });

  it('--recipe ssp trains with no skill bank, one proposal per seed, and records the recipe in config.json', async () => {
    // One step of two seeds; the recipe sets the proposals per seed (a flag for it would be refused).
    const base = trainArgs('run-ssp');
    const set: Record<string, string> = { '--steps': '1', '--seeds-per-step': '2' };
    const args = base
      .map((a, i) => set[base[i - 1] as string] ?? a)
      .filter((a, i) => a !== '--proposals-per-seed' && base[i - 1] !== '--proposals-per-seed');
    const r = await start([...args, '--recipe', 'ssp']).done;
    expect(r.code, r.stderr).toBe(0);
    const [m] = metricsOf('run-ssp') as Array<Record<string, unknown>>;
    expect(m).toMatchObject({ step: 1, seeds: 2, proposals: 2 });
    expect(m).not.toHaveProperty('bankSize');
    expect(existsSync(join(root, 'run-ssp', 'skills.json'))).toBe(false);
    const config = JSON.parse(readFileSync(join(root, 'run-ssp', 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ recipe: 'ssp', skills: false, frontier: false, proposalsPerSeed: 1, invalidReward: 0, rejectRepeatedQueries: true });
  });

  it('refuses bad settings with messages that name the flag', async () => {
    const r = await start([CLI, 'train', '--model', modelDir, '--gpus', '0', '--group-size', '0', '--corpus', 'demo', '--out', join(root, 'bad')]).done;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--gpus must be a positive integer, got 0/);
    expect(r.stderr).toMatch(/--group-size must be a positive integer/);
    expect(r.stderr).toMatch(/--corpus demo was renamed encyclopedia \(the embedded synthetic encyclopedia; .*\): use --corpus encyclopedia/);
    expect(existsSync(join(root, 'bad'))).toBe(false);
  });
});
