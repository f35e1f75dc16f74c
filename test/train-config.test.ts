// The training configuration: precedence (defaults ← embedded defaults for the tiny model ← config file ←
// flags), config files in JSON and YAML, validation messages that name the flag or file, and answer seeds.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTrainConfig } from '../src/cli/train.js';
import { configProblems, TINY_DEFAULTS, TRAIN_DEFAULTS, validateConfig, workerCount } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { deviceOf } from '../src/selfplay/run-setup.js';
import { capHops, floorHops, readSeedsFile, seedsFromPassages } from '../src/agent/seeds.js';
import { worldSeeds } from '../src/world/setup.js';
import { WORLD_CARD_BUDGET } from '../src/world/demo-model.js';
import { DEMO_WORLD, World } from '../src/world/world.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-config-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('resolveTrainConfig', () => {
  it('no arguments: the embedded default, the demo world from its warm-start model (lexical embedder, held-out eval on the evaluation worlds, the card budget of its warm start)', () => {
    const { config } = resolveTrainConfig({ json: false }, new Set());
    expect(config).toEqual({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS });
    expect(configProblems(config)).toEqual([]);
    expect(config).toMatchObject({ model: 'demo', corpus: 'world', worldSeed: 0, embedder: 'lexical', evalData: 'eval-worlds' });
    // The bank as the paper runs it: the top 3 cards fit the render budget (the warm start's transcripts had one).
    expect(config.renderTokenBudget).toBeGreaterThan(WORLD_CARD_BUDGET);
    // SSP's layout: one proposal per seed, G = 5, a fixed solver batch topped up from the reuse pool; at small scale
    // (docs/world.md) 32 seeds a step, one- and two-hop 1 : 3, over every training world, one solver epoch.
    expect(config).toMatchObject({ proposalsPerSeed: 1, groupSize: 5, solverBatch: 8, extractionFailure: 'reuse', reuseThreshold: 1, reusePoolClearEvery: 10 });
    expect(config).toMatchObject({ seedsPerStep: 32, hopMix: '1,3,0', stepCorpora: 'all', solverEpochs: 1 });
    expect(config.trainingWorlds).toBeGreaterThan(1);
    // SESA's layout (docs/world.md): no format penalty, and each question's cards in half of its solver group.
    expect(config).toMatchObject({ invalidReward: 0, cardsInGroup: 'half' });
    expect([config.maxHops, config.minHops]).toEqual([undefined, undefined]);
    // --model demo is the same run.
    expect(resolveTrainConfig({ json: false, model: 'demo' }, new Set(['model'])).config).toEqual(config);
  });

  it('--model tiny: the tiny random model, the encyclopedia, the lexical embedder and 3 steps', () => {
    const { config } = resolveTrainConfig({ json: false, model: 'tiny' }, new Set(['model']));
    expect(config).toEqual({ ...TRAIN_DEFAULTS, ...TINY_DEFAULTS });
    expect(configProblems(config)).toEqual([]);
    expect(config).toMatchObject({ model: 'tiny', corpus: 'encyclopedia', embedder: 'lexical', steps: 3 });
  });

  it('a real model takes the defaults for a real model; a config file overrides them and flags override the file', () => {
    const file = join(root, 'cfg.yaml');
    writeFileSync(file, 'model: qwen3-4b\nsteps: 50\ngroup-size: 8\nkl-coef: 0.02\nskills: false\n');
    const args = { json: false, config: file, steps: 7, klCoef: 0.5, groupSize: 99 };
    const { config, fromFlags } = resolveTrainConfig(args, new Set(['config', 'steps']));
    expect(fromFlags).toEqual({ steps: 7 });
    expect(config).toMatchObject({ model: 'qwen3-4b', steps: 7, groupSize: 8, klCoef: 0.02, skills: false, seedsPerStep: 256, proposalsPerSeed: 1, lr: 1e-5, lambda: 0.5, embedder: 'e5' });
  });

  it('--skills on|off and --no-priming style switches', () => {
    const { config } = resolveTrainConfig({ json: false, model: 'qwen3-4b', skills: 'off', priming: false, frontier: false }, new Set(['model', 'skills', 'priming', 'frontier']));
    expect(config).toMatchObject({ skills: false, priming: false, frontier: false, distill: true });
  });

  it('refuses unknown settings and wrong types in a config file, naming the file', () => {
    const json = join(root, 'bad.json');
    writeFileSync(json, JSON.stringify({ steps: 'ten' }));
    expect(() => resolveTrainConfig({ json: false, config: json }, new Set(['config']))).toThrow(`${json}: setting 'steps' must be a number, got "ten"`);
    writeFileSync(json, JSON.stringify({ stepz: 10 }));
    expect(() => resolveTrainConfig({ json: false, config: json }, new Set(['config']))).toThrow(/bad\.json: unknown setting 'stepz'/);
    writeFileSync(json, '{ "steps": ');
    expect(() => resolveTrainConfig({ json: false, config: json }, new Set(['config']))).toThrow(/bad\.json: not valid JSON/);
  });

  it('validation names every bad flag', () => {
    const problems = configProblems({ ...TRAIN_DEFAULTS, gpus: 0, lr: 0, clipLow: 1.5, embedder: 'bert' as 'e5' });
    expect(problems).toEqual([
      '--gpus must be a positive integer, got 0',
      '--clip-low must be < 1, got 1.5',
      '--lr must be a positive number, got 0',
      '--embedder must be e5 or lexical, got bert',
    ]);
    // Rules between settings are checked once every value is right on its own.
    expect(configProblems({ ...TRAIN_DEFAULTS, groupSize: 1 })).toEqual(['--group-size must be ≥ 2 for the frontier reward (p̂ needs a group)']);
    expect(() => validateConfig({ ...TRAIN_DEFAULTS, steps: 0 })).toThrow(/--steps must be a positive integer, got 0/);
  });
});

describe('--gpus and --workers', () => {
  it('--gpus N runs N workers (the same as --workers N); settings that disagree, or llama.cpp rollouts with workers, are refused by name', () => {
    expect(configProblems({ ...TRAIN_DEFAULTS, gpus: 8 })).toEqual([]);
    expect(workerCount({ ...TRAIN_DEFAULTS, gpus: 8 })).toBe(8);
    expect(workerCount({ ...TRAIN_DEFAULTS, workers: 3 })).toBe(3);
    expect(workerCount({ ...TRAIN_DEFAULTS, gpus: 2, workers: 2 })).toBe(2);
    expect(workerCount(TRAIN_DEFAULTS)).toBe(1);
    expect(configProblems({ ...TRAIN_DEFAULTS, gpus: 2, workers: 3 })).toEqual(['--gpus 2 runs 2 worker processes (one device each) but --workers is 3: give one of them, or the same number to both']);
    expect(configProblems({ ...TRAIN_DEFAULTS, gpus: 2, rolloutEngine: 'llama.cpp' })).toEqual([
      "--rollout-engine llama.cpp generates in the trainer's process, but --gpus 2 shards the step's rollouts over worker processes (native engine): use one or the other",
    ]);
    expect(configProblems({ ...TRAIN_DEFAULTS, workers: 2, rolloutEngine: 'llama.cpp' })[0]).toMatch(/but --workers 2 shards the step/);
  });

  it("worker r gets GPU r, or the r-th of this process's CUDA_VISIBLE_DEVICES; too few devices is an error", () => {
    expect([0, 1].map((r) => deviceOf(r, 2, undefined))).toEqual(['0', '1']);
    expect([0, 1].map((r) => deviceOf(r, 2, '3, 5,7'))).toEqual(['3', '5']);
    expect(() => deviceOf(0, 3, '4,6')).toThrow('3 workers need 3 GPUs, one each, but CUDA_VISIBLE_DEVICES=4,6 names 2: lower --gpus/--workers or name more devices');
  });
});

describe('answer seeds', () => {
  it('reads JSONL seeds and names the file and line of a bad row', () => {
    const file = join(root, 'seeds.jsonl');
    writeFileSync(file, '{"answer":"Grimane","hops":2}\n\n{"answer":"Joris River","aliases":["Joris"]}\n');
    expect(readSeedsFile(file)).toEqual([
      { answer: 'Grimane', hops: 2 },
      { answer: 'Joris River', hops: 1, aliases: ['Joris'] },
    ]);
    writeFileSync(file, '{"answer":"A","hops":1}\n{"answer":"","hops":1}\n');
    expect(() => readSeedsFile(file)).toThrow(`${file}:2: field 'answer' must be a non-empty string`);
    writeFileSync(file, '{"answer":"A","hops":0}\n');
    expect(() => readSeedsFile(file)).toThrow(`${file}:1: field 'hops' must be a positive integer`);
  });

  it('derives seeds from a corpus: distinct short titles, hops 1, 2, 3 in turn', () => {
    const passages = [
      { id: '1', title: 'Grimane', text: 'a' },
      { id: '2', title: 'grimane', text: 'b' },
      { id: '3', title: '', text: 'c' },
      { id: '4', title: 'Joris River', text: 'd' },
      { id: '5', title: 'A title that is far too long to be an answer seed', text: 'e' },
      { id: '6', title: 'Pryoth Symphony', text: 'f' },
      { id: '7', title: 'Selor', text: 'g' },
    ];
    expect(seedsFromPassages(passages)).toEqual([
      { answer: 'Grimane', hops: 1 },
      { answer: 'Joris River', hops: 2 },
      { answer: 'Pryoth Symphony', hops: 3 },
      { answer: 'Selor', hops: 1 },
    ]);
    expect(() => seedsFromPassages([{ id: '1', title: '', text: 'x' }])).toThrow(/--seeds FILE/);
  });

  it('--max-hops N asks each seed for at most N hops, and in the world every capped answer has a one-hop question', () => {
    const seeds = [
      { answer: 'A', hops: 1 },
      { answer: 'B', hops: 2, aliases: ['b'] },
      { answer: 'C', hops: 3 },
    ];
    expect(capHops(seeds, undefined)).toEqual(seeds);
    expect(capHops(seeds, 2)).toEqual([{ answer: 'A', hops: 1 }, { answer: 'B', hops: 2, aliases: ['b'] }, { answer: 'C', hops: 2 }]);
    expect(capHops(seeds, 1).map((s) => s.hops)).toEqual([1, 1, 1]);
    const world = new World(DEMO_WORLD);
    expect(worldSeeds(world).map((s) => s.answer)).toEqual(world.synth.seeds.map((s) => s.answer));
    const multiHop = world.synth.seeds.filter((s) => s.hops > 1);
    expect(multiHop.length).toBeGreaterThan(50);
    for (const s of multiHop) expect(world.factsInto(s.entityId).length, s.answer).toBeGreaterThan(0);
  });

  it('--min-hops N asks each seed for at least N hops, and in the world most answers have a two-hop chain', () => {
    const seeds = [
      { answer: 'A', hops: 1, aliases: ['a'] },
      { answer: 'B', hops: 2 },
      { answer: 'C', hops: 3 },
    ];
    expect(floorHops(seeds, undefined)).toEqual(seeds);
    expect(floorHops(seeds, 2)).toEqual([{ answer: 'A', hops: 2, aliases: ['a'] }, { answer: 'B', hops: 2 }, { answer: 'C', hops: 3 }]);
    expect(floorHops(capHops(seeds, 2), 2).map((s) => s.hops)).toEqual([2, 2, 2]);
    expect(() => validateConfig({ ...TRAIN_DEFAULTS, minHops: 3, maxHops: 2 })).toThrow('--min-hops (3) must be ≤ --max-hops (2)');
    expect(() => validateConfig({ ...TRAIN_DEFAULTS, minHops: 1.5 })).toThrow(/min-hops.*whole number/);
    // The world run asks each seed for its own hop count (--hop-mix 1,1,1), so --max-hops 1 alone is fine there.
    expect(validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, maxHops: 1 })).toMatchObject({ maxHops: 1 });
    expect(validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, maxHops: 1, minHops: 1 })).toMatchObject({ maxHops: 1, minHops: 1 });
    // A two-hop chain into an answer: a fact into it whose subject is itself the object of a fact.
    const world = new World(DEMO_WORLD);
    const twoHop = world.synth.seeds.filter((s) => world.factsInto(s.entityId).some((f) => world.factsInto(f.subject).length > 0));
    expect(twoHop.length).toBe(113);
    expect(world.synth.seeds.length).toBe(127);
  });
});
