// Which retrieval floor (--skills-min-score) the bank should have, chosen on TRAINING worlds only (docs/world.md,
// "The bank on the evaluation worlds"): for trained SESA runs (their final checkpoints), the solver alone
// (SESA-Off) and with its bank at each floor (SESA-On), greedy, on the held-out questions of training worlds
// that neither self-play nor mining used; per floor the mean over runs and the paired bootstrap interval of its
// difference from SESA-Off and from no floor. The evaluation worlds are refused: a floor chosen here is then
// evaluated there once (scripts/world-experiment.ts --eval-floor S).
// --bank FILE gives every run that bank instead of its own; --bank primed a new bank primed as a world run's is
// at step 0 (the trained solver with the priming cards alone, without the cards its run distilled). --random-cards adds a control: every question gets
// k cards of the same bank drawn at random (a fixed draw per question text), instead of its top k, so that what
// the cards' presence costs can be told from what their retrieved content costs.
// A run given as DIR@N is evaluated at its step-N checkpoint instead of its last; --floors none evaluates only
// the bank without a floor.
//   npx tsx scripts/card-floor.ts --runs runs/abl/s0/sesa-seed0,runs/abl/s1/sesa-seed1 [--floors 0.05,0.1,0.15 | none] [--worlds 7,8,9] [--bank FILE] [--random-cards] [--threads 1] [--out runs/card-floor]
import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gainText, pairedBootstrap } from '../src/eval/bootstrap.js';
import { evaluateSets, type EvalSet } from '../src/eval/runner.js';
import { loadPeftAdapter } from '../src/checkpoint/peft.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { evalSettingsOf } from '../src/selfplay/step-settings.js';
import { writePrimedBank } from '../src/selfplay/priming.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { retrieveAtRandom } from '../src/skills/control-retrieval.js';
import { initBackend } from '../src/tensor/backend.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { demoModelDir, worldEvalSets } from '../src/world/setup.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    floors: { type: 'string', default: '0.05,0.1,0.15' },
    worlds: { type: 'string', default: '7,8,9' },
    bank: { type: 'string' },
    'random-cards': { type: 'boolean', default: false },
    threads: { type: 'string', default: '1' },
    out: { type: 'string', default: 'runs/card-floor' },
  },
});
if (values.runs === undefined) throw new Error('--runs DIR,DIR,... (trained SESA run folders) is required');
const runs = values.runs.split(',');
const floors = [-1, ...(values.floors === 'none' ? [] : (values.floors as string).split(',').map(Number))];
if (!floors.every((f) => f >= -1 && f <= 1)) throw new Error(`--floors must be cosines in [-1, 1], got ${values.floors}`);
const worlds = (values.worlds as string).split(',').map(Number);
for (const w of worlds) {
  if (!Number.isInteger(w) || EVAL_WORLD_SEEDS.includes(w) || w === FRESH_WORLD.seed || w === DEMO_WORLD.seed) {
    throw new Error(`--worlds: ${w} is not a training world other than the self-play world (the floor is chosen on training worlds only)`);
  }
}
const out = values.out as string;
mkdirSync(out, { recursive: true });
const config = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS } as TrainConfig;
const settings = evalSettingsOf(config);
await initBackend('wasm', { threads: Number(values.threads) });
const modelDir = demoModelDir();
const model = await CausalLM.load(modelDir);
const tokenizer = await loadTokenizer(modelDir);
const sets: EvalSet[] = [];
for (const w of worlds) sets.push(...(await worldEvalSets('world', w, undefined)));

/** The newest complete checkpoint of a run folder, or with DIR@N its step N's. */
function finalCheckpoint(spec: string): string {
  const at = /^(.*)@(\d+)$/.exec(spec);
  const run = at ? (at[1] as string) : spec;
  const dir = join(run, 'checkpoints');
  if (at) {
    const ckpt = join(dir, `step-${at[2]}`);
    if (!existsSync(join(ckpt, 'manifest.json'))) throw new Error(`--runs: ${run} has no complete checkpoint of step ${at[2]} (${ckpt})`);
    return ckpt;
  }
  const steps = existsSync(dir) ? readdirSync(dir).filter((n) => /^step-\d+$/.test(n) && existsSync(join(dir, n, 'manifest.json'))) : [];
  const last = steps.map((n) => Number(n.slice(5))).sort((a, b) => b - a)[0];
  if (last === undefined) throw new Error(`--runs: ${run} has no complete checkpoint`);
  return join(dir, `step-${last}`);
}

// --bank primed: a new bank primed as a world run's is at step 0 (the seed cards and the model's priming cards).
let bankFile = values.bank;
if (bankFile === 'primed') {
  mkdirSync(out, { recursive: true });
  bankFile = join(out, 'primed-bank.json');
  await writePrimedBank(bankFile, config, modelDir, (l) => process.stdout.write(`${l}\n`));
}

/** Per-question EM of every run, per mode: 'off', one per floor, and 'random' with --random-cards. */
const em = new Map<string, number[][]>();
for (const run of runs) {
  const ckpt = finalCheckpoint(run);
  const adapter = loadPeftAdapter(join(ckpt, 'solver'), 'solver', model.config);
  const policy = new ModelPolicy('solver', model, tokenizer, adapter, { enableThinking: false });
  try {
    const modes: Array<[string, number | undefined]> = [['off', undefined], ...floors.map((f): [string, number] => [`floor ${f}`, f])];
    if (values['random-cards']) modes.push(['random', -1]);
    for (const [mode, floor] of modes) {
      let bank: SkillBank | undefined;
      if (floor !== undefined) {
        // A copy: the checkpoint's bank is never opened for writing.
        const copy = join(out, 'bank.json');
        cpSync(bankFile ?? join(ckpt, 'skills.json'), copy);
        bank = await SkillBank.open(copy, { embedder: new LexicalEmbedder(), create: false, config: { renderTokenBudget: config.renderTokenBudget, topK: config.skillsTopK, minScore: floor } });
        if (mode === 'random') retrieveAtRandom(bank);
      }
      const { records } = await evaluateSets({ policy, ...(bank ? { bank } : {}) }, sets, settings);
      await bank?.dispose();
      const scores = records.map((r) => r.em);
      const list = em.get(mode) ?? [];
      list.push(scores);
      em.set(mode, list);
      process.stdout.write(`${run} ${mode}: ${((100 * scores.reduce((a, b) => a + b, 0)) / scores.length).toFixed(1)}% of ${scores.length}\n`);
    }
  } finally {
    adapter.dispose();
  }
}
model.dispose();

const pct = (xs: number[]): string => ((100 * xs.reduce((a, b) => a + b, 0)) / Math.max(1, xs.length)).toFixed(1);
const off = em.get('off') as number[][];
const noFloor = em.get('floor -1') as number[][];
const lines = [
  `| mode | EM per run (${off[0]?.length ?? 0} questions of training worlds ${worlds.join(', ')}) | − SESA-Off [95% CI] | − no floor [95% CI] |`,
  '|---|---|---|---|',
  `| SESA-Off | ${off.map(pct).join(', ')} | — | — |`,
];
const bankModes: Array<[string, string]> = floors.map((f) => [`floor ${f}`, `floor ${f === -1 ? 'none' : f}`]);
if (values['random-cards']) bankModes.push(['random', `${config.skillsTopK} random cards (control)`]);
for (const [mode, label] of bankModes) {
  const on = em.get(mode) as number[][];
  const vsOff = pairedBootstrap(on.map((b, i) => ({ a: off[i] as number[], b })), { seed: 1 });
  const vsNone = mode === 'floor -1' ? undefined : pairedBootstrap(on.map((b, i) => ({ a: noFloor[i] as number[], b })), { seed: 1 });
  lines.push(`| SESA-On, ${label} | ${on.map(pct).join(', ')} | ${gainText(vsOff)} | ${vsNone ? gainText(vsNone) : '—'} |`);
}
lines.push('', `Runs: ${runs.join(', ')}${values.bank ? `, each with the bank ${values.bank}` : ', each with its own final bank'}. Command: \`npx tsx scripts/card-floor.ts ${process.argv.slice(2).join(' ')}\``);
const table = `${lines.join('\n')}\n`;
writeFileAtomic(join(out, 'table.md'), table);
writeJsonAtomic(join(out, 'results.json'), { runs, worlds, floors, em: Object.fromEntries(em) });
process.stdout.write(`\n${table}`);
