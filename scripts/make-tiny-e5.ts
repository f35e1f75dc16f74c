// Generates a tiny random encoder ONNX model folder with the E5 interface (src/skills/tiny-e5.ts), for tests,
// benchmarks and the offline demo:  npx tsx scripts/make-tiny-e5.ts OUT_DIR [--hidden 32] [--seed 1234]
// [--tokenizer DIR | --built-tokenizer]
import { parseArgs } from 'node:util';
import { writeTinyE5 } from '../src/skills/tiny-e5.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    hidden: { type: 'string', default: '32' },
    seed: { type: 'string', default: '1234' },
    tokenizer: { type: 'string' },
    'built-tokenizer': { type: 'boolean', default: false },
  },
});
const out = positionals[0];
if (!out) {
  process.stderr.write('usage: tsx scripts/make-tiny-e5.ts OUT_DIR [--hidden N] [--seed N] [--tokenizer DIR | --built-tokenizer]\n');
  process.exit(2);
}
const r = writeTinyE5(out, {
  hidden: Number(values.hidden),
  seed: Number(values.seed),
  tokenizerDir: values['built-tokenizer'] ? null : values.tokenizer,
});
process.stdout.write(`wrote ${r.dir}: vocab ${r.vocabSize}, hidden ${r.hidden}, tokenizer ${r.tokenizer}\n`);
