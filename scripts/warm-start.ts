// The world's warm-start pipeline in one resumable script (docs/world.md, "The card-literate warm start"):
//   grow      the seed model (--from, the 1.44M warm start of models/demo as of 2026-12-07) grown to --shape
//             (src/checkpoint/grow.ts: the same logits, more capacity);
//   data      expert transcripts of the training worlds (src/world/transcripts.ts): solver episodes whose prompts
//             carry card blocks as a run renders them (src/world/card-blocks.ts: retrieved, random, of another
//             shape, none; the expert follows only a card that fits the question's shape), proposer episodes
//             whose multi-hop questions need their hops (the first-search check), copy exercises and reading drills;
//   sft       full-weight SFT on them (src/sft/trainer.ts), resumable from its last checkpoint;
//   ship      the final weights rewritten in --ship-dtype (the numbers after this are the shipped weights');
//   mine      priming cards mined from the shipped model's own failures on generated questions of training worlds
//             (scripts/mine-priming-cards.ts --questions), written into the shipped folder;
//   controls  the step-0 card controls on training worlds (scripts/card-controls.ts).
// Each stage records itself in WORK/stages.json when done and is skipped on a rerun, so the same command run
// again after a stop (a session's end, SIGTERM, a crash) continues where it stopped: SFT resumes from its last
// checkpoint, an unfinished stage starts over. The options are saved in WORK/pipeline.json on the first run; a
// rerun with other options is refused. --install copies the shipped folder to --out (models/demo).
//   npx tsx scripts/warm-start.ts --work runs/warm-start/1.4m [--shape 1.4m] [--sft-steps 1214] [--until sft]
//     [--install --out models/demo]
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag } from './flags.js';
import { saveFullModel } from '../src/checkpoint/full-model.js';
import { growCheckpoint, type GrowShape } from '../src/checkpoint/grow.js';
import { listenForStop } from '../src/cli/stop-signals.js';
import { CausalLM } from '../src/model/qwen3.js';
import { ModelPolicy } from '../src/model/policy.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { MODEL_PRIMING_FILE } from '../src/selfplay/priming.js';
import { SFT_DEFAULTS } from '../src/sft/config.js';
import { runSft } from '../src/sft/trainer.js';
import { cardsFromJsonl } from '../src/skills/bank-file.js';
import { initBackend, parseBackendChoice } from '../src/tensor/backend.js';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { Rng } from '../src/util/rng.js';
import { cardBlockMixText, cardBlocks, DEFAULT_BLOCK_SIZE_SHARES, DEFAULT_CARD_BLOCK_MIX, distillerShapeCards, parseBlockSizeShares, parseCardBlockMix } from '../src/world/card-blocks.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { WARM_START_SHAPES } from '../src/world/demo-model.js';
import { evalWorld } from '../src/world/eval.js';
import { DEFAULT_EXPERT_RATES } from '../src/world/experts.js';
import { buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS, writeTranscripts } from '../src/world/transcripts.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD, trainingWorldSeeds, World } from '../src/world/world.js';

const STAGES = ['grow', 'data', 'sft', 'ship', 'mine', 'controls'] as const;
type Stage = (typeof STAGES)[number];

const OPTIONS = {
  work: { type: 'string' },
  from: { type: 'string', default: 'models/demo-seed' },
  shape: { type: 'string', default: '1.4m' },
  seed: { type: 'string', default: '31' },
  // data
  worlds: { type: 'string', default: '48' },
  'solver-per-world': { type: 'string', default: '80' },
  'proposer-per-world': { type: 'string', default: '40' },
  'first-turns-per-world': { type: 'string', default: '30' },
  'drills-per-world': { type: 'string', default: '50' },
  'proposer-hop-mix': { type: 'string', default: '0.25,0.75,0' },
  'card-mix': { type: 'string', default: cardBlockMixText(DEFAULT_CARD_BLOCK_MIX) },
  'bank-cards': { type: 'string', default: '800' },
  /** Shares of the card blocks that hold 1, 2 and 3 cards (src/world/card-blocks.ts). */
  'block-sizes': { type: 'string', default: DEFAULT_BLOCK_SIZE_SHARES.join(',') },
  /** yes: the copy windows of an episode with cards open with its card block (src/world/exercises.ts); no: the question alone. */
  'windows-with-cards': { type: 'string', default: 'yes' },
  // sft
  'sft-steps': { type: 'string', default: '1214' },
  'batch-size': { type: 'string', default: '16' },
  lr: { type: 'string', default: '1e-3' },
  'micro-batch-tokens': { type: 'string', default: '1024' },
  'save-every': { type: 'string', default: '50' },
  // ship, mine, controls
  'ship-dtype': { type: 'string', default: 'f16' },
  'mine-worlds': { type: 'string', default: '1,2,3,4,5,6' },
  'mine-questions': { type: 'string', default: '300' },
  'control-worlds': { type: 'string', default: '8,9,10,11,12,13' },
  backend: { type: 'string', default: 'native' },
  threads: { type: 'string', default: '2' },
  /** Stop after this stage (the rest run on a later call). */
  until: { type: 'string', default: 'controls' },
  install: { type: 'boolean', default: false },
  out: { type: 'string', default: 'models/demo' },
} as const;
const { values } = parseArgs({ options: OPTIONS });
if (values.work === undefined) throw new Error('--work DIR (the pipeline folder; the same folder resumes) is required');
const work = values.work;
const until = values.until as Stage;
if (!STAGES.includes(until)) throw new Error(`--until must be one of ${STAGES.join(', ')}, got ${values.until}`);
const shape: GrowShape | undefined = WARM_START_SHAPES[values.shape as string];
if (!shape) throw new Error(`--shape must be one of ${Object.keys(WARM_START_SHAPES).join(', ')}, got ${values.shape}`);
mkdirSync(work, { recursive: true });

// The options that decide what is built; how a call runs (threads, --until, --install) may change between calls.
const RUN_ONLY = new Set(['work', 'threads', 'until', 'install', 'out', 'backend']);
const options = Object.fromEntries(Object.entries(values).filter(([k]) => !RUN_ONLY.has(k)));
const optionsFile = join(work, 'pipeline.json');
/** What a folder started before an option existed was built with: blocks always of the top 3. */
const BEFORE_ADDED: Record<string, unknown> = { 'block-sizes': '0,0,1' };
if (existsSync(optionsFile)) {
  // An option added to this script after the folder was started reads as its default there, or as the value
  // that the folder's build had in effect where the default is another (BEFORE_ADDED).
  const defaults = parseArgs({ args: [], options: OPTIONS }).values as Record<string, unknown>;
  const saved = { ...defaults, ...BEFORE_ADDED, ...(JSON.parse(readFileSync(optionsFile, 'utf8')) as { options: Record<string, unknown> }).options };
  for (const k of RUN_ONLY) delete saved[k];
  const changed = Object.keys({ ...saved, ...options }).filter((k) => JSON.stringify(saved[k]) !== JSON.stringify(options[k]));
  if (changed.length > 0) throw new Error(`${optionsFile}: this folder was started with other options (${changed.map((k) => `--${k} ${JSON.stringify(saved[k])}, now ${JSON.stringify(options[k])}`).join('; ')}); rerun with the saved ones or use another --work`);
} else writeJsonAtomic(optionsFile, { command: `npx tsx scripts/warm-start.ts ${process.argv.slice(2).join(' ')}`, options, shape });

interface StageRecord {
  stage: Stage;
  seconds: number;
  finishedAt: string;
  result: unknown;
}
const stagesFile = join(work, 'stages.json');
const done: StageRecord[] = existsSync(stagesFile) ? (JSON.parse(readFileSync(stagesFile, 'utf8')) as StageRecord[]) : [];
const t0 = Date.now();
const log = (line: string): void => {
  process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}\n`);
};
const num = (k: string, min = 0): number => intFlag(k, values[k as keyof typeof values] as string, min);
const yesNo = (k: string): boolean => {
  const v = values[k as keyof typeof values];
  if (v !== 'yes' && v !== 'no') throw new Error(`--${k} must be yes or no, got ${String(v)}`);
  return v === 'yes';
};
const seed = num('seed');
// Mining and the controls read training worlds only; refused here, before any stage runs, not when they come up.
for (const k of ['mine-worlds', 'control-worlds'] as const) {
  for (const w of (values[k] as string).split(',').map((x) => intFlag(k, x, 1))) {
    if (EVAL_WORLD_SEEDS.includes(w) || w === FRESH_WORLD.seed || w === DEMO_WORLD.seed) throw new Error(`--${k}: ${w} is not a training world other than the self-play world (mining and the controls read training worlds only)`);
  }
}
const paths = {
  grown: join(work, 'grown'),
  data: join(work, 'transcripts.jsonl'),
  bank: join(work, 'transcript-bank.json'),
  sft: join(work, 'sft'),
  shipped: join(work, 'shipped'),
  mining: join(work, 'mining'),
  controls: join(work, 'controls'),
};
const stop = listenForStop('stopping after the next checkpoint (rerun the same command to continue)', () => `the last checkpoint in ${paths.sft} is kept`);

async function run(stage: Stage, body: () => Promise<unknown>): Promise<boolean> {
  if (done.some((d) => d.stage === stage)) {
    log(`${stage}: done before (${stagesFile})`);
    return true;
  }
  const start = Date.now();
  log(`${stage}: starting`);
  const result = await body();
  if (result === undefined) return false;
  done.push({ stage, seconds: Math.round((Date.now() - start) / 1000), finishedAt: new Date().toISOString(), result });
  writeJsonAtomic(stagesFile, done);
  log(`${stage}: done in ${Math.round((Date.now() - start) / 1000)} s: ${JSON.stringify(result).slice(0, 400)}`);
  return true;
}

/** Runs a stage, then stops the script after --until or when a stage did not finish (a stop signal). */
async function stageThenMaybeStop(stage: Stage, body: () => Promise<unknown>): Promise<void> {
  const finished = await run(stage, body);
  if (!finished) {
    log(`${stage}: stopped before its end; rerun the same command to continue`);
    process.exit(0);
  }
  // After the last stage the script goes on to --install.
  if (stage === until && stage !== STAGES[STAGES.length - 1]) {
    log(`stopped after ${stage} (--until); rerun without --until (or with a later one) to continue`);
    process.exit(0);
  }
}

await stageThenMaybeStop('grow', async () => {
  rmSync(paths.grown, { recursive: true, force: true });
  return growCheckpoint(values.from as string, paths.grown, shape, seed);
});

await stageThenMaybeStop('data', async () => {
  const worldSeeds = trainingWorldSeeds(num('worlds', 1));
  const worlds = worldSeeds.map((s) => new World({ seed: s, passages: DEMO_WORLD.passages }));
  const primingFile = join(values.from as string, MODEL_PRIMING_FILE);
  const priming = existsSync(primingFile) ? cardsFromJsonl(readFileSync(primingFile, 'utf8'), primingFile) : [];
  // A distiller card can be one of the priming cards word for word (mining writes the distiller's cards): kept once.
  const cards = [...new Map([...priming, ...distillerShapeCards(worlds, num('bank-cards'), Rng.derive(seed, 11))].map((c) => [c.id, c])).values()];
  const blocks = await cardBlocks(paths.bank, cards, WORLD_DEFAULTS.renderTokenBudget as number, parseCardBlockMix(values['card-mix'] as string, '--card-mix'), parseBlockSizeShares(values['block-sizes'] as string, '--block-sizes'));
  const mix = (values['proposer-hop-mix'] as string).split(',').map(Number) as [number, number, number];
  const set = await buildTranscripts({
    ...DEFAULT_TRANSCRIPT_OPTIONS,
    worldSeeds,
    solverPerWorld: num('solver-per-world'),
    proposerPerWorld: num('proposer-per-world'),
    turnWindows: true,
    windowsKeepCards: yesNo('windows-with-cards'),
    firstTurnsPerWorld: num('first-turns-per-world'),
    readingDrillsPerWorld: num('drills-per-world'),
    // The proposer's error rates of the shipped warm start's later stages (docs/world.md, "Measured: the warm start").
    rates: { ...DEFAULT_EXPERT_RATES, oneSearchRate: 0.1, shortFormRate: 0.1 },
    proposerHopMix: mix,
    proposerStyle: 'canonical',
    proposerNeedsHops: true,
    seed,
    cardsFor: (q, hops, rng) => blocks.blockFor(q, hops, rng),
  });
  await blocks.dispose();
  writeTranscripts(paths.data, set.transcripts);
  return { examples: set.transcripts.length, bankCards: cards.length, primingCards: priming.length, ...set.stats };
});

const transcriptCount = (file: string): number => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').length;

await stageThenMaybeStop('sft', async () => {
  const hooks = {
    log,
    onStep: (r: { step: number; loss: number; tokensPerSecond: number }) => {
      if (r.step % 10 === 0) log(`sft step ${r.step}/${num('sft-steps')}: loss ${r.loss.toFixed(3)}, ${r.tokensPerSecond.toFixed(0)} tok/s`);
    },
    shouldStop: () => stop.requested(),
  };
  const resuming = existsSync(join(paths.sft, 'sft.json'));
  const summary = await runSft(
    resuming
      ? undefined
      : {
          ...SFT_DEFAULTS,
          model: paths.grown,
          data: paths.data,
          out: paths.sft,
          mode: 'full',
          // --sft-steps is the run's length: as many passes over the transcripts as it takes (one pass alone
          // would cap a longer run at its steps per epoch without a word).
          epochs: Math.max(1, Math.ceil((num('sft-steps', 1) * num('batch-size', 1)) / transcriptCount(paths.data))),
          maxSteps: num('sft-steps', 1),
          batchSize: num('batch-size', 1),
          microBatchSize: num('batch-size', 1),
          microBatchTokens: num('micro-batch-tokens'),
          lr: Number(values.lr),
          warmupSteps: 20,
          lrSchedule: 'cosine',
          seed,
          saveEvery: num('save-every', 1),
          keepCheckpoints: 2,
          lossOn: 'assistant',
          recomputeLayers: false,
          backend: parseBackendChoice(values.backend as string),
        },
    hooks,
    resuming ? paths.sft : undefined,
    num('threads', 1),
  );
  if (!summary.finalDir) return undefined;
  return { firstStep: summary.firstStep, lastStep: summary.lastStep, ...(summary.resumedFrom !== undefined ? { resumedFrom: summary.resumedFrom } : {}), finalDir: summary.finalDir };
});

await stageThenMaybeStop('ship', async () => {
  const dtype = values['ship-dtype'];
  if (dtype !== 'f32' && dtype !== 'f16' && dtype !== 'bf16') throw new Error(`--ship-dtype must be f32, f16 or bf16, got ${String(dtype)}`);
  await initBackend('wasm');
  const final = join(paths.sft, 'final');
  const model = await CausalLM.load(final, { trainable: true });
  const parameters = model.parameterCount();
  rmSync(paths.shipped, { recursive: true, force: true });
  await saveFullModel(model, final, paths.shipped, dtype);
  model.dispose();
  return { dtype, parameters, dir: paths.shipped };
});

/** Runs another script of this folder with this process's Node and tsx; its output passes through. */
function script(name: string, args: string[]): void {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join('scripts', name), ...args], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`scripts/${name} ${args.join(' ')} failed (exit ${r.status})`);
}

await stageThenMaybeStop('mine', async () => {
  rmSync(paths.mining, { recursive: true, force: true });
  const file = join(paths.shipped, MODEL_PRIMING_FILE);
  script('mine-priming-cards.ts', ['--model', paths.shipped, '--worlds', values['mine-worlds'] as string, '--questions', values['mine-questions'] as string, '--threads', values.threads as string, '--work', paths.mining, '--out', file]);
  return { cards: cardsFromJsonl(readFileSync(file, 'utf8'), file).length, file };
});

await stageThenMaybeStop('controls', async () => {
  script('card-controls.ts', ['--models', paths.shipped, '--worlds', values['control-worlds'] as string, '--threads', values.threads as string, '--backend', values.backend as string, '--out', paths.controls]);
  return { table: join(paths.controls, 'table.md') };
});

if (values.install) {
  const target = values.out as string;
  // The demo world's held-out accuracy without cards, greedy on wasm, as make-demo-model.ts records it: the number
  // test/world-demo-model.test.ts reproduces from the installed folder.
  await initBackend('wasm');
  const model = await CausalLM.load(paths.shipped);
  const policy = new ModelPolicy('solver', model, await loadTokenizer(paths.shipped), undefined, { enableThinking: false });
  const evalSettings = { maxTurns: WORLD_DEFAULTS.maxTurns ?? 4, maxTokensPerTurn: WORLD_DEFAULTS.maxNewTokens ?? 64, maxResponseTokens: WORLD_DEFAULTS.maxResponseTokens ?? 768, passagesPerQuery: 3 };
  const demo = new World(DEMO_WORLD);
  const skillsOff = await evalWorld(policy, await demo.searcher(), demo.heldOut, { settings: evalSettings });
  model.dispose();
  log(`demo world, held-out without cards: ${(100 * skillsOff.accuracy).toFixed(1)}% of ${skillsOff.questions}`);
  mkdirSync(target, { recursive: true });
  for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', MODEL_PRIMING_FILE]) cpSync(join(paths.shipped, f), join(target, f));
  // The mining record beside the cards (as mine-priming-cards.ts --install writes it).
  cpSync(join(paths.mining, 'mining.json'), join(target, 'priming-cards.json'));
  writeJsonAtomic(join(target, 'warm-start.json'), {
    command: JSON.parse(readFileSync(optionsFile, 'utf8')).command as string,
    // The options that built it (their --worlds: the training worlds of its transcripts) and the record of the
    // model it started from, so that every world it was trained in stays listed (test/world-eval-worlds.test.ts).
    options,
    shape,
    from: values.from,
    fromRecord: existsSync(join(values.from as string, 'warm-start.json')) ? JSON.parse(readFileSync(join(values.from as string, 'warm-start.json'), 'utf8')) : undefined,
    stages: done,
    evalSettings,
    heldOut: { demo: { world: { seed: DEMO_WORLD.seed }, skillsOff } },
  });
  log(`installed ${paths.shipped} as ${target}`);
}
stop.dispose();
