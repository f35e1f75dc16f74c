// Grows a Qwen3 model folder to a larger shape, computing the same logits (src/checkpoint/grow.ts: widened,
// then deepened). A stage of the world's warm start (docs/world.md, "Growing the warm start").
//   npx tsx scripts/grow-model.ts --from DIR --out DIR --layers 8 --hidden 256 --heads 8 --kv-heads 4 --intermediate 768 [--seed 4243]
import { parseArgs } from 'node:util';
import { intFlag } from './flags.js';
import { growCheckpoint } from '../src/checkpoint/grow.js';

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    out: { type: 'string' },
    layers: { type: 'string' },
    hidden: { type: 'string' },
    heads: { type: 'string' },
    'kv-heads': { type: 'string' },
    intermediate: { type: 'string' },
    seed: { type: 'string', default: '4243' },
  },
});
if (values.from === undefined || values.out === undefined) throw new Error('--from DIR and --out DIR are required');
const to = {
  layers: intFlag('layers', values.layers, 1),
  hidden: intFlag('hidden', values.hidden, 1),
  heads: intFlag('heads', values.heads, 1),
  kvHeads: intFlag('kv-heads', values['kv-heads'], 1),
  intermediate: intFlag('intermediate', values.intermediate, 1),
};
const r = growCheckpoint(values.from, values.out, to, intFlag('seed', values.seed, 0));
console.log(`${values.from} ${JSON.stringify(r.from)} (${(r.parametersBefore / 1e6).toFixed(2)}M) → ${values.out} ${JSON.stringify(r.to)} (${(r.parametersAfter / 1e6).toFixed(2)}M)`);
