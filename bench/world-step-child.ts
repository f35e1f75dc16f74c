// One default world run of the instrument in bench/world.bench.ts, in a process of its own, for the source
// tree at --root (this checkout, or a git worktree of an older commit: the run imports that tree's modules,
// so the old and the new code are timed by the same harness, side by side).
//
//   node --import tsx bench/world-step-child.ts --root DIR --out DIR [--steps 1] [--seeds-per-step 4]
//        [--threads 1] [--eval-limit 0] [--backend wasm]
//
// The run is `npx sesa-train`'s (WORLD_DEFAULTS over TRAIN_DEFAULTS: the shipped warm start, seed 0) cut to
// --steps steps; with --eval-limit N > 0 the held-out eval runs at step 0 and at the last step on N questions
// of each evaluation world, skills on and off. It prints one JSON line: the seconds of each phase of each step,
// the seconds of each role's GRPO updates, the evals' seconds, and digests of everything the run computed
// (metrics without timings, the eval predictions, the adapters' bytes) so that two trees can be checked for
// bit-identical results.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Args {
  root: string;
  out: string;
  steps: number;
  seedsPerStep: number;
  threads: number;
  evalLimit: number;
  /** The tensor backend (an older tree knows only the ones it had: wasm is in every one). */
  backend: string;
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
    steps: Number(get('steps', '1')),
    seedsPerStep: Number(get('seeds-per-step', '4')),
    threads: Number(get('threads', '1')),
    evalLimit: Number(get('eval-limit', '0')),
    backend: get('backend', 'wasm'),
  };
}

/** Fields that are measurements of time, not results: left out of the digests. */
const TIMING_KEYS = new Set(['seconds', 'tokensPerSecond']);

function withoutTimings(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutTimings);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([k]) => !TIMING_KEYS.has(k)).map(([k, v]) => [k, withoutTimings(v)]));
  }
  return value;
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
  const { TRAIN_DEFAULTS } = (await import(from('src/settings/train.ts'))) as typeof import('../src/settings/train.js');
  const { WORLD_DEFAULTS } = (await import(from('src/world/defaults.ts'))) as typeof import('../src/world/defaults.js');
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

  const summary = await train(
    {
      ...TRAIN_DEFAULTS,
      ...WORLD_DEFAULTS,
      steps: args.steps,
      seedsPerStep: args.seedsPerStep,
      evalEvery: args.evalLimit > 0 ? args.steps : 0,
      ...(args.evalLimit > 0 ? { evalLimit: args.evalLimit } : { evalData: undefined }),
      out: args.out,
      backend: args.backend as typeof TRAIN_DEFAULTS.backend,
      threads: args.threads,
    },
    { log: () => undefined },
  );

  const metricsLines = readFileSync(join(args.out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const evals = metricsLines.filter((m) => m.kind === 'eval').map((m) => ({ step: m.step, skills: m.skills, questions: m.questions, seconds: m.seconds }));
  const evalDir = join(args.out, 'eval');
  const checkpoint = summary.lastCheckpoint;
  const checkpointFiles = checkpoint ? filesUnder(checkpoint).filter((f) => f.endsWith('.safetensors')) : [];
  const result = {
    root: args.root,
    steps: summary.metrics.map((m) => ({ step: m.step, proposals: m.proposals, valid: m.validQuestions, solverSequences: m.solver?.sequences ?? 0, proposerSequences: m.proposer?.sequences ?? 0, seconds: m.seconds })),
    updateSeconds,
    evals,
    digest: {
      metrics: sha(JSON.stringify(metricsLines.map(withoutTimings))),
      evalPredictions: sha(filesUnder(evalDir).map((f) => `${f}\n${readFileSync(join(evalDir, f), 'utf8')}`).join('\n')),
      adapters: sha(Buffer.concat(checkpointFiles.map((f) => readFileSync(join(checkpoint as string, f))))),
    },
  };
  process.stdout.write(`WORLD-STEP-RESULT ${JSON.stringify(result)}\n`);
}

await main();
