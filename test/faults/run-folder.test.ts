// The run folder's checkpoints in isolation: a write that fails leaves no temp folder; the manifest catches
// a flipped byte that keeps the size; restore walks back past bad checkpoints, saying why, accepts a
// checkpoint from before manifests when its files load, and changes nothing when none is usable.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MANIFEST_FILE } from '../../src/formats/manifest.js';
import { TRAIN_DEFAULTS } from '../../src/settings/train.js';
import { RunFolder } from '../../src/selfplay/run-folder.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function newRun(): RunFolder {
  const dir = mkdtempSync(join(tmpdir(), 'sesa-runfolder-'));
  dirs.push(dir);
  const run = RunFolder.create(join(dir, 'run'), { ...TRAIN_DEFAULTS, out: join(dir, 'run') });
  run.release();
  return run;
}

const state = (step: number) => ({ step, seed: 0, savedAt: 'now' });
const payload = (text: string) => async (dir: string) => writeFileSync(join(dir, 'payload.txt'), text);

describe('checkpoints of a run folder', () => {
  it('a checkpoint write that fails removes its temp folder', async () => {
    const run = newRun();
    await expect(
      run.writeCheckpoint(1, state(1), async (dir) => {
        writeFileSync(join(dir, 'half.bin'), 'x');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readdirSync(run.checkpointsDir)).toEqual([]);
  });

  it('restores the newest checkpoint that is whole and loads, naming each one skipped and why', async () => {
    const run = newRun();
    for (const s of [1, 2, 3, 4]) await run.writeCheckpoint(s, state(s), payload(`payload of step ${s}`));
    // Step 4: a flipped byte, same size. Step 3: the loader refuses it. Step 2: written before manifests.
    const p4 = join(run.checkpointDir(4), 'payload.txt');
    writeFileSync(p4, readFileSync(p4, 'utf8').replace('4', '5'));
    rmSync(join(run.checkpointDir(2), MANIFEST_FILE));
    const loaded: number[] = [];
    const r = await run.restoreLatest(async (c) => {
      loaded.push(c.step);
      if (c.step === 3) throw new Error(`${c.dir}/payload.txt: refused by the loader`);
      return readFileSync(join(c.dir, 'payload.txt'), 'utf8');
    });
    expect(loaded).toEqual([3, 2]);
    expect(r.checkpoint?.step).toBe(2);
    expect(r.checkpoint?.loaded).toBe('payload of step 2');
    expect(r.skipped).toEqual([
      { step: 4, reason: `${p4}: checksum differs from the manifest (the file is damaged)` },
      { step: 3, reason: `${run.checkpointDir(3)}/payload.txt: refused by the loader` },
    ]);
  });

  it('with checkpoints present but none usable, it throws the reasons and writes nothing', async () => {
    const run = newRun();
    await run.writeCheckpoint(1, state(1), payload('one'));
    rmSync(join(run.checkpointDir(1), 'payload.txt'));
    const before = readdirSync(run.dir).sort();
    await expect(run.restoreLatest(async () => 'never')).rejects.toThrow(`no usable checkpoint; step 1: ${join(run.checkpointDir(1), 'payload.txt')} is missing. Nothing was changed`);
    expect(readdirSync(run.dir).sort()).toEqual(before);
    expect(existsSync(run.checkpointDir(1))).toBe(true);
  });

  it('a run without checkpoints restores nothing and skips nothing', async () => {
    const run = newRun();
    expect(await run.restoreLatest(async () => 'never')).toEqual({ skipped: [] });
  });
});
