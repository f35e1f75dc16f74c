// `sesa-train eval --run RUN_DIR` asks every question as the run's own held-out eval did (docs/evaluation.md,
// "Evaluating a run"): a one-step SESA run of the demo model in the demo world evaluates itself at steps 0 and
// 1 on world questions; the CLI eval of its checkpoint, reading the model, world, bank and settings from its
// config.json, gives the same prediction for every question, skills on and off. Also `eval --model demo --data
// world --world-seed N` (the world's questions in that world's corpus) and the refusals of a bad --run.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { train } from '../src/selfplay/trainer.js';
import { worldFor } from '../src/world/setup.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
let runDir: string;
let summary: Awaited<ReturnType<typeof train>>;

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((res) => child.on('exit', (code) => res({ code, stdout, stderr })));
}

const lines = (file: string): Array<Record<string, unknown>> =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const byQuestion = (rows: Array<Record<string, unknown>>): Record<string, unknown> =>
  Object.fromEntries(rows.map((r) => [`${String(r.dataset)}/${String(r.id)}`, { prediction: r.prediction, queries: r.queries, skills: r.skills, em: r.em }]));

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sesa-eval-run-'));
  runDir = join(root, 'run');
  const config = {
    ...TRAIN_DEFAULTS,
    ...WORLD_DEFAULTS,
    steps: 1,
    seedsPerStep: 2,
    proposalsPerSeed: 2,
    groupSize: 2,
    solverEpochs: 1,
    evalEvery: 1,
    evalData: 'world',
    evalLimit: 5,
    // Not the trainer's default batch, so the CLI can only match it by reading the run's config.
    evalBatchSize: 3,
    saveEvery: 1,
    threads: 1,
    backend: 'wasm',
    out: runDir,
  } as TrainConfig;
  summary = await train(config, { log: () => undefined });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sesa-train eval --run RUN_DIR', () => {
  it('gives the predictions of the run’s own held-out eval, skills on and off', async () => {
    for (const skills of ['on', 'off'] as const) {
      const out = join(root, `cli-${skills}`);
      const r = await cli(['eval', '--run', runDir, ...(skills === 'off' ? ['--skills', 'off'] : []), '--out', out, '--threads', '1', '--backend', 'wasm']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/at checkpoint step 1/);
      const mine = lines(join(out, 'predictions.jsonl'));
      const trainer = lines(join(runDir, 'eval', `step-1-skills-${skills}.jsonl`));
      expect(mine.length).toBe(5);
      expect(byQuestion(mine)).toEqual(byQuestion(trainer));
      const settings = JSON.parse(readFileSync(join(out, 'settings.json'), 'utf8')) as Record<string, unknown>;
      expect(settings.maxTurns).toBe(WORLD_DEFAULTS.maxTurns);
      expect(settings.renderTokenBudget).toBe(WORLD_DEFAULTS.renderTokenBudget);
      if (skills === 'on') expect(mine.some((m) => (m.skills as string[]).length > 0)).toBe(true);
      else expect(mine.every((m) => (m.skills as string[]).length === 0)).toBe(true);
    }
  });

  it('the run’s summary gives the held-out gain from step 0 to the last step with its paired interval', () => {
    for (const skills of ['on', 'off'] as const) {
      const h = summary.heldOut?.find((x) => x.skills === skills);
      const em = (step: number): number[] => lines(join(runDir, 'eval', `step-${step}-skills-${skills}.jsonl`)).map((r) => r.em as number);
      const [first, last] = [em(0), em(1)];
      expect(h?.gain?.questions).toBe(5);
      expect(h?.gain?.gain).toBeCloseTo((last.reduce((a, b) => a + b, 0) - first.reduce((a, b) => a + b, 0)) / 5, 12);
      expect(h?.gain?.low).toBeLessThanOrEqual(h?.gain?.gain as number);
      expect(h?.gain?.high).toBeGreaterThanOrEqual(h?.gain?.gain as number);
    }
  });

  it('evaluates the demo model on another world, searched in that world’s corpus', async () => {
    const out = join(root, 'world-3');
    const r = await cli(['eval', '--model', 'demo', '--data', 'world', '--world-seed', '3', '--limit', '2', '--out', out, '--threads', '1', '--backend', 'wasm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = lines(join(out, 'predictions.jsonl'));
    const world = worldFor(3);
    expect(rows.map((x) => x.question)).toEqual(world.heldOut.slice(0, 2).map((q) => q.question));
    expect(rows.every((x) => x.dataset === 'world-3')).toBe(true);
    // Every passage it retrieved is one of world 3's.
    const ids = new Set(world.passages.map((p) => p.id));
    expect(rows.flatMap((x) => (x.retrieved as string[][]).flat()).every((id) => ids.has(id))).toBe(true);
    const settings = JSON.parse(readFileSync(join(out, 'settings.json'), 'utf8')) as Record<string, unknown>;
    expect(settings.maxNewTokens).toBe(WORLD_DEFAULTS.maxNewTokens);
  });

  it('refuses a folder that is not a run, a step it does not have, and --step without --run', async () => {
    const notRun = await cli(['eval', '--run', root, '--threads', '1']);
    expect(notRun.code).not.toBe(0);
    expect(notRun.stderr).toMatch(/not a run folder/);
    const noStep = await cli(['eval', '--run', runDir, '--step', '7', '--threads', '1']);
    expect(noStep.code).not.toBe(0);
    expect(noStep.stderr).toMatch(/--step 7/);
    const loose = await cli(['eval', '--model', 'demo', '--data', 'world', '--step', '1', '--threads', '1']);
    expect(loose.code).not.toBe(0);
    expect(loose.stderr).toMatch(/--step names a checkpoint of --run/);
  });
});
