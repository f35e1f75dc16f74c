// Builds the world's warm-start model that `npx sesa-train` loads (docs/world.md):
//   1. expert transcripts (solver and proposer) from training worlds, never the demo or the fresh world;
//   2. the world tokenizer, trained on those transcripts' text and the skill cards;
//   3. a random-init Qwen3 of DEMO_MODEL_SPEC with that tokenizer, put through the copy drill
//      (src/world/copy-drill.ts) so that it can copy names;
//   4. `sft --full` on the transcripts, every token a target (f16 weights at the end);
//   5. greedy held-out accuracy of the result in the demo world and in the fresh world, with and without cards;
//   6. the model folder (config, weights, tokenizer, warm-start.json with the numbers and the command) in --out.
//
//   npx tsx scripts/make-demo-model.ts [--out models/demo] [--work runs/demo-model] [--worlds 16] [--epochs 2] ...
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SingleBar } from 'cli-progress';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { SFT_DEFAULTS } from '../src/sft/config.js';
import { runSft } from '../src/sft/trainer.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { DEMO_MODEL_SPEC, initDemoModel, trainWorldTokenizer, transcriptCards, WORLD_CARD_BUDGET } from '../src/world/demo-model.js';
import { evalWorld } from '../src/world/eval.js';
import { writeInductionInit } from '../src/world/induction-init.js';
import { COPY_DRILL_DEFAULTS, copyDrill, type CopyDrillResult } from '../src/world/copy-drill.js';
import { saveFullModel } from '../src/checkpoint/full-model.js';
import { loadModelConfig } from '../src/model/config.js';
import { DEFAULT_EXPERT_RATES } from '../src/world/experts.js';
import { buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS, writeTranscripts } from '../src/world/transcripts.js';
import { DEMO_WORLD, FRESH_WORLD, trainingWorldSeeds, World } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'models/demo' },
    work: { type: 'string', default: 'runs/demo-model' },
    worlds: { type: 'string', default: '12' },
    'solver-per-world': { type: 'string', default: String(DEFAULT_TRANSCRIPT_OPTIONS.solverPerWorld) },
    'proposer-per-world': { type: 'string', default: String(DEFAULT_TRANSCRIPT_OPTIONS.proposerPerWorld) },
    'card-rate': { type: 'string', default: '0.4' },
    // Copy exercises (src/world/exercises.ts): a window per solver turn, and first turns of further questions.
    'turn-windows': { type: 'boolean', default: true },
    'first-turns-per-world': { type: 'string', default: '200' },
    'drills-per-world': { type: 'string', default: '0' },
    'premature-rate': { type: 'string', default: String(DEFAULT_EXPERT_RATES.prematureRate) },
    'misread-rate': { type: 'string', default: String(DEFAULT_EXPERT_RATES.misreadRate) },
    'one-search-rate': { type: 'string', default: String(DEFAULT_EXPERT_RATES.oneSearchRate) },
    'short-form-rate': { type: 'string', default: String(DEFAULT_EXPERT_RATES.shortFormRate) },
    // The expert proposer's choices: varied (a random fact and wording) or canonical (the top-ranked fact, one wording).
    'proposer-style': { type: 'string', default: 'varied' },
    // Shares of 1-, 2- and 3-hop chains: the solver's questions and (unless --proposer-hop-mix) the proposer's seeds.
    'hop-mix': { type: 'string', default: DEFAULT_TRANSCRIPT_OPTIONS.hopMix.join(',') },
    'proposer-hop-mix': { type: 'string' },
    layers: { type: 'string', default: String(DEMO_MODEL_SPEC.layers) },
    hidden: { type: 'string', default: String(DEMO_MODEL_SPEC.hidden) },
    heads: { type: 'string', default: String(DEMO_MODEL_SPEC.heads) },
    intermediate: { type: 'string', default: String(DEMO_MODEL_SPEC.intermediate) },
    epochs: { type: 'string', default: '2' },
    'max-steps': { type: 'string', default: '0' },
    // Small batches: a model from scratch needs optimizer steps (to form the attention that copies names)
    // more than it needs large batches.
    'batch-size': { type: 'string', default: '4' },
    // One transcript per pass: attention's memory grows with the square of the longest transcript in a
    // pass, and a 4-transcript pass of ~800 tokens overflows the 4 GiB wasm heap.
    'micro-batch-size': { type: 'string', default: '32' },
    // …and at most this many padded tokens per pass: whole transcripts go one per pass, exercises together.
    'micro-batch-tokens': { type: 'string', default: '1024' },
    'loss-on': { type: 'string', default: 'all' },
    // induction: write a previous-token and an induction head into the init (src/world/induction-init.ts);
    // random: make-tiny's init, then the copy drill (--drill-steps).
    init: { type: 'string', default: 'induction' },
    'drill-steps': { type: 'string', default: String(COPY_DRILL_DEFAULTS.maxSteps) },
    lr: { type: 'string', default: '3e-3' },
    seed: { type: 'string', default: '0' },
    'eval-limit': { type: 'string', default: '0' },
    'save-every': { type: 'string', default: '50' },
    /** Fine-tune this model folder (weights and tokenizer, e.g. an earlier run's drilled/) instead of a new tokenizer, init and drill. */
    'start-from': { type: 'string' },
    /** Write the transcripts and exercises (--work/transcripts.jsonl) and stop: data for a later `sesa-train sft` stage. */
    'data-only': { type: 'boolean', default: false },
    /** With --eval-only: a JSON file listing the commands that made the evaluated model, recorded in warm-start.json. */
    stages: { type: 'string' },
    /** Evaluate and ship this model folder (e.g. a checkpoint's model/) instead of training one. */
    'eval-only': { type: 'string' },
    /** With --eval-only: the dtype the shipped weights are written in (the evaluation runs on those weights). */
    'ship-dtype': { type: 'string', default: 'f16' },
  },
});
const num = (k: keyof typeof values): number => {
  const v = Number(values[k]);
  if (!Number.isFinite(v)) throw new Error(`--${k} must be a number, got ${String(values[k])}`);
  return v;
};

const t0 = Date.now();
const log = (line: string): void => {
  process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}\n`);
};
const work = values.work as string;
const out = values.out as string;
mkdirSync(work, { recursive: true });
const seed = num('seed');
const rng = new Rng(seed);
const spec = { ...DEMO_MODEL_SPEC, layers: num('layers'), hidden: num('hidden'), heads: num('heads'), intermediate: num('intermediate') };
const rates = {
  ...DEFAULT_EXPERT_RATES,
  prematureRate: num('premature-rate'),
  misreadRate: num('misread-rate'),
  oneSearchRate: num('one-search-rate'),
  shortFormRate: num('short-form-rate'),
};

/** A --hop-mix value: three non-negative shares of 1-, 2- and 3-hop chains, not all zero. */
const hopMixFlag = (k: 'hop-mix' | 'proposer-hop-mix'): [number, number, number] | undefined => {
  const raw = values[k];
  if (raw === undefined) return undefined;
  const shares = String(raw).split(',').map(Number);
  if (shares.length !== 3 || shares.some((x) => !Number.isFinite(x) || x < 0) || shares.every((x) => x === 0)) {
    throw new Error(`--${k} must be three non-negative shares of 1-, 2- and 3-hop chains (e.g. 0.2,0.8,0), got ${String(raw)}`);
  }
  return shares as [number, number, number];
};
const hopMix = hopMixFlag('hop-mix') ?? DEFAULT_TRANSCRIPT_OPTIONS.hopMix;
const proposerHopMix = hopMixFlag('proposer-hop-mix');

const proposerStyle = values['proposer-style'];
if (proposerStyle !== 'varied' && proposerStyle !== 'canonical') throw new Error(`--proposer-style must be varied or canonical, got ${String(proposerStyle)}`);

// --eval-only evaluates and ships a model made elsewhere (its stages record how): no data, tokenizer or init.
const evalOnly = values['eval-only'];
let transcriptStats: Awaited<ReturnType<typeof buildTranscripts>>['stats'] | undefined;
let parameters = 0;
let shippedSpec: Record<string, number> = { ...spec };
let finalDir = evalOnly ?? join(work, 'sft', 'final');
let drill: CopyDrillResult | undefined;
if (evalOnly !== undefined) {
  const cfg = loadModelConfig(evalOnly);
  shippedSpec = { layers: cfg.numLayers, hidden: cfg.hiddenSize, heads: cfg.numHeads, kvHeads: cfg.numKvHeads, intermediate: cfg.intermediateSize, vocabSize: cfg.vocabSize, ropeTheta: cfg.ropeTheta };
  const dtype = values['ship-dtype'];
  if (dtype !== 'f32' && dtype !== 'f16' && dtype !== 'bf16') throw new Error(`--ship-dtype must be f32, f16 or bf16, got ${String(dtype)}`);
  // Rewrite the weights in the shipped dtype first, so that the numbers below are the shipped model's.
  await initBackend('wasm');
  const source = await CausalLM.load(evalOnly, { trainable: true });
  parameters = source.parameterCount();
  finalDir = join(work, `shipped-${dtype}`);
  rmSync(finalDir, { recursive: true, force: true });
  await saveFullModel(source, evalOnly, finalDir, dtype);
  source.dispose();
  log(`${evalOnly} rewritten in ${dtype}: ${finalDir}`);
} else {
  // 1. Transcripts.
  const worldSeeds = trainingWorldSeeds(num('worlds'));
  const worlds = worldSeeds.map((s) => new World({ seed: s, passages: DEMO_WORLD.passages }));
  const cards = await transcriptCards(join(work, 'transcript-bank.json'), worlds, num('card-rate'), 40, Rng.derive(seed, 1));
  const bar = new SingleBar({ format: 'transcripts [{bar}] {value}/{total}', hideCursor: true });
  bar.start(worldSeeds.length * (num('solver-per-world') + num('proposer-per-world')), 0);
  const set = await buildTranscripts({
    ...DEFAULT_TRANSCRIPT_OPTIONS,
    worldSeeds,
    solverPerWorld: num('solver-per-world'),
    proposerPerWorld: num('proposer-per-world'),
    turnWindows: values['turn-windows'] === true,
    firstTurnsPerWorld: num('first-turns-per-world'),
    readingDrillsPerWorld: num('drills-per-world'),
    rates,
    hopMix,
    ...(proposerHopMix ? { proposerHopMix } : {}),
    proposerStyle,
    seed,
    cardsFor: cards.cardsFor,
    onProgress: (d) => bar.update(d),
  });
  bar.stop();
  await cards.dispose();
  const dataFile = join(work, 'transcripts.jsonl');
  writeTranscripts(dataFile, set.transcripts);
  transcriptStats = set.stats;
  log(`transcripts: ${JSON.stringify(set.stats)} → ${dataFile}`);
  if (values['data-only'] === true) process.exit(0);

  // 2-3. Tokenizer and the random-init model.
  // The tokenizer learns from the episodes only: the exercises repeat their text.
  const bpe = trainWorldTokenizer(set.transcripts.filter((t) => t.meta.exercise === undefined), spec.vocabSize);
  const initDir = join(work, 'init');
  const made = initDemoModel(initDir, spec, bpe, seed);
  parameters = made.parameters;
  if (values.init !== 'induction' && values.init !== 'random') throw new Error(`--init must be induction or random, got ${String(values.init)}`);
  if (values.init === 'induction') writeInductionInit(initDir, seed);
  log(`model: ${(made.parameters / 1e6).toFixed(2)}M parameters (${JSON.stringify(spec)}) in ${initDir}`);

  // 3b. The copy drill (src/world/copy-drill.ts): induction heads before the transcripts.
  const drilledDir = join(work, 'drilled');
  if (values['start-from'] === undefined && values.init === 'random' && num('drill-steps') > 0) {
    await initBackend('wasm');
    const drillModel = await CausalLM.load(initDir, { trainable: true });
    drill = copyDrill(drillModel, { ...COPY_DRILL_DEFAULTS, maxSteps: num('drill-steps'), seed }, (step, loss) => log(`copy drill step ${step}: loss on the repeated span ${loss.toFixed(3)}`));
    rmSync(drilledDir, { recursive: true, force: true });
    await saveFullModel(drillModel, initDir, drilledDir, 'f32');
    drillModel.dispose();
    log(`copy drill: ${drill.steps} steps, ${drill.reachedTarget ? 'reached' : 'did not reach'} loss ${COPY_DRILL_DEFAULTS.targetLoss}`);
  }
  const sftStart = values['start-from'] ?? (drill ? drilledDir : initDir);

  // 4. SFT, full weights.
  const sftDir = join(work, 'sft');
  rmSync(sftDir, { recursive: true, force: true });
  const sftBar = new SingleBar({ format: 'sft [{bar}] {value}/{total} steps | loss {loss} | {tps} tok/s', hideCursor: true });
  const summary = await runSft(
    {
      ...SFT_DEFAULTS,
      model: sftStart,
      data: dataFile,
      out: sftDir,
      mode: 'full',
      epochs: num('epochs'),
      maxSteps: num('max-steps'),
      batchSize: num('batch-size'),
      microBatchSize: Math.min(num('micro-batch-size'), num('batch-size')),
      microBatchTokens: num('micro-batch-tokens'),
      lr: num('lr'),
      warmupSteps: Math.min(20, Math.max(1, Math.round(num('max-steps') / 8) || 20)),
      lrSchedule: 'cosine',
      seed,
      saveEvery: num('save-every'),
      saveDtype: 'f16',
      lossOn: values['loss-on'] === 'assistant' ? 'assistant' : 'all',
      backend: 'wasm',
    },
    {
      log: (l) => {
        if (!sftBar.isActive) log(l);
      },
      onStart: (info) => sftBar.start(info.totalSteps, info.firstStep - 1, { loss: '-', tps: '-' }),
      onStep: (r) => sftBar.update(r.step, { loss: r.loss.toFixed(3), tps: r.tokensPerSecond.toFixed(0) }),
    },
  );
  sftBar.stop();
  if (!summary.finalDir) throw new Error('sft stopped before its end');
  finalDir = summary.finalDir;
  log(`sft: loss ${summary.firstLoss?.toFixed(3)} → ${summary.lastLoss?.toFixed(3)} in ${summary.lastStep} steps`);
}

// 5. Held-out accuracy, greedy.
await initBackend('wasm');
const model = await CausalLM.load(finalDir);
const tokenizer = await loadTokenizer(finalDir);
const policy = new ModelPolicy('solver', model, tokenizer, undefined, { enableThinking: false });
const settings = { maxTurns: WORLD_DEFAULTS.maxTurns ?? 4, maxTokensPerTurn: WORLD_DEFAULTS.maxNewTokens ?? 64, maxResponseTokens: WORLD_DEFAULTS.maxResponseTokens ?? 768, passagesPerQuery: 3 };
const results: Record<string, unknown> = {};
for (const [name, opts] of [['demo', DEMO_WORLD], ['fresh', FRESH_WORLD]] as const) {
  const world = new World(opts);
  const limit = num('eval-limit');
  const questions = limit > 0 ? world.heldOut.slice(0, limit) : world.heldOut;
  const off = await evalWorld(policy, await world.searcher(), questions, { settings });
  const bankPath = join(work, `eval-bank-${name}.json`);
  rmSync(bankPath, { force: true });
  const bank = await SkillBank.open(bankPath, { embedder: new LexicalEmbedder(), seedCards: true, config: { renderTokenBudget: WORLD_CARD_BUDGET } });
  const on = await evalWorld(policy, await world.searcher(), questions, { settings, bank });
  await bank.dispose();
  results[name] = { world: opts, skillsOff: off, skillsOnSeedCards: on };
  log(`held-out ${name} world (seed ${opts.seed}): ${(off.accuracy * 100).toFixed(1)}% without cards, ${(on.accuracy * 100).toFixed(1)}% with the seed cards; by hops ${JSON.stringify(off.byHops)}`);
}
model.dispose();

// 6. The shipped folder.
mkdirSync(out, { recursive: true });
for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(finalDir, f), join(out, f));
writeJsonAtomic(join(out, 'warm-start.json'), {
  command: `npx tsx scripts/make-demo-model.ts ${process.argv.slice(2).join(' ')}`.trim(),
  seconds: Math.round((Date.now() - t0) / 1000),
  parameters,
  spec: shippedSpec,
  ...(transcriptStats !== undefined ? { rates, transcripts: transcriptStats } : {}),
  init: values.init,
  ...(values.stages !== undefined ? { stages: JSON.parse(readFileSync(values.stages, 'utf8')) as unknown } : {}),
  ...(drill ? { copyDrill: drill } : {}),
  ...(values['start-from'] !== undefined ? { startFrom: values['start-from'] } : {}),
  evalSettings: settings,
  heldOut: results,
});
log(`wrote ${out} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
