// One run of the world step that bench/world.bench.ts measures, in a process of its own, for the source tree at
// --root (this checkout, or a git worktree of an older commit: the run imports that tree's modules, so the old
// and the new code are timed by the same harness, side by side).
//
//   node --import tsx bench/world-step-child.ts --root DIR --out DIR --scenario JSON [--threads 1]
//        [--backend wasm] [--print-config]
//
// The run is the bench's pinned scenario (bench/world-scenario.ts, given as JSON by the bench: the settings and
// the model folder), applied over the tree's own TRAIN_DEFAULTS, not the tree's WORLD_DEFAULTS: a pinned setting
// the tree's settings table lacks is left out where the scenario allows it and refused otherwise
// (scenarioConfig). With the scenario's evalEvery and evalLimit the held-out eval runs at step 0 and at the last
// step on a few questions of each evaluation world, skills on and off. It prints one JSON line: the seconds of
// each phase of each step, the seconds of each role's GRPO updates, the evals' seconds, and digests of
// everything the run computed (metrics without timings, the eval predictions, the adapters' bytes) so that two
// trees can be checked for bit-identical results (the checkpoint's tensors, not its files' metadata), with the
// metrics lines themselves. --print-config prints the configuration instead
// (WORLD-STEP-CONFIG, after the tree's own validateConfig) and runs nothing.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { scenarioConfig, type WorldScenario, withoutTimings } from './world-scenario.js';

interface Args {
  root: string;
  out: string;
  scenario: WorldScenario;
  threads: number;
  /** The tensor backend (an older tree knows only the ones it had: wasm is in every one). */
  backend: string;
  printConfig: boolean;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string, fallback?: string): string => {
    const i = argv.indexOf(`--${name}`);
    const v = i >= 0 ? argv[i + 1] : fallback;
    if (v === undefined) throw new Error(`world-step-child: --${name} is required`);
    return v;
  };
  return {
    root: resolve(get('root')),
    out: resolve(get('out')),
    scenario: JSON.parse(get('scenario')) as WorldScenario,
    threads: Number(get('threads', '1')),
    backend: get('backend', 'wasm'),
    printConfig: argv.includes('--print-config'),
  };
}

/**
 * What a safetensors file's digest covers: its tensors' names, dtypes, shapes and offsets, and their bytes, not
 * the header's __metadata__ (a later tree records more there, e.g. a digest of the data, for the same tensors).
 */
function tensorsOf(path: string, name: string): Buffer {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>;
  delete header.__metadata__;
  return Buffer.concat([Buffer.from(`${name}\n${JSON.stringify(header)}\n`), bytes.subarray(8 + n)]);
}

function sha(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex').slice(0, 16);
}

/** Every file under `dir` (sorted relative paths). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = join(rel, name);
      if (statSync(join(dir, path)).isDirectory()) walk(path);
      else out.push(path);
    }
  };
  walk('');
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const from = (path: string): string => pathToFileURL(join(args.root, path)).href;
  const settings = (await import(from('src/settings/train.ts'))) as Partial<typeof import('../src/settings/train.js')>;
  if (!settings.SETTINGS || !settings.TRAIN_DEFAULTS) throw new Error(`${args.root}/src/settings/train.ts exports no SETTINGS and TRAIN_DEFAULTS: the pinned step needs the tree's settings table`);
  const keys = Object.keys(settings.SETTINGS);
  const config = scenarioConfig(args.scenario, { keys, defaults: settings.TRAIN_DEFAULTS as unknown as Record<string, unknown> }, { out: args.out, backend: args.backend, threads: args.threads }, args.root);
  const validated = settings.validateConfig ? settings.validateConfig(config as unknown as import('../src/settings/train.js').TrainConfig) : config;
  /** Pinned settings the tree does not have (left out: the scenario allows it). */
  const leftOut = Object.keys(args.scenario.settings).filter((k) => !keys.includes(k));
  if (args.printConfig) {
    process.stdout.write(`WORLD-STEP-CONFIG ${JSON.stringify({ root: args.root, config: validated, leftOut })}\n`);
    return;
  }
  const { train } = (await import(from('src/selfplay/trainer.ts'))) as typeof import('../src/selfplay/trainer.js');
  const { GrpoPolicyUpdater } = (await import(from('src/selfplay/updater.ts'))) as typeof import('../src/selfplay/updater.js');

  // Each role's update seconds: the step times the update phase as a whole.
  const updateSeconds: Record<string, number> = {};
  const update = GrpoPolicyUpdater.prototype.update;
  GrpoPolicyUpdater.prototype.update = async function (this: InstanceType<typeof GrpoPolicyUpdater>, role, groups) {
    const t = performance.now();
    try {
      return await update.call(this, role, groups);
    } finally {
      updateSeconds[role] = (updateSeconds[role] ?? 0) + (performance.now() - t) / 1000;
    }
  };

  const summary = await train(validated as unknown as Parameters<typeof train>[0], { log: () => undefined });

  const metricsLines = readFileSync(join(args.out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const evals = metricsLines.filter((m) => m.kind === 'eval').map((m) => ({ step: m.step, skills: m.skills, questions: m.questions, seconds: m.seconds }));
  const evalDir = join(args.out, 'eval');
  const checkpoint = summary.lastCheckpoint;
  const checkpointFiles = checkpoint ? filesUnder(checkpoint).filter((f) => f.endsWith('.safetensors')) : [];
  const result = {
    root: args.root,
    leftOut,
    steps: summary.metrics.map((m) => ({ step: m.step, proposals: m.proposals, valid: m.validQuestions, solverSequences: m.solver?.sequences ?? 0, proposerSequences: m.proposer?.sequences ?? 0, seconds: m.seconds })),
    updateSeconds,
    evals,
    // The lines without timings, so that the bench can compare a base tree's fields with this tree's where this
    // tree writes more of them.
    metrics: metricsLines.map(withoutTimings),
    digest: {
      metrics: sha(JSON.stringify(metricsLines.map(withoutTimings))),
      evalPredictions: sha(filesUnder(evalDir).map((f) => `${f}\n${readFileSync(join(evalDir, f), 'utf8')}`).join('\n')),
      adapters: sha(Buffer.concat(checkpointFiles.map((f) => tensorsOf(join(checkpoint as string, f), f)))),
    },
  };
  process.stdout.write(`WORLD-STEP-RESULT ${JSON.stringify(result)}\n`);
}

await main();
