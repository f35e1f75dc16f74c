// trainOrResume (src/selfplay/train-or-resume.ts), what scripts/world-experiment.ts calls for every run: a run
// stopped after its first step is continued by the same call to the bits of an uninterrupted run; a folder of
// another configuration is refused naming the settings that differ, and left as it was; a damaged config.json
// is named. On a tiny random model in a world (mechanics only).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { train } from '../src/selfplay/trainer.js';
import { configDifferences, trainOrResume } from '../src/selfplay/train-or-resume.js';
import { tinyWorldModel } from './helpers/tiny-world-model.js';
import { DEMO_WORLD } from '../src/world/world.js';

let root: string;
let modelDir: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-train-or-resume-'));
  modelDir = tinyWorldModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function config(out: string): TrainConfig {
  return {
    ...TRAIN_DEFAULTS,
    model: modelDir, corpus: 'world', worldSeed: DEMO_WORLD.seed, embedder: 'lexical', backend: 'wasm', steps: 2, seedsPerStep: 1, proposalsPerSeed: 2,
    groupSize: 2, maxTurns: 2, maxNewTokens: 12, maxResponseTokens: 64, lr: 1e-3, warmupSteps: 0, microBatchSize: 8,
    evalEvery: 0, out: join(root, out), saveEvery: 1,
  };
}

const FILES = ['solver/adapter_model.safetensors', 'proposer/adapter_model.safetensors', 'reuse-pool.json', 'skills.json'];

describe('trainOrResume', () => {
  it('continues a run stopped after step 1 to the bits of an uninterrupted one, and says it resumed', async () => {
    const full = await trainOrResume(config('full'), { log: () => undefined });
    expect(full.lastStep).toBe(2);
    // Stopped at the first step boundary, as a kill after step 1's checkpoint leaves it.
    const stopped = await train(config('cut'), { log: () => undefined, shouldStop: () => true });
    expect([stopped.lastStep, stopped.stoppedEarly]).toEqual([1, true]);
    const resumed: string[] = [];
    const s = await trainOrResume(config('cut'), { log: () => undefined }, (d) => resumed.push(d));
    expect(resumed).toEqual([join(root, 'cut')]);
    expect([s.firstStep, s.lastStep, s.resumedFrom]).toEqual([2, 2, 1]);
    for (const f of FILES) {
      expect(readFileSync(join(root, 'cut', 'checkpoints', 'step-2', f)).equals(readFileSync(join(root, 'full', 'checkpoints', 'step-2', f))), f).toBe(true);
    }
    // Once more: the run is finished, and nothing trains.
    const again = await trainOrResume(config('cut'), { log: () => undefined });
    expect(again.finished).toBe(true);
  });

  it('refuses a folder of another configuration, naming the settings that differ, and leaves it as it was', async () => {
    await train({ ...config('other'), steps: 1 }, { log: () => undefined });
    const before = readdirSync(join(root, 'other')).sort();
    const saved = readFileSync(join(root, 'other', 'config.json'), 'utf8');
    await expect(trainOrResume({ ...config('other'), steps: 1, lr: 5e-4, groupSize: 3 }, { log: () => undefined })).rejects.toThrow(
      `${join(root, 'other')} holds a run of another configuration (groupSize: 2 there, 3 here; lr: 0.001 there, 0.0005 here): remove it to train this one, or give another folder`,
    );
    expect(readdirSync(join(root, 'other')).sort()).toEqual(before);
    expect(readFileSync(join(root, 'other', 'config.json'), 'utf8')).toBe(saved);
  });

  it('names a config.json that is not JSON', async () => {
    const dir = join(root, 'damaged');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), '{"steps": 2,');
    await expect(trainOrResume(config('damaged'), { log: () => undefined })).rejects.toThrow(new RegExp(`^${join(dir, 'config.json')} cannot be read as JSON \\(.+\\): remove ${dir} to train this run from the start$`));
  });

  it('configDifferences compares as config.json records (equal configurations differ nowhere)', () => {
    const c = config('x');
    expect(configDifferences(c, { ...c })).toEqual([]);
    expect(configDifferences(c, { ...c, seed: 3 })).toEqual(['seed']);
  });
});
