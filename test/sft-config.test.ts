// SFT's settings table (src/sft/config.ts): the names it shares with train's, --config files (JSON and YAML,
// kebab- or camelCase), flags over the file, the old flag and key names refused naming the new ones, and the
// sft.json of a run written before the table still read.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sftConfigFromArgs } from '../src/cli/sft.js';
import { SETTINGS } from '../src/settings/train.js';
import type { AnySetting } from '../src/settings/setting.js';
import { readSavedSftConfig, SFT_DEFAULTS, SFT_SETTINGS, validateSftConfig } from '../src/sft/config.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-sft-config-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
};
const base = { model: 'm', data: 'd.jsonl', out: 'o', full: true, json: false };

describe('SFT settings', () => {
  it("uses train's names, kinds and choices for the settings both commands have", () => {
    const shared = ['model', 'out', 'backend', 'seed', 'lr', 'lrSchedule', 'minLrRatio', 'warmupSteps', 'weightDecay', 'maxGradNorm', 'microBatchSize', 'loraR', 'loraAlpha', 'loraTargets', 'enableThinking', 'saveEvery', 'evalEvery', 'evalData'];
    const sft = SFT_SETTINGS as unknown as Record<string, AnySetting>;
    const train = SETTINGS as unknown as Record<string, AnySetting>;
    for (const k of shared) {
      expect(sft[k], k).toBeDefined();
      expect(train[k], k).toBeDefined();
      expect(sft[k]?.kind, k).toBe(train[k]?.kind);
      expect(sft[k]?.choices, k).toEqual(train[k]?.choices);
    }
    expect(Object.keys(sft)).not.toContain('schedule');
    expect(Object.keys(sft)).not.toContain('thinking');
  });

  it('resolves defaults ← --config file ← flags, from JSON or YAML, kebab- or camelCase keys', () => {
    const json = file('a.json', JSON.stringify({ 'lr-schedule': 'constant', warmupSteps: 5, 'enable-thinking': true, 'lora-targets': ['q_proj', 'v_proj'], mode: 'lora' }));
    const c = sftConfigFromArgs({ model: 'm', data: 'd.jsonl', out: 'o', config: json, lr: 0.002, json: false });
    expect(c).toMatchObject({ lrSchedule: 'constant', warmupSteps: 5, enableThinking: true, loraTargets: ['q_proj', 'v_proj'], mode: 'lora', lr: 0.002, batchSize: SFT_DEFAULTS.batchSize });
    const yaml = file('b.yaml', 'model: m2\ndata: d2.jsonl\nout: o2\nmode: full\nlr-schedule: constant\nmicro-batch-size: 2\nbatch-size: 4\nlora-targets: q_proj,k_proj\n');
    const y = sftConfigFromArgs({ config: yaml, json: false, microBatchSize: 1 });
    expect(y).toMatchObject({ model: 'm2', data: 'd2.jsonl', out: 'o2', mode: 'full', lrSchedule: 'constant', microBatchSize: 1, batchSize: 4, loraTargets: ['q_proj', 'k_proj'] });
    // --full / --lora are --mode full / --mode lora, over the file's mode.
    expect(sftConfigFromArgs({ config: yaml, json: false, lora: true }).mode).toBe('lora');
  });

  it('names the file, the key and the flag in every problem', () => {
    const bad = file('bad.json', JSON.stringify({ model: 'm', data: 'd', out: 'o', mode: 'full', lr: 'fast', 'no-such': 1 }));
    expect(() => sftConfigFromArgs({ config: bad, json: false })).toThrow(/bad\.json: setting 'lr' must be a number, got "fast"[\s\S]*bad\.json: unknown setting 'no-such'/);
    expect(() => sftConfigFromArgs({ ...base, lr: -1 })).toThrow(/--lr must be a positive number, got -1/);
    expect(() => sftConfigFromArgs({ ...base, microBatchSize: 16, batchSize: 8 })).toThrow(/--micro-batch-size \(16\) must not exceed --batch-size \(8\)/);
    expect(() => sftConfigFromArgs({ ...base, seed: 2 ** 32 })).toThrow(/--seed must be below 2\^32/);
    expect(() => sftConfigFromArgs({ model: 'm', out: 'o', full: true, json: false })).toThrow(/--data is required/);
    expect(() => sftConfigFromArgs({ model: 'm', data: 'd', out: 'o', json: false })).toThrow(/--mode is required/);
    expect(() => sftConfigFromArgs({ ...base, lora: true })).toThrow(/choose exactly one of --full/);
    expect(() => sftConfigFromArgs({ ...base, mode: 'lora' })).toThrow(/--full contradicts --mode lora/);
    expect(() => sftConfigFromArgs({ ...base, config: join(root, 'absent.yaml') })).toThrow(/--config .*absent\.yaml: file not found/);
  });

  it('refuses the old names (--schedule, --thinking, and as file keys) naming the new ones', () => {
    expect(() => sftConfigFromArgs({ ...base, schedule: 'constant' })).toThrow(/--schedule was renamed --lr-schedule/);
    expect(() => sftConfigFromArgs({ ...base, thinking: false })).toThrow(/--thinking was renamed --enable-thinking/);
    const old = file('old.yaml', 'schedule: constant\nthinking: true\n');
    expect(() => sftConfigFromArgs({ ...base, config: old })).toThrow(/old\.yaml: setting 'schedule' was renamed 'lr-schedule'[\s\S]*old\.yaml: setting 'thinking' was renamed 'enable-thinking'/);
  });

  it('reads the sft.json of a run written before the table (schedule, no lossOn, recomputeLayers or microBatchTokens)', () => {
    const saved = {
      model: 'm', data: 'd', out: 'o', mode: 'full', evalFraction: 0, loraR: 16, loraAlpha: 32, loraTargets: ['q_proj'], epochs: 2, maxSteps: 0, batchSize: 8, microBatchSize: 4,
      lr: 1e-4, warmupSteps: 0, schedule: 'constant', minLrRatio: 0.1, weightDecay: 0.01, maxGradNorm: 1, seed: 3, maxTokens: 4096, saveEvery: 100, evalEvery: 0, keepCheckpoints: 2,
      saveDtype: 'f32', enableThinking: false, logitsChunkSize: 128, backend: 'wasm',
    };
    const c = readSavedSftConfig(saved, 'run/sft.json');
    expect(c).toMatchObject({ lrSchedule: 'constant', lossOn: 'assistant', recomputeLayers: false, microBatchTokens: 0, epochs: 2, seed: 3 });
    expect(c).not.toHaveProperty('schedule');
    expect(() => readSavedSftConfig({ ...saved, lr: 0 }, 'run/sft.json')).toThrow(/--lr must be a positive number/);
    expect(() => readSavedSftConfig({ ...saved, bogus: 1 }, 'run/sft.json')).toThrow(/run\/sft\.json: unknown setting 'bogus'/);
  });

  it('checks a program-built configuration the same way', () => {
    const c = validateSftConfig({ ...SFT_DEFAULTS, model: 'm', data: 'd', out: 'o', mode: 'lora' });
    expect(c.lrSchedule).toBe('cosine');
    expect(() => validateSftConfig({ ...SFT_DEFAULTS, model: 'm', data: 'd', out: 'o', mode: 'lora', loraTargets: [] })).toThrow(/--lora-targets must list at least one/);
  });
});
