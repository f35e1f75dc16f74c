// Memory priming as the paper does it (docs/world.md, "Mined priming"): short bootstrap self-play runs of the
// model in TRAINING worlds (never the self-play world, an evaluation world or the fresh world), whose failures
// the distiller turns into cards during the run; the distilled cards of every run, deduplicated with the
// bank's own admission rule, are written as priming cards (source 'mined') for `--priming-cards FILE`, or
// into the model folder as priming-cards.jsonl with --install, where every new bank of a run finds them.
//   npx tsx scripts/mine-priming-cards.ts [--model DIR] [--worlds 1,2,3] [--steps 3] [--seed 0] [--threads 1] [--work runs/mining]
//     [--out runs/mining/priming-cards.jsonl] [--install]
// --model mines with another model folder than the shipped warm start (scripts/warm-start.ts mines its new one).
// --questions N mines from failures on questions instead of bootstrap runs (a departure from the paper, whose
// mined cards come from a bootstrap run's proposer): in each world the model answers N generator-written
// questions (a third each of 1, 2 and 3 hops; greedy, the world run's eval settings, no cards), and each
// well-formed wrong answer becomes a failure record that the run's distiller turns into a card, as a
// consolidation would (docs/world.md, "Mined priming from questions"). A bootstrap run of this small proposer
// yields a few cards a world; the questions give many, of the question shapes the worlds' grammar has.
// The runs take the world run's settings (WORLD_DEFAULTS) with every well-formed wrong answer queued
// (--queue-failures all), consolidation after every step, one solver epoch, and the template distiller,
// which reads only the failure records (docs/world.md, "LLM-free roles").
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cardsToJsonl, readBankFile } from '../src/skills/bank-file.js';
import { cardEmbeddingText, contentId, emptyStats, type SkillCard } from '../src/skills/card.js';
import { admit, distillationPrompt, parseDistilledCard } from '../src/skills/consolidate.js';
import { resolveConfig } from '../src/skills/config.js';
import { questionKey } from '../src/skills/queue.js';
import type { EvalQuestion } from '../src/agent/environment.js';
import type { SynthFact } from '../src/corpus/synthetic/index.js';
import { evaluateSolver } from '../src/eval/runner.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { evalSettingsOf } from '../src/selfplay/step-settings.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { TemplateDistiller } from '../src/world/scripted-roles.js';
import { worldFor } from '../src/world/setup.js';
import { randomChain } from '../src/world/transcripts.js';
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
    model: { type: 'string' },
    worlds: { type: 'string', default: trainingWorldSeeds(3).join(',') },
    steps: { type: 'string', default: '3' },
    questions: { type: 'string', default: '0' },
    seed: { type: 'string', default: '0' },
    threads: { type: 'string', default: '1' },
    work: { type: 'string', default: 'runs/mining' },
    out: { type: 'string' },
    install: { type: 'boolean', default: false },
  },
});
if (values.install && values.model !== undefined) throw new Error('--install writes into models/demo, the shipped warm start; with --model, write the cards with --out instead');
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
let loaded: ModelPolicy | undefined;
const perWorld: Array<{ world: number; distilled: number; validQuestions: number; failuresQueued: number }> = [];
const questionsPerWorld = Number(values.questions);
if (!Number.isInteger(questionsPerWorld) || questionsPerWorld < 0) throw new Error(`--questions must be an integer ≥ 0, got ${values.questions}`);
for (const w of questionsPerWorld > 0 ? worlds : []) {
  const got = await mineFromQuestions(w, questionsPerWorld);
  mined.push(...got.cards);
  perWorld.push({ world: w, distilled: got.cards.length, validQuestions: questionsPerWorld, failuresQueued: got.failures });
  process.stdout.write(`world ${w}: ${got.cards.length} distilled cards from ${got.failures} wrong answers to ${questionsPerWorld} questions\n`);
}
for (const w of questionsPerWorld > 0 ? [] : worlds) {
  const dir = join(work, `world-${w}`);
  rmSync(dir, { recursive: true, force: true });
  // Bootstrap runs: every well-formed wrong answer is queued (not only the frontier's) and distilled after
  // every step; one solver epoch a step, since the runs are short and only their failures are kept.
  // The bootstrap banks start from the hand-written seed cards alone (as every bank did before mining): the
  // model folder's own priming cards, which this script writes, must not feed back into the next mining.
  const config = validateConfig({
    ...TRAIN_DEFAULTS,
    ...WORLD_DEFAULTS,
    ...(values.model !== undefined ? { model: values.model } : {}),
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

/** The cards the run's distiller writes for the model's well-formed wrong answers to `n` generated questions of world `w`. */
async function mineFromQuestions(w: number, n: number): Promise<{ cards: SkillCard[]; failures: number }> {
  const config = validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...(values.model !== undefined ? { model: values.model } : {}), threads } as TrainConfig);
  if (!loaded) {
    await initBackend('auto', { threads });
    const dir = values.model ?? demoModelDir();
    const model = await CausalLM.load(dir);
    loaded = new ModelPolicy('solver', model, await loadTokenizer(dir), undefined, { enableThinking: false });
  }
  const world = worldFor(w);
  const rng = Rng.derive(seed, w);
  const questions: EvalQuestion[] = [];
  for (let i = 0; questions.length < n && i < n * 10; i++) {
    const path = randomChain(world, 1 + (i % 3), rng);
    if (!path) continue;
    const question = world.phrase(path, rng);
    const golds = world.golden((path[path.length - 1] as SynthFact).object);
    if (!golds.some((g) => question.toLowerCase().includes(g.toLowerCase()))) questions.push({ id: `mine-${w}-${i}`, dataset: `world-${w}`, question, goldenAnswers: golds, hops: path.length });
  }
  const { records } = await evaluateSolver({ policy: loaded, searcher: await world.searcher() }, questions, evalSettingsOf(config));
  const distiller = new TemplateDistiller();
  const bankConfig = resolveConfig({});
  const cards: SkillCard[] = [];
  let failures = 0;
  for (const r of records) {
    if (r.em > 0 || r.prediction === null) continue;
    failures++;
    const evidence = r.retrieved.flat().map((id) => world.passage(id)).filter((p) => p !== undefined).map((p) => `${p.title}: ${p.text}`).join('\n').slice(0, config.failureEvidenceChars);
    const record = { question: r.question, target: r.golden_answers[0] as string, evidence, prediction: r.prediction, retrievedSkillIds: [], queries: r.queries, key: questionKey(r.question), count: 1, firstStep: 0, lastStep: 0 };
    const parsed = parseDistilledCard(await distiller.complete(distillationPrompt(record, [], bankConfig)));
    if (parsed.ok) cards.push({ id: contentId('d', parsed.content), ...parsed.content, source: 'distilled', stats: emptyStats(), createdStep: 0, bankVersion: 0 });
  }
  return { cards, failures };
}

// Deduplicated as a bank admits distilled cards (the same rule, src/skills/consolidate.ts `admit`): a card
// enters only if its cosine to every card admitted before it is at most the world run's threshold.
const embedder = new LexicalEmbedder();
const unique = [...new Map(mined.map((c) => [c.id, c])).values()];
const vectors = await embedder.embed(unique.map((c) => cardEmbeddingText(c)), 'query');
// The world run's threshold where it sets one (WORLD_DEFAULTS.dedupThreshold), else the embedder's.
const dedupThreshold = WORLD_DEFAULTS.dedupThreshold ?? embedder.info.dedupThreshold;
const decisions = admit(unique.map((c, i) => ({ fromKey: c.id, content: c, vector: vectors[i] as Float32Array })), [], dedupThreshold);
const kept: SkillCard[] = unique.filter((_, i) => decisions[i]?.admitted).map((c) => ({ ...c, source: 'mined', stats: emptyStats(), createdStep: 0, bankVersion: 0 }));

writeFileAtomic(out, cardsToJsonl(kept));
const by = (cat: string): number => kept.filter((c) => c.category === cat).length;
const record = { dedupThreshold, ...(questionsPerWorld > 0 ? { source: `the model's wrong answers to ${questionsPerWorld} generated questions a world` } : {}), command: `npx tsx scripts/mine-priming-cards.ts ${process.argv.slice(2).join(' ')}`.trim(), worlds, steps, seed, perWorld, mined: mined.length, kept: kept.length, byCategory: Object.fromEntries([...new Set(kept.map((c) => c.category))].map((c) => [c, by(c)])) };
writeJsonAtomic(join(work, 'mining.json'), record);
process.stdout.write(`${kept.length} mined cards (of ${mined.length} distilled; ${JSON.stringify(record.byCategory)}) → ${out}\n`);
if (values.install) {
  const target = join(demoModelDir(), MODEL_PRIMING_FILE);
  if (existsSync(target)) process.stdout.write(`replacing ${target}\n`);
  writeFileAtomic(target, cardsToJsonl(kept));
  writeJsonAtomic(join(demoModelDir(), 'priming-cards.json'), record);
  process.stdout.write(`installed: every new bank of a --model demo run is primed with them (${target})\n`);
}
