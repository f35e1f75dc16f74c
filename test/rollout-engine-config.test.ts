// The --rollout-engine and --workers settings: their values, the defaults, and run folders written before
// they existed.
import { describe, expect, it } from 'vitest';
import { configProblems, parseConfigObject, parseSavedConfig, TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';

describe('--rollout-engine', () => {
  it('defaults to native and accepts llama.cpp', () => {
    expect(TRAIN_DEFAULTS.rolloutEngine).toBe('native');
    expect(configProblems({ ...TRAIN_DEFAULTS, rolloutEngine: 'llama.cpp' })).toEqual([]);
  });

  it('rejects other engines with the flag named', () => {
    expect(configProblems({ ...TRAIN_DEFAULTS, rolloutEngine: 'vllm' as TrainConfig['rolloutEngine'] })).toEqual(['--rollout-engine must be native or llama.cpp, got vllm']);
  });

  it('a config.json from before the setting (no key) is still valid: it ran natively', () => {
    const { rolloutEngine: _, ...old } = TRAIN_DEFAULTS;
    const read = parseSavedConfig(old, 'run/config.json');
    expect(read.rolloutEngine).toBe('native');
    expect(configProblems(read)).toEqual([]);
  });

  it('config files take rollout-engine / rolloutEngine', () => {
    expect(parseConfigObject({ 'rollout-engine': 'llama.cpp' }, 'c.yaml')).toEqual({ rolloutEngine: 'llama.cpp' });
  });
});

describe('--workers', () => {
  it('defaults to 1 and takes positive integers only', () => {
    expect(TRAIN_DEFAULTS.workers).toBe(1);
    expect(configProblems({ ...TRAIN_DEFAULTS, workers: 4 })).toEqual([]);
    expect(configProblems({ ...TRAIN_DEFAULTS, workers: 0 })).toEqual(['--workers must be a positive integer, got 0']);
    expect(configProblems({ ...TRAIN_DEFAULTS, workers: 1.5 })).toEqual(['--workers must be a positive integer, got 1.5']);
    const { workers: _, ...old } = TRAIN_DEFAULTS;
    const read = parseSavedConfig(old, 'run/config.json');
    expect(read.workers).toBe(1);
    expect(configProblems(read)).toEqual([]);
  });
});
