// The paired difference B − A of two sets of runs over the same questions, each run paired with the run of the same
// seed, with the paired bootstrap 95% interval (docs/evaluation.md, "Intervals"). Two forms:
// - one mode of two world-experiment tables that cannot merge (another step count), on the evaluation worlds
//   (docs/world.md's "40 − 20 steps" rows):
//     npx tsx scripts/paired-diff.ts A/results.json MODE_A B/results.json MODE_B
// - the in-training evals of training-world probes (--eval-every; docs/world.md's probe rows): each side is a
//   comma-separated list of world-experiment --out folders of one seed each, in the same seed order, then the step
//   and off|on (the bank in the eval); STEP_A:STEP_B compares two steps (the same folders: a run's drift), and
//   off:on the solver without and with its bank:
//     npx tsx scripts/paired-diff.ts --evals runs/a-s0,runs/a-s1 runs/b-s0,runs/b-s1 40 off
//     npx tsx scripts/paired-diff.ts --evals runs/a-s0,runs/a-s1 runs/a-s0,runs/a-s1 0:60 off
//     npx tsx scripts/paired-diff.ts --evals runs/a-s0,runs/a-s1 runs/a-s0,runs/a-s1 60 off:on
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gainText, pairedBootstrap } from '../src/eval/bootstrap.js';
import { readPredictionScores } from '../src/eval/held-out.js';

interface Scores { label: string; seed: number; ids: string[]; em: number[] }

const rowsOf = (file: string, mode: string): Scores[] => {
  const rows = (JSON.parse(readFileSync(file, 'utf8')) as { rows?: Array<Scores & { mode: string; set: string }> }).rows;
  if (!Array.isArray(rows)) throw new Error(`${file}: no rows (not a results.json of scripts/world-experiment.ts)`);
  const mine = rows.filter((r) => r.mode === mode && r.set === 'eval').sort((x, y) => x.seed - y.seed);
  if (mine.length === 0) throw new Error(`${file}: no evaluation-world rows of mode "${mode}"`);
  return mine.map((r) => ({ ...r, label: `${mode} seed ${r.seed}` }));
};

/** The eval of one probe folder (its one run, `<variant>-seed<N>/eval/step-S-skills-X.jsonl`) at a step. */
const evalOf = (folder: string, step: string, skills: string): Scores => {
  const runs = existsSync(folder) ? readdirSync(folder).filter((d) => /-seed\d+$/.test(d) && existsSync(join(folder, d, 'eval'))) : [];
  if (runs.length !== 1) throw new Error(`${folder}: expected one run folder (<variant>-seed<N>) with evals, found ${runs.length}`);
  const run = runs[0] as string;
  const file = join(folder, run, 'eval', `step-${step}-skills-${skills}.jsonl`);
  if (!existsSync(file)) throw new Error(`${file} does not exist: did the run evaluate at step ${step} (--eval-every)?`);
  const scores = readPredictionScores(file);
  return { label: join(folder, run), seed: Number(run.replace(/.*-seed/, '')), ids: [...scores.keys()], em: [...scores.values()] };
};

const args = process.argv.slice(2);
let as: Scores[];
let bs: Scores[];
let what: string;
if (args[0] === '--evals') {
  const [, a, b, step, skills] = args;
  const usage = 'usage: paired-diff.ts --evals A_FOLDERS B_FOLDERS STEP|STEP_A:STEP_B off|on|off:on';
  if (!a || !b || !step || !skills) throw new Error(usage);
  const [stepA = '', stepB = stepA] = step.split(':');
  const [skillsA = '', skillsB = skillsA] = skills.split(':');
  if (![skillsA, skillsB].every((x) => x === 'off' || x === 'on')) throw new Error(`${usage}: the bank is off or on, got "${skills}"`);
  as = a.split(',').map((f) => evalOf(f, stepA, skillsA));
  bs = b.split(',').map((f) => evalOf(f, stepB, skillsB));
  if (as.length !== bs.length) throw new Error(`--evals: ${as.length} folders against ${bs.length}: give one of each per seed`);
  what = `${b} at step ${stepB}, bank ${skillsB} − ${a} at step ${stepA}, bank ${skillsA}`;
} else {
  const [fileA, modeA, fileB, modeB] = args;
  if (!fileA || !modeA || !fileB || !modeB) throw new Error('usage: paired-diff.ts A/results.json MODE_A B/results.json MODE_B (or --evals A_FOLDERS B_FOLDERS STEP off|on)');
  const byA = rowsOf(fileA, modeA);
  bs = rowsOf(fileB, modeB);
  as = bs.map((b) => {
    const a = byA.find((r) => r.seed === b.seed);
    if (!a) throw new Error(`${fileA}: "${modeA}" has no run of seed ${b.seed}`);
    return a;
  });
  what = `${modeB} (${fileB}) − ${modeA} (${fileA})`;
}
const pairs = bs.map((b, i) => {
  const a = as[i] as Scores;
  if (a.seed !== b.seed) throw new Error(`${a.label} is paired with ${b.label}: give the folders in the same seed order`);
  if (a.ids.join('\n') !== b.ids.join('\n')) throw new Error(`${a.label} and ${b.label} were scored on different questions`);
  return { a: a.em, b: b.em };
});
const g = pairedBootstrap(pairs);
const pct = (xs: number[]): string => (100 * xs.reduce((s, x) => s + x, 0) / xs.length).toFixed(1);
console.log(`${what}: ${gainText(g)} over ${g.questions} questions; A ${as.map((s) => pct(s.em)).join(', ')}, B ${bs.map((s) => pct(s.em)).join(', ')}; per run seed ${g.perRun.map((x) => (100 * x).toFixed(1)).join(', ')}`);
