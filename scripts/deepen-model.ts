// Appends identity-initialised decoder layers to a Qwen3 model folder (src/checkpoint/deepen.ts): the result
// computes the same logits as the source and trains with more depth. A stage of the world's warm start
// (docs/world.md, "Deepening the warm start").
//   npx tsx scripts/deepen-model.ts --from DIR --out DIR --add-layers 2 [--seed 4242] [--init-std 0.02]
import { parseArgs } from 'node:util';
import { DEEPEN_DEFAULTS, deepenCheckpoint } from '../src/checkpoint/deepen.js';

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    out: { type: 'string' },
    'add-layers': { type: 'string', default: '2' },
    seed: { type: 'string', default: String(DEEPEN_DEFAULTS.seed) },
    'init-std': { type: 'string', default: String(DEEPEN_DEFAULTS.initStd) },
  },
});
if (values.from === undefined || values.out === undefined) throw new Error('--from DIR and --out DIR are required');
const r = deepenCheckpoint(values.from, values.out, { addLayers: Number(values['add-layers']), seed: Number(values.seed), initStd: Number(values['init-std']) });
console.log(`${values.from} (${r.layersBefore} layers) → ${values.out} (${r.layersAfter} layers, ${r.addedParameters} new parameters)`);
