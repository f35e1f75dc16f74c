// Writes the embedded synthetic encyclopedia (`--corpus encyclopedia`: corpus.jsonl, seeds.jsonl, heldout.jsonl,
// stats.json) to a folder, for inspection or for `--corpus FILE --seeds FILE`; another --seed or --passages
// writes another encyclopedia of the same generator:
//   npx tsx scripts/make-encyclopedia.ts OUT_DIR [--seed N] [--passages N]
import { parseArgs } from 'node:util';
import { writeSyntheticCorpus } from '../src/corpus/synthetic/index.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seed: { type: 'string', default: '0' },
    passages: { type: 'string', default: '2400' },
  },
});
const out = positionals[0];
const seed = Number(values.seed);
const passages = Number(values.passages);
if (!out || !Number.isInteger(seed) || !Number.isInteger(passages)) {
  process.stderr.write('usage: tsx scripts/make-encyclopedia.ts OUT_DIR [--seed N] [--passages N]  (integers)\n');
  process.exit(2);
}
try {
  const { stats } = writeSyntheticCorpus(out, { seed, passages });
  const h = (x: Record<string, number>) => `1-hop ${x['1']}, 2-hop ${x['2']}, 3-hop ${x['3']}`;
  process.stdout.write(
    `wrote ${out}: ${stats.passages} passages about ${stats.entities} entities (${stats.facts} facts)\n`
    + `  seeds.jsonl   ${stats.seeds.total} answer seeds (${h(stats.seeds.byHops)})\n`
    + `  heldout.jsonl ${stats.heldOut.total} questions (${h(stats.heldOut.byHops)})\n`,
  );
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
