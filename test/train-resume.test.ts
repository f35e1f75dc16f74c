// --resume with flags, on hand-made run folders (a config.json and a complete checkpoint's state.json): the
// paths checked here end before any model is loaded. A finished run says so; --steps below the checkpoint
// and fixed settings are refused and leave config.json as it was; a changeable setting (--lr) is written to
// config.json and logged, so the next plain resume keeps it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { train } from '../src/selfplay/trainer.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-resume-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A run folder of `steps` steps whose newest complete checkpoint is `done`. */
function runFolder(name: string, steps: number, done: number): string {
  const dir = join(root, name);
  const config: TrainConfig = { ...TRAIN_DEFAULTS, steps, lr: 1e-3, out: dir };
  mkdirSync(join(dir, 'checkpoints', `step-${done}`), { recursive: true });
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(dir, 'metrics.jsonl'), '');
  writeFileSync(join(dir, 'checkpoints', `step-${done}`, 'state.json'), JSON.stringify({ step: done, seed: 0, savedAt: '2026-01-01T00:00:00Z' }));
  return dir;
}

function savedConfig(dir: string): TrainConfig {
  return JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as TrainConfig;
}

describe('train --resume', () => {
  it('a finished run says it is finished and trains nothing (no "steps 7–6")', async () => {
    const dir = runFolder('finished', 6, 6);
    const lines: string[] = [];
    let started = false;
    const s = await train(undefined, { log: (l) => lines.push(l), onStart: () => (started = true) }, dir);
    expect(s).toMatchObject({ finished: true, lastStep: 6, metrics: [] });
    expect(started).toBe(false);
    expect(lines.join('\n')).toContain(`${dir} is finished: all 6 steps are done (last checkpoint step 6); to train further, resume with --steps N (N > 6)`);
    expect(readFileSync(join(dir, 'train.log'), 'utf8')).toContain('is finished');
  });

  it('--steps below the checkpoint is refused and config.json keeps its steps', async () => {
    const dir = runFolder('shorter', 6, 6);
    const before = readFileSync(join(dir, 'config.json'), 'utf8');
    await expect(train(undefined, { log: () => {} }, dir, { steps: 3 })).rejects.toThrow(
      `--resume ${dir}: --steps 3 is below the step the run resumes from (6): a run cannot be shortened to before its last checkpoint`,
    );
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe(before);
  });

  it('a fixed setting is refused with the reason, config.json untouched', async () => {
    const dir = runFolder('fixed', 6, 6);
    const before = readFileSync(join(dir, 'config.json'), 'utf8');
    await expect(train(undefined, { log: () => {} }, dir, { loraR: 4, lr: 5e-4 })).rejects.toThrow("--lora-r cannot change on --resume (the run has 16): the run's adapters already have this shape");
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe(before);
  });

  it('--lr X is written to config.json and logged as a change', async () => {
    const dir = runFolder('lr', 6, 6);
    const lines: string[] = [];
    const s = await train(undefined, { log: (l) => lines.push(l) }, dir, { lr: 5e-4 });
    expect(savedConfig(dir).lr).toBe(5e-4);
    expect(s.changed).toEqual([{ key: 'lr', from: 1e-3, to: 5e-4 }]);
    expect(lines).toContain(`config change on resume: --lr 0.001 → 0.0005 (written to ${join(dir, 'config.json')})`);
    // The next plain resume keeps it.
    await train(undefined, { log: () => {} }, dir);
    expect(savedConfig(dir).lr).toBe(5e-4);
  });
});
