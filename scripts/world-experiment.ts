// The comparison in the world and the paper's ablations at small scale (docs/world.md, "The evaluation
// worlds" and "Ablations"): every variant trains in the world default's training worlds (the demo world, seed 0,
// and the warm-start worlds after it: --training-worlds) from the shipped warm start,
// and every mode is evaluated, greedily, on the evaluation worlds' held-out questions (342 questions in six
// worlds no training touched, each searched in its own corpus) and, for reference, on the self-play world's own
// 57 (in-world: their facts are reachable by training questions).
//
// Variants (--variants, or --ablations for all of them):
//   sesa         SESA as `npx sesa-train` runs it        → modes SESA-Off (its solver, no bank) and SESA-On (with its bank)
//   ssp          the Search Self-Play baseline            → SSP (no bank; one proposal a seed: 4 questions a step)
//   ssp-supply   SSP with as many proposals a step as SESA makes (its seeds × n_p, one proposal each) → SSP, same
//                supply; with the SSP layout of both (n_p = 1) it is the ssp run again, so not among --ablations
//   no-priming   SESA with an empty bank at the start     → SESA-On, no priming
//   no-frontier  SESA with the proposer reward 1 − p̂      → SESA-On, no frontier
//   no-distill   SESA without failure distillation        → SESA-On, no distillation
//   no-bank      SESA with no skill bank at all (--no-skills): SSP's recipe plus frontier shaping, so against SSP it
//                gives frontier shaping's effect on the solver, and SESA-Off against it the bank's (not among
//                --ablations)                           → SESA-Off, no bank
//   cards-half   SESA with the cards in half of each solver group (--cards-in-group half; docs/method.md,
//                "Card use"; not among --ablations)     → SESA-Off and SESA-On, cards in half the group; the world
//                default since 2026-12-06 (src/world/defaults.ts), so there it is the sesa run again
// The paper's SESA (r_invalid = −1, the cards in every rollout) is --set '{"invalidReward":-1,"cardsInGroup":"all"}'.
// plus base (the warm start, no adapter) and base-On (the warm start with a new primed bank).
//
// Writes to --out: table.md (per mode: mean ± sd over run seeds, the gain over the warm start with its paired
// bootstrap 95% interval over questions, per hop count, in-world; then the bank's own effect, SESA-On − SESA-Off;
// then each run's loop), results.json (every mode's per-question scores, so runs merge and intervals are exact),
// one eval folder per mode (modes/) and report.html (the first SESA run, the modes compared and the table).
//   npx tsx scripts/world-experiment.ts [--seeds 0,1,2] [--threads 1] [--backend auto] [--variants sesa,ssp | --ablations] [--out runs/world-experiment]
//     [--steps N] [--max-hops N] [--set '{"solverLr":0.0005}'] [--curve-every N] [--model demo] [--eval-limit N (a quick check)]
//     [--eval-every K [--eval-data training-worlds|world|eval-worlds] [--curve-limit N]]
// --set overrides any setting of every run (TrainConfig keys, as a config file holds them); --curve-every N
// also evaluates the SESA solver (off and on) at every N-th step's checkpoint on the in-world questions.
// --eval-every K has every run evaluate its solver (skills on and off) during training, at step 0, every K steps
// and at the end, on --eval-data (default training-worlds: the held-out questions of the run's training worlds,
// N per world with --curve-limit N; nothing is chosen on the evaluation worlds): the rows go to the run's
// metrics.jsonl, and table.md's Figure 3 section and report.html's curves show them per step, beside the
// valid-question rate, the solver batch and the active cards (docs/world.md, "Figure 3 at small scale").
// Run seeds as separate processes (one wasm thread each on a 2-core machine; --no-base in all but one, since
// base and base-On do not depend on the run seed), then merge their tables:
//   npx tsx scripts/world-experiment.ts --merge runs/x0,runs/x1,runs/x2 --out runs/world-experiment
// (runs/x0@SSP+base takes only those modes from runs/x0).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gainText, type PairedGain, pairedBootstrap } from '../src/eval/bootstrap.js';
import { evaluateSets, type EvalSet, type PredictionRecord } from '../src/eval/runner.js';
import { renderReport, type ReportTable } from '../src/report/html.js';
import { addCardUse, type CardUse, emptyCardUse } from '../src/selfplay/card-use.js';
import { halves, type Pooled, type PooledPHat, pooledPHat, pooledValid } from '../src/report/pooled.js';
import { readEvalFolder, readRun, type StepRow } from '../src/report/run-data.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { loadPeftAdapter } from '../src/checkpoint/peft.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { parseConfigObject, RECIPE_PRESETS, TRAIN_DEFAULTS, type TrainConfig, validateConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { writePrimedBank } from '../src/selfplay/priming.js';
import { evalSettingsOf } from '../src/selfplay/step-settings.js';
import { trainOrResume } from '../src/selfplay/train-or-resume.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend, parseBackendChoice } from '../src/tensor/backend.js';
import { EVAL_WORLDS_DATA } from '../src/world/eval-worlds.js';
import { DEMO_MODEL_NAME, demoModelDir, WORLD_EVAL_DATA, worldEvalSets } from '../src/world/setup.js';
import { DEMO_WORLD } from '../src/world/world.js';

interface Variant {
  recipe: 'sesa' | 'ssp';
  /** Settings of this variant over the world run's (and under --set). */
  set: Partial<TrainConfig>;
  /** The modes evaluated from its final checkpoint: the solver alone (off) and/or with its bank (on). */
  modes: Array<{ mode: string; skills: 'off' | 'on'; minScore?: number }>;
}

const WORLD = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS } as TrainConfig;
const VARIANTS: Record<string, Variant> = {
  sesa: { recipe: 'sesa', set: {}, modes: [{ mode: 'SESA-Off', skills: 'off' }, { mode: 'SESA-On', skills: 'on' }] },
  ssp: { recipe: 'ssp', set: {}, modes: [{ mode: 'SSP', skills: 'off' }] },
  // SESA's question supply: its seeds × proposals a step, as one proposal for each of that many seeds.
  'ssp-supply': { recipe: 'ssp', set: { seedsPerStep: WORLD.seedsPerStep * WORLD.proposalsPerSeed }, modes: [{ mode: 'SSP, same supply', skills: 'off' }] },
  // The paper's ablations report SESA-On; SESA-Off of the same run says what the part did to the solver's weights.
  'no-priming': { recipe: 'sesa', set: { priming: false }, modes: [{ mode: 'SESA-On, no priming', skills: 'on' }, { mode: 'SESA-Off, no priming', skills: 'off' }] },
  'no-frontier': { recipe: 'sesa', set: { frontier: false }, modes: [{ mode: 'SESA-On, no frontier', skills: 'on' }, { mode: 'SESA-Off, no frontier', skills: 'off' }] },
  'no-distill': { recipe: 'sesa', set: { distill: false }, modes: [{ mode: 'SESA-On, no distillation', skills: 'on' }, { mode: 'SESA-Off, no distillation', skills: 'off' }] },
  'no-bank': { recipe: 'sesa', set: { skills: false }, modes: [{ mode: 'SESA-Off, no bank', skills: 'off' }] },
  'cards-half': {
    recipe: 'sesa',
    set: { cardsInGroup: 'half' },
    modes: [
      { mode: 'SESA-Off, cards in half the group', skills: 'off' },
      { mode: 'SESA-On, cards in half the group', skills: 'on' },
    ],
  },
};
/** The paper's table: --ablations runs these. */
const ABLATIONS = ['sesa', 'ssp', 'no-priming', 'no-frontier', 'no-distill'];
const MODE_ORDER = [
  'base',
  'base-On',
  'SSP',
  'SSP, same supply',
  'SESA-Off',
  'SESA-On',
  'SESA-On, no priming',
  'SESA-On, no frontier',
  'SESA-On, no distillation',
  'SESA-Off, no priming',
  'SESA-Off, no frontier',
  'SESA-Off, no distillation',
  'SESA-Off, no bank',
  'SESA-Off, cards in half the group',
  'SESA-On, cards in half the group',
];

/** Modes scored once for every run seed: the warm start does not depend on it. */
const SEEDLESS_MODES = new Set(['base', 'base-On']);

const started = Date.now();
const { values } = parseArgs({
  options: {
    model: { type: 'string', default: DEMO_MODEL_NAME },
    steps: { type: 'string', default: String(WORLD.steps) },
    seeds: { type: 'string', default: '0,1,2' },
    threads: { type: 'string', default: '1' },
    // The tensor backend of every run and eval (auto: native where onnxruntime-node loads, else wasm).
    backend: { type: 'string', default: 'auto' },
    // Unset: each seed asks for its own hop count (the world default draws them a third each, --hop-mix 1,1,1).
    'max-hops': { type: 'string' },
    'eval-every': { type: 'string', default: '0' },
    'eval-data': { type: 'string', default: 'training-worlds' },
    'curve-limit': { type: 'string' },
    variants: { type: 'string' },
    // The earlier name of --variants (it took ssp and sesa).
    recipes: { type: 'string' },
    ablations: { type: 'boolean', default: false },
    // Leave base and base-On out (another process of the same experiment evaluates them; --merge keeps one).
    'no-base': { type: 'boolean', default: false },
    set: { type: 'string', default: '{}' },
    'curve-every': { type: 'string', default: '0' },
    merge: { type: 'string' },
    // Questions per world (a quick check of the script; every reported table uses all of them).
    'eval-limit': { type: 'string' },
    // Also evaluates the bank modes of sesa and cards-half with a retrieval floor (--skills-min-score S; chosen on
    // training worlds: scripts/card-floor.ts), from the runs' final checkpoints, without training again.
    'eval-floor': { type: 'string' },
    out: { type: 'string', default: 'runs/world-experiment' },
  },
});
const out = values.out as string;
const seeds = (values.seeds as string).split(',').map(Number);
const steps = Number(values.steps);
const threads = Number(values.threads);
const backend = parseBackendChoice(values.backend as string);
if (!seeds.every(Number.isInteger) || !Number.isInteger(steps) || steps < 1) throw new Error('--seeds must be integers (0,1,2) and --steps a positive integer');
if (!Number.isInteger(threads) || threads < 1) throw new Error(`--threads must be a positive integer, got ${values.threads}`);
const maxHops = values['max-hops'] !== undefined ? Number(values['max-hops']) : undefined;
if (maxHops !== undefined && (!Number.isInteger(maxHops) || maxHops < 1)) throw new Error(`--max-hops must be a positive integer, got ${values['max-hops']}`);
const evalEvery = Number(values['eval-every']);
if (!Number.isInteger(evalEvery) || evalEvery < 0) throw new Error(`--eval-every must be a whole number of steps (0 = off), got ${values['eval-every']}`);
const curveLimit = values['curve-limit'] !== undefined ? Number(values['curve-limit']) : undefined;
if (curveLimit !== undefined && (!Number.isInteger(curveLimit) || curveLimit < 1)) throw new Error(`--curve-limit must be a positive integer, got ${values['curve-limit']}`);
if (values.ablations && (values.variants !== undefined || values.recipes !== undefined)) throw new Error('--ablations runs every variant: give it or --variants, not both');
const variantNames = values.ablations ? ABLATIONS : (values.variants ?? values.recipes ?? 'ssp,sesa').split(',');
const unknown = variantNames.filter((v) => !(v in VARIANTS));
if (unknown.length > 0 || variantNames.length === 0) throw new Error(`--variants: unknown ${unknown.join(', ')} (known: ${Object.keys(VARIANTS).join(', ')})`);
let overrides: Partial<TrainConfig>;
try {
  overrides = parseConfigObject(JSON.parse(values.set as string), '--set');
} catch (e) {
  throw new Error(`--set must be a JSON object of run settings ('{"solverLr":0.0005}'): ${(e as Error).message}`);
}
const evalFloor = values['eval-floor'] !== undefined ? Number(values['eval-floor']) : undefined;
if (evalFloor !== undefined && !(evalFloor >= -1 && evalFloor <= 1)) throw new Error(`--eval-floor must be a cosine in [-1, 1], got ${values['eval-floor']}`);
/** A variant's modes, with the floored bank modes of --eval-floor. */
const modesOf = (name: string): Variant['modes'] => {
  const modes = (VARIANTS[name] as Variant).modes;
  if (evalFloor === undefined || !['sesa', 'cards-half'].includes(name)) return modes;
  return [...modes, ...modes.filter((m) => m.skills === 'on').map((m) => ({ ...m, mode: `${m.mode}, cards scoring ≥ ${evalFloor}`, minScore: evalFloor }))];
};
const curveEvery = Number(values['curve-every']);
if (!Number.isInteger(curveEvery) || curveEvery < 0) throw new Error(`--curve-every must be a whole number of steps (0 = off), got ${values['curve-every']}`);
mkdirSync(out, { recursive: true });
const modelDir = values.model === DEMO_MODEL_NAME ? demoModelDir() : (values.model as string);
const log = (l: string): void => {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${l}\n`);
};

/** Without --curve-every, a run still checkpoints every this many steps, so a killed one resumes near where it was. */
const RESUME_EVERY = 10;
// The settings this script sets itself per run (its own flags name the others): --set may not name them.
const fixedSettings = (seed: number, recipe: 'sesa' | 'ssp', dir: string): Partial<TrainConfig> => ({
  recipe,
  model: values.model as string,
  corpus: 'world',
  worldSeed: DEMO_WORLD.seed,
  steps,
  ...(maxHops !== undefined ? { maxHops } : {}),
  seed,
  out: dir,
  saveEvery: curveEvery > 0 ? curveEvery : Math.min(steps, RESUME_EVERY),
  evalEvery,
  ...(evalEvery > 0 ? { evalData: values['eval-data'] as string, ...(curveLimit !== undefined ? { evalLimit: curveLimit } : {}) } : {}),
  threads,
  backend,
});
const clashes = Object.keys(overrides).filter((k) => k in fixedSettings(0, 'sesa', out));
if (clashes.length > 0) throw new Error(`--set: ${clashes.join(', ')} set by the script itself (use its flags: --steps, --max-hops, --seeds, --out, --threads, --backend, --curve-every, --eval-every, --eval-data, --curve-limit, --variants, --model)`);
const runConfig = (seed: number, variant: Variant, dir: string): TrainConfig =>
  validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...RECIPE_PRESETS[variant.recipe], ...variant.set, ...overrides, ...fixedSettings(seed, variant.recipe, dir) } as TrainConfig);

/** One mode of one run seed on one question set: the per-question scores, in the set's fixed order. */
interface Row {
  mode: string;
  seed: number;
  set: 'eval' | 'in-world';
  ids: string[];
  em: number[];
  hops: number[];
  answered: number;
  meanTurns: number;
}
const rows: Row[] = [];
// The same settings for every mode, those of the world run (the eval of `sesa-train eval --run`).
const evalSettings = evalSettingsOf(runConfig(0, VARIANTS.sesa as Variant, out));
const evalLimit = values['eval-limit'] !== undefined ? Number(values['eval-limit']) : undefined;
if (evalLimit !== undefined && (!Number.isInteger(evalLimit) || evalLimit < 1)) throw new Error(`--eval-limit must be a positive integer, got ${values['eval-limit']}`);
const sets = { eval: await worldEvalSets(EVAL_WORLDS_DATA, DEMO_WORLD.seed, evalLimit), 'in-world': await worldEvalSets(WORLD_EVAL_DATA, DEMO_WORLD.seed, evalLimit) };

function rowOf(mode: string, seed: number, set: Row['set'], records: readonly PredictionRecord[]): Row {
  return {
    mode,
    seed,
    set,
    ids: records.map((r) => `${r.dataset}/${r.id}`),
    em: records.map((r) => r.em),
    hops: records.map((r) => r.hops ?? 0),
    answered: records.filter((r) => r.prediction !== null).length / Math.max(1, records.length),
    meanTurns: records.reduce((a, r) => a + r.turns, 0) / Math.max(1, records.length),
  };
}

async function evaluate(mode: string, seed: number, adapterDir: string | undefined, bankPath: string | undefined, which: ReadonlyArray<Row['set']> = ['eval', 'in-world'], minScore = WORLD.skillsMinScore): Promise<Row[]> {
  await initBackend(backend, { threads });
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  const adapter = adapterDir ? loadPeftAdapter(adapterDir, 'solver', model.config) : undefined;
  const policy = new ModelPolicy('solver', model, tokenizer, adapter, { enableThinking: false });
  const result: Row[] = [];
  try {
    for (const set of which) {
      // The bank learned in the self-play world is used as is in every other world (its cards name no entity).
      const bank = bankPath ? await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), create: false, config: { renderTokenBudget: WORLD.renderTokenBudget, topK: WORLD.skillsTopK, minScore } }) : undefined;
      const t0 = Date.now();
      const { records } = await evaluateSets({ policy, ...(bank ? { bank } : {}) }, sets[set] as EvalSet[], evalSettings);
      await bank?.dispose();
      const row = rowOf(mode, seed, set, records);
      result.push(row);
      log(`${mode} seed ${seed} ${set}: ${(100 * mean(row.em)).toFixed(1)}% of ${row.em.length} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
  } finally {
    adapter?.dispose();
    model.dispose();
  }
  return result;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const curve: Array<{ seed: number; step: number; mode: string; accuracy: number }> = [];

interface Results {
  command: string;
  steps: number;
  seeds: number[];
  variants: string[];
  seconds: number;
  rows: Row[];
}
const merged: Results[] = [];
/** The --merge folders, each with the modes it gives (all where unnamed). */
const mergeSpecs = (values.merge?.split(',') ?? []).map((spec) => {
  const [dir = '', only] = spec.split('@');
  return { dir, wanted: only !== undefined ? new Set(only.split('+')) : undefined };
});
/** Compute time of an earlier, killed process of the same experiment that this one continues. */
let earlierSeconds = 0;
if (values.merge !== undefined) {
  // Rows of earlier runs of this script (each its results.json); base and base-On are kept once. DIR@M1+M2 takes
  // only those modes from DIR (say, SSP from a table whose SESA runs had other settings). A mode and seed scored
  // in two folders must agree question by question: a merge never picks one of two different runs silently.
  for (const { dir, wanted } of mergeSpecs) {
    const file = join(dir, 'results.json');
    if (!existsSync(file)) throw new Error(`--merge: ${file} does not exist (run the script with --out ${dir} first)`);
    const r = JSON.parse(readFileSync(file, 'utf8')) as Results;
    if (!Array.isArray(r.rows) || typeof r.steps !== 'number' || !r.rows.every((x) => Array.isArray(x.em))) throw new Error(`--merge: ${file} has no per-question rows: not a results.json of this version of the script`);
    if (merged.length > 0 && r.steps !== merged[0]?.steps) throw new Error(`--merge: ${file} ran ${r.steps} steps, ${merged[0]?.steps} in the first folder: the table would mix runs`);
    const unknown = [...(wanted ?? [])].filter((m) => !r.rows.some((x) => x.mode === m));
    if (unknown.length > 0) throw new Error(`--merge: ${file} has no rows of ${unknown.join(', ')} (its modes: ${[...new Set(r.rows.map((x) => x.mode))].join(', ')})`);
    merged.push(r);
    for (const row of r.rows) {
      if (wanted !== undefined && !wanted.has(row.mode)) continue;
      const same = rows.find((x) => x.mode === row.mode && x.set === row.set && (SEEDLESS_MODES.has(row.mode) || x.seed === row.seed));
      if (same === undefined) rows.push(row);
      else if (same.em.length !== row.em.length || same.em.some((e, i) => e !== row.em[i]))
        throw new Error(`--merge: ${file} scores ${row.mode} (seed ${row.seed}, ${row.set}) otherwise than an earlier folder: two different runs; take the mode from one folder only (DIR@MODE+MODE)`);
    }
  }
} else if (existsSync(join(out, 'results.json'))) {
  // The same command again continues a killed experiment: the rows of the runs it finished are kept, and only
  // what is missing runs (a run whose modes are not all scored resumes from its last checkpoint).
  const file = join(out, 'results.json');
  const r = JSON.parse(readFileSync(file, 'utf8')) as Results;
  if (!Array.isArray(r.rows) || r.steps !== steps) throw new Error(`${file} is from another experiment (${r.steps} steps, this one ${steps}): give another --out or remove it`);
  rows.push(...r.rows);
  earlierSeconds = r.seconds ?? 0;
  log(`continuing ${out}: ${r.rows.length} rows already scored`);
}
const scored = (mode: string, seed: number): boolean => rows.some((r) => r.mode === mode && (SEEDLESS_MODES.has(mode) || r.seed === seed));
if (values.merge === undefined && !values['no-base'] && !scored('base', 0)) {
  rows.push(...(await evaluate('base', 0, undefined, undefined)));
  if (variantNames.some((v) => VARIANTS[v]?.recipe === 'sesa' && VARIANTS[v]?.set.priming !== false)) {
    const config = runConfig(0, VARIANTS.sesa as Variant, out);
    const bankPath = join(out, 'base-bank.json');
    await writePrimedBank(bankPath, { ...config, renderTokenBudget: WORLD.renderTokenBudget }, modelDir, log);
    rows.push(...(await evaluate('base-On', 0, undefined, bankPath)));
  }
  saveProgress();
}
for (const seed of values.merge !== undefined ? [] : seeds) {
  for (const name of variantNames) {
    const variant = VARIANTS[name] as Variant;
    const dir = join(out, `${name}-seed${seed}`);
    const modes = modesOf(name);
    if (modes.every((m) => scored(m.mode, seed))) continue;
    // A run with a mode already scored finished training: its final checkpoint gives the modes still missing.
    const finalCkpt = join(dir, 'checkpoints', `step-${steps}`);
    const trained = modes.some((m) => scored(m.mode, seed)) && existsSync(join(finalCkpt, 'manifest.json'));
    let ckpt = finalCkpt;
    if (trained) log(`${dir}: trained already; evaluating the modes not yet scored`);
    else {
      // A run killed mid-way resumes from its last checkpoint (the same command; a folder of another
      // configuration is refused, not deleted).
      const t0 = Date.now();
      const summary = await trainOrResume(runConfig(seed, variant, dir), { log: () => undefined }, (d) => log(`${d}: resuming the run from its last checkpoint`));
      log(`trained ${dir} (${summary.lastStep} steps, ${((Date.now() - t0) / 60000).toFixed(1)} min)`);
      ckpt = join(dir, 'checkpoints', `step-${summary.lastStep}`);
    }
    if (name === 'sesa' && !trained) {
      for (let step = curveEvery; curveEvery > 0 && step < steps; step += curveEvery) {
        const at = join(dir, 'checkpoints', `step-${step}`);
        for (const [mode, bank] of [['SESA-Off', undefined], ['SESA-On', join(at, 'skills.json')]] as const) {
          for (const r of await evaluate(mode, seed, join(at, 'solver'), bank, ['in-world'])) curve.push({ seed, step, mode, accuracy: mean(r.em) });
        }
        writeJsonAtomic(join(out, 'curve.json'), curve);
      }
    }
    for (const m of modes) {
      if (scored(m.mode, seed)) continue;
      rows.push(...(await evaluate(m.mode, seed, join(ckpt, 'solver'), m.skills === 'on' ? join(ckpt, 'skills.json') : undefined, ['eval', 'in-world'], m.minScore ?? WORLD.skillsMinScore)));
    }
    // Written after every run, so a killed experiment keeps what it finished.
    saveProgress();
  }
}

/** The rows scored so far, written after every run so that the same command continues a killed experiment. */
function saveProgress(): void {
  writeJsonAtomic(join(out, 'results.json'), { command: commandLine(), steps, seeds, variants: variantNames, seconds: earlierSeconds + (Date.now() - started) / 1000, rows } satisfies Results);
}

function commandLine(): string {
  return `npx tsx scripts/world-experiment.ts ${process.argv.slice(2).join(' ')}`.trim();
}

// ---- the table
const pct = (x: number): string => (100 * x).toFixed(1);
const meanSd = (xs: readonly number[]): string => {
  const m = mean(xs);
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return xs.length > 1 ? `${pct(m)} ± ${pct(sd)}` : pct(m);
};
const rowsOf = (mode: string, set: Row['set']): Row[] => rows.filter((r) => r.mode === mode && r.set === set).sort((a, b) => a.seed - b.seed);
const hopAcc = (r: Row, h: number): number => mean(r.em.filter((_, i) => r.hops[i] === h));
/**
 * The paired gain of `mode` over `baseline` on a set: against the one row of a seedless baseline (base, base-On),
 * else per run seed against that seed's baseline; undefined when either has no rows, or when the baseline lacks
 * a run seed of the mode's (a merge of folders with different seeds: the difference needs the same runs).
 */
function gainOver(mode: string, baseline: string, set: Row['set']): PairedGain | undefined {
  const bs = rowsOf(baseline, set);
  const ms = rowsOf(mode, set);
  if (bs.length === 0 || ms.length === 0) return undefined;
  const baselineOf = (m: Row): Row | undefined => (SEEDLESS_MODES.has(baseline) ? bs[0] : bs.find((x) => x.seed === m.seed));
  if (!ms.every((m) => baselineOf(m) !== undefined)) return undefined;
  const pairs = ms.map((m) => {
    const b = baselineOf(m) as Row;
    if (b.ids.join('\n') !== m.ids.join('\n')) throw new Error(`${mode} and ${baseline} were scored on different questions`);
    return { a: b.em, b: m.em };
  });
  return pairedBootstrap(pairs, { seed: 1 });
}
// Every mode is scored on the same questions (gainOver checks it), so any row gives the count; with --no-base
// there is no base row.
const evalN = rows.find((r) => r.set === 'eval')?.em.length ?? 0;
const inWorldN = rows.find((r) => r.set === 'in-world')?.em.length ?? 0;
const header = ['mode', `eval worlds (${evalN} q)`, 'gain over the warm start [95% CI]', '1-hop', '2-hop', '3-hop', `in-world (${inWorldN} q)`, 'runs'];
const tableRows: string[][] = [];
/** MODE_ORDER, each mode followed by its floored variants (--eval-floor), whatever floors the rows hold. */
const modeOrder = MODE_ORDER.flatMap((m) => [m, ...[...new Set(rows.map((r) => r.mode).filter((x) => x.startsWith(`${m}, cards scoring ≥ `)))].sort()]);
for (const mode of modeOrder) {
  const ev = rowsOf(mode, 'eval');
  if (ev.length === 0) continue;
  const iw = rowsOf(mode, 'in-world');
  const g = mode === 'base' ? undefined : gainOver(mode, 'base', 'eval');
  tableRows.push([
    mode,
    meanSd(ev.map((r) => mean(r.em))),
    g ? `${gainText(g)}${g.runs > 1 ? ` (sd ${pct(g.sd)})` : ''}` : '—',
    ...[1, 2, 3].map((h) => meanSd(ev.map((r) => hopAcc(r, h)))),
    iw.length > 0 ? meanSd(iw.map((r) => mean(r.em))) : '—',
    String(ev.length),
  ]);
}
const md = (h: string[], rs: string[][]): string[] => [`| ${h.join(' | ')} |`, `|${h.map(() => '---').join('|')}|`, ...rs.map((r) => `| ${r.join(' | ')} |`)];
const lines = md(header, tableRows);
lines.push(
  '',
  `EM in %, mean ± sd over run seeds; the gain is the mean over run seeds of each trained mode minus the warm start (base), with a paired bootstrap 95% interval over the ${evalN} questions (10,000 resamples, the same questions for every seed; docs/evaluation.md), and the sd of the per-seed gains.`,
);
// The bank's own effect: SESA-On against SESA-Off (the same solver), and against the warm start with the same primed
// bank; then each ablation against SESA of the same seeds, SESA without its bank against SSP and SESA-Off, and
// SESA-Off against SSP.
const bankRows: string[][] = [];
for (const [mode, baseline] of [
  ['SESA-On', 'SESA-Off'],
  ['SESA-On', 'base-On'],
  ['base-On', 'base'],
  ['SESA-On, cards in half the group', 'SESA-Off, cards in half the group'],
  ['SESA-On, cards in half the group', 'SESA-On'],
  ...modeOrder.filter((m) => m.includes(', cards scoring ≥ ')).map((m) => [m, m.startsWith('SESA-On, cards in half') ? 'SESA-Off, cards in half the group' : 'SESA-Off'] as const),
  // The ablations against SESA of the same run seeds, then the bank's own effect inside each ablation.
  ...(['no priming', 'no frontier', 'no distillation'] as const).flatMap((a) => [[`SESA-On, ${a}`, 'SESA-On'] as const, [`SESA-Off, ${a}`, 'SESA-Off'] as const]),
  ...(['no priming', 'no frontier', 'no distillation'] as const).map((a) => [`SESA-On, ${a}`, `SESA-Off, ${a}`] as const),
  // SESA without its bank: against SSP, frontier shaping alone; SESA-Off against it, what the bank did to the solver.
  ['SESA-Off, no bank', 'SSP'],
  ['SESA-Off', 'SESA-Off, no bank'],
  // SESA's solver against SSP's (a goal of the table: self-play with the bank's shaping trains a solver no worse).
  ['SESA-Off', 'SSP'],
] as const) {
  const g = gainOver(mode, baseline, 'eval');
  if (g) bankRows.push([`${mode} − ${baseline}`, gainText(g), g.perRun.map((x) => pct(x)).join(', '), String(g.runs)]);
}
const bankHeader = ['difference (eval worlds)', 'points [95% CI]', 'per run seed', 'runs'];
if (bankRows.length > 0) lines.push('', ...md(bankHeader, bankRows));

// The loop of each run, first half of its steps → second half: the valid-question rate and the p̂ of the
// valid questions (at 0, strictly between, at 1), read from the runs' metrics.jsonl, then pooled over seeds.
// A variant's run folder for a seed: in --out, or in a merged folder that gives at least one of its modes.
const runDirs = [{ dir: out, wanted: undefined as Set<string> | undefined }, ...mergeSpecs];
const runDirOf = (name: string, seed: number): string | undefined =>
  runDirs
    .filter(({ wanted }) => wanted === undefined || modesOf(name).some((m) => wanted.has(m.mode)))
    .map(({ dir }) => join(dir, `${name}-seed${seed}`))
    .find((d) => existsSync(join(d, 'metrics.jsonl')));
const loopLines = ['', '| run | valid questions | p̂ = 0 | 0 < p̂ < 1 | p̂ = 1 |', '|---|---|---|---|---|'];
const share = (n: number, of: number): string => `${((100 * n) / of).toFixed(0)}%`;
const validCell = (v: Pooled | undefined): string => (v === undefined ? '—' : `${share(v.count, v.of)} (${v.count}/${v.of})`);
const pHatCell = (p: PooledPHat | undefined, k: 'zero' | 'middle' | 'one'): string => (p === undefined ? '—' : `${share(p[k], p.of)} (${p[k]}/${p.of})`);
const loopRow = (label: string, [first, second]: [StepRow[], StepRow[]]): string => {
  const [p1, p2] = [pooledPHat(first), pooledPHat(second)];
  return `| ${label} | ${validCell(pooledValid(first))} → ${validCell(pooledValid(second))} | ${(['zero', 'middle', 'one'] as const).map((k) => `${pHatCell(p1, k)} → ${pHatCell(p2, k)}`).join(' | ')} |`;
};
const allVariants = [...new Set([...variantNames, ...merged.flatMap((m) => m.variants ?? [])])];
const runSeeds = [...new Set(rows.filter((r) => r.mode !== 'base' && r.mode !== 'base-On').map((r) => r.seed))].sort((a, b) => a - b);
for (const name of allVariants) {
  const pooled: [StepRow[], StepRow[]] = [[], []];
  let found = 0;
  for (const seed of runSeeds) {
    const dir = runDirOf(name, seed);
    if (dir === undefined) continue;
    const split = halves(readRun(dir).steps);
    loopLines.push(loopRow(`${name} seed ${seed}`, split));
    pooled[0].push(...split[0]);
    pooled[1].push(...split[1]);
    found++;
  }
  if (found > 1) loopLines.push(loopRow(`${name}, ${found} seeds pooled`, pooled));
}
if (loopLines.length > 3) lines.push(...loopLines, '', "first half of the steps → second half; p̂ of the valid questions, the solver group's success rate");

// The paper's Figure 3 at small scale (docs/world.md, "Figure 3 at small scale"), per variant and step, pooled
// over run seeds: the valid-question rate (SSP's extraction success), the solver batch (valid + reused of its
// slots), the solver's accuracy on the whole batch and on the step's new questions, the active cards (retrieved
// at least once) and, where the runs evaluated during training (--eval-every), the held-out EM off / on.
const fig3Lines: string[] = [];
for (const name of allVariants) {
  const runs = runSeeds.flatMap((seed) => {
    const dir = runDirOf(name, seed);
    return dir === undefined ? [] : [readRun(dir)];
  });
  if (runs.length === 0) continue;
  const stepNumbers = [...new Set(runs.flatMap((r) => [...r.steps.map((x) => x.step), ...r.evals.map((e) => e.step)]))].sort((a, b) => a - b);
  for (const step of stepNumbers) {
    const rowsAt = runs.flatMap((r) => r.steps.filter((x) => x.step === step));
    const sum = (f: (x: StepRow) => number | undefined): number => rowsAt.reduce((a, x) => a + (f(x) ?? 0), 0);
    // A count that older runs' metrics lack: "—" there, not 0.
    const counted = (f: (x: StepRow) => number | undefined): string => (rowsAt.some((x) => f(x) !== undefined) ? String(sum(f)) : '—');
    const emOf = (skills: 'on' | 'off'): string => {
      const ems = runs.flatMap((r) => r.evals.filter((e) => e.step === step && e.skills === skills).map((e) => e.em));
      return ems.length === 0 ? '—' : pct(mean(ems));
    };
    const rollouts = sum((x) => x.solverRollouts);
    const validRollouts = sum((x) => x.validQuestionRollouts);
    const cards = rowsAt.filter((x) => x.activeCards !== undefined);
    fig3Lines.push(
      `| ${name} | ${step} | ${rowsAt.length === 0 ? '—' : `${share(sum((x) => x.validQuestions), Math.max(1, sum((x) => x.proposals)))} (${sum((x) => x.validQuestions)}/${sum((x) => x.proposals)})`} | ` +
        `${rowsAt.length === 0 ? '—' : `${sum((x) => x.solverQuestions)} (${sum((x) => x.reusedQuestions)} reused, ${counted((x) => x.resampledQuestions)} resampled, ${sum((x) => x.emptySlots)} empty; ${counted((x) => x.informativeGroups)} with a signal)`} | ` +
        `${rollouts === 0 ? '—' : share(Math.round(sum((x) => (x.solverAccuracy ?? 0) * (x.solverRollouts ?? 0))), rollouts)} | ` +
        `${validRollouts === 0 ? '—' : share(Math.round(sum((x) => (x.validQuestionAccuracy ?? 0) * (x.validQuestionRollouts ?? 0))), validRollouts)} | ` +
        `${cards.length === 0 ? '—' : (cards.reduce((a, x) => a + (x.activeCards as number), 0) / cards.length).toFixed(1)} | ${emOf('off')} / ${emOf('on')} | ${runs.length} |`,
    );
  }
}
if (fig3Lines.length > 0) {
  lines.push(
    '',
    '| variant | step | valid questions | solver batch | solver accuracy (batch) | solver accuracy (new questions) | active cards | held-out EM off / on | runs |',
    '|---|---|---|---|---|---|---|---|---|',
    ...fig3Lines,
    '',
    "per step, pooled over run seeds (Figure 3 at small scale): counts summed over the runs; active cards = cards in the bank retrieved at least once, mean over runs; held-out EM = the runs' --eval-every evals (mean over runs), step 0 before training",
  );
}

// Card use in training (docs/method.md, "Card use"), pooled over each variant's runs: per category of learned
// card, how often a rollout with it in its prompt followed it, the mean reward of following and not, and the
// mean group-centered reward (the push GRPO gives); with the cards in half the group, the two halves contrasted.
const cardLines = ['', '| variant | category | pairs | followed | reward followed / not | centered reward followed / not |', '|---|---|---|---|---|---|'];
const splitLines: string[] = [];
const per = (sum: number, n: number): string => (n > 0 ? (sum / n).toFixed(2) : '—');
for (const name of allVariants) {
  if (VARIANTS[name]?.recipe !== 'sesa') continue;
  const total = emptyCardUse();
  for (const seed of runSeeds) {
    const dir = runDirOf(name, seed);
    if (dir === undefined) continue;
    for (const line of readFileSync(join(dir, 'metrics.jsonl'), 'utf8').split('\n')) {
      const m = line.trim() === '' ? undefined : (JSON.parse(line) as { cardUse?: CardUse });
      if (m?.cardUse) addCardUse(total, m.cardUse);
    }
  }
  for (const [category, c] of Object.entries(total.byCategory).sort(([a], [b]) => a.localeCompare(b))) {
    const not = c.pairs - c.followed;
    cardLines.push(`| ${name} | ${category} | ${c.pairs} | ${share(c.followed, Math.max(1, c.pairs))} | ${per(c.rewardFollowed, c.followed)} / ${per(c.rewardNotFollowed, not)} | ${per(c.centeredFollowed, c.followed)} / ${per(c.centeredNotFollowed, not)} |`);
  }
  const sp = total.split;
  if (sp) splitLines.push(`| ${name} | ${sp.groups} | ${per(sp.with.reward, sp.with.rollouts)} / ${per(sp.without.reward, sp.without.rollouts)} | ${per(sp.with.centered, sp.with.rollouts)} / ${per(sp.without.centered, sp.without.rollouts)} |`);
}
if (cardLines.length > 3) {
  lines.push(...cardLines, '', 'card use in training, pooled over run seeds: pairs of (solver rollout, learned card in its prompt); followed = at least as many distinct searches as the card has query templates; centered reward = R − mean R of the group');
}
if (splitLines.length > 0) {
  lines.push('', '| variant | split groups | reward with cards / without | centered reward with cards / without |', '|---|---|---|---|', ...splitLines);
}
// A folder taken in part (DIR@MODES) records only its whole compute time, which includes the runs of modes left
// out: its time is summed apart, so the table's time is not that of its rows alone.
const partSeconds = merged.reduce((a, m, i) => a + (mergeSpecs[i]?.wanted !== undefined ? (m.seconds ?? 0) : 0), 0);
const seconds = earlierSeconds + (Date.now() - started) / 1000 + merged.reduce((a, m) => a + (m.seconds ?? 0), 0);
const partNote = partSeconds > 0 ? ` (${((seconds - partSeconds) / 60).toFixed(0)} min in folders taken whole, and ${(partSeconds / 60).toFixed(0)} min in the folders taken in part, which includes their runs of the modes left out)` : '';
lines.push('', `Command: \`${commandLine()}\`${merged.length > 0 ? ` (merging ${merged.map((m) => `\`${m.command}\``).join(', ')})` : ''}; wall time ${(seconds / 60).toFixed(0)} min of compute in all${partNote}.`);
const table = `${lines.join('\n')}\n`;
writeFileAtomic(join(out, 'table.md'), table);
writeJsonAtomic(join(out, 'results.json'), {
  command: commandLine(),
  ...(merged.length > 0 ? { merged: merged.map((r) => r.command) } : {}),
  steps: merged[0]?.steps ?? steps,
  seeds: merged.length > 0 ? merged.flatMap((r) => r.seeds) : seeds,
  variants: allVariants,
  seconds,
  rows,
});
log(`\n${table}`);

// The report's comparison page: one eval folder per mode (each world's exact match averaged over run seeds, as
// `sesa-train eval` writes results), and the HTML report of the first SESA run with them and the tables.
const modeDirs: string[] = [];
for (const mode of modeOrder) {
  const mine = rows.filter((r) => r.mode === mode);
  if (mine.length === 0) continue;
  const byDataset = new Map<string, number[][]>();
  for (const r of mine) {
    r.ids.forEach((id, i) => {
      const ds = `${r.set === 'in-world' ? 'in-world ' : ''}${id.split('/')[0] as string}`;
      const perSeed = byDataset.get(ds) ?? [];
      byDataset.set(ds, perSeed);
      (perSeed[r.seed] ??= []).push(r.em[i] as number);
    });
  }
  const datasets = [...byDataset.entries()].map(([dataset, perSeed]) => {
    const runs = perSeed.filter((x) => x !== undefined);
    return { dataset, questions: runs[0]?.length ?? 0, em: mean(runs.map(mean)), f1: null, judged: null, answered: null, meanTurns: null, meanQueries: null };
  });
  const dir = join(out, 'modes', mode.replace(/[^A-Za-z0-9-]+/g, '_'));
  mkdirSync(dir, { recursive: true });
  const evalOnly = datasets.filter((d) => !d.dataset.startsWith('in-world'));
  writeJsonAtomic(join(dir, 'results.json'), { datasets, average: { em: mean(evalOnly.map((d) => d.em)), f1: null, judged: null, datasets: evalOnly.length, questions: evalOnly.reduce((a, d) => a + d.questions, 0) } });
  writeJsonAtomic(join(dir, 'settings.json'), { mode, model: modelDir, runSeeds: [...new Set(mine.map((r) => r.seed))], note: 'average: the evaluation worlds only' });
  modeDirs.push(dir);
}
const sesaRun = runDirOf('sesa', runSeeds[0] ?? 0);
if (sesaRun) {
  const tables: ReportTable[] = [{ id: 'ablations', title: 'Modes and ablations on the evaluation worlds', header, rows: tableRows, caption: 'EM in %, mean ± sd over run seeds; gain: paired bootstrap 95% interval over questions.' }];
  if (bankRows.length > 0) tables.push({ id: 'bank-effect', title: "The bank's own effect and the ablations", header: bankHeader, rows: bankRows });
  const { html } = renderReport({ run: readRun(sesaRun), evals: modeDirs.map(readEvalFolder), generatedAt: new Date().toISOString(), tables });
  writeFileAtomic(join(out, 'report.html'), html);
  log(`report: ${join(out, 'report.html')} (the run ${sesaRun}, ${modeDirs.length} modes compared)`);
}
