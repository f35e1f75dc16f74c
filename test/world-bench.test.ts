// The world bench's pinned step (bench/world-scenario.ts): the configuration bench/world-step-child.ts gives a
// tree is the pinned scenario over that tree's TRAIN_DEFAULTS, a tree without a setting added since 9217bcb runs
// without it, and one without any other pinned setting is refused. The child runs with --print-config only:
// no world step is run or timed here.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { agreesWith, benchModelDir, sameBits, type StepRun, stepChildArgs } from '../bench/world.bench.js';
import { LATER_SETTINGS, PINNED_SETTINGS, scenarioConfig, UNPINNED_SETTINGS, type WorldScenario, withoutTimings, worldScenario } from '../bench/world-scenario.js';
import { SETTINGS, TRAIN_DEFAULTS, validateConfig, type TrainConfig } from '../src/settings/train.js';

const ROOT = resolve(import.meta.dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'sesa-world-bench-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const MODEL = join(tmp, 'model');
const PLACE = { out: join(tmp, 'out'), backend: 'wasm', threads: 2 };

/** The pinned scenario over `defaults`, as the child should build it (null settings left out). */
function expected(defaults: Record<string, unknown>, known: (k: string) => boolean, scenario: WorldScenario): Record<string, unknown> {
  const out: Record<string, unknown> = { ...defaults };
  for (const [k, v] of Object.entries(scenario.settings)) {
    if (!known(k)) continue;
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return { ...out, model: scenario.model, ...PLACE };
}

/** Runs the child with --print-config on the tree at `root`. */
function printConfig(root: string, scenario: WorldScenario): { status: number | null; stderr: string; config?: Record<string, unknown>; leftOut?: string[] } {
  const r = spawnSync(process.execPath, [...stepChildArgs(root, PLACE.backend, PLACE.threads, PLACE.out, scenario), '--print-config'], { cwd: ROOT, encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('WORLD-STEP-CONFIG '));
  const parsed = line ? (JSON.parse(line.slice('WORLD-STEP-CONFIG '.length)) as { config: Record<string, unknown>; leftOut: string[] }) : undefined;
  return { status: r.status, stderr: r.stderr, ...(parsed ?? {}) };
}

/** A source tree whose settings table is this tree's without `drop` (all the child reads with --print-config). */
function fakeTree(name: string, drop: readonly string[]): string {
  const root = join(tmp, name);
  mkdirSync(join(root, 'src', 'settings'), { recursive: true });
  const real = pathToFileURL(join(ROOT, 'src', 'settings', 'train.ts')).href;
  writeFileSync(
    join(root, 'src', 'settings', 'train.ts'),
    [
      `import { SETTINGS as ALL, TRAIN_DEFAULTS as DEFAULTS } from ${JSON.stringify(real)};`,
      `const drop = new Set(${JSON.stringify(drop)});`,
      'const keep = (o: object) => Object.fromEntries(Object.entries(o).filter(([k]) => !drop.has(k)));',
      'export const SETTINGS = keep(ALL);',
      'export const TRAIN_DEFAULTS = keep(DEFAULTS);',
      '',
    ].join('\n'),
  );
  return root;
}

describe('the world bench pins its step (bench/world-scenario.ts)', () => {
  it("places every setting of this tree's table: pinned, added since 9217bcb, or named as not shaping the step", () => {
    const keys = Object.keys(SETTINGS);
    const placed = [...Object.keys(PINNED_SETTINGS), ...Object.keys(LATER_SETTINGS), ...Object.keys(UNPINNED_SETTINGS)];
    expect(keys.filter((k) => !placed.includes(k)), 'a new setting: pin it in bench/world-scenario.ts (LATER_SETTINGS, at the value of the step without it), or name it in UNPINNED_SETTINGS').toEqual([]);
    expect(placed.filter((k) => !keys.includes(k)), 'names the table does not have').toEqual([]);
    expect(new Set(placed).size).toBe(placed.length);
  });

  it('gives this tree the scenario over its TRAIN_DEFAULTS, a configuration it accepts', () => {
    const scenario = worldScenario(MODEL);
    const config = scenarioConfig(scenario, { keys: Object.keys(SETTINGS), defaults: TRAIN_DEFAULTS as unknown as Record<string, unknown> }, PLACE, ROOT);
    expect(config).toEqual(expected(TRAIN_DEFAULTS as unknown as Record<string, unknown>, () => true, scenario));
    expect(() => validateConfig(config as unknown as TrainConfig)).not.toThrow();
    // The step of the README's table: 4 seeds × 8 proposals, G = 4, two-hop seeds, one training world, no reuse.
    expect(config).toMatchObject({ steps: 1, seedsPerStep: 4, proposalsPerSeed: 8, groupSize: 4, solverEpochs: 4, minHops: 2, maxHops: 2, trainingWorlds: 1, solverBatch: 0, extractionFailure: 'dummy', renderTokenBudget: 120, invalidReward: -1, cardsInGroup: 'all', evalLimit: 4, evalCache: false, tensorboard: false, model: MODEL });
    expect('hopMix' in config).toBe(false);
    expect(worldScenario(MODEL, true).settings.evalLimit).toBe(2);
  });

  it('the child builds the same configuration for this tree, and the bench passes it the model folder', () => {
    const scenario = worldScenario(MODEL);
    const r = printConfig(ROOT, scenario);
    expect(r.status, r.stderr).toBe(0);
    expect(r.leftOut).toEqual([]);
    expect(r.config).toEqual(JSON.parse(JSON.stringify(scenarioConfig(scenario, { keys: Object.keys(SETTINGS), defaults: TRAIN_DEFAULTS as unknown as Record<string, unknown> }, PLACE, ROOT))));
    expect(benchModelDir()).toBe(process.env.SESA_BENCH_MODEL ? resolve(process.env.SESA_BENCH_MODEL) : join(ROOT, 'models', 'demo'));
  }, 60_000);

  it('a tree without the settings added since 9217bcb runs the scenario without them', () => {
    const later = Object.keys(LATER_SETTINGS);
    const scenario = worldScenario(MODEL);
    const r = printConfig(fakeTree('old', later), scenario);
    expect(r.status, r.stderr).toBe(0);
    expect(r.leftOut).toEqual(later);
    for (const k of later) expect(r.config).not.toHaveProperty(k);
    const defaults = Object.fromEntries(Object.entries(TRAIN_DEFAULTS).filter(([k]) => !later.includes(k)));
    expect(r.config).toEqual(JSON.parse(JSON.stringify(expected(defaults, (k) => !later.includes(k), scenario))));
  }, 60_000);

  it('refuses a tree that lacks a pinned setting that shapes the step, naming it', () => {
    const scenario = worldScenario(MODEL);
    const r = printConfig(fakeTree('lacks-group-size', ['groupSize', 'solverBatch']), scenario);
    expect(r.status).not.toBe(0);
    expect(r.config).toBeUndefined();
    expect(r.stderr).toMatch(/has no setting groupSize: it cannot run the world bench's pinned step/);
    expect(r.stderr).not.toMatch(/has no setting [^:]*solverBatch/);
    expect(() => scenarioConfig(scenario, { keys: Object.keys(SETTINGS).filter((k) => k !== 'renderTokenBudget'), defaults: {} }, PLACE, '/some/tree')).toThrow(/the tree at \/some\/tree has no setting renderTokenBudget/);
  }, 60_000);

  it("leaves every timing out of the digested metrics, the flat verl-style ones too, and keeps the counts", () => {
    const line = { step: 1, seconds: { total: 3 }, solver: { tokensPerSecond: 9, loss: 0.5 }, 'timing_s/step': 3, 'timing_s/propose': 1, 'perf/throughput': 7, 'perf/total_num_tokens': 40, 'proposer/actor/update_tokens_per_s': 5, 'sesa/bank_size': 12 };
    expect(withoutTimings([line])).toEqual([{ step: 1, solver: { loss: 0.5 }, 'perf/total_num_tokens': 40, 'sesa/bank_size': 12 }]);
  });

  it('compares the trees on the bits both compute: the base\'s metrics fields, the eval predictions, the tensors', () => {
    const base = [{ step: 1, proposals: 32, solver: { loss: 0.5 } }];
    expect(agreesWith(base, [{ step: 1, proposals: 32, solver: { loss: 0.5, clipfrac: 0 }, emptySlots: 25 }])).toBe(true);
    expect(agreesWith(base, [{ step: 1, proposals: 32, solver: { loss: 0.25 } }])).toBe(false);
    expect(agreesWith(base, [{ step: 1, proposals: 32 }])).toBe(false);
    expect(agreesWith(base, [...base, ...base])).toBe(false);
    const run = (metrics: unknown[], digest: Partial<StepRun['digest']> = {}): StepRun => ({ root: '/t', leftOut: [], steps: [], updateSeconds: {}, evals: [], metrics, digest: { metrics: JSON.stringify(metrics), evalPredictions: 'e', adapters: 'a', ...digest } });
    const wider = [{ step: 1, proposals: 32, solver: { loss: 0.5, clipfrac: 0 }, emptySlots: 25 }];
    expect(sameBits([run(base), run(base)], [run(wider), run(wider)])).toEqual({ metrics: true, evalPredictions: true, adapters: true, results: true });
    expect(sameBits([run(base)], [run(wider, { adapters: 'b' })])).toEqual({ metrics: true, evalPredictions: true, adapters: false, results: false });
    expect(sameBits([run(base)], [run(wider), run([{ step: 1, proposals: 31 }])]).metrics).toBe(false);
  });

  // The README's table measured 9217bcb's world defaults cut to one step of 4 seeds: the child must give 9217bcb
  // exactly that (with the bench's model folder), leaving out only the settings it lacks. Needs the commit in
  // this clone's history (skipped in a shallow one).
  const BASE = '9217bcb';
  const hasBase = spawnSync('git', ['cat-file', '-e', `${BASE}^{commit}`], { cwd: ROOT }).status === 0;
  it.skipIf(!hasBase)(`gives ${BASE} its own world step, the one the README's table measured`, () => {
    const root = join(tmp, BASE);
    mkdirSync(root);
    const archive = spawnSync('sh', ['-c', `git archive ${BASE} src models/registry.ts | tar -x -C ${JSON.stringify(root)}`], { cwd: ROOT, encoding: 'utf8' });
    expect(archive.status, archive.stderr).toBe(0);
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    writeFileSync(
      join(root, 'ref.ts'),
      [
        "import { TRAIN_DEFAULTS } from './src/settings/train.ts';",
        "import { WORLD_DEFAULTS } from './src/world/defaults.ts';",
        // What its own bench child ran: WORLD_DEFAULTS over TRAIN_DEFAULTS, --steps 1 --seeds-per-step 4, the eval at step 1 on 4 questions a world.
        'process.stdout.write(JSON.stringify({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, steps: 1, seedsPerStep: 4, evalEvery: 1, evalLimit: 4 }));',
        '',
      ].join('\n'),
    );
    const ref = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'ref.ts')], { cwd: ROOT, encoding: 'utf8' });
    expect(ref.status, ref.stderr).toBe(0);
    const own = JSON.parse(ref.stdout) as Record<string, unknown>;
    expect(own.model).toBe('demo');
    const scenario = worldScenario(MODEL);
    const r = printConfig(root, scenario);
    expect(r.status, r.stderr).toBe(0);
    expect(r.leftOut).toEqual(Object.keys(LATER_SETTINGS));
    expect(r.config).toEqual({ ...own, model: MODEL, ...PLACE });
  }, 120_000);
});
