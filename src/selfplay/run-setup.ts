// Building a training run from its settings (docs/method.md, "One step"; "The run folder, checkpoints and
// resume"): the backend, the task environment and its held-out sets, the model, the answer seeds, the roles'
// adapters and optimizers (fresh, or the newest usable checkpoint's), the judge and distiller, the skill bank,
// the rollout engine and the step's workers. src/selfplay/trainer.ts runs the steps of what this builds.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic.js';
import { redactUrl } from '../util/redact.js';
import { loadOptimizerState } from '../checkpoint/optimizer-state.js';
import { loadPeftAdapter } from '../checkpoint/peft.js';
import { defaultDataDir } from '../eval/dataset.js';
import { heldOutQuestions } from '../eval/held-out.js';
import { questionsOverContext } from '../eval/context.js';
import { checkpointBytes, checkpointSteps, type DiskNeed, diskVerdict, freeBytesAt, ggufExportBytes, totalBytes } from '../checkpoint/disk-need.js';
import { gib as formatSize } from '../model/memory-need.js';
import type { TextGenerator } from '../llm/types.js';
import { LlamaCppEngine } from '../llama-cpp/engine.js';
import { LlamaCppPolicy } from '../llama-cpp/policy.js';
import type { ModelConfig } from '../model/config.js';
import type { Policy } from '../model/policy.js';
import { LoraAdapter } from '../model/lora.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModelName } from '../checkpoint/model-name.js';
import { PolicyTextGenerator } from '../model/text-generator.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { AdamW } from '../rl/optimizer.js';
import { wasmHeapInUse } from '../rl/grpo-update.js';
import { DataParallelPool } from '../parallel/coordinator.js';
import { readBankFile } from '../skills/bank-file.js';
import { SkillBank } from '../skills/bank.js';
import { primedBankOptions } from './priming.js';
import { E5Embedder } from '../skills/e5.js';
import type { Embedder } from '../skills/embedder.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { WASM_HEAP_LIMIT_BYTES } from '../tensor/wasm-heap.js';
import { type BackendChoice, type BackendInfo, backendLabel, describeBackend, initBackend } from '../tensor/backend.js';
import { type TrainConfig, workerCount } from '../settings/train.js';
import { endpointOf, probeChat, probeRetriever } from './endpoints.js';
import { AnswerJudge } from '../agent/judge.js';
import { RoleWatch } from './role-health.js';
import { ProposerRole, SolverRole } from '../agent/roles.js';
import { capHops, floorHops, readSeedsFile } from '../agent/seeds.js';
import { openEnvironment } from '../env/open.js';
import { RunFolder } from './run-folder.js';
import { ReusePool } from './reuse-pool.js';
import { hopMixProblem } from './seed-draw.js';
import { type StepPhase } from './step.js';
import { advantageSettingsOf, grpoConfigOf, optimizerConfigOf, rolloutSettingsOf, stepSettingsOf } from './step-settings.js';
import { DataParallelPolicyUpdater } from './data-parallel-updater.js';
import type { RolloutRunner } from '../agent/runner.js';
import { ShardedRolloutRunner } from './rollout-runner.js';
import { ShardedJudging, type StepJudging } from './step-judging.js';
import { STEP_WORKER_MODULE, type StepWorkerInit } from './step-worker.js';
import { GrpoPolicyUpdater, type PolicyUpdater, type Role, type TrainedRole } from './updater.js';

import type { AnswerSeed } from '../agent/roles.js';
import type { EvalSet } from '../agent/environment.js';
import type { ResolvedModel } from '../model/resolve.js';
import type { StepDeps, StepSettings } from './step.js';
import type { TrainHooks } from './trainer.js';

async function buildEmbedder(config: TrainConfig): Promise<Embedder> {
  return config.embedder === 'lexical' ? new LexicalEmbedder() : E5Embedder.load({ model: config.e5Model });
}

/** What the run still writes to disk from `firstStep` on (src/checkpoint/disk-need.ts). */
export function diskNeedOf(config: TrainConfig, modelConfig: ModelConfig, firstStep: number): DiskNeed {
  return {
    oneCheckpoint: checkpointBytes(modelConfig, config.loraR, config.loraTargets),
    checkpoints: checkpointSteps(firstStep, config.steps, config.saveEvery).length,
    once: config.rolloutEngine === 'llama.cpp' && firstStep === 1 ? ggufExportBytes(modelConfig) : 0,
  };
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

/** A checkpoint's adapters with their optimizer state, its bank file and its reuse pool, read and checked in memory. */
interface RestoredPayload {
  roles: Record<Role, TrainedRole>;
  bankBytes?: Buffer;
  /** The reuse pool at the checkpoint; undefined when the checkpoint has none (written before the pool existed). */
  reusePool?: ReusePool;
}

/** The reuse pool's file in a checkpoint (docs/method.md, "The solver batch and the reuse pool"). */
export const REUSE_POOL_FILE = 'reuse-pool.json';

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
    const poolFile = join(dir, REUSE_POOL_FILE);
    let reusePool: ReusePool | undefined;
    if (existsSync(poolFile)) {
      let raw: unknown;
      try {
        raw = JSON.parse(readFileSync(poolFile, 'utf8'));
      } catch (err) {
        throw new Error(`${poolFile}: not valid JSON (${(err as Error).message})`);
      }
      reusePool = ReusePool.fromFile(raw, poolFile);
    }
    return { roles: roles as Record<Role, TrainedRole>, ...(bankBytes ? { bankBytes } : {}), ...(reusePool ? { reusePool } : {}) };
  } catch (err) {
    for (const t of Object.values(roles)) {
      t.optimizer.dispose();
      t.adapter.dispose();
    }
    throw err;
  }
}

/** Everything a run is made of: what the steps, the evals, the checkpoints and the summary use. */
export interface BuiltRun {
  backend: BackendInfo;
  resolvedModel: ResolvedModel;
  model: CausalLM;
  roles: Record<Role, TrainedRole>;
  bank: SkillBank | undefined;
  cardsAtStart: number;
  /** Counts the judge's, the distiller's and the searcher's calls per step. */
  watch: RoleWatch;
  deps: StepDeps;
  settings: StepSettings;
  seeds: AnswerSeed[];
  /** The reuse pool (with --extraction-failure reuse): saved with every checkpoint, restored on resume. */
  reusePool: ReusePool | undefined;
  heldOut: EvalSet[] | undefined;
  firstStep: number;
  resumedFrom?: number;
  /** Frees the workers, the llama.cpp engine, the bank, the adapters and the model. */
  dispose(): Promise<void>;
}

/**
 * Builds the run; on --resume from the newest checkpoint whose every file is whole and loads (nothing in the
 * run folder is written before it has been read and checked in full).
 */
export async function buildRun(run: RunFolder, config: TrainConfig, hooks: TrainHooks, log: (line: string) => void, resumeDir?: string): Promise<BuiltRun> {
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
  log(`model: ${modelDir} (${model.config.architecture}, ${(model.parameterCount() / 1e6).toFixed(1)}M parameters; ${model.describeFrozenBase()})`);
  const maxPositions = model.config.maxPositionEmbeddings;
  for (const [flag, value] of [['--max-new-tokens', config.maxNewTokens], ['--max-response-tokens', config.maxResponseTokens]] as const) {
    if (value >= maxPositions) {
      model.dispose();
      throw new Error(`${flag} ${value} does not fit the model: ${modelDir} has max_position_embeddings ${maxPositions} for the prompt and the response together`);
    }
  }
  // A held-out file's questions must fit the context with the cards and the response budget (src/eval/context.ts).
  if (heldOutFile) {
    const policy = new ModelPolicy('solver', model, tokenizer, undefined, { enableThinking: config.enableThinking });
    const budget = { renderChat: (m: Parameters<typeof policy.renderChat>[0]) => policy.renderChat(m), cardTokens: config.skills ? config.renderTokenBudget : 0, responseTokens: config.maxResponseTokens };
    const tooLong = questionsOverContext(heldOutFile, budget, model.config, modelDir, () => `--eval-data ${String(config.evalData)}`);
    if (tooLong !== undefined) {
      model.dispose();
      throw new Error(tooLong);
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
  if (env.corpora) log(`training corpora: ${env.corpora.map((c, k) => `${k}: ${c.description}`).join('; ')}; step s proposes in corpus (s − 1) mod ${env.corpora.length}`);
  const mixProblem = hopMixProblem(seeds, stepSettingsOf(config).hopMix);
  if (mixProblem) {
    model.dispose();
    throw new Error(mixProblem);
  }
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
  // The disk: refused when not even the first checkpoint fits (the run would fail there), warned when not all
  // of them do (src/checkpoint/disk-need.ts).
  const disk = diskNeedOf(config, model.config, firstStep);
  const free = freeBytesAt(run.dir);
  const verdict = diskVerdict(free, disk);
  if (verdict !== undefined) {
    const what = `${run.dir} has ${formatSize(free)} free; the run writes ${disk.checkpoints} checkpoint${disk.checkpoints === 1 ? '' : 's'} of ≈ ${formatSize(disk.oneCheckpoint)} (≈ ${formatSize(totalBytes(disk))} with its other files${disk.once > 0 ? ' and the llama.cpp GGUF export' : ''})`;
    if (verdict.kind === 'refuse') {
      for (const r of ckpt ? Object.values(ckpt.loaded.roles) : []) {
        r.optimizer.dispose();
        r.adapter.dispose();
      }
      model.dispose();
      throw new Error(`${what}: not even the first checkpoint would fit; free space or choose another --out`);
    }
    log(`warning: ${what}: room for ${verdict.fitting} of them; free space, raise --save-every, or choose another --out`);
  }
  if (resumeDir !== undefined) {
    for (const s of restored?.skipped ?? []) log(`warning: checkpoint step ${s.step} is not usable, skipped: ${s.reason}`);
    run.truncateMetricsAfter(ckpt?.step ?? 0);
    if (ckpt?.loaded.bankBytes) writeFileAtomic(run.bankPath, ckpt.loaded.bankBytes);
    else rmSync(run.bankPath, { force: true });
    log(ckpt ? `resuming ${run.dir} from checkpoint step ${ckpt.step}` : `resuming ${run.dir}: no checkpoint yet, starting over`);
  }

  const roles: Record<Role, TrainedRole> = ckpt ? ckpt.loaded.roles : freshRoles(config, model.config);
  // The reuse pool: the checkpoint's, else empty (a new run, or a checkpoint written before the pool existed).
  if (ckpt && config.extractionFailure === 'reuse' && !ckpt.loaded.reusePool) log(`warning: checkpoint step ${ckpt.step} has no ${REUSE_POOL_FILE}: the reuse pool starts empty`);
  const reusePool = config.extractionFailure === 'reuse' ? (ckpt?.loaded.reusePool ?? new ReusePool()) : undefined;
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
    minScore: config.skillsMinScore,
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
  // One search tool per training corpus (docs/method.md, "Training corpora"), all counted by the watch.
  const searchers = env.corpora ? env.corpora.map((c, k) => (k === 0 ? watch.searcher : watch.searcher.sibling(c.searcher))) : searcher;
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
    // ~450 MiB after the first forward of a 400 MB ~100M model), counted as the model's size, and of the
    // transposes the model holds for the backward (src/rl/grpo-update.ts, wasmHeapInUse).
    backend.name === 'wasm' || backend.name === 'native' ? { limitBytes: WASM_HEAP_LIMIT_BYTES, usedBytes: () => wasmHeapInUse(model), onSplit: (m) => log(`warning: ${m}`) } : undefined,
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
        backend: backendLabel(backend) as Exclude<BackendChoice, 'auto'>,
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
    const devices = gpuOf ? `one GPU each: ${gpuOf.join(', ')}` : backend.name === 'wasm' || backend.name === 'native' ? `one ${backend.name} thread each` : `${backend.name} backend`;
    log(`step: sharded over ${workers} worker processes (${devices}): worker r rolls out, checks and judges seeds r, r + ${workers}, …; updates data-parallel`);
  }
  const deps = {
    proposer: new ProposerRole(rolloutPolicy('proposer'), searchers, rolloutSettingsOf(config, 'proposer'), runner?.('proposer')),
    solver: new SolverRole(rolloutPolicy('solver'), searchers, bank, rolloutSettingsOf(config, 'solver'), runner?.('solver')),
    judge: answerJudge,
    ragJudge: scriptedJudge && scripted ? scripted.ragReader : judgeText,
    // The scripted RAG reader of each training world (an endpoint judge reads every corpus).
    ...(scriptedJudge && env.corpora?.every((c) => c.ragReader !== undefined) ? { ragJudges: env.corpora.map((c) => c.ragReader as TextGenerator) } : {}),
    ...(reusePool ? { reusePool } : {}),
    searchers,
    skills: bank,
    updater,
    ...(distiller ? { distiller } : {}),
    ...(judging ? { judging } : {}),
    onPhase: (step: number, phase: StepPhase, state: 'start' | 'end', seconds?: number) => hooks.onProgress?.({ kind: 'phase', step, phase, state, ...(seconds !== undefined ? { seconds } : {}) }),
  };
  const settings = stepSettingsOf(config);
  if (reusePool) log(`reuse pool: ${reusePool.size} questions${ckpt ? ` (from checkpoint step ${ckpt.step})` : ''}; emptied before every step that is a multiple of ${config.reusePoolClearEvery}`);
  // The held-out sets: the environment's own, or a file or benchmark asked against the run's search tool.
  const heldOut = heldOutSets ?? (heldOutFile ? [{ dataset: String(config.evalData), questions: heldOutFile, searcher }] : undefined);
  return {
    backend,
    resolvedModel,
    model,
    roles,
    bank,
    cardsAtStart,
    watch,
    deps,
    settings,
    seeds,
    reusePool,
    heldOut,
    firstStep,
    ...(ckpt ? { resumedFrom: ckpt.step } : {}),
    async dispose(): Promise<void> {
      await pool?.close();
      await engine?.dispose();
      await bank?.dispose();
      for (const r of Object.values(roles)) {
        r.optimizer.dispose();
        r.adapter.dispose();
      }
      model.dispose();
    },
  };
}
