// Priming cards for the world (docs/world.md, "Memory priming in the world"): shape cards of the training
// worlds, of the kinds the template distiller writes and the warm-start transcripts carried, as JSONL for
// `--priming-cards FILE`. Written into a model folder as priming-cards.jsonl they prime every new bank of a run
// from that model; models/demo ships none (measured there: not adopted).
//   npx tsx scripts/make-priming-cards.ts [--worlds 48] [--cards 150] [--one-hop-cards 0] [--seed 21] [--out runs/priming-cards.jsonl]
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag as int } from './flags.js';
import { cardsToJsonl } from '../src/skills/bank-file.js';
import { writeFileAtomic } from '../src/util/atomic.js';
import { Rng } from '../src/util/rng.js';
import { worldShapeCards } from '../src/world/demo-model.js';
import { DEMO_WORLD, trainingWorldSeeds, World } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    worlds: { type: 'string', default: '48' },
    cards: { type: 'string', default: '150' },
    // One-hop shape cards besides: without them a one-hop question retrieves a multi-hop card of its relation.
    'one-hop-cards': { type: 'string', default: '0' },
    seed: { type: 'string', default: '21' },
    out: { type: 'string', default: 'runs/priming-cards.jsonl' },
  },
});
const worlds = trainingWorldSeeds(int('worlds', values.worlds, 1)).map((seed) => new World({ seed, passages: DEMO_WORLD.passages }));
const rng = new Rng(int('seed', values.seed, 0));
const cards = [...worldShapeCards(worlds, int('cards', values.cards, 1), rng), ...worldShapeCards(worlds, int('one-hop-cards', values['one-hop-cards'], 0), rng, { oneHop: true })];
mkdirSync(dirname(values.out as string), { recursive: true });
writeFileAtomic(values.out as string, cardsToJsonl(cards));
const by = (c: string): number => cards.filter((x) => x.category === c).length;
process.stdout.write(`${cards.length} shape cards (${by('decomposition')} decomposition, ${by('relations')} relations) from ${worlds.length} training worlds → ${values.out}\n`);
