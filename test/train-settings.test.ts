// The declarative settings table: every setting round-trips from a YAML file through config.json, --help
// shows each with its default and help, docs/options.md holds the generated option table (README.md links to it), recipes fix their
// values and refuse contradictions, nonsense combinations are refused with the reason, and a repeated flag
// is an error naming it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { repeatedScalarFlags } from '../src/cli/common.js';
import { resolveTrainConfig } from '../src/cli/train.js';
import {
  configProblems,
  defaultsText,
  flagName,
  parseSavedConfig,
  RECIPE_PRESETS,
  resumeChanges,
  SETTING_KEYS,
  SETTINGS,
  settingsMarkdown,
  showValue,
  TRAIN_DEFAULTS,
  type TrainConfig,
  validateConfig,
} from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { RunFolder } from '../src/selfplay/run-folder.js';
import { optimizerConfigOf, rolloutSettingsOf } from '../src/selfplay/step-settings.js';
import { OPTIONS_END, OPTIONS_PAGE, OPTIONS_START, optionsSection } from '../scripts/options-table.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'bin', 'sesa-train.mjs');
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-settings-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A valid value other than the default for every setting (kebab-case keys, as a person writes YAML). */
const EVERY_SETTING: Record<string, unknown> = {
  recipe: 'sesa',
  model: 'qwen3-0.6b',
  backend: 'cpu',
  gpus: 2,
  threads: 2,
  workers: 2,
  // llama.cpp rollouts stay in the trainer's process and are refused with workers (test/train-config.test.ts).
  'rollout-engine': 'native',
  steps: 12,
  'seeds-per-step': 3,
  'proposals-per-seed': 2,
  'group-size': 4,
  out: 'runs/everything',
  'save-every': 4,
  tensorboard: false,
  seed: 9,
  'max-turns': 5,
  'max-hops': 2,
  'min-hops': 2,
  'max-new-tokens': 128,
  'max-response-tokens': 1024,
  temperature: 0.7,
  'solver-temperature': 0.5,
  'enable-thinking': true,
  corpus: 'encyclopedia',
  'retriever-url': 'http://127.0.0.1:8000/retrieve',
  seeds: 'seeds.jsonl',
  'passages-per-query': 5,
  'rag-distractor-blocks': 2,
  'rag-max-tokens': 48,
  frontier: true,
  lambda: 0.25,
  'invalid-reward': -0.5,
  'question-min-chars': 12,
  'question-max-chars': 500,
  'question-min-words': 6,
  'min-distinct-queries': 3,
  'reject-repeated-queries': false,
  advantage: 'drgrpo',
  'advantage-eps': 1e-5,
  'clip-low': 0.1,
  'clip-high': 0.2,
  'dual-clip': 0,
  'kl-coef': 0.02,
  'loss-aggregation': 'seq-sum-norm',
  lr: 2e-5,
  'solver-lr': 4e-5,
  'proposer-lr': 3e-5,
  'lr-schedule': 'cosine',
  'min-lr-ratio': 0.1,
  'warmup-steps': 2,
  'weight-decay': 0.05,
  'adam-beta1': 0.8,
  'adam-beta2': 0.99,
  'adam-eps': 1e-6,
  'max-grad-norm': 0.5,
  'micro-batch-size': 2,
  'lora-r': 8,
  'lora-alpha': 16,
  'lora-dropout': 0.05,
  'lora-targets': ['q_proj', 'v_proj'],
  skills: 'on',
  priming: false,
  'seed-cards': false,
  'queue-failures': 'all',
  'priming-cards': 'cards/priming.jsonl',
  distill: false,
  embedder: 'lexical',
  'e5-model': 'intfloat/e5-small-v2',
  'skills-top-k': 2,
  'skip-uniform-groups': true,
  'solver-epochs': 3,
  'proposer-epochs': 2,
  'queue-capacity': 100,
  'consolidate-every': 5,
  'consolidate-min-pending': 10,
  'consolidate-max-selected': 12,
  'dedup-threshold': 0.9,
  'evict-min-retrieved': 4,
  'max-cards': 400,
  'render-token-budget': 300,
  'cards-in-group': 'half',
  'skills-min-score': 0.1,
  'failure-evidence-chars': 1000,
  'distill-evidence-chars': 800,
  'distill-concurrency': 2,
  'distill-max-tokens': 500,
  'judge-url': 'http://127.0.0.1:8001/v1',
  'judge-model': 'judge',
  'judge-max-tokens': 16,
  'distiller-url': 'http://127.0.0.1:8002/v1',
  'distiller-model': 'distiller',
  'judge-timeout': 30,
  'judge-retries': 1,
  'distiller-timeout': 45,
  'distiller-retries': 2,
  'retriever-timeout': 20,
  'retriever-retries': 5,
  'retriever-max-response-mb': 16,
  'stop-after-failed-steps': 4,
  'world-seed': 3,
  'eval-every': 5,
  'eval-data': 'encyclopedia',
  'eval-limit': 40,
  'eval-batch-size': 16,
  'eval-cache': false,
  'api-key-env': 'MY_KEY',
  'solver-batch': 6,
  'hop-mix': '1,2,1',
  'training-worlds': 2,
  'extraction-failure': 'dummy',
  'reuse-threshold': 0.5,
  'reuse-pool-clear-every': 5,
  'reuse-by-hops': true,
  'hop-check': true,
  'first-search-check': true,
  'step-corpora': 'all',
  // 0 (the default): resampling draws from the reuse pool, which --extraction-failure dummy above turns off.
  'min-informative-groups': 0,
  'resample-rounds': 3,
  'proposer-baseline': 'step',
  'card-utility': 'counterfactual',
};

describe('the settings table', () => {
  it('a YAML file with every setting round-trips through config.json', () => {
    // The list above names every setting of the table, so a new setting must be added here too.
    expect(Object.keys(EVERY_SETTING).sort()).toEqual(SETTING_KEYS.map(flagName).sort());
    const file = join(root, 'every.yaml');
    writeFileSync(file, toYaml(EVERY_SETTING));
    const { config } = resolveTrainConfig({ json: false, config: file }, new Set(['config']));
    expect(configProblems(config)).toEqual([]);
    for (const [name, v] of Object.entries(EVERY_SETTING)) {
      const key = name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase()) as keyof TrainConfig;
      expect(config[key], name).toEqual(name === 'skills' ? true : v);
      // Every value differs from the default, so the file really set it.
      if (name !== 'recipe' && name !== 'rollout-engine' && name !== 'corpus' && name !== 'frontier' && name !== 'skills' && name !== 'min-informative-groups') expect(config[key], name).not.toEqual(TRAIN_DEFAULTS[key]);
    }
    const run = RunFolder.create(join(root, 'run-every'), config);
    const saved = parseSavedConfig(JSON.parse(readFileSync(run.configPath, 'utf8')), run.configPath);
    expect(saved).toEqual(config);
  });

  it('camelCase keys work in files too; wrong types name the file and the setting', () => {
    const file = join(root, 'camel.json');
    writeFileSync(file, JSON.stringify({ groupSize: 6, loraTargets: 'q_proj,k_proj', skills: 'off', dedupThreshold: null }));
    const { config } = resolveTrainConfig({ json: false, config: file, model: 'qwen3-4b' }, new Set(['config', 'model']));
    expect(config).toMatchObject({ groupSize: 6, loraTargets: ['q_proj', 'k_proj'], skills: false });
    expect(config.dedupThreshold).toBeUndefined();
    writeFileSync(file, JSON.stringify({ 'lora-targets': [1, 2] }));
    expect(() => resolveTrainConfig({ json: false, config: file }, new Set(['config']))).toThrow(`${file}: setting 'lora-targets' must be a list of strings, got [1,2]`);
    writeFileSync(file, JSON.stringify({ skills: 'maybe' }));
    expect(() => resolveTrainConfig({ json: false, config: file }, new Set(['config']))).toThrow(`${file}: setting 'skills' must be on, off, true or false, got "maybe"`);
  });

  it('refuses nonsense combinations with the reason', () => {
    const bad = (over: Partial<TrainConfig>): string[] => configProblems({ ...TRAIN_DEFAULTS, ...over });
    expect(bad({ temperature: 0 })).toEqual(['--temperature 0 samples greedily: the G rollouts of a group would be identical and GRPO would get no signal (use a temperature > 0)']);
    expect(bad({ minLrRatio: 0.1 })).toEqual(['--min-lr-ratio 0.1 applies only to --lr-schedule cosine']);
    expect(bad({ minInformativeGroups: 4, extractionFailure: 'dummy' })).toEqual(['--min-informative-groups draws its extra questions from the reuse pool: it needs --extraction-failure reuse']);
    expect(bad({ minInformativeGroups: 4, groupSize: 1, frontier: false })).toEqual(['--min-informative-groups counts groups with 0 < p̂ < 1: it needs --group-size ≥ 2']);
    expect(bad({ minInformativeGroups: 4 })).toEqual([]);
    expect(bad({ lrSchedule: 'cosine', steps: 5, warmupSteps: 5 })).toEqual(['--lr-schedule cosine needs --steps (5) > --warmup-steps (5)']);
    expect(bad({ judgeModel: 'x' })).toEqual(['--judge-model names a model at --judge-url, which is not set']);
    expect(bad({ retrieverUrl: 'http://h/retrieve', corpus: 'c.jsonl', seeds: 's.jsonl' })).toEqual(['--retriever-url replaces the local index, so --corpus c.jsonl would be unused: give one of them']);
    expect(bad({ retrieverUrl: 'http://h/retrieve' })).toEqual(['--retriever-url needs --seeds FILE (answer seeds: JSONL of {"answer","hops"}); a local --corpus supplies its own']);
    expect(bad({ enableThinking: true })).toEqual([
      '--enable-thinking makes the in-process judge think before it answers: --judge-max-tokens (8) and --rag-max-tokens (64) must be ≥ 256 to leave room for the verdict',
    ]);
    expect(bad({ enableThinking: true, judgeMaxTokens: 512, ragMaxTokens: 512 })).toEqual([]);
    expect(bad({ dualClip: 0.5 })).toEqual(['--dual-clip must be 0 (off) or > 1, got 0.5']);
    expect(bad({ questionMinChars: 50, questionMaxChars: 40 })).toEqual(['--question-min-chars (50) must be ≤ --question-max-chars (40)']);
    expect(bad({ loraTargets: ['q_proj', 'x_proj'] as TrainConfig['loraTargets'] })).toEqual(["--lora-targets has unknown 'x_proj' (known: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)"]);
    expect(bad({ cardUtility: 'counterfactual' })).toEqual(['--card-utility counterfactual compares the rollouts of a group with and without its cards: it needs --skills on and --cards-in-group half']);
    expect(bad({ cardUtility: 'counterfactual', cardsInGroup: 'half' })).toEqual([]);
    expect(bad({ hopMix: '1,x,1' })).toEqual(["--hop-mix must be shares of 1-, 2-, 3-, … hop seeds as non-negative numbers 'a,b,c', got 1,x,1"]);
    expect(bad({ hopMix: '0,0' })).toEqual(['--hop-mix must give some hop count a share above 0, got 0,0']);
    expect(bad({ hopMix: '1,1,1' })).toEqual([]);
    expect(bad({ evalEvery: 2, evalData: 'training-worlds' })).toEqual(['--eval-data training-worlds needs --corpus world (a world\'s held-out questions are searched in that world\'s corpus)']);
  });

  it("the encyclopedia's old name, demo, is refused as --corpus or --eval-data naming the new one; a saved config.json with it still reads", () => {
    const bad = (over: Partial<TrainConfig>): string[] => configProblems({ ...TRAIN_DEFAULTS, ...over });
    expect(bad({ corpus: 'demo' })).toEqual([
      "--corpus demo was renamed encyclopedia (the embedded synthetic encyclopedia; 'demo' names only the demo world's model, --model demo): use --corpus encyclopedia",
    ]);
    expect(bad({ evalData: 'demo' })).toEqual([
      "--eval-data demo was renamed encyclopedia (the embedded synthetic encyclopedia; 'demo' names only the demo world's model, --model demo): use --eval-data encyclopedia",
    ]);
    const file = join(root, 'old-demo.yaml');
    writeFileSync(file, 'corpus: demo\n');
    expect(configProblems(resolveTrainConfig({ json: false, config: file, model: 'qwen3-4b' }, new Set(['config', 'model'])).config)).toEqual([expect.stringMatching(/^--corpus demo was renamed encyclopedia .*: use --corpus encyclopedia$/)]);
    // A run written before the rename: its config.json says demo, and it resumes in the encyclopedia.
    const old = { ...TRAIN_DEFAULTS, corpus: 'demo', evalData: 'demo', evalEvery: 2 };
    const read = validateConfig(parseSavedConfig(JSON.parse(JSON.stringify(old)), 'run/config.json'));
    expect([read.corpus, read.evalData]).toEqual(['encyclopedia', 'encyclopedia']);
    expect(parseSavedConfig({ corpus: 'c.jsonl', evalData: 'nq' }, 'run/config.json')).toMatchObject({ corpus: 'c.jsonl', evalData: 'nq' });
  });

  it('--solver-lr, --proposer-lr and --solver-temperature reach only their role; unset, both roles take --lr and --temperature', () => {
    const shared = validateConfig({ ...TRAIN_DEFAULTS, lr: 3e-4, temperature: 0.7 });
    expect([optimizerConfigOf(shared, 'solver').lr, optimizerConfigOf(shared, 'proposer').lr]).toEqual([3e-4, 3e-4]);
    expect([rolloutSettingsOf(shared, 'solver').temperature, rolloutSettingsOf(shared, 'proposer').temperature]).toEqual([0.7, 0.7]);
    const own = validateConfig({ ...shared, solverLr: 1e-3, solverTemperature: 0.3 });
    expect([optimizerConfigOf(own, 'solver').lr, optimizerConfigOf(own, 'proposer').lr]).toEqual([1e-3, 3e-4]);
    expect([rolloutSettingsOf(own, 'solver').temperature, rolloutSettingsOf(own, 'proposer').temperature]).toEqual([0.3, 0.7]);
    expect(optimizerConfigOf(validateConfig({ ...shared, proposerLr: 5e-5 }), 'proposer').lr).toBe(5e-5);
    const { config } = resolveTrainConfig({ json: false, solverLr: 1e-3, solverTemperature: 0.3 }, new Set(['solverLr', 'solverTemperature']));
    expect([config.solverLr, config.solverTemperature, config.proposerLr]).toEqual([1e-3, 0.3, undefined]);
    expect(() => validateConfig({ ...shared, solverLr: 0 })).toThrow('--solver-lr must be > 0, got 0');
    expect(() => validateConfig({ ...shared, solverTemperature: 0 })).toThrow('--solver-temperature must be > 0');
  });

  it('--recipe ssp fixes SSP values; a contradicting flag or file value is refused with the reason', () => {
    const { config } = resolveTrainConfig({ json: false, recipe: 'ssp', model: 'qwen3-4b' }, new Set(['recipe', 'model']));
    expect(config).toMatchObject({ recipe: 'ssp', skills: false, frontier: false, proposalsPerSeed: 1, invalidReward: 0, rejectRepeatedQueries: true, groupSize: 5 });
    expect(configProblems(config)).toEqual([]);
    // The tiny demo's proposals-per-seed (2) gives way to the recipe too.
    expect(resolveTrainConfig({ json: false, recipe: 'ssp' }, new Set(['recipe'])).config.proposalsPerSeed).toBe(1);
    const on = resolveTrainConfig({ json: false, recipe: 'ssp', skills: 'on', proposalsPerSeed: 4 }, new Set(['recipe', 'skills', 'proposalsPerSeed'])).config;
    expect(configProblems(on)).toEqual([
      '--recipe ssp runs with --skills off (SSP has no skill bank); got on',
      '--recipe ssp runs with --proposals-per-seed 1 (SSP proposes once per seed); got 4',
    ]);
    expect(RECIPE_PRESETS.sesa).toEqual({});
  });

  it('resume rules: lr changes, the adapter shape and the seed are refused, steps cannot go below the checkpoint', () => {
    const saved = validateConfig({ ...TRAIN_DEFAULTS, steps: 6 });
    expect(resumeChanges(saved, { lr: 5e-4, steps: 6 }, 6)).toEqual({ changes: [{ key: 'lr', from: 1e-5, to: 5e-4 }], refused: [] });
    const r = resumeChanges(saved, { loraR: 8, seed: 2, steps: 3 }, 6);
    expect(r.changes).toEqual([]);
    expect(r.refused).toEqual([
      "--lora-r cannot change on --resume (the run has 16): the run's adapters already have this shape",
      '--seed cannot change on --resume (the run has 0): a resumed run replays the random choices of the original seed; a new seed is a new run',
      '--steps 3 is below the step the run resumes from (6): a run cannot be shortened to before its last checkpoint',
    ]);
    expect(resumeChanges(saved, { steps: 4 }, 2).changes).toEqual([{ key: 'steps', from: 6, to: 4 }]);
  });
});

describe('the settings on the command line and in docs/options.md', () => {
  it('train --help shows every setting with its help and the defaults that apply, each labelled where they differ', () => {
    const r = spawnSync(process.execPath, [CLI, 'train', '--help'], { encoding: 'utf8', env: { ...process.env, COLUMNS: '400' } });
    expect(r.status, r.stderr).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    for (const key of SETTING_KEYS) {
      const s = SETTINGS[key] as { help: string; default: unknown };
      expect(help, key).toContain(`--${flagName(key)}`);
      expect(help, key).toContain(`${s.help.replace(/\s+/g, ' ')} [${defaultsText(key, WORLD_DEFAULTS)}]`);
    }
    // A plain `npx sesa-train` runs 8 steps with the lexical embedder, not the general 200 and e5: both shown, labelled.
    expect(help).toContain('training steps (on --resume: a larger value extends the run) [no arguments (--model demo): 8; --model M: 200; --model tiny: 3]');
    expect(help).toContain('[no arguments (--model demo): lexical; --model M: e5; --model tiny: lexical]');
    expect(help).toContain(`[default ${showValue(TRAIN_DEFAULTS.seed)}]`);
    // --recipe lists the recipe its help names (handed to its own command before train parses).
    expect(help).toMatch(/--recipe .*\[choices: "sesa", "ssp", "skill-sp"\]/);
  });

  it('docs/options.md holds the option table generated from the table; README.md links to it and holds no copy', () => {
    const page = readFileSync(join(ROOT, OPTIONS_PAGE), 'utf8');
    const start = page.indexOf(OPTIONS_START);
    const end = page.indexOf(OPTIONS_END);
    expect(start, `${OPTIONS_PAGE} option-table start marker`).toBeGreaterThan(0);
    expect(page.slice(start, end + OPTIONS_END.length)).toBe(optionsSection());
    expect(optionsSection()).toContain(settingsMarkdown(WORLD_DEFAULTS));
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).not.toContain(OPTIONS_START);
    expect(readme).not.toContain('| flag | default');
    expect(readme).toContain('](docs/options.md)');
  });

  it('a repeated single-value flag is an error naming it; list options may repeat', () => {
    expect(repeatedScalarFlags(['train', '--group-size', '7', '--group-size', '1'], [])).toEqual(['--group-size was given 2 times']);
    expect(repeatedScalarFlags(['--out=a', '--out', 'b', '--model', 'm', '--no-frontier', '--frontier'], [])).toEqual(['--out was given 2 times', '--frontier was given 2 times']);
    expect(repeatedScalarFlags(['--stop', 'a', '--stop', 'b', '--', '--x', '--x'], ['stop'])).toEqual([]);
    const r = spawnSync(process.execPath, [CLI, 'train', '--group-size', '7', '--group-size', '1', '--out', join(root, 'never')], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('error: --group-size was given 2 times: it takes one value, give it once');
  });
});
