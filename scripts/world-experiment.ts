// The comparison in the world (docs/world.md): base (the warm start, no adapter; base-On with a new primed
// bank), SSP (a `--recipe ssp` run, evaluated without a bank), SESA-Off (a SESA run's solver without its bank)
// and SESA-On (with its bank), over several run seeds, on the demo world's held-out set and on the fresh
// world's. Writes table.md (the accuracy table, then each run's loop: valid-question rate and p̂ of the valid
// questions, first half of the steps → second half, per seed and pooled), results.json, one eval folder per
// mode (modes/) and report.html (the first SESA run with the modes compared) in --out.
//   npx tsx scripts/world-experiment.ts [--model demo] [--steps N (default: the world run's)] [--seeds 0,1,2] [--threads 2] [--out runs/world-experiment]
//     [--max-hops N (default: the world run's)] [--recipes ssp,sesa] [--set '{"solverLr":0.0005}'] [--curve-every N]
// --set overrides any setting of the runs (a JSON object of TrainConfig keys, as a config file holds them;
// the world run asks every seed for two hops, so one hop is --max-hops 1 --set '{"minHops":1}');
// --curve-every N also saves a checkpoint every N steps and evaluates the SESA solver there (off and on, the
// demo world only) into curve.json, to see where in a run the held-out accuracy moves.
// Seeds can run as separate processes (one wasm thread each on a 2-core machine), and their tables merged:
//   npx tsx scripts/world-experiment.ts --merge runs/x0,runs/x1,runs/x2 --out runs/world-experiment
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { renderReport } from '../src/report/html.js';
import { halves, type Pooled, type PooledPHat, pooledPHat, pooledValid } from '../src/report/pooled.js';
import { readEvalFolder, readRun, type StepRow } from '../src/report/run-data.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { loadPeftAdapter } from '../src/checkpoint/peft.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { parseConfigObject, RECIPE_PRESETS, TRAIN_DEFAULTS, type TrainConfig, validateConfig, WORLD_DEFAULTS } from '../src/selfplay/config.js';
import { primedBankOptions } from '../src/selfplay/priming.js';
import { train } from '../src/selfplay/trainer.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend } from '../src/tensor/backend.js';
import { WORLD_CARD_BUDGET } from '../src/world/demo-model.js';
import { evalWorld, type WorldEvalResult } from '../src/world/eval.js';
import { DEMO_MODEL_NAME, demoModelDir } from '../src/world/setup.js';
import { DEMO_WORLD, FRESH_WORLD, World } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: DEMO_MODEL_NAME },
    steps: { type: 'string', default: String(WORLD_DEFAULTS.steps) },
    seeds: { type: 'string', default: '0,1,2' },
    threads: { type: 'string', default: '2' },
    // Overrides of the world run's settings, for trying other settings with the same comparison.
    'max-hops': { type: 'string', default: String(WORLD_DEFAULTS.maxHops) },
    recipes: { type: 'string', default: 'ssp,sesa' },
    set: { type: 'string', default: '{}' },
    'curve-every': { type: 'string', default: '0' },
    merge: { type: 'string' },
    out: { type: 'string', default: 'runs/world-experiment' },
  },
});
const out = values.out as string;
const seeds = (values.seeds as string).split(',').map(Number);
const steps = Number(values.steps);
const threads = Number(values.threads);
if (!seeds.every(Number.isInteger) || !Number.isInteger(steps) || steps < 1) throw new Error('--seeds must be integers (0,1,2) and --steps a positive integer');
if (!Number.isInteger(threads) || threads < 1) throw new Error(`--threads must be a positive integer, got ${values.threads}`);
const maxHops = Number(values['max-hops']);
if (!Number.isInteger(maxHops) || maxHops < 1) throw new Error(`--max-hops must be a positive integer, got ${values['max-hops']}`);
const recipes = (values.recipes as string).split(',');
if (recipes.length === 0 || !recipes.every((r) => r === 'ssp' || r === 'sesa')) throw new Error(`--recipes must list ssp and/or sesa (ssp,sesa), got ${values.recipes}`);
let overrides: Partial<TrainConfig>;
try {
  overrides = parseConfigObject(JSON.parse(values.set as string), '--set');
} catch (e) {
  throw new Error(`--set must be a JSON object of run settings ('{"solverLr":0.0005}'): ${(e as Error).message}`);
}
const curveEvery = Number(values['curve-every']);
if (!Number.isInteger(curveEvery) || curveEvery < 0) throw new Error(`--curve-every must be a whole number of steps (0 = off), got ${values['curve-every']}`);
mkdirSync(out, { recursive: true });
const modelDir = values.model === DEMO_MODEL_NAME ? demoModelDir() : (values.model as string);
const log = (l: string): void => {
  process.stdout.write(`${l}\n`);
};

// base-On: the warm start with a new bank primed as a SESA run's starts (seed cards and priming cards):
// SESA-On's step-0 accuracy, what its bank after training is compared with.
type Mode = 'base' | 'base-On' | 'SSP' | 'SESA-Off' | 'SESA-On';
const rows: Array<{ mode: Mode; seed: number; world: 'demo' | 'fresh'; result: WorldEvalResult }> = [];
const evalSettings = { maxTurns: WORLD_DEFAULTS.maxTurns ?? 4, maxTokensPerTurn: WORLD_DEFAULTS.maxNewTokens ?? 64, maxResponseTokens: WORLD_DEFAULTS.maxResponseTokens ?? 768, passagesPerQuery: 3 };
const worlds = { demo: new World(DEMO_WORLD), fresh: new World(FRESH_WORLD) };

async function evaluate(mode: Mode, seed: number, adapterDir: string | undefined, bankPath: string | undefined, names: ReadonlyArray<'demo' | 'fresh'> = ['demo', 'fresh']): Promise<Array<{ world: 'demo' | 'fresh'; result: WorldEvalResult }>> {
  await initBackend('wasm', { threads });
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  const adapter = adapterDir ? loadPeftAdapter(adapterDir, 'solver', model.config) : undefined;
  const policy = new ModelPolicy('solver', model, tokenizer, adapter, { enableThinking: false });
  const results: Array<{ world: 'demo' | 'fresh'; result: WorldEvalResult }> = [];
  for (const name of names) {
    // The bank learned in the demo world is used as is in the fresh world too (cards name no entity).
    const bank = bankPath ? await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), create: false, config: { renderTokenBudget: WORLD_CARD_BUDGET } }) : undefined;
    const result = await evalWorld(policy, await worlds[name].searcher(), worlds[name].heldOut, { settings: evalSettings, ...(bank ? { bank } : {}) });
    await bank?.dispose();
    results.push({ world: name, result });
    log(`${mode} seed ${seed} ${name} world${adapterDir ? ` (${adapterDir})` : ''}: ${(100 * result.accuracy).toFixed(1)}% ${JSON.stringify(result.byHops)}`);
  }
  adapter?.dispose();
  model.dispose();
  return results;
}
async function evaluateRow(mode: Mode, seed: number, adapterDir: string | undefined, bankPath: string | undefined): Promise<void> {
  for (const r of await evaluate(mode, seed, adapterDir, bankPath)) rows.push({ mode, seed, ...r });
}
// --curve-every: the held-out accuracy of the SESA solver at its intermediate checkpoints (demo world).
const curve: Array<{ seed: number; step: number; mode: Mode; accuracy: number; byHops: WorldEvalResult['byHops'] }> = [];

// The settings this script sets itself per run (its own flags name the others): --set may not name them.
const fixedSettings = (seed: number, recipe: 'sesa' | 'ssp', dir: string): Partial<TrainConfig> => ({
  recipe,
  model: values.model as string,
  corpus: 'world',
  worldSeed: DEMO_WORLD.seed,
  steps,
  maxHops,
  seed,
  out: dir,
  saveEvery: curveEvery > 0 ? curveEvery : steps,
  evalEvery: 0,
  threads,
});
const clashes = Object.keys(overrides).filter((k) => k in fixedSettings(0, 'sesa', out));
if (clashes.length > 0) throw new Error(`--set: ${clashes.join(', ')} set by the script itself (use its flags: --steps, --max-hops, --seeds, --out, --threads, --curve-every, --recipes, --model)`);
const runConfig = (seed: number, recipe: 'sesa' | 'ssp', dir: string): TrainConfig =>
  validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...RECIPE_PRESETS[recipe], ...overrides, ...fixedSettings(seed, recipe, dir) } as TrainConfig);

interface Results {
  command: string;
  steps: number;
  seeds: number[];
  rows: typeof rows;
}
const merged: Results[] = [];
if (values.merge !== undefined) {
  // Rows of earlier runs of this script (each its results.json); base is kept once.
  for (const dir of values.merge.split(',')) {
    const file = join(dir, 'results.json');
    if (!existsSync(file)) throw new Error(`--merge: ${file} does not exist (run the script with --out ${dir} first)`);
    const r = JSON.parse(readFileSync(file, 'utf8')) as Results;
    if (!Array.isArray(r.rows) || typeof r.steps !== 'number') throw new Error(`--merge: ${file} has no rows/steps: not a results.json of this script`);
    if (merged.length > 0 && r.steps !== merged[0]?.steps) throw new Error(`--merge: ${file} ran ${r.steps} steps, ${merged[0]?.steps} in the first folder: the table would mix runs`);
    merged.push(r);
    rows.push(...r.rows.filter((row) => (row.mode !== 'base' && row.mode !== 'base-On') || !rows.some((x) => x.mode === row.mode && x.world === row.world)));
  }
} else {
  await evaluateRow('base', 0, undefined, undefined);
  if (recipes.includes('sesa')) {
    const config = runConfig(0, 'sesa', out);
    const bankPath = join(out, 'base-bank.json');
    rmSync(bankPath, { force: true });
    await (await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), ...primedBankOptions(config, modelDir, log), config: { renderTokenBudget: WORLD_CARD_BUDGET } })).dispose();
    await evaluateRow('base-On', 0, undefined, bankPath);
  }
}
for (const seed of values.merge !== undefined ? [] : seeds) {
  for (const recipe of recipes as Array<'ssp' | 'sesa'>) {
    const skills = recipe === 'sesa';
    const dir = join(out, `${recipe}-seed${seed}`);
    const summary = await train(runConfig(seed, recipe, dir), { log: () => undefined });
    log(`trained ${dir} (${summary.lastStep} steps)`);
    const ckpt = join(dir, 'checkpoints', `step-${summary.lastStep}`);
    if (skills) {
      for (let step = curveEvery; curveEvery > 0 && step < summary.lastStep; step += curveEvery) {
        const at = join(dir, 'checkpoints', `step-${step}`);
        for (const [mode, bank] of [['SESA-Off', undefined], ['SESA-On', join(at, 'skills.json')]] as const) {
          for (const { result } of await evaluate(mode, seed, join(at, 'solver'), bank, ['demo'])) curve.push({ seed, step, mode, accuracy: result.accuracy, byHops: result.byHops });
        }
        writeJsonAtomic(join(out, 'curve.json'), curve);
      }
      await evaluateRow('SESA-Off', seed, join(ckpt, 'solver'), undefined);
      await evaluateRow('SESA-On', seed, join(ckpt, 'solver'), join(ckpt, 'skills.json'));
    } else {
      await evaluateRow('SSP', seed, join(ckpt, 'solver'), undefined);
    }
  }
}

// Table: mean ± sd over seeds, per mode, per world, overall and per hop count.
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const meanSd = (xs: number[]): string => {
  const m = mean(xs);
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return `${(100 * m).toFixed(1)} ± ${(100 * sd).toFixed(1)}`;
};
const lines = ['| mode | world | all | 1-hop | 2-hop | 3-hop | runs |', '|---|---|---|---|---|---|---|'];
for (const mode of ['base', 'base-On', 'SSP', 'SESA-Off', 'SESA-On'] as const) {
  for (const world of ['demo', 'fresh'] as const) {
    const rs = rows.filter((r) => r.mode === mode && r.world === world).map((r) => r.result);
    if (rs.length === 0) continue;
    const hop = (h: string): string => meanSd(rs.map((r) => r.byHops[h]?.accuracy ?? 0));
    lines.push(`| ${mode} | ${world} | ${meanSd(rs.map((r) => r.accuracy))} | ${hop('1')} | ${hop('2')} | ${hop('3')} | ${rs.length} |`);
  }
}
// The loop of each run, first half of its steps → second half: the valid-question rate and the p̂ of the
// valid questions (at 0, strictly between, at 1), read from the runs' metrics.jsonl, then pooled over seeds.
const runDirs = [out, ...(values.merge?.split(',') ?? [])];
const loopLines = ['', '| run | valid questions | p̂ = 0 | 0 < p̂ < 1 | p̂ = 1 |', '|---|---|---|---|---|'];
// pooledValid and pooledPHat return undefined for an empty span, so `of` is never 0 here.
const pct = (n: number, of: number): string => `${((100 * n) / of).toFixed(0)}%`;
const validCell = (v: Pooled | undefined): string => (v === undefined ? '—' : `${pct(v.count, v.of)} (${v.count}/${v.of})`);
const pHatCell = (p: PooledPHat | undefined, k: 'zero' | 'middle' | 'one'): string => (p === undefined ? '—' : `${pct(p[k], p.of)} (${p[k]}/${p.of})`);
const loopRow = (label: string, [first, second]: [StepRow[], StepRow[]]): string => {
  const [p1, p2] = [pooledPHat(first), pooledPHat(second)];
  return `| ${label} | ${validCell(pooledValid(first))} → ${validCell(pooledValid(second))} | ${(['zero', 'middle', 'one'] as const).map((k) => `${pHatCell(p1, k)} → ${pHatCell(p2, k)}`).join(' | ')} |`;
};
for (const recipe of ['sesa', 'ssp'] as const) {
  const pooledHalves: [StepRow[], StepRow[]] = [[], []];
  let runsFound = 0;
  for (const seed of [...new Set(rows.map((r) => r.seed))].sort((a, b) => a - b)) {
    const dir = runDirs.map((d) => join(d, `${recipe}-seed${seed}`)).find((d) => existsSync(join(d, 'metrics.jsonl')));
    if (dir === undefined) continue;
    const split = halves(readRun(dir).steps);
    loopLines.push(loopRow(`${recipe.toUpperCase()} seed ${seed}`, split));
    pooledHalves[0].push(...split[0]);
    pooledHalves[1].push(...split[1]);
    runsFound++;
  }
  if (runsFound > 1) loopLines.push(loopRow(`${recipe.toUpperCase()}, ${runsFound} seeds pooled`, pooledHalves));
}
if (loopLines.length > 3) lines.push(...loopLines, '', 'first half of the steps → second half; p̂ of the valid questions, the solver group\'s success rate');
const table = `${lines.join('\n')}\n`;
writeFileAtomic(join(out, 'table.md'), table);
const command = `npx tsx scripts/world-experiment.ts ${process.argv.slice(2).join(' ')}`.trim();
writeJsonAtomic(
  join(out, 'results.json'),
  merged.length > 0
    ? { command, merged: merged.map((r) => r.command), steps: merged[0]?.steps, seeds: merged.flatMap((r) => r.seeds), rows }
    : { command, steps, seeds, rows },
);
log(table);

// The report's comparison page: one eval folder per mode (the mean over run seeds of each world's exact match
// and token F1, as `sesa-train eval` writes them), and the HTML report of the first SESA run with them.
const modeDirs: string[] = [];
for (const mode of ['base', 'base-On', 'SSP', 'SESA-Off', 'SESA-On'] as const) {
  const mine = rows.filter((r) => r.mode === mode);
  if (mine.length === 0) continue;
  const datasets = (['demo', 'fresh'] as const).map((world) => {
    const rs = mine.filter((r) => r.world === world).map((r) => r.result);
    return {
      dataset: `${world} world`,
      questions: rs[0]?.questions ?? 0,
      em: mean(rs.map((r) => r.accuracy)),
      // Rows of runs made before the eval scored F1 have none: the page then shows EM only.
      f1: rs.every((r) => typeof r.f1 === 'number') ? mean(rs.map((r) => r.f1)) : null,
      judged: null,
      answered: mean(rs.map((r) => r.answeredRate)),
      meanTurns: mean(rs.map((r) => r.meanTurns)),
      meanQueries: null,
    };
  });
  const dir = join(out, 'modes', mode);
  mkdirSync(dir, { recursive: true });
  const runSeeds = [...new Set(mine.map((r) => r.seed))];
  writeJsonAtomic(join(dir, 'results.json'), {
    datasets,
    average: { em: mean(datasets.map((d) => d.em)), f1: datasets.every((d) => d.f1 !== null) ? mean(datasets.map((d) => d.f1 as number)) : null, judged: null, datasets: datasets.length, questions: datasets.reduce((a, d) => a + d.questions, 0) },
  });
  writeJsonAtomic(join(dir, 'settings.json'), {
    model: modelDir,
    adapter: mode === 'base' || mode === 'base-On' ? null : `the ${mode === 'SSP' ? 'ssp' : 'sesa'} runs' solvers (mean over run seeds ${runSeeds.join(', ')})`,
    skills: mode === 'SESA-On' ? "the run's skills.json" : mode === 'base-On' ? 'a new primed bank (seed and priming cards)' : 'off',
    runSeeds,
  });
  modeDirs.push(dir);
}
const sesaRun = [out, ...(values.merge?.split(',') ?? [])].map((d) => join(d, `sesa-seed${rows.find((r) => r.mode === 'SESA-Off')?.seed ?? 0}`)).find((d) => existsSync(join(d, 'metrics.jsonl')));
if (sesaRun) {
  const { html } = renderReport({ run: readRun(sesaRun), evals: modeDirs.map(readEvalFolder), generatedAt: new Date().toISOString() });
  writeFileAtomic(join(out, 'report.html'), html);
  log(`report: ${join(out, 'report.html')} (the run ${sesaRun} and the comparison of ${modeDirs.length} modes)`);
}
