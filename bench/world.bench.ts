// Costs in the embedded world (docs/world.md), on the wasm backend and, for the step, on each backend measured
// (native and wasm by default):
// - SFT throughput (all tokens through forward and backward per second) of the world's model spec
//   (DEMO_MODEL_SPEC, random init, world tokenizer) on expert transcripts of a training world;
// - one world step, pinned in bench/world-scenario.ts rather than any tree's defaults: 9217bcb's world step
//   (4 seeds × 8 proposals, G = 4, two-hop seeds, 4 solver epochs, seed 0) over each tree's TRAIN_DEFAULTS, with
//   the settings added since pinned to the values that compute that step (one training world, no reuse pool,
//   every valid question solved), on one model folder for every tree (SESA_BENCH_MODEL, else this tree's
//   models/demo: a base tree that shipped another warm start runs this one), split by phase: propose,
//   validate, solve, judge, each role's GRPO update, and the held-out eval (skills on and off, at step 0 and
//   after the step, on a few questions of each evaluation world). Each run is a process of its own
//   (bench/world-step-child.ts); a tree whose settings table lacks a pinned setting that would change the step
//   is refused, one that lacks only settings added since 9217bcb runs without them.
//
// Side by side: with SESA_BENCH_BASE=<folder> (a git worktree of an older commit, e.g.
// `git worktree add ../base <commit>`), the runs of that tree (on wasm, which every tree has) alternate with
// this tree's on each backend (base, this; this, base; ...), so that all see the same machine state, and each
// phase gets its speed-up as a ratio (base seconds / this tree's, medians over the repetitions). Both trees run
// the same pinned step on the same model. Rows say whether the base and this tree on wasm computed the same
// bits (sameBits), each on its own and all together: the eval predictions and the checkpoint's tensors (adapters
// and optimizer state, not the files' metadata) by digest, the metrics lines (timings left out) on the fields the
// base writes, since a later tree writes more (native computes other floats: its rows say how far its results
// moved only through the held-out evaluation, docs/world.md). The machine's other load moves the seconds, never the ratios' meaning: read the ratios, and
// run it again when they disagree.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SFT_DEFAULTS } from '../src/sft/config.js';
import { runSft } from '../src/sft/trainer.js';
import { repoRoot } from '../src/util/shared-data.js';
import { DEMO_MODEL_SPEC, initDemoModel, trainWorldTokenizer } from '../src/world/demo-model.js';
import { DEFAULT_EXPERT_RATES } from '../src/world/experts.js';
import { buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS, writeTranscripts } from '../src/world/transcripts.js';
import { trainingWorldSeeds } from '../src/world/world.js';
import { benchBackends, median } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';
import { PINNED_SETTINGS, type WorldScenario, worldScenario } from './world-scenario.js';

/** Runs of each tree: alternating, so that a drift in the machine's load hits both; quick: 1. */
const REPETITIONS = 2;

/** What bench/world-step-child.ts prints. */
export interface StepRun {
  root: string;
  /** Pinned settings the tree's table lacks, left out (settings added since 9217bcb). */
  leftOut: string[];
  steps: Array<{ step: number; proposals: number; valid: number; solverSequences: number; proposerSequences: number; seconds: Record<string, number> }>;
  updateSeconds: Record<string, number>;
  evals: Array<{ step: number; skills: string; questions: number; seconds: number }>;
  /** metrics.jsonl's lines, timings left out. */
  metrics: unknown[];
  digest: { metrics: string; evalPredictions: string; adapters: string };
}

/** The model folder every tree's step loads: SESA_BENCH_MODEL, else this tree's models/demo. */
export function benchModelDir(): string {
  return process.env.SESA_BENCH_MODEL ? resolve(process.env.SESA_BENCH_MODEL) : join(repoRoot(), 'models', 'demo');
}

/** The child's command line (node's arguments) for one run of the pinned step of the tree at `root`. */
export function stepChildArgs(root: string, backend: string, threads: number, out: string, scenario: WorldScenario): string[] {
  const child = join(repoRoot(), 'bench', 'world-step-child.ts');
  return ['--import', 'tsx', child, '--root', root, '--out', out, '--scenario', JSON.stringify(scenario), '--threads', String(threads), '--backend', backend];
}

function runStep(root: string, backend: string, ctx: BenchContext, out: string, scenario: WorldScenario): StepRun {
  const args = stepChildArgs(root, backend, ctx.threads, out, scenario);
  const r = spawnSync(process.execPath, args, { cwd: repoRoot(), encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('WORLD-STEP-RESULT '));
  if (r.status !== 0 || !line) throw new Error(`world step of ${root} failed (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(line.slice('WORLD-STEP-RESULT '.length)) as StepRun;
}

/**
 * Whether `mine` holds every value of `base` (objects compared on the base's keys, recursively; anything else
 * as JSON): a later tree's metrics lines agree with an older tree's where they add fields and change none.
 */
export function agreesWith(base: unknown, mine: unknown): boolean {
  if (base && typeof base === 'object' && !Array.isArray(base)) {
    if (!mine || typeof mine !== 'object' || Array.isArray(mine)) return false;
    return Object.entries(base as Record<string, unknown>).every(([k, v]) => k in (mine as object) && agreesWith(v, (mine as Record<string, unknown>)[k]));
  }
  if (Array.isArray(base)) return Array.isArray(mine) && base.length === mine.length && base.every((v, i) => agreesWith(v, mine[i]));
  return JSON.stringify(base) === JSON.stringify(mine);
}

/**
 * Whether the base's wasm runs and this tree's computed the same bits, per digest: the eval predictions and the
 * checkpoint's tensors by digest; the metrics by digest among each tree's runs and, between the trees, on the
 * fields the base writes (this tree may write more). `results`: all three.
 */
export function sameBits(baseRuns: readonly StepRun[], mineRuns: readonly StepRun[]): { metrics: boolean; evalPredictions: boolean; adapters: boolean; results: boolean } {
  const all = [...baseRuns, ...mineRuns];
  const one = (kind: keyof StepRun['digest']): boolean => new Set(all.map((r) => r.digest[kind])).size === 1;
  const within = (runs: readonly StepRun[]): boolean => new Set(runs.map((r) => r.digest.metrics)).size <= 1;
  const metrics = within(baseRuns) && within(mineRuns) && baseRuns.every((b) => mineRuns.every((m) => agreesWith(b.metrics, m.metrics)));
  const evalPredictions = one('evalPredictions');
  const adapters = one('adapters');
  return { metrics, evalPredictions, adapters, results: metrics && evalPredictions && adapters };
}

/** Fields (leaves) in metrics lines. */
function fieldCount(value: unknown): number {
  if (value && typeof value === 'object') return Object.values(value as object).reduce((a: number, v) => a + fieldCount(v), 0);
  return 1;
}

/** The seconds of each phase of a run, the update split by role and the eval by skills mode. */
function phaseSeconds(run: StepRun): Record<string, number> {
  const s = run.steps[0]?.seconds ?? {};
  const evalOf = (skills: string): number => run.evals.filter((e) => e.skills === skills).reduce((a, e) => a + e.seconds, 0);
  return {
    propose: s.propose ?? 0,
    validate: s.validate ?? 0,
    solve: s.solve ?? 0,
    judge: s.judge ?? 0,
    'update (solver)': run.updateSeconds.solver ?? 0,
    'update (proposer)': run.updateSeconds.proposer ?? 0,
    'step total': s.total ?? 0,
    'eval, skills on': evalOf('on'),
    'eval, skills off': evalOf('off'),
  };
}

async function sftRow(ctx: BenchContext, root: string): Promise<BenchRow> {
  const set = await buildTranscripts({ ...DEFAULT_TRANSCRIPT_OPTIONS, worldSeeds: trainingWorldSeeds(1), solverPerWorld: 48, proposerPerWorld: 16, rates: DEFAULT_EXPERT_RATES });
  const data = join(root, 'transcripts.jsonl');
  writeTranscripts(data, set.transcripts);
  const bpe = trainWorldTokenizer(set.transcripts, DEMO_MODEL_SPEC.vocabSize);
  const init = initDemoModel(join(root, 'init'), DEMO_MODEL_SPEC, bpe, 0).dir;
  const steps = ctx.quick ? 2 : 6;
  let tokens = 0;
  let seconds = 0;
  await runSft(
    { ...SFT_DEFAULTS, model: init, data, out: join(root, 'sft'), mode: 'full', maxSteps: steps, batchSize: 8, microBatchSize: 4, lr: 1e-3, saveEvery: 1000, backend: 'wasm' },
    {
      log: () => undefined,
      onStep: (r) => {
        // The first step pays for warm-up (kernels, caches): leave it out.
        if (r.step === 1) return;
        tokens += r.tokens;
        seconds += r.seconds;
      },
    },
  );
  return { case: `sft --full world spec (${DEMO_MODEL_SPEC.hidden}d ${DEMO_MODEL_SPEC.layers}L V${DEMO_MODEL_SPEC.vocabSize}), batch 8`, engine: 'sesa/wasm', metric: 'trained', value: tokens / Math.max(1e-9, seconds), unit: 'tok/s', notes: `${steps - 1} steps after the first` };
}

export const suite: BenchSuite = {
  name: 'world',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const tmp = mkdtempSync(join(tmpdir(), 'bench-world-'));
    try {
      rows.push(await sftRow(ctx, tmp));

      const here = repoRoot();
      const model = benchModelDir();
      if (!existsSync(join(model, 'model.safetensors'))) {
        ctx.log(`no warm start at ${model} (models/demo, or SESA_BENCH_MODEL): the world step is not measured`);
        return rows;
      }
      const scenario = worldScenario(model, ctx.quick);
      ctx.log(`world step: the pinned scenario of bench/world-scenario.ts on the model folder ${model}`);
      const base = process.env.SESA_BENCH_BASE ? resolve(process.env.SESA_BENCH_BASE) : undefined;
      if (base !== undefined && !existsSync(join(base, 'src', 'selfplay', 'trainer.ts'))) throw new Error(`SESA_BENCH_BASE=${base} is not a source tree of this project`);
      // This tree on each in-process backend measured that runs the step (native, wasm), the base on wasm.
      const mine = benchBackends(ctx).filter((b) => b === 'native' || b === 'wasm');
      const trees = [...(base !== undefined ? [{ label: 'base', root: base, backend: 'wasm' }] : []), ...mine.map((b) => ({ label: `this/${b}`, root: here, backend: b }))];
      const runs = new Map<string, StepRun[]>(trees.map((t) => [t.label, []]));
      const reps = ctx.quick ? 1 : REPETITIONS;
      for (let rep = 0; rep < reps; rep++) {
        const order = rep % 2 === 0 ? trees : [...trees].reverse();
        for (const tree of order) {
          ctx.log(`world step ${rep + 1}/${reps}: ${tree.label} (${tree.root})`);
          const out = join(tmp, `${tree.label}-${rep}`);
          const run = runStep(tree.root, tree.backend, ctx, out, scenario);
          if (rep === 0 && run.leftOut.length > 0) ctx.log(`${tree.label} has no setting ${run.leftOut.join(', ')}: left out (added since 9217bcb, pinned to what a tree without them computes)`);
          runs.get(tree.label)?.push(run);
          rmSync(out, { recursive: true, force: true });
        }
      }
      const first = (runs.get(trees.at(-1)?.label as string) ?? [])[0] as StepRun;
      const step = first.steps[0];
      const caseName = `pinned world step (${PINNED_SETTINGS.seedsPerStep} seeds × ${PINNED_SETTINGS.proposalsPerSeed}: ${step?.proposals ?? 0} proposals, ${step?.valid ?? 0} valid; eval ${scenario.settings.evalLimit}/world, skills on+off, steps 0 and 1), ${ctx.threads} thread${ctx.threads === 1 ? '' : 's'}`;
      const medians = new Map<string, Record<string, number>>();
      for (const tree of trees) {
        const per = (runs.get(tree.label) ?? []).map(phaseSeconds);
        const keys = Object.keys(per[0] ?? {});
        medians.set(tree.label, Object.fromEntries(keys.map((k) => [k, median(per.map((p) => p[k] ?? 0))])));
      }
      const theirs = medians.get('base');
      for (const phase of Object.keys(medians.get(trees.at(-1)?.label as string) ?? {})) {
        for (const tree of trees) rows.push({ case: caseName, engine: `sesa ${tree.label === 'base' ? 'base/wasm' : tree.label}`, metric: phase, value: medians.get(tree.label)?.[phase] ?? 0, unit: 's', notes: `median of ${reps} run${reps === 1 ? '' : 's'}` });
        if (!theirs) continue;
        for (const tree of trees.filter((t) => t.label !== 'base')) {
          const now = medians.get(tree.label)?.[phase] ?? 0;
          rows.push({ case: caseName, engine: `speed-up, ${tree.label}`, metric: phase, value: now > 0 ? (theirs[phase] ?? 0) / now : 0, unit: '× (base / this)', notes: "base seconds over this tree's, medians, runs interleaved" });
        }
      }
      const wasmHere = runs.get('this/wasm');
      if (base !== undefined && wasmHere) {
        const same = sameBits(runs.get('base') ?? [], wasmHere);
        const added = Math.max(0, ...wasmHere.flatMap((m) => (runs.get('base') ?? []).map((b) => fieldCount(m.metrics) - fieldCount(b.metrics))));
        const kinds: Array<[keyof typeof same, string, string]> = [
          ['metrics', 'metrics', `metrics.jsonl of every wasm run, timings left out, on the fields the base writes (this tree writes ${added} more)`],
          ['evalPredictions', 'eval predictions', 'digests of the eval predictions of every wasm run'],
          ['adapters', 'checkpoint tensors', "digests of the checkpoint's tensors (adapters and optimizer state, not the files' metadata) of every wasm run"],
          ['results', 'results', 'all three'],
        ];
        for (const [kind, label, what] of kinds) rows.push({ case: caseName, engine: 'base vs this/wasm', metric: `bit-identical ${label}`, value: same[kind] ? 1 : 0, unit: '1 = yes', notes: what });
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    return rows;
  },
};
