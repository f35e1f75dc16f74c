// The paired difference of one mode between two world-experiment tables that cannot merge (another step count):
// B − A on the evaluation worlds, each run paired with the run of the same seed, over the same questions, with the
// paired bootstrap 95% interval (docs/evaluation.md, "Intervals"). docs/world.md's "40 − 20 steps" rows.
//   npx tsx scripts/paired-diff.ts A/results.json MODE_A B/results.json MODE_B
import { readFileSync } from 'node:fs';
import { gainText, pairedBootstrap } from '../src/eval/bootstrap.js';

interface Row { mode: string; seed: number; set: string; ids: string[]; em: number[] }

const [fileA, modeA, fileB, modeB] = process.argv.slice(2);
if (!fileA || !modeA || !fileB || !modeB) throw new Error('usage: paired-diff.ts A/results.json MODE_A B/results.json MODE_B');
const rowsOf = (file: string, mode: string): Row[] => {
  const rows = (JSON.parse(readFileSync(file, 'utf8')) as { rows?: Row[] }).rows;
  if (!Array.isArray(rows)) throw new Error(`${file}: no rows (not a results.json of scripts/world-experiment.ts)`);
  const mine = rows.filter((r) => r.mode === mode && r.set === 'eval').sort((x, y) => x.seed - y.seed);
  if (mine.length === 0) throw new Error(`${file}: no evaluation-world rows of mode "${mode}"`);
  return mine;
};
const as = rowsOf(fileA, modeA);
const pairs = rowsOf(fileB, modeB).map((b) => {
  const a = as.find((r) => r.seed === b.seed);
  if (!a) throw new Error(`${fileA}: "${modeA}" has no run of seed ${b.seed}`);
  if (a.ids.join('\n') !== b.ids.join('\n')) throw new Error(`seed ${b.seed}: the two runs were scored on different questions`);
  return { a: a.em, b: b.em };
});
const g = pairedBootstrap(pairs);
console.log(`${modeB} (${fileB}) − ${modeA} (${fileA}): ${gainText(g)} over ${g.questions} questions; per run seed ${g.perRun.map((x) => (100 * x).toFixed(1)).join(', ')}`);
