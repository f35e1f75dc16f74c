// Resuming a run whose checkpoints are damaged, through the CLI on a tiny random model: the damaged newest
// checkpoint is skipped with its file and reason named and the run continues from the older one; when none
// is usable the run stops with the reasons and the live bank is left byte for byte as it was (nothing is
// written before every restored file is checked). Temp files a killed writer left are swept at the start.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsWithoutTimings } from '../helpers/cli-process.js';
import { checkManifest } from '../../src/formats/manifest.js';
import { CLI, faultRoot, run, tinyModel, trainArgs } from './cli.js';

let root: string;
let model: string;

beforeAll(async () => {
  root = faultRoot('ckpt');
  model = tinyModel(root);
  const base = await run(root, trainArgs(model, join(root, 'base')));
  expect(base.code, base.stderr).toBe(0);
}, 400_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

function copyOf(name: string): string {
  const dir = join(root, name);
  cpSync(join(root, 'base'), dir, { recursive: true });
  return dir;
}

function halve(file: string): void {
  truncateSync(file, Math.floor(readFileSync(file).length / 2));
}

describe('resume past damaged checkpoints', () => {
  it('a damaged bank in every checkpoint stops the run naming the files, and the live bank is untouched', async () => {
    const dir = copyOf('bad-banks');
    halve(join(dir, 'checkpoints', 'step-2', 'skills.json'));
    halve(join(dir, 'checkpoints', 'step-1', 'skills.json'));
    const live = readFileSync(join(dir, 'skills.json'));
    const r = await run(root, [CLI, 'train', '--resume', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/no usable checkpoint/);
    expect(r.stderr).toContain(join(dir, 'checkpoints', 'step-2', 'skills.json'));
    expect(r.stderr).toContain(join(dir, 'checkpoints', 'step-1', 'skills.json'));
    expect(readFileSync(join(dir, 'skills.json')).equals(live)).toBe(true);
    expect(readFileSync(join(dir, 'train.log'), 'utf8')).toMatch(/fatal: .*no usable checkpoint/);
    expect(existsSync(join(dir, '.lock'))).toBe(false);
  }, 400_000);

  it('a truncated adapter in the newest checkpoint falls back to the one before, saying which and why', async () => {
    const dir = copyOf('bad-adapter');
    halve(join(dir, 'checkpoints', 'step-2', 'solver', 'adapter_model.safetensors'));
    // Leftovers of a writer killed mid-checkpoint and mid-file, by a process that no longer runs.
    mkdirSync(join(dir, 'checkpoints', '.step-3.999999999.tmp', 'solver'), { recursive: true });
    writeFileSync(join(dir, '.metrics.jsonl.999999999.1.tmp'), 'partial');
    const r = await run(root, [CLI, 'train', '--resume', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: checkpoint step 2 is not usable, skipped: .*step-2\/solver\/adapter_model\.safetensors has \d+ bytes, the manifest says \d+/);
    expect(r.stderr).toMatch(/resuming .* from checkpoint step 1/);
    expect(r.stderr).toMatch(/warning: removed 2 temp file\(s\) left by an interrupted writer/);
    expect(existsSync(join(dir, 'checkpoints', '.step-3.999999999.tmp'))).toBe(false);
    expect(existsSync(join(dir, '.metrics.jsonl.999999999.1.tmp'))).toBe(false);
    // Step 2 was trained again and its checkpoint rewritten whole.
    expect(checkManifest(join(dir, 'checkpoints', 'step-2'))).toEqual({});
    // ... and it reproduces the uninterrupted run's step 2 (same seed).
    expect(metricsWithoutTimings(dir)).toEqual(metricsWithoutTimings(join(root, 'base')));
  }, 400_000);
});
