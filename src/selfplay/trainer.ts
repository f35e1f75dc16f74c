// The training run: builds the model, adapters, search tool, skill bank and roles from a TrainConfig, then
// runs SESA steps with metrics, checkpoints and resume. The step itself is in step.ts.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../checkpoint/atomic.js';
import { loadOptimizerState, saveOptimizerState } from '../checkpoint/optimizer-state.js';
import { loadPeftAdapter, savePeftAdapter } from '../checkpoint/peft.js';
import { generateSyntheticCorpus, goldenAnswers } from '../corpus/synthetic.js';
import { defaultDataDir } from '../eval/dataset.js';
import { type HeldOutRow, heldOutQuestions, heldOutRows } from '../eval/held-out.js';
import { textGeneratorFor } from '../llm/from-args.js';
import type { TextGenerator } from '../llm/types.js';
import { LoraAdapter } from '../model/lora.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModel } from '../model/resolve.js';
import { PolicyTextGenerator } from '../model/text-generator.js';
import { ensureTinyDefaultModel, TINY_DEFAULT_NAME } from '../model/tiny-default.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { AdamW } from '../rl/optimizer.js';
import { Bm25Index } from '../search/bm25-index.js';
import { loadCorpus, parseContents } from '../search/corpus.js';
import { SearchR1Client } from '../search/searchr1-client.js';
import type { Searcher } from '../search/types.js';
import { SkillBank } from '../skills/bank.js';
import { E5Embedder } from '../skills/e5.js';
import type { Embedder } from '../skills/embedder.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { type BackendInfo, initBackend } from '../tensor/backend.js';
import { type TrainConfig, validateConfig } from './config.js';
import { AnswerJudge } from './judge.js';
import { type AnswerSeed, ProposerRole, SolverRole } from './roles.js';
import { readSeedsFile, seedsFromPassages } from './seeds.js';
import { RunFolder } from './run-folder.js';
import { type StepMetrics, sesaStep } from './step.js';
import { GrpoPolicyUpdater, type Role, type TrainedRole } from './updater.js';
import { WORLD_CARD_BUDGET } from '../world/demo-model.js';
import { TemplateDistiller, WorldRagReader } from '../world/scripted-roles.js';
import { DEMO_MODEL_NAME, demoModelDir, WORLD_CORPUS, WORLD_EVAL_DATA, worldFor, worldHeldOut, worldSeeds } from '../world/setup.js';
import type { World } from '../world/world.js';

export interface TrainHooks {
  log(line: string): void;
  /** Called once everything is loaded, before the first step. */
  onStart?(info: { runDir: string; firstStep: number; lastStep: number; backend: BackendInfo; modelDir: string; resumedFrom?: number }): void;
  onStepEnd?(metrics: StepMetrics): void;
  /** Polled after every step: true stops the run at this step boundary (after a checkpoint). */
  shouldStop?(): boolean;
}

export interface TrainSummary {
  runDir: string;
  /** The model setting of the run (a name, a folder, or 'tiny'). */
  model: string;
  firstStep: number;
  lastStep: number;
  stoppedEarly: boolean;
  resumedFrom?: number;
  metrics: StepMetrics[];
  lastCheckpoint?: string;
  bank?: { cardsAtStart: number; cardsAtEnd: number; versionAtEnd: number };
  /** The held-out eval's first and last rows per skills mode (with --eval-every). */
  heldOut?: Array<{ skills: 'on' | 'off'; first: HeldOutPoint; last: HeldOutPoint }>;
}

export interface HeldOutPoint {
  step: number;
  em: number;
  f1: number;
}

/** The demo corpus is fixed (seed 0) whatever the run seed, so every demo run searches the same encyclopedia. */
const DEMO_CORPUS_SEED = 0;

interface Searchable {
  searcher: Searcher;
  seeds?: AnswerSeed[];
}

async function buildSearch(config: TrainConfig, log: (l: string) => void, world: World | undefined): Promise<Searchable> {
  if (world) {
    const seeds = worldSeeds(world);
    log(`search: BM25 over the generated world of seed ${world.options.seed} (${world.passages.length} passages, ${seeds.length} answer seeds)`);
    return { searcher: await world.searcher(), seeds };
  }
  if (config.retrieverUrl) {
    log(`search: Search-R1 retrieval server at ${config.retrieverUrl}`);
    return { searcher: new SearchR1Client({ url: config.retrieverUrl, onRetry: (i) => log(`retriever retry ${i.attempt} in ${i.delayMs} ms: ${i.reason}`) }) };
  }
  if (config.corpus === 'demo') {
    const synth = generateSyntheticCorpus({ seed: DEMO_CORPUS_SEED });
    const passages = synth.corpus.map((row) => ({ id: row.id, ...parseContents(row.contents) }));
    const byId = new Map(synth.entities.map((e) => [e.id, e]));
    const seeds = synth.seeds.map((s) => {
      const entity = byId.get(s.entityId);
      const aliases = entity ? goldenAnswers(entity).filter((a) => a !== s.answer) : [];
      return { answer: s.answer, hops: s.hops, ...(aliases.length > 0 ? { aliases } : {}) };
    });
    log(`search: BM25 over the embedded synthetic encyclopedia (${passages.length} passages, ${seeds.length} answer seeds)`);
    return { searcher: await Bm25Index.fromPassages(passages, { warn: log }, 'demo corpus'), seeds };
  }
  const corpus = await loadCorpus(config.corpus);
  const index = await Bm25Index.fromPassages(corpus.passages, { warn: log }, config.corpus);
  log(`search: ${index.describe()}`);
  // Without --seeds, the corpus's own entities (passage titles) are the answers to build questions for.
  return { searcher: index, seeds: config.seeds ? undefined : seedsFromPassages(corpus.passages) };
}

async function buildEmbedder(config: TrainConfig): Promise<Embedder> {
  return config.embedder === 'lexical' ? new LexicalEmbedder() : E5Embedder.load({ model: config.e5Model });
}

/** An adapter with its parameters and a fresh AdamW (SPEC §4 settings from the config). */
function trainedRole(config: TrainConfig, adapter: LoraAdapter): TrainedRole {
  const params = Object.fromEntries(adapter.variables());
  const optimizer = new AdamW(params, { lr: config.lr, warmupSteps: config.warmupSteps, weightDecay: config.weightDecay, maxGradNorm: config.maxGradNorm, schedule: 'constant' });
  return { adapter, optimizer, params };
}

/**
 * Runs training. `resumeDir` continues a run from its last complete checkpoint (its saved config is used; a
 * larger `steps` in `overrides` extends it).
 */
export async function train(configIn: TrainConfig | undefined, hooks: TrainHooks, resumeDir?: string, overrides: Partial<TrainConfig> = {}): Promise<TrainSummary> {
  let run: RunFolder | undefined;
  // Every line goes to the run's train.log (once the folder exists) and to the caller.
  const log = (line: string): void => {
    run?.log(line);
    hooks.log(line);
  };
  let config: TrainConfig;
  if (resumeDir !== undefined) {
    const opened = RunFolder.open(resumeDir);
    run = opened.run;
    config = validateConfig({ ...opened.config, ...overrides });
    if (overrides.steps !== undefined) writeFileAtomic(run.configPath, `${JSON.stringify(config, null, 2)}\n`);
  } else {
    if (!configIn) throw new Error('train: no configuration');
    config = validateConfig(configIn);
    run = RunFolder.create(config.out, config);
  }

  const backend = await initBackend(config.backend);
  log(`backend: ${backend.name} (${backend.provider}; ${backend.reason})`);
  // Held-out questions are read before anything heavy loads, so a bad --eval-data fails at once.
  // docs/world.md: `--corpus world` plays in a generated world, whose held-out set is `--eval-data world`.
  const world = config.corpus === WORLD_CORPUS && !config.retrieverUrl ? worldFor(config.worldSeed) : undefined;
  if (config.evalData === WORLD_EVAL_DATA && !world) throw new Error('--eval-data world needs --corpus world (the held-out set of the world the run plays in)');
  const heldOut =
    config.evalEvery > 0
      ? world && config.evalData === WORLD_EVAL_DATA
        ? worldHeldOut(world, config.evalLimit)
        : heldOutQuestions(config.evalData as string, config.evalLimit, defaultDataDir(undefined))
      : undefined;
  if (heldOut) log(`held-out eval: ${heldOut.length} questions from ${config.evalData} at step 0, every ${config.evalEvery} steps and at the end`);
  const modelDir = config.model === TINY_DEFAULT_NAME ? ensureTinyDefaultModel(log) : config.model === DEMO_MODEL_NAME ? demoModelDir() : (await resolveModel(config.model)).dir;
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  log(`model: ${modelDir} (${model.config.architecture}, ${(model.parameterCount() / 1e6).toFixed(1)}M parameters)`);

  const { searcher, seeds: corpusSeeds } = await buildSearch(config, log, world);
  const seeds = config.seeds ? readSeedsFile(config.seeds) : corpusSeeds;
  if (!seeds) throw new Error('--seeds FILE is required with --retriever-url (answer seeds: JSONL of {"answer","hops"}); a local --corpus supplies its own');

  // Where to start: the last complete checkpoint of a resumed run, else step 1.
  const ckpt = resumeDir !== undefined ? run.latestCheckpoint() : undefined;
  const firstStep = ckpt ? ckpt.step + 1 : 1;
  if (resumeDir !== undefined) {
    run.truncateMetricsAfter(ckpt?.step ?? 0);
    if (ckpt) writeFileAtomic(run.bankPath, readFileSync(join(ckpt.dir, 'skills.json')));
    else rmSync(run.bankPath, { force: true });
    log(ckpt ? `resuming ${run.dir} from checkpoint step ${ckpt.step}` : `resuming ${run.dir}: no complete checkpoint, starting over`);
  }

  const loraConfig = { r: config.loraR, alpha: config.loraAlpha, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as LoraAdapter['config']['targets'] };
  const adapters: Record<Role, LoraAdapter> = ckpt
    ? { proposer: loadPeftAdapter(join(ckpt.dir, 'proposer'), 'proposer', model.config), solver: loadPeftAdapter(join(ckpt.dir, 'solver'), 'solver', model.config) }
    : {
        proposer: LoraAdapter.create('proposer', model.config, loraConfig, { seed: config.seed * 2 + 1 }),
        solver: LoraAdapter.create('solver', model.config, loraConfig, { seed: config.seed * 2 + 2 }),
      };
  const roles: Record<Role, TrainedRole> = { proposer: trainedRole(config, adapters.proposer), solver: trainedRole(config, adapters.solver) };
  if (ckpt) for (const r of ['proposer', 'solver'] as const) roles[r].optimizer.importState(loadOptimizerState(join(ckpt.dir, r)));

  const bank = config.skills ? await SkillBank.open(run.bankPath, { embedder: await buildEmbedder(config), seeds: config.priming, ...(world ? { config: { renderTokenBudget: WORLD_CARD_BUDGET } } : {}) }) : undefined;
  const cardsAtStart = bank?.cards.length ?? 0;

  const policyOptions = { enableThinking: config.enableThinking };
  const base = new ModelPolicy('base', model, tokenizer, undefined, policyOptions);
  const inProcess = new PolicyTextGenerator(base);
  const judgeText: TextGenerator = textGeneratorFor('judge', { url: config.judgeUrl, model: config.judgeModel, keyEnv: config.apiKeyEnv }, inProcess);
  // In a world, the judge is exact match with aliases, the RAG check and the distiller are scripted (no LLM);
  // an endpoint given on the command line still replaces them (docs/world.md).
  const scriptedJudge = world !== undefined && config.judgeUrl === undefined;
  const distiller = !(config.skills && config.distill)
    ? undefined
    : world && config.distillerUrl === undefined
      ? new TemplateDistiller(world)
      : textGeneratorFor('distiller', { url: config.distillerUrl, model: config.distillerModel, keyEnv: config.apiKeyEnv }, inProcess);
  if (scriptedJudge && world) log(`judge: exact match with aliases; RAG check: ${new WorldRagReader(world).name}`);
  if (distiller) log(`distiller: ${distiller.name}`);
  const rolloutSettings = {
    maxTurns: config.maxTurns,
    maxTokensPerTurn: config.maxNewTokens,
    maxResponseTokens: config.maxResponseTokens,
    temperature: config.temperature,
    passagesPerQuery: 3,
  };
  const deps = {
    proposer: new ProposerRole(new ModelPolicy('proposer', model, tokenizer, adapters.proposer, policyOptions), searcher, rolloutSettings),
    solver: new SolverRole(new ModelPolicy('solver', model, tokenizer, adapters.solver, policyOptions), searcher, bank, rolloutSettings),
    judge: new AnswerJudge(scriptedJudge ? undefined : judgeText),
    ragJudge: scriptedJudge && world ? new WorldRagReader(world) : judgeText,
    updater: new GrpoPolicyUpdater(model, roles, { microBatchSize: config.microBatchSize, klCoef: config.klCoef, clipLow: config.clipLow, clipHigh: config.clipHigh, padTokenId: tokenizer.padTokenId }),
    ...(distiller ? { distiller } : {}),
  };
  const settings = {
    seedsPerStep: config.seedsPerStep,
    proposalsPerSeed: config.proposalsPerSeed,
    groupSize: config.groupSize,
    reward: { lambda: config.lambda, invalidReward: config.invalidReward, frontier: config.frontier },
    seed: config.seed,
    ragDistractorBlocks: 4,
  };

  hooks.onStart?.({ runDir: run.dir, firstStep, lastStep: config.steps, backend, modelDir, ...(ckpt ? { resumedFrom: ckpt.step } : {}) });
  const metrics: StepMetrics[] = [];
  let lastCheckpoint: string | undefined;
  let stoppedEarly = false;
  const saveCheckpoint = async (step: number): Promise<void> => {
    lastCheckpoint = await run.writeCheckpoint(step, { step, seed: config.seed, ...(bank ? { bankVersion: bank.version } : {}), savedAt: new Date().toISOString() }, async (dir) => {
      for (const r of ['proposer', 'solver'] as const) {
        await savePeftAdapter(roles[r].adapter, join(dir, r), { baseModel: config.model === TINY_DEFAULT_NAME || config.model === DEMO_MODEL_NAME ? modelDir : config.model });
        saveOptimizerState(join(dir, r), roles[r].optimizer.exportState());
      }
      if (bank) bank.writeSnapshot(join(dir, 'skills.json'));
    });
    log(`checkpoint: ${lastCheckpoint}`);
  };

  // docs/evaluation.md: the same greedy evaluation as `sesa-train eval`, on the live solver adapter.
  const runHeldOut = async (step: number): Promise<void> => {
    if (!heldOut) return;
    const evalSettings = { maxTurns: config.maxTurns, maxTokensPerTurn: config.maxNewTokens, maxResponseTokens: config.maxResponseTokens, batchSize: 8 };
    const rows = await heldOutRows(step, { policy: deps.solver.policy, searcher, ...(bank ? { bank } : {}) }, heldOut, evalSettings);
    for (const r of rows) {
      run.appendMetrics(r);
      log(`held-out eval at step ${step}, skills ${r.skills}: EM ${(100 * r.em).toFixed(1)}%, F1 ${(100 * r.f1).toFixed(1)}% on ${r.questions} questions (${r.seconds.toFixed(1)} s)`);
    }
  };
  const evalRowsSoFar = (): HeldOutRow[] => run.metrics().filter((m): m is HeldOutRow => (m as { kind?: unknown }).kind === 'eval');

  try {
    if (heldOut && !evalRowsSoFar().some((r) => r.step === 0)) await runHeldOut(0);
    for (let step = firstStep; step <= config.steps; step++) {
      const result = await sesaStep(step, seeds, deps, settings);
      run.appendMetrics(result.metrics);
      metrics.push(result.metrics);
      // The run log gets a line per step; the caller shows steps through onStepEnd.
      run.log(
        `step ${step}: valid ${result.metrics.validQuestions}/${result.metrics.proposals}, solver accuracy ${result.metrics.solverAccuracy.toFixed(3)}, ` +
          `proposer reward ${result.metrics.proposerMeanReward.toFixed(3)}${bank ? `, bank ${bank.cards.length} cards v${bank.version}` : ''}, ${result.metrics.seconds.total.toFixed(1)} s`,
      );
      hooks.onStepEnd?.(result.metrics);
      // Before the checkpoint, so a run killed during the eval redoes the step and its eval on resume.
      if (heldOut && (step % config.evalEvery === 0 || step === config.steps)) await runHeldOut(step);
      const stop = hooks.shouldStop?.() ?? false;
      if (step % config.saveEvery === 0 || step === config.steps || stop) await saveCheckpoint(step);
      if (stop && step < config.steps) {
        stoppedEarly = true;
        log(`stopped at step ${step} on request; resume with --resume ${run.dir}`);
        break;
      }
    }
  } finally {
    await bank?.dispose();
    for (const r of Object.values(roles)) {
      r.optimizer.dispose();
      r.adapter.dispose();
    }
    model.dispose();
  }
  const last = metrics[metrics.length - 1];
  const heldOutSummary = (['on', 'off'] as const).flatMap((skills) => {
    const rows = evalRowsSoFar().filter((r) => r.skills === skills);
    const a = rows[0];
    const b = rows[rows.length - 1];
    return a && b ? [{ skills, first: { step: a.step, em: a.em, f1: a.f1 }, last: { step: b.step, em: b.em, f1: b.f1 } }] : [];
  });
  return {
    runDir: run.dir,
    model: config.model,
    firstStep,
    lastStep: last?.step ?? firstStep - 1,
    stoppedEarly,
    ...(ckpt ? { resumedFrom: ckpt.step } : {}),
    metrics,
    ...(lastCheckpoint ? { lastCheckpoint } : {}),
    ...(bank ? { bank: { cardsAtStart, cardsAtEnd: bank.cards.length, versionAtEnd: bank.version } } : {}),
    ...(heldOutSummary.length > 0 ? { heldOut: heldOutSummary } : {}),
  };
}
