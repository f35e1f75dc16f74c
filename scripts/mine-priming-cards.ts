// Memory priming as the paper does it (docs/world.md, "Mined priming"): short bootstrap self-play runs of the
// model in TRAINING worlds (never the self-play world, an evaluation world or the fresh world), whose failures
// the distiller turns into cards during the run; the distilled cards of every run, deduplicated with the
// bank's own admission rule, are written as priming cards (source 'mined') for `--priming-cards FILE`, or
// into the model folder as priming-cards.jsonl with --install, where every new bank of a run finds them.
//   npx tsx scripts/mine-priming-cards.ts [--worlds 1,2,3] [--steps 3] [--seed 0] [--threads 1] [--work runs/mining]
//     [--out runs/mining/priming-cards.jsonl] [--install]
// The runs take the world run's settings (WORLD_DEFAULTS) with every well-formed wrong answer queued
// (--queue-failures all), consolidation after every step, one solver epoch, and the template distiller,
// which reads only the failure records (docs/world.md, "LLM-free roles").
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cardsToJsonl, readBankFile } from '../src/skills/bank-file.js';
import { cardEmbeddingText, emptyStats, type SkillCard } from '../src/skills/card.js';
import { admit } from '../src/skills/consolidate.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { MODEL_PRIMING_FILE } from '../src/selfplay/priming.js';
import { TRAIN_DEFAULTS, type TrainConfig, validateConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { train } from '../src/selfplay/trainer.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { demoModelDir } from '../src/world/setup.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD, trainingWorldSeeds } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    worlds: { type: 'string', default: trainingWorldSeeds(3).join(',') },
    steps: { type: 'string', default: '3' },
    seed: { type: 'string', default: '0' },
    threads: { type: 'string', default: '1' },
    work: { type: 'string', default: 'runs/mining' },
    out: { type: 'string' },
    install: { type: 'boolean', default: false },
  },
});
const worlds = (values.worlds as string).split(',').map(Number);
const forbidden = new Set([DEMO_WORLD.seed, FRESH_WORLD.seed, ...EVAL_WORLD_SEEDS]);
for (const w of worlds) {
  if (!Number.isInteger(w) || w < 0) throw new Error(`--worlds: ${w} is not a world seed`);
  if (forbidden.has(w)) throw new Error(`--worlds: ${w} is the self-play world, the fresh world or an evaluation world; mining runs only in training worlds`);
}
const steps = Number(values.steps);
const seed = Number(values.seed);
const threads = Number(values.threads);
if (![steps, threads].every((x) => Number.isInteger(x) && x >= 1) || !Number.isInteger(seed)) throw new Error('--steps and --threads must be positive integers, --seed an integer');
const work = values.work as string;
const out = values.out ?? join(work, MODEL_PRIMING_FILE);
mkdirSync(work, { recursive: true });

const noPrimingCards = join(work, 'no-priming-cards.jsonl');
writeFileAtomic(noPrimingCards, '');
const mined: SkillCard[] = [];
const perWorld: Array<{ world: number; distilled: number; validQuestions: number; failuresQueued: number }> = [];
for (const w of worlds) {
  const dir = join(work, `world-${w}`);
  rmSync(dir, { recursive: true, force: true });
  // Bootstrap runs: every well-formed wrong answer is queued (not only the frontier's) and distilled after
  // every step; one solver epoch a step, since the runs are short and only their failures are kept.
  // The bootstrap banks start from the hand-written seed cards alone (as every bank did before mining): the
  // model folder's own priming cards, which this script writes, must not feed back into the next mining.
  const config = validateConfig({
    ...TRAIN_DEFAULTS,
    ...WORLD_DEFAULTS,
    worldSeed: w,
    // Each bootstrap run mines its own world (the world run trains in several: --training-worlds).
    trainingWorlds: 1,
    steps,
    seed,
    threads,
    out: dir,
    evalEvery: 0,
    saveEvery: steps,
    consolidateEvery: 1,
    consolidateMinPending: 1,
    queueFailures: 'all',
    solverEpochs: 1,
    priming: true,
    seedCards: true,
    primingCards: noPrimingCards,
  } as TrainConfig);
  const summary = await train(config, { log: () => undefined });
  const bank = readBankFile(join(dir, 'skills.json'));
  const distilled = bank.cards.filter((c) => c.source === 'distilled');
  mined.push(...distilled);
  const m = summary.metrics;
  perWorld.push({ world: w, distilled: distilled.length, validQuestions: m.reduce((a, x) => a + x.validQuestions, 0), failuresQueued: m.reduce((a, x) => a + x.failuresQueued, 0) });
  process.stdout.write(`world ${w}: ${distilled.length} distilled cards from ${perWorld.at(-1)?.failuresQueued} failures (${perWorld.at(-1)?.validQuestions} valid questions in ${steps} steps)\n`);
}

// Deduplicated as a bank admits distilled cards (the same rule, src/skills/consolidate.ts `admit`): a card
// enters only if its cosine to every card admitted before it is at most the embedder's threshold.
const embedder = new LexicalEmbedder();
const unique = [...new Map(mined.map((c) => [c.id, c])).values()];
const vectors = await embedder.embed(unique.map((c) => cardEmbeddingText(c)), 'query');
const decisions = admit(unique.map((c, i) => ({ fromKey: c.id, content: c, vector: vectors[i] as Float32Array })), [], embedder.info.dedupThreshold);
const kept: SkillCard[] = unique.filter((_, i) => decisions[i]?.admitted).map((c) => ({ ...c, source: 'mined', stats: emptyStats(), createdStep: 0, bankVersion: 0 }));

writeFileAtomic(out, cardsToJsonl(kept));
const by = (cat: string): number => kept.filter((c) => c.category === cat).length;
const record = { command: `npx tsx scripts/mine-priming-cards.ts ${process.argv.slice(2).join(' ')}`.trim(), worlds, steps, seed, perWorld, mined: mined.length, kept: kept.length, byCategory: Object.fromEntries([...new Set(kept.map((c) => c.category))].map((c) => [c, by(c)])) };
writeJsonAtomic(join(work, 'mining.json'), record);
process.stdout.write(`${kept.length} mined cards (of ${mined.length} distilled; ${JSON.stringify(record.byCategory)}) → ${out}\n`);
if (values.install) {
  const target = join(demoModelDir(), MODEL_PRIMING_FILE);
  if (existsSync(target)) process.stdout.write(`replacing ${target}\n`);
  writeFileAtomic(target, cardsToJsonl(kept));
  writeJsonAtomic(join(demoModelDir(), 'priming-cards.json'), record);
  process.stdout.write(`installed: every new bank of a --model demo run is primed with them (${target})\n`);
}
