// The training run: builds the model, adapters, search tool, skill bank and roles from a TrainConfig, then
// runs SESA steps with metrics, checkpoints and resume. The step itself is in step.ts.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic.js';
import { redactSecrets, redactUrl } from '../util/redact.js';
import { loadOptimizerState, saveOptimizerState } from '../checkpoint/optimizer-state.js';
import { loadPeftAdapter, savePeftAdapter } from '../checkpoint/peft.js';
import { pairedBootstrap } from '../eval/bootstrap.js';
import { defaultDataDir } from '../eval/dataset.js';
import { type HeldOutRow, heldOutQuestions, heldOutRows } from '../eval/held-out.js';
import type { TextGenerator } from '../llm/types.js';
import { LlamaCppEngine } from '../llama-cpp/engine.js';
import { LlamaCppPolicy } from '../llama-cpp/policy.js';
import type { ModelConfig } from '../model/config.js';
import type { Policy } from '../model/policy.js';
import { LoraAdapter } from '../model/lora.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { peftBaseModel, resolveModelName } from '../checkpoint/model-name.js';
import { PolicyTextGenerator } from '../model/text-generator.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { AdamW } from '../rl/optimizer.js';
import { DataParallelPool } from '../parallel/coordinator.js';
import { readBankFile } from '../skills/bank-file.js';
import { SkillBank } from '../skills/bank.js';
import { primedBankOptions } from './priming.js';
import { E5Embedder } from '../skills/e5.js';
import type { Embedder } from '../skills/embedder.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { packedWeightBytes, WASM_HEAP_LIMIT_BYTES } from '../tensor/wasm-heap.js';
import { type BackendInfo, describeBackend, initBackend, tf } from '../tensor/backend.js';
import { configForDisk, parseSavedConfig, redactedUrlSettings, resumeChanges, showValue, shownValue, flagName, type TrainConfig, validateConfig, workerCount } from '../settings/train.js';
import { endpointOf, probeChat, probeRetriever } from './endpoints.js';
import { AnswerJudge } from '../agent/judge.js';
import { RoleFailureError, RoleWatch, type StepCalls } from './role-health.js';
import { ProposerRole, SolverRole } from '../agent/roles.js';
import { capHops, floorHops, readSeedsFile } from '../agent/seeds.js';
import { openEnvironment } from '../env/open.js';
import { RunFolder } from './run-folder.js';
import { type StepMetrics, type StepPhase, sesaStep } from './step.js';
import { advantageSettingsOf, evalSettingsOf, grpoConfigOf, optimizerConfigOf, rolloutSettingsOf, stepSettingsOf } from './step-settings.js';
import { DataParallelPolicyUpdater } from './data-parallel-updater.js';
import type { RolloutRunner } from '../agent/runner.js';
import { ShardedRolloutRunner } from './rollout-runner.js';
import { ShardedJudging, type StepJudging } from './step-judging.js';
import { STEP_WORKER_MODULE, type StepWorkerInit } from './step-worker.js';
import { GrpoPolicyUpdater, type PolicyUpdater, type Role, type TrainedRole } from './updater.js';

export interface TrainHooks {
  log(line: string): void;
  /** Called once everything is loaded, before the first step. */
  onStart?(info: { runDir: string; firstStep: number; lastStep: number; backend: BackendInfo; modelDir: string; resumedFrom?: number; heldOutSteps: number[] }): void;
  onStepEnd?(metrics: StepMetrics): void;
  /** Polled after every step: true stops the run at this step boundary (after a checkpoint). */
  shouldStop?(): boolean;
  /** Progress inside a step (each phase's start and end) and a held-out eval (each batch), for progress lines. */
  onProgress?(event: TrainProgressEvent): void;
}

export type TrainProgressEvent =
  | { kind: 'phase'; step: number; phase: StepPhase; state: 'start' | 'end'; seconds?: number }
  | { kind: 'eval-batch'; step: number; skills: 'on' | 'off'; done: number; total: number };

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
  bank?: {
    cardsAtStart: number;
    cardsAtEnd: number;
    versionAtEnd: number;
    /** Distilled cards admitted by this run's consolidations. */
    admitted: number;
    /** Cards whose utility evidence (helpful or hurt counts) is non-zero at the end. */
    cardsWithEvidence: number;
  };
  /** A resumed run whose steps were all done already: nothing was trained. */
  finished?: boolean;
  /** Settings changed by flags given with --resume (written to config.json). */
  changed?: Array<{ key: string; from: unknown; to: unknown }>;
  /** The held-out eval's first and last rows per skills mode (with --eval-every). */
  heldOut?: Array<{ skills: 'on' | 'off'; first: HeldOutPoint; last: HeldOutPoint; gain?: HeldOutGain }>;
}

export interface HeldOutPoint {
  step: number;
  em: number;
  f1: number;
}

/** The held-out EM gain from the first eval to the last, with its paired bootstrap 95% interval over questions. */
export interface HeldOutGain {
  gain: number;
  low: number;
  high: number;
  questions: number;
}

async function buildEmbedder(config: TrainConfig): Promise<Embedder> {
  return config.embedder === 'lexical' ? new LexicalEmbedder() : E5Embedder.load({ model: config.e5Model });
}

/** An adapter with its parameters and a fresh AdamW. */
function trainedRole(config: TrainConfig, role: Role, adapter: LoraAdapter): TrainedRole {
  const params = Object.fromEntries(adapter.variables());
  return { adapter, optimizer: new AdamW(params, optimizerConfigOf(config, role)), params };
}

/**
 * Both roles at the start of a run: fresh LoRA adapters of the configured shape (the proposer seeded
 * 2·seed + 1, the solver 2·seed + 2) with fresh AdamW states.
 */
export function freshRoles(config: TrainConfig, modelConfig: ModelConfig): Record<Role, TrainedRole> {
  const lora = { r: config.loraR, alpha: config.loraAlpha, dropout: config.loraDropout, targets: config.loraTargets };
  return {
    proposer: trainedRole(config, 'proposer', LoraAdapter.create('proposer', modelConfig, lora, { seed: config.seed * 2 + 1 })),
    solver: trainedRole(config, 'solver', LoraAdapter.create('solver', modelConfig, lora, { seed: config.seed * 2 + 2 })),
  };
}

/**
 * The GPU of worker `rank` (docs/scale-out.md): the rank-th of CUDA_VISIBLE_DEVICES when this process was given
 * a list, else the rank itself.
 */
export function deviceOf(rank: number, workers: number, visible: string | undefined = process.env.CUDA_VISIBLE_DEVICES): string {
  if (visible === undefined || visible.trim() === '') return String(rank);
  const ids = visible.split(',').map((d) => d.trim()).filter((d) => d !== '');
  if (ids.length < workers) throw new Error(`${workers} workers need ${workers} GPUs, one each, but CUDA_VISIBLE_DEVICES=${visible} names ${ids.length}: lower --gpus/--workers or name more devices`);
  return ids[rank] as string;
}

/**
 * Runs training. `resumeDir` continues a run from its last complete checkpoint with its saved config;
 * `overrides` (the flags given with --resume) change it where that is sound, are written to config.json and
 * logged, and are refused otherwise (see resumeChanges in ./config.ts).
 */
export async function train(configIn: TrainConfig | undefined, hooks: TrainHooks, resumeDir?: string, overrides: Partial<TrainConfig> = {}): Promise<TrainSummary> {
  let run: RunFolder | undefined;
  // Every line goes to the run's train.log (once the folder exists) and to the caller, without secrets (a key
  // in an endpoint URL or in a server's reply).
  const log = (raw: string): void => {
    const line = redactSecrets(raw);
    run?.log(line);
    hooks.log(line);
  };
  const warn = (line: string): void => log(`warning: ${line}`);
  let config: TrainConfig;
  let changed: TrainSummary['changed'];
  if (resumeDir !== undefined) {
    const opened = RunFolder.open(resumeDir, warn);
    run = opened.run;
    try {
      const saved = validateConfig(parseSavedConfig(opened.config, run.configPath));
      const latest = run.latestCheckpoint();
      const { changes, refused } = resumeChanges(saved, overrides, latest?.step ?? 0);
      if (refused.length > 0) throw new Error(`--resume ${resumeDir}: ${refused.join('; ')}`);
      config = validateConfig({ ...saved, ...Object.fromEntries(changes.map((c) => [c.key, c.to])) });
      // config.json holds endpoint URLs without their secrets (a query key): such a URL must be given again.
      const redacted = redactedUrlSettings(config);
      if (redacted.length > 0) {
        throw new Error(
          redacted.map((k) => `--resume ${resumeDir}: ${run?.configPath} records --${flagName(k)} with its secrets removed (${String(config[k])}); give --${flagName(k)} again`).join('; '),
        );
      }
      if (changes.length > 0) {
        writeFileAtomic(run.configPath, `${JSON.stringify(configForDisk(config), null, 2)}\n`);
        changed = changes.map((c) => ({ key: c.key, from: shownValue(c.key, c.from), to: shownValue(c.key, c.to) }));
        for (const c of changed) log(`config change on resume: --${flagName(c.key)} ${showValue(c.from)} → ${showValue(c.to)} (written to ${run.configPath})`);
      }
      if (latest && latest.step >= config.steps) {
        log(`${run.dir} is finished: all ${config.steps} steps are done (last checkpoint step ${latest.step}); to train further, resume with --steps N (N > ${config.steps})`);
        run.release();
        return { runDir: run.dir, model: config.model, firstStep: latest.step + 1, lastStep: latest.step, stoppedEarly: false, resumedFrom: latest.step, metrics: [], lastCheckpoint: latest.dir, finished: true, ...(changed ? { changed } : {}) };
      }
    } catch (err) {
      run.release();
      throw err;
    }
  } else {
    if (!configIn) throw new Error('train: no configuration');
    config = validateConfig(configIn);
    run = RunFolder.create(config.out, config, warn);
  }
  const progress = { started: false };
  try {
    const summary = await trainInRun(run, config, hooks, log, progress, resumeDir);
    return changed ? { ...summary, changed } : summary;
  } catch (err) {
    // A fatal error goes to train.log too; a new run that failed before its first step leaves nothing that
    // would block the same command.
    run.log(`fatal: ${redactSecrets((err as Error).message)}`);
    if (!progress.started && resumeDir === undefined) run.discardUnstarted();
    throw err;
  } finally {
    run.release();
  }
}

/** A checkpoint's adapters with their optimizer state, and its bank file, read and checked in memory. */
interface RestoredPayload {
  roles: Record<Role, TrainedRole>;
  bankBytes?: Buffer;
}

function loadCheckpointPayload(dir: string, config: TrainConfig, model: CausalLM): RestoredPayload {
  const roles: Partial<Record<Role, TrainedRole>> = {};
  try {
    for (const r of ['proposer', 'solver'] as const) {
      roles[r] = trainedRole(config, r, loadPeftAdapter(join(dir, r), r, model.config));
      try {
        roles[r].optimizer.importState(loadOptimizerState(join(dir, r)));
      } catch (err) {
        throw new Error(`${join(dir, r)}: optimizer state does not fit the adapter (${(err as Error).message})`);
      }
    }
    let bankBytes: Buffer | undefined;
    if (config.skills) {
      const bankFile = join(dir, 'skills.json');
      readBankFile(bankFile); // validates; throws naming the checkpoint's file
      bankBytes = readFileSync(bankFile);
    }
    return { roles: roles as Record<Role, TrainedRole>, ...(bankBytes ? { bankBytes } : {}) };
  } catch (err) {
    for (const t of Object.values(roles)) {
      t.optimizer.dispose();
      t.adapter.dispose();
    }
    throw err;
  }
}

/**
 * The paired gain between two held-out evals' predictions (docs/evaluation.md, "Intervals"), question by
 * question; undefined when a file is missing (an eval of a run made before they were written) or the two
 * did not score the same questions.
 */
function pairedGainOf(firstFile: string, lastFile: string): HeldOutGain | undefined {
  if (!existsSync(firstFile) || !existsSync(lastFile)) return undefined;
  const read = (f: string): Map<string, number> =>
    new Map(
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { dataset: string; id: string; em: number })
        .map((r) => [`${r.dataset}\u0000${r.id}`, r.em]),
    );
  const a = read(firstFile);
  const b = read(lastFile);
  const keys = [...a.keys()];
  if (keys.length === 0 || keys.length !== b.size || !keys.every((k) => b.has(k))) return undefined;
  const g = pairedBootstrap([{ a: keys.map((k) => a.get(k) as number), b: keys.map((k) => b.get(k) as number) }]);
  return { gain: g.gain, low: g.low, high: g.high, questions: g.questions };
}

async function trainInRun(run: RunFolder, config: TrainConfig, hooks: TrainHooks, log: (line: string) => void, progress: { started: boolean }, resumeDir?: string): Promise<TrainSummary> {
  const backend = await initBackend(config.backend, config.threads !== undefined ? { threads: config.threads } : {});
  log(`backend: ${describeBackend(backend)}`);
  // --gpus N means N GPUs: on another backend it would quietly become N CPU workers (--workers N says that).
  if (config.gpus > 1 && backend.provider !== '@tensorflow/tfjs-node-gpu') {
    throw new Error(
      `--gpus ${config.gpus} places one worker process on each of ${config.gpus} GPUs, which needs the tensorflow GPU backend (@tensorflow/tfjs-node-gpu), but this run's backend is ${backend.name} (${backend.provider}): ` +
        `--workers ${config.gpus} runs ${config.gpus} worker processes on the CPU instead; sesa-train doctor --gpus ${config.gpus} checks a GPU machine (docs/scale-out.md)`,
    );
  }
  // The task environment (docs/method.md, "Environments") and the held-out questions are read before anything
  // heavy loads, so a bad --corpus or --eval-data fails at once. An --eval-data name the environment defines
  // (the world's `world` and `eval-worlds`) gives sets each searched in its own corpus; any other is a file or
  // a benchmark, searched with the run's search tool.
  const env = await openEnvironment(config, log);
  const envEval = config.evalData !== undefined && env.heldOutNames.includes(config.evalData);
  const heldOutSets = config.evalEvery > 0 && envEval ? await env.heldOut(config.evalData as string, config.evalLimit) : undefined;
  const heldOutFile = config.evalEvery > 0 && !envEval ? heldOutQuestions(config.evalData as string, config.evalLimit, defaultDataDir(undefined)) : undefined;
  const heldOutCount = (heldOutSets?.reduce((a, s) => a + s.questions.length, 0) ?? 0) + (heldOutFile?.length ?? 0);
  if (config.evalEvery > 0) {
    const where = heldOutSets && heldOutSets.length > 1 ? ` (${heldOutSets.length} worlds, each in its own corpus)` : '';
    log(`held-out eval: ${heldOutCount} questions from ${config.evalData}${where} at step 0, every ${config.evalEvery} steps and at the end`);
  }
  const resolvedModel = await resolveModelName(config.model, { log });
  const modelDir = resolvedModel.dir;
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  log(`model: ${modelDir} (${model.config.architecture}, ${(model.parameterCount() / 1e6).toFixed(1)}M parameters)`);
  const maxPositions = model.config.maxPositionEmbeddings;
  for (const [flag, value] of [['--max-new-tokens', config.maxNewTokens], ['--max-response-tokens', config.maxResponseTokens]] as const) {
    if (value >= maxPositions) {
      model.dispose();
      throw new Error(`${flag} ${value} does not fit the model: ${modelDir} has max_position_embeddings ${maxPositions} for the prompt and the response together`);
    }
  }

  log(`search: ${env.description}`);
  const corpusSeeds = env.seeds;
  if (config.retrieverUrl) {
    const w = await probeRetriever(env.searcher, { flag: '--retriever-url', url: config.retrieverUrl });
    if (w) log(`warning: ${w}`);
  }
  const givenSeeds = config.seeds ? readSeedsFile(config.seeds) : corpusSeeds;
  if (!givenSeeds) throw new Error('--seeds FILE is required with --retriever-url (answer seeds: JSONL of {"answer","hops"}); a local --corpus supplies its own');
  const seeds = floorHops(capHops(givenSeeds, config.maxHops), config.minHops);
  const hopsText = (n: number) => `${n} hop${n === 1 ? '' : 's'}`;
  if (config.maxHops !== undefined) {
    const capped = givenSeeds.filter((s) => s.hops > (config.maxHops as number)).length;
    log(`--max-hops ${config.maxHops}: ${capped} of ${givenSeeds.length} answer seeds are asked for ${hopsText(config.maxHops)} instead of more`);
  }
  if (config.minHops !== undefined) {
    const raised = givenSeeds.filter((s) => s.hops < (config.minHops as number)).length;
    log(
      raised === 0
        ? `--min-hops ${config.minHops}: no answer seed has fewer than ${hopsText(config.minHops)}`
        : `--min-hops ${config.minHops}: ${raised} of ${givenSeeds.length} answer seeds are asked for ${hopsText(config.minHops)} instead of fewer`,
    );
  }

  // Where to start: the newest checkpoint of a resumed run whose every file is whole and loads, else step 1.
  // Nothing in the run folder is written before that checkpoint has been read and checked in full.
  const restored = resumeDir !== undefined ? await run.restoreLatest(async (c) => loadCheckpointPayload(c.dir, config, model)) : undefined;
  const ckpt = restored?.checkpoint;
  const firstStep = ckpt ? ckpt.step + 1 : 1;
  if (resumeDir !== undefined) {
    for (const s of restored?.skipped ?? []) log(`warning: checkpoint step ${s.step} is not usable, skipped: ${s.reason}`);
    run.truncateMetricsAfter(ckpt?.step ?? 0);
    if (ckpt?.loaded.bankBytes) writeFileAtomic(run.bankPath, ckpt.loaded.bankBytes);
    else rmSync(run.bankPath, { force: true });
    log(ckpt ? `resuming ${run.dir} from checkpoint step ${ckpt.step}` : `resuming ${run.dir}: no checkpoint yet, starting over`);
  }

  const roles: Record<Role, TrainedRole> = ckpt ? ckpt.loaded.roles : freshRoles(config, model.config);
  const adapters: Record<Role, LoraAdapter> = { proposer: roles.proposer.adapter, solver: roles.solver.adapter };

  const policyOptions = { enableThinking: config.enableThinking };
  const base = new ModelPolicy('base', model, tokenizer, undefined, policyOptions);
  const inProcess = new PolicyTextGenerator(base);
  const endpoint = (role: 'judge' | 'distiller'): TextGenerator => endpointOf(role, config, inProcess, log);
  const judgeEndpoint = endpoint('judge');
  // An environment with scripted roles (the world: exact match with aliases, its RAG reader and distiller, no
  // LLM) plays them; an endpoint given on the command line still replaces them (docs/world.md).
  const scripted = env.scripted;
  const scriptedJudge = scripted !== undefined && config.judgeUrl === undefined;
  const distillerEndpoint = !(config.skills && config.distill)
    ? undefined
    : scripted && config.distillerUrl === undefined
      ? scripted.distiller
      : endpoint('distiller');
  if (scriptedJudge && scripted) log(`judge: ${scripted.judge}; RAG check: ${scripted.ragReader.name}`);
  if (distillerEndpoint) log(`distiller: ${distillerEndpoint.name}`);
  if (config.judgeUrl) await probeChat(judgeEndpoint, { flag: '--judge-url', url: config.judgeUrl });
  if (distillerEndpoint && config.distillerUrl) await probeChat(distillerEndpoint, { flag: '--distiller-url', url: config.distillerUrl });

  const bankConfig = {
    topK: config.skillsTopK,
    queueCapacity: config.queueCapacity,
    consolidateEvery: config.consolidateEvery,
    minPending: config.consolidateMinPending,
    maxSelected: config.consolidateMaxSelected,
    evictMinRetrieved: config.evictMinRetrieved,
    maxCards: config.maxCards,
    renderTokenBudget: config.renderTokenBudget,
    distillEvidenceChars: config.distillEvidenceChars,
    distillConcurrency: config.distillConcurrency,
    distillMaxTokens: config.distillMaxTokens,
  };
  // Priming applies to a new bank only: a resumed run's bank file already holds it.
  const bank = config.skills
    ? await SkillBank.open(run.bankPath, { embedder: await buildEmbedder(config), ...(existsSync(run.bankPath) ? {} : primedBankOptions(config, modelDir, log)), config: bankConfig, onStaleLock: (m) => log(`warning: ${m}`), ...(config.dedupThreshold !== undefined ? { dedupThreshold: config.dedupThreshold } : {}) })
    : undefined;
  const cardsAtStart = bank?.cards.length ?? 0;
  // Counts every judge and distiller call and every search, per step: failures are warned about, never silent.
  const watch = new RoleWatch({
    judge: judgeEndpoint,
    ...(config.judgeUrl ? { judgeUrl: redactUrl(config.judgeUrl) } : {}),
    ...(distillerEndpoint ? { distiller: distillerEndpoint } : {}),
    ...(config.distillerUrl ? { distillerUrl: redactUrl(config.distillerUrl) } : {}),
    searcher: env.searcher,
    ...(config.retrieverUrl ? { retrieverUrl: redactUrl(config.retrieverUrl) } : {}),
    ...(bank ? { bank } : {}),
    stopAfter: config.stopAfterFailedSteps,
  });
  const searcher = watch.searcher;
  const judgeText = watch.judge;
  const distiller = watch.distiller;
  // With --rollout-engine llama.cpp the roles generate through llama.cpp; an adapter's version is its optimizer's
  // step count, so every update is exported and swapped in before the next rollout.
  const engine =
    (config.rolloutEngine ?? 'native') === 'llama.cpp'
      ? await LlamaCppEngine.open({ modelDir, modelConfig: model.config, workDir: join(run.dir, 'llama-cpp'), ...(config.threads !== undefined ? { threads: config.threads } : {}) })
      : undefined;
  if (engine) log(`rollouts: llama.cpp (${engine.gpu} build, ${engine.threads} thread${engine.threads === 1 ? '' : 's'}); old log-probs recomputed with our forward`);
  const rolloutPolicy = (role: Role): Policy => {
    const native = new ModelPolicy(role, model, tokenizer, adapters[role], policyOptions);
    return engine ? new LlamaCppPolicy(native, engine, () => roles[role].optimizer.stepCount) : native;
  };
  const grpoConfig = grpoConfigOf(config, tokenizer.padTokenId);
  const advantageSettings = advantageSettingsOf(config);
  let pool: DataParallelPool | undefined;
  let updater: PolicyUpdater = new GrpoPolicyUpdater(
    model,
    roles,
    grpoConfig,
    advantageSettings,
    // The wasm heap cannot grow past its limit: updates are planned to fit it (split, or refused with numbers).
    // Besides the tensors, the heap holds XNNPACK's packed copy of every weight a matMul has read (measured:
    // ~450 MiB after the first forward of a 400 MB ~100M model), counted here as the model's size.
    backend.name === 'wasm' ? { limitBytes: WASM_HEAP_LIMIT_BYTES, usedBytes: () => tf.memory().numBytes + packedWeightBytes(model.parameterCount()), onSplit: (m) => log(`warning: ${m}`) } : undefined,
  );
  // With --workers N > 1 (or --gpus N > 1) the step runs on N worker processes (docs/scale-out.md, "The step
  // over N workers"), each with the model and both adapters, started from this process's adapters and
  // optimizer states (fresh or resumed): worker r runs the rollouts, RAG checks and judging of the step's seeds
  // r, r + N, …, and the GRPO updates are data-parallel over all of them. Prompts, skills, the bank, the
  // distiller, metrics and checkpoints stay here (rank 0).
  const workers = workerCount(config);
  let runner: ((role: Role) => RolloutRunner) | undefined;
  let judging: StepJudging | undefined;
  const answerJudge = new AnswerJudge(scriptedJudge ? undefined : judgeText, config.judgeMaxTokens);
  if (workers > 1) {
    const roleInit = (role: Role) => ({ lora: adapters[role].config, loraSeed: 0, optimizer: optimizerConfigOf(config, role) });
    const gpuBackend = backend.provider === '@tensorflow/tfjs-node-gpu';
    // Checked before any worker starts: a device list too short for the workers is an error, not a shared GPU.
    const gpuOf = gpuBackend ? Array.from({ length: workers }, (_, rank) => deviceOf(rank, workers)) : undefined;
    pool = await DataParallelPool.start({
      workers,
      init: {
        modelDir,
        backend: backend.name,
        roles: { proposer: roleInit('proposer'), solver: roleInit('solver') },
        grpo: grpoConfig,
        tasks: { module: STEP_WORKER_MODULE, init: { config } satisfies StepWorkerInit },
      },
      ...(gpuOf ? { env: (rank: number) => ({ CUDA_VISIBLE_DEVICES: gpuOf[rank] as string }) } : {}),
    });
    const dp = new DataParallelPolicyUpdater(pool, roles, advantageSettings);
    await dp.syncWorkers();
    updater = dp;
    const shardPool = pool;
    runner = (role) => new ShardedRolloutRunner(shardPool, role, (counts) => watch.searcher.add(counts));
    judging = new ShardedJudging(shardPool, (calls, unparsed) => {
      watch.judge.add(calls);
      answerJudge.unparsedReplies += unparsed;
    });
    const devices = gpuOf ? `one GPU each: ${gpuOf.join(', ')}` : backend.name === 'wasm' ? 'one wasm thread each' : `${backend.name} backend`;
    log(`step: sharded over ${workers} worker processes (${devices}): worker r rolls out, checks and judges seeds r, r + ${workers}, …; updates data-parallel`);
  }
  const deps = {
    proposer: new ProposerRole(rolloutPolicy('proposer'), searcher, rolloutSettingsOf(config, 'proposer'), runner?.('proposer')),
    solver: new SolverRole(rolloutPolicy('solver'), searcher, bank, rolloutSettingsOf(config, 'solver'), runner?.('solver')),
    judge: answerJudge,
    ragJudge: scriptedJudge && scripted ? scripted.ragReader : judgeText,
    skills: bank,
    updater,
    ...(distiller ? { distiller } : {}),
    ...(judging ? { judging } : {}),
    onPhase: (step: number, phase: StepPhase, state: 'start' | 'end', seconds?: number) => hooks.onProgress?.({ kind: 'phase', step, phase, state, ...(seconds !== undefined ? { seconds } : {}) }),
  };
  const settings = stepSettingsOf(config);

  // The steps whose held-out eval is still to run (0: before step 1), for the progress lines' ETA.
  const evalAtZeroDone = run.metrics().some((m) => (m as { kind?: unknown; step?: unknown }).kind === 'eval' && (m as { step?: unknown }).step === 0);
  const heldOutSteps = config.evalEvery === 0 ? [] : [...(evalAtZeroDone ? [] : [0]), ...Array.from({ length: config.steps - firstStep + 1 }, (_, i) => firstStep + i).filter((s) => s % config.evalEvery === 0 || s === config.steps)];
  hooks.onStart?.({ runDir: run.dir, firstStep, lastStep: config.steps, backend, modelDir, heldOutSteps, ...(ckpt ? { resumedFrom: ckpt.step } : {}) });
  const metrics: StepMetrics[] = [];
  let lastCheckpoint: string | undefined;
  let stoppedEarly = false;
  let warnedShortRag = false;
  const saveCheckpoint = async (step: number): Promise<void> => {
    lastCheckpoint = await run.writeCheckpoint(step, { step, seed: config.seed, ...(bank ? { bankVersion: bank.version } : {}), savedAt: new Date().toISOString() }, async (dir) => {
      for (const r of ['proposer', 'solver'] as const) {
        await savePeftAdapter(roles[r].adapter, join(dir, r), { baseModel: peftBaseModel(resolvedModel) });
        saveOptimizerState(join(dir, r), roles[r].optimizer.exportState());
      }
      if (bank) bank.writeSnapshot(join(dir, 'skills.json'));
    });
    log(`checkpoint: ${lastCheckpoint}`);
  };

  // docs/evaluation.md: the same greedy evaluation as `sesa-train eval`, on the live solver adapter; each mode's
  // predictions go to eval/step-N-skills-M.jsonl (the paired intervals of the summary read them).
  const heldOut = heldOutSets ?? (heldOutFile ? [{ dataset: String(config.evalData), questions: heldOutFile, searcher }] : undefined);
  const runHeldOut = async (step: number): Promise<void> => {
    if (!heldOut) return;
    const evals = await heldOutRows(step, { policy: deps.solver.policy, ...(bank ? { bank } : {}) }, heldOut, evalSettingsOf(config), (skills, done, total) =>
      hooks.onProgress?.({ kind: 'eval-batch', step, skills, done, total }),
    );
    for (const { row, records } of evals) {
      run.writeEvalPredictions(step, row.skills, records);
      run.appendMetrics(row);
      log(`held-out eval at step ${step}, skills ${row.skills}: EM ${(100 * row.em).toFixed(1)}%, F1 ${(100 * row.f1).toFixed(1)}% on ${row.questions} questions (${row.seconds.toFixed(1)} s)`);
    }
  };
  const evalRowsSoFar = (): HeldOutRow[] => run.metrics().filter((m): m is HeldOutRow => (m as { kind?: unknown }).kind === 'eval');

  progress.started = true;
  try {
    if (heldOut && !evalRowsSoFar().some((r) => r.step === 0)) await runHeldOut(0);
    for (let step = firstStep; step <= config.steps; step++) {
      watch.beginStep();
      const result = await sesaStep(step, seeds, deps, settings);
      // Calls of the judge and distiller and empty searches this step (a role failing too long throws).
      let calls: StepCalls;
      try {
        calls = watch.endStep(step);
      } catch (err) {
        if (!(err instanceof RoleFailureError)) throw err;
        // Keep the step's work: record and checkpoint it, then stop.
        run.appendMetrics(result.metrics);
        await saveCheckpoint(step);
        throw new RoleFailureError(`${err.message}. Checkpoint step ${step} was written; continue with --resume ${run.dir}`);
      }
      run.appendMetrics({ ...result.metrics, calls: calls.calls, searches: calls.searches });
      metrics.push(result.metrics);
      // The run log gets a line per step; the caller shows steps through onStepEnd.
      run.log(
        `step ${step}: valid ${result.metrics.validQuestions}/${result.metrics.proposals}, solver accuracy ${result.metrics.solverAccuracy.toFixed(3)}, ` +
          `proposer reward ${result.metrics.proposerMeanReward.toFixed(3)}${bank ? `, bank ${bank.cards.length} cards v${bank.version}` : ''}, ${result.metrics.seconds.total.toFixed(1)} s`,
      );
      const short = result.metrics.ragChecksShortOfDistractors;
      if (short > 0 && !warnedShortRag) {
        warnedShortRag = true;
        log(
          `warning: step ${step}: ${short} of ${result.metrics.ragChecks} RAG checks got fewer than ${config.ragDistractorBlocks} distractor blocks ` +
            `(too few rollouts of other seeds retrieved passages; raise --seeds-per-step or lower --rag-distractor-blocks). ` +
            'Counted per step in metrics.jsonl as ragChecksShortOfDistractors; this warning is shown once.',
        );
      }
      for (const w of calls.warnings) log(`warning: ${w}`);
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
    await pool?.close();
    await engine?.dispose();
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
    if (!a || !b) return [];
    const gain = a.step !== b.step ? pairedGainOf(run.evalPredictionsPath(a.step, skills), run.evalPredictionsPath(b.step, skills)) : undefined;
    return [{ skills, first: { step: a.step, em: a.em, f1: a.f1 }, last: { step: b.step, em: b.em, f1: b.f1 }, ...(gain ? { gain } : {}) }];
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
    ...(bank
      ? {
          bank: {
            cardsAtStart,
            cardsAtEnd: bank.cards.length,
            versionAtEnd: bank.version,
            admitted: metrics.reduce((n, m) => n + (m.consolidation?.committed?.admitted.length ?? 0), 0),
            cardsWithEvidence: bank.cards.filter((c) => c.stats.helpful + c.stats.hurt > 0).length,
          },
        }
      : {}),
    ...(heldOutSummary.length > 0 ? { heldOut: heldOutSummary } : {}),
  };
}
