// Progress lines (src/cli/progress.ts): a line per training step, per eval batch and per phase of a step that
// took longer than a few seconds, also when stderr is not a terminal, each with an ETA that says what it rests
// on. The default run used to print nothing between "training runs/world" and the first eval line when its
// output went to a file. The line logic is checked on a scripted clock; the command lines of a short --model
// tiny run and eval are checked for the lines themselves (never their times).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etaText, formatSeconds, PHASE_LINE_SECONDS, TrainProgressText } from '../src/cli/progress.js';
import type { TrainProgressEvent } from '../src/selfplay/trainer.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'progress-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('progress text (scripted clock)', () => {
  it('formats durations and says what an ETA rests on', () => {
    expect([formatSeconds(0.44), formatSeconds(45.4), formatSeconds(190), formatSeconds(3 * 3600 + 5 * 60)]).toEqual(['0.4 s', '45 s', '3 min 10 s', '3 h 05 min']);
    expect(etaText(40, 16, 41, 'question')).toBe('about 1 min 43 s to go at 2.5 s a question (16 done in 40 s)');
    expect(etaText(40, 16, 0, 'question')).toBe('16 questions in 40 s');
    expect(etaText(0, 0, 57, 'question')).toBe('57 questions to go');
  });

  it('a line per eval batch, per long phase and per step, with the time left from the step and eval times so far', () => {
    let t = 100;
    const p = new TrainProgressText(1, 3, [0, 2, 3], () => t);
    const lines: string[] = [];
    const on = (e: TrainProgressEvent, after: number): void => {
      t += after;
      const l = p.line(e);
      if (l !== undefined) lines.push(l);
    };
    const evalAt = (step: number): void => {
      for (const skills of ['on', 'off'] as const) {
        on({ kind: 'eval-batch', step, skills, done: 0, total: 10 }, 0);
        on({ kind: 'eval-batch', step, skills, done: 8, total: 10 }, 8);
        on({ kind: 'eval-batch', step, skills, done: 10, total: 10 }, 2);
      }
    };
    const step = (s: number): void => {
      for (const [phase, secs] of [['propose', 12], ['validate', 1], ['solve', 30], ['judge', 0.5], ['update', 6], ['consolidate', 0.5]] as const) {
        on({ kind: 'phase', step: s, phase, state: 'start' }, 0);
        on({ kind: 'phase', step: s, phase, state: 'end', seconds: secs }, secs);
      }
    };
    evalAt(0);
    step(1);
    lines.push(p.stepEnd(1));
    expect(lines).toEqual([
      '[8.0 s] held-out eval at step 0, skills on: 8/10 questions; about 2.0 s to go at 1.0 s a question (8 done in 8.0 s)',
      '[18 s] held-out eval at step 0, skills off: 8/10 questions; about 2.0 s to go at 1.0 s a question (8 done in 8.0 s)',
      // Only the phases of at least PHASE_LINE_SECONDS get a line.
      '[32 s] step 1/3: propose took 12 s',
      '[1 min 3 s] step 1/3: solve took 30 s',
      '[1 min 10 s] step 1/3: GRPO update took 6.0 s',
      // 2 steps of 50 s and the evals after steps 2 and 3, each as long as the one at step 0 (20 s).
      'about 2 min 20 s to go (2 steps at 50 s and 2 held-out evals at 20 s, each as long as so far)',
    ]);
    expect(PHASE_LINE_SECONDS).toBeGreaterThan(1);
    expect(p.eta()).toBe('ETA 2 min 20 s');
    step(2);
    expect(p.stepEnd(2)).toBe('about 1 min 30 s to go (1 step at 50 s and 2 held-out evals at 20 s, each as long as so far)');
    evalAt(2);
    step(3);
    expect(p.stepEnd(3)).toBe('about 20 s to go (1 held-out eval at 20 s, each as long as so far)');
    expect(p.stamp()).toBe('[3 min 10 s]');
  });

  it('a step-0 eval read from the cache prints nothing and gives the later evals its computed time as their pace', () => {
    let t = 0;
    const p = new TrainProgressText(1, 2, [0, 2], () => t);
    expect(p.line({ kind: 'eval-cached', step: 0, seconds: 75 })).toBeUndefined();
    expect(p.activity({ kind: 'eval-cached', step: 0, seconds: 75 })).toBeUndefined();
    p.line({ kind: 'phase', step: 1, phase: 'propose', state: 'start' });
    t = 10;
    expect(p.stepEnd(1)).toBe('about 1 min 25 s to go (1 step at 10 s and 1 held-out eval at 1 min 15 s, each as long as so far)');
  });
});

describe('progress lines without a terminal', () => {
  function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
    // spawnSync with pipes: stderr is not a TTY, as in CI logs and under nohup.
    return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, SESA_HOME: join(root, 'home') }, timeout: 400_000 });
  }

  it('a short --model tiny run prints its eval batches and steps, each with the time left', () => {
    const r = cli([
      'train', '--model', 'tiny', '--steps', '2', '--seeds-per-step', '1', '--proposals-per-seed', '2', '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '12',
      '--max-response-tokens', '48', '--eval-every', '1', '--eval-data', 'encyclopedia', '--eval-limit', '9', '--backend', 'wasm', '--threads', '1', '--out', join(root, 'run'),
    ]);
    expect(r.status, r.stderr).toBe(0);
    const err = r.stderr;
    // Between "training …" and the first eval result: the eval's batches (8 of 9 questions are one batch).
    const training = err.indexOf('training ');
    const firstEval = err.indexOf('held-out eval at step 0, skills on: EM');
    expect(training).toBeGreaterThanOrEqual(0);
    const between = err.slice(training, firstEval);
    expect(between).toMatch(/^\[[^\]]+\] held-out eval at step 0, skills on: 8\/9 questions; about .+ to go at .+ a question \(8 done in .+\)$/m);
    expect(between).toMatch(/^\[[^\]]+\] held-out eval at step 0, skills off: 8\/9 questions; /m);
    // One line per step, with the time left from the steps and evals so far; the last says the steps' total.
    expect(err).toMatch(/^\[[^\]]+\] step 1\/2: valid \d+\/2 \| .* \| about .+ to go \(1 step at .+ and 2 held-out evals at .+, each as long as so far\)$/m);
    expect(err).toMatch(/^\[[^\]]+\] step 2\/2: valid \d+\/2 \| .* \| about .+ to go \(1 held-out eval at .+, each as long as so far\)$/m);
    expect(err.match(/^\[[^\]]+\] step \d\/2: valid/gm)).toHaveLength(2);
    expect(err).toMatch(/^\[[^\]]+\] held-out eval at step 2, skills off: 8\/9 questions; /m);
  }, 400_000);

  it('eval prints a line per batch with the time left at the pace so far, and what the setup took', () => {
    const r = cli(['eval', '--model', 'tiny', '--data', 'encyclopedia', '--limit', '9', '--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--backend', 'wasm', '--threads', '1', '--out', join(root, 'eval')]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^eval: 9 questions from encyclopedia; skills off; 9 to go \(the model, search and bank took .+ to set up\)$/m);
    expect(r.stderr).toMatch(/^eval: 8\/9 \(EM so far [\d.]+\); about .+ to go at .+ a question \(8 done in .+\)$/m);
    expect(r.stderr).toMatch(/^eval: 9\/9 \(EM so far [\d.]+\); 9 questions in .+$/m);
  }, 400_000);
});
