// Supervised fine-tuning (docs/sft.md): the masked NLL of assistant tokens (./nll.ts) over chat transcripts
// (./transcript.ts), full-weight or LoRA, with AdamW (src/rl/optimizer.ts: warmup, constant or cosine
// schedule, global-norm clipping), micro-batch accumulation, epochs and a seed.
//
// The run folder:
//   sft.json                  the resolved settings (a resumed run reads them back)
//   loss.jsonl                one line per optimizer step (loss, lr, grad norm, tokens, tok/s), plus eval lines
//   train.log                 a human log
//   checkpoints/step-N/       model/ (full: a Hugging Face folder, f32) or adapter/ (PEFT), optimizer.safetensors,
//                             state.json last (a folder without it is incomplete and ignored)
//   final/                    the trained model (full) or adapter (LoRA)
// Every file is written atomically. The data order is a function of the seed and the epoch only, and a
// checkpoint holds the exact weights and optimizer state, so a resumed run repeats the uninterrupted one bit
// for bit.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { appendToFile, ensureDir, writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { yieldToEventLoop } from '../util/yield.js';
import { saveFullModel } from '../checkpoint/full-model.js';
import { loadOptimizerState, saveOptimizerState } from '../checkpoint/optimizer-state.js';
import { loadPeftAdapter, savePeftAdapter } from '../checkpoint/peft.js';
import { LoraAdapter } from '../model/lora.js';
import { CausalLM } from '../model/qwen3.js';
import { peftBaseModel, resolveModelName } from '../checkpoint/model-name.js';
import { loadTokenizer, type Tokenizer } from '../model/tokenizer.js';
import { accumulateGradients, disposeGrads } from '../rl/accumulate.js';
import { AdamW } from '../rl/optimizer.js';
import { type BackendInfo, describeBackend, initBackend, tf } from '../tensor/backend.js';
import { Rng } from '../util/rng.js';
import { readSavedSftConfig, type SftConfig, validateSftConfig } from './config.js';
import { flagName } from '../settings/table.js';
import { countTargets, maskedNll, type MaskedSequence } from './nll.js';
import { readTranscripts, renderTranscript, type RenderedExample } from './transcript.js';

export interface SftStepRecord {
  step: number;
  epoch: number;
  loss: number;
  lr: number;
  gradNorm: number;
  clipped: boolean;
  /** Masked (trained) tokens in the step. */
  targets: number;
  /** All tokens through forward and backward. */
  tokens: number;
  tokensPerSecond: number;
  seconds: number;
}

export interface SftEvalRecord {
  step: number;
  evalLoss: number;
  evalTargets: number;
}

export interface SftStartInfo {
  runDir: string;
  backend: BackendInfo;
  modelDir: string;
  firstStep: number;
  totalSteps: number;
  trainExamples: number;
  evalExamples: number;
  trainableParameters: number;
  resumedFrom?: number;
}

export interface SftHooks {
  log(line: string): void;
  onStart?(info: SftStartInfo): void;
  onStep?(record: SftStepRecord): void;
  onEval?(record: SftEvalRecord): void;
  /** Asked after every step: true stops the run after a checkpoint. */
  shouldStop?(): boolean;
}

export interface SftSummary {
  runDir: string;
  firstStep: number;
  lastStep: number;
  totalSteps: number;
  resumedFrom?: number;
  stoppedEarly: boolean;
  firstLoss?: number;
  lastLoss?: number;
  firstEvalLoss?: number;
  lastEvalLoss?: number;
  /** The trained model or adapter (absent when stopped early). */
  finalDir?: string;
  lastCheckpoint?: string;
  /** A resumed run whose steps were all done already: nothing was trained. */
  finished?: boolean;
  /** Settings changed by flags given with --resume (written to sft.json). */
  changed?: Array<{ key: string; from: unknown; to: unknown }>;
}

const CONFIG_FILE = 'sft.json';
const LOSS_FILE = 'loss.jsonl';

/** Splits the data into train and held-out examples: a seeded shuffle, the first round(f·n) held out. */
export function splitHeldOut<T>(items: readonly T[], fraction: number, seed: number): { train: T[]; held: T[] } {
  const held = Math.round(fraction * items.length);
  if (held === 0) return { train: [...items], held: [] };
  if (held >= items.length) throw new Error(`a held-out fraction of ${fraction} leaves no training examples out of ${items.length}`);
  const order = permutation(items.length, new Rng((seed ^ 0x5eed) >>> 0));
  return { held: order.slice(0, held).map((i) => items[i] as T), train: order.slice(held).map((i) => items[i] as T) };
}

/** A uniformly random permutation of 0..n−1 (Fisher–Yates). */
export function permutation(n: number, rng: Rng): number[] {
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [p[i], p[j]] = [p[j] as number, p[i] as number];
  }
  return p;
}

/** The examples of optimizer step `step` (1-based): epoch order from the seed, then consecutive batches. */
export function batchOfStep<T>(items: readonly T[], step: number, batchSize: number, seed: number): { batch: T[]; epoch: number } {
  const perEpoch = Math.ceil(items.length / batchSize);
  const epoch = Math.floor((step - 1) / perEpoch);
  const k = (step - 1) % perEpoch;
  const order = permutation(items.length, Rng.derive(seed, epoch));
  return { batch: order.slice(k * batchSize, (k + 1) * batchSize).map((i) => items[i] as T), epoch: epoch + 1 };
}

/**
 * The passes of a step: sequences sorted by length, each pass at most `size` of them and, when `maxTokens`
 * > 0, at most `maxTokens` padded tokens (count × longest); a sequence longer than that goes alone.
 */
export function microBatches(batch: readonly MaskedSequence[], size: number, maxTokens: number): MaskedSequence[][] {
  const sorted = [...batch].sort((x, y) => x.ids.length - y.ids.length);
  const out: MaskedSequence[][] = [];
  let cur: MaskedSequence[] = [];
  for (const s of sorted) {
    // Sorted ascending, so s is the longest of the pass it joins.
    if (cur.length > 0 && (cur.length >= size || (maxTokens > 0 && (cur.length + 1) * s.ids.length > maxTokens))) {
      out.push(cur);
      cur = [];
    }
    cur.push(s);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

function renderAll(file: string, tokenizer: Tokenizer, config: SftConfig): RenderedExample[] {
  return readTranscripts(file).map((t) => {
    const r = renderTranscript(t, tokenizer, { enableThinking: config.enableThinking, lossOn: config.lossOn });
    if (r.ids.length > config.maxTokens) throw new Error(`${r.where}: the transcript renders to ${r.ids.length} tokens, more than maxTokens (--max-tokens) ${config.maxTokens}`);
    return r;
  });
}

export interface SftStepResult {
  loss: number;
  lr: number;
  gradNorm: number;
  clipped: boolean;
  /** Masked (trained) tokens. */
  targets: number;
  /** All tokens through forward and backward. */
  tokens: number;
  seconds: number;
}

/**
 * One optimizer step on `batch`: micro-batches of similar lengths, gradients of the whole-batch masked NLL
 * accumulated over them (./nll.ts), then AdamW. `params` are what is trained: the model's variables (full)
 * or the adapter's (LoRA).
 */
export function sftStep(
  model: CausalLM,
  adapter: LoraAdapter | undefined,
  params: Record<string, tf.Variable>,
  optimizer: AdamW,
  batch: readonly MaskedSequence[],
  opts: { microBatchSize: number; microBatchTokens?: number; padTokenId: number; logitsChunkSize?: number; recomputeLayers?: boolean },
): SftStepResult {
  const t0 = performance.now();
  const normalizer = countTargets(batch);
  // Micro-batches of similar lengths pad less (the step's loss and gradient do not depend on the grouping).
  const micro = microBatches(batch, opts.microBatchSize, opts.microBatchTokens ?? 0);
  const acc = accumulateGradients(params, micro.length, (i) => ({
    loss: maskedNll(model, micro[i] as MaskedSequence[], normalizer, {
      padTokenId: opts.padTokenId,
      ...(opts.logitsChunkSize ? { chunkSize: opts.logitsChunkSize } : {}),
      recomputeLayers: opts.recomputeLayers ?? false,
      ...(adapter ? { adapter } : {}),
    }),
  }));
  const info = optimizer.step(acc.grads);
  disposeGrads(acc.grads);
  const tokens = batch.reduce((n, s) => n + s.ids.length, 0);
  return { loss: acc.loss, lr: info.lr, gradNorm: info.gradNorm, clipped: info.clipped, targets: normalizer, tokens, seconds: (performance.now() - t0) / 1000 };
}

/** Token-mean NLL over `examples`, without a tape. */
function evalLoss(model: CausalLM, examples: readonly MaskedSequence[], config: SftConfig, padTokenId: number, adapter: LoraAdapter | undefined): { loss: number; targets: number } {
  let sum = 0;
  for (const mb of microBatches(examples, config.microBatchSize, config.microBatchTokens)) {
    const s = tf.tidy(() => maskedNll(model, mb, 1, { padTokenId, chunkSize: config.logitsChunkSize, ...(adapter ? { adapter } : {}) }));
    sum += s.dataSync()[0] as number;
    s.dispose();
  }
  const targets = countTargets(examples);
  return { loss: sum / targets, targets };
}

interface Checkpoint {
  step: number;
  dir: string;
}

/** The newest checkpoint with its state.json (written last), or undefined. */
export function latestSftCheckpoint(runDir: string): Checkpoint | undefined {
  const root = join(runDir, 'checkpoints');
  if (!existsSync(root)) return undefined;
  const steps = readdirSync(root)
    .map((n) => /^step-(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  for (const step of steps) {
    const dir = join(root, `step-${step}`);
    if (existsSync(join(dir, 'state.json'))) return { step, dir };
  }
  return undefined;
}

function readConfig(runDir: string): SftConfig {
  const file = join(runDir, CONFIG_FILE);
  if (!existsSync(file)) throw new Error(`${runDir} is not an SFT run folder: ${file} does not exist`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  try {
    return readSavedSftConfig(raw, file);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
}

/** Keeps the loss lines of steps ≤ `step` (a resumed run redoes the rest). */
function truncateLoss(runDir: string, step: number): string[] {
  const file = join(runDir, LOSS_FILE);
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.trim().length > 0) : [];
  const kept = lines.filter((l) => {
    try {
      const s = (JSON.parse(l) as { step?: unknown }).step;
      return typeof s === 'number' && s <= step;
    } catch {
      return false; // a torn line cannot be a completed step's record
    }
  });
  writeFileAtomic(file, kept.length > 0 ? `${kept.join('\n')}\n` : '');
  return kept;
}

/**
 * Runs SFT. A new run takes `configIn` (its `out` must not hold a run yet); `resumeDir` continues the run in
 * that folder from its last complete checkpoint, with its saved settings. `threads`: the wasm backend's compute
 * threads for this process (not saved with the run's settings: a resumed run takes the count it is given now;
 * default all cores).
 */
export async function runSft(configIn: SftConfig | undefined, hooks: SftHooks, resumeDir?: string, threads?: number, overrides: Partial<SftConfig> = {}): Promise<SftSummary> {
  let config: SftConfig;
  let runDir: string;
  let changed: SftSummary['changed'];
  if (resumeDir !== undefined) {
    const saved = readConfig(resumeDir);
    runDir = resumeDir;
    config = validateSftConfig({ ...saved, ...overrides });
    changed = (Object.keys(overrides) as Array<keyof SftConfig>).filter((k) => JSON.stringify(saved[k]) !== JSON.stringify(config[k])).map((k) => ({ key: k, from: saved[k], to: config[k] }));
  } else {
    if (!configIn) throw new Error('runSft: no settings');
    config = validateSftConfig(configIn);
    runDir = config.out;
    if (existsSync(join(runDir, CONFIG_FILE))) throw new Error(`${runDir} already holds an SFT run (${join(runDir, CONFIG_FILE)} exists): resume it with --resume ${runDir}, or choose another --out`);
    // The project's own mkdir, a level at a time: a read-only mount names its error (EROFS), and a path
    // under /proc fails instead of looping forever as a recursive mkdir does there.
    ensureDir(join(runDir, 'checkpoints'));
    writeJsonAtomic(join(runDir, CONFIG_FILE), config);
    writeFileAtomic(join(runDir, LOSS_FILE), '');
  }
  const log = (line: string): void => {
    appendToFile(join(runDir, 'train.log'), `${new Date().toISOString()} ${line}\n`);
    hooks.log(line);
  };
  const lossLines: string[] = [];
  const appendLoss = (record: object): void => {
    lossLines.push(JSON.stringify(record));
    writeFileAtomic(join(runDir, LOSS_FILE), `${lossLines.join('\n')}\n`);
  };

  const backend = await initBackend(config.backend, threads !== undefined ? { threads } : {});
  log(`backend: ${describeBackend(backend)}`);
  const resolved = await resolveModelName(config.model, { log });
  const modelDir = resolved.dir;
  const tokenizer = await loadTokenizer(modelDir);
  const padTokenId = tokenizer.padTokenId;

  // Data: rendered once; the held-out split and every epoch's order depend on the seed alone.
  const all = renderAll(config.data, tokenizer, config);
  const split = splitHeldOut(all, config.evalFraction, config.seed);
  const train = split.train;
  const held = [...split.held, ...(config.evalData ? renderAll(config.evalData, tokenizer, config) : [])];
  const perEpoch = Math.ceil(train.length / config.batchSize);
  const totalSteps = config.maxSteps > 0 ? Math.min(config.maxSteps, perEpoch * config.epochs) : perEpoch * config.epochs;
  if (config.lrSchedule === 'cosine' && totalSteps <= config.warmupSteps) {
    throw new Error(`--lr-schedule cosine needs more steps (${totalSteps}) than --warmup-steps (${config.warmupSteps}); lower the warmup or use --lr-schedule constant`);
  }
  log(`data: ${train.length} training transcripts (${countTargets(train)} target tokens: ${config.lossOn === 'all' ? 'every token' : "the assistant's"}), ${held.length} held out; ${perEpoch} steps per epoch, ${totalSteps} steps`);

  const ckpt = resumeDir !== undefined ? latestSftCheckpoint(runDir) : undefined;
  if (resumeDir !== undefined && changed && changed.length > 0) {
    if (ckpt && totalSteps < ckpt.step) {
      throw new Error(`--resume ${runDir}: ${changed.map((c) => `--${flagName(c.key)} ${String(c.to)}`).join(', ')} gives ${totalSteps} steps, below the checkpoint step ${ckpt.step} the run resumes from: a run cannot be shortened to before its last checkpoint`);
    }
    writeJsonAtomic(join(runDir, CONFIG_FILE), config);
    for (const c of changed) log(`config change on resume: --${flagName(c.key)} ${String(c.from)} → ${String(c.to)} (written to ${join(runDir, CONFIG_FILE)}); ${totalSteps} steps in all`);
    if (config.lrSchedule === 'cosine') log(`warning: the cosine learning-rate schedule now decays over ${totalSteps} steps: the steps after the checkpoint follow that curve, not the one the run had`);
  }
  const finalPath = join(runDir, 'final');
  if (ckpt && ckpt.step >= totalSteps && existsSync(finalPath)) {
    log(`${runDir} is finished: all ${totalSteps} steps are done (last checkpoint step ${ckpt.step}, ${finalPath}); to train further, resume with more --epochs or --max-steps`);
    return { runDir, firstStep: ckpt.step + 1, lastStep: ckpt.step, totalSteps, stoppedEarly: false, resumedFrom: ckpt.step, finished: true, finalDir: finalPath, lastCheckpoint: ckpt.dir, ...(changed && changed.length > 0 ? { changed } : {}) };
  }
  if (resumeDir !== undefined) {
    lossLines.push(...truncateLoss(runDir, ckpt?.step ?? -1));
    log(ckpt ? `resuming ${runDir} from checkpoint step ${ckpt.step}` : `resuming ${runDir}: no complete checkpoint, starting over`);
  }
  const firstStep = ckpt ? ckpt.step + 1 : 1;

  // The model and what is trained: every weight (full) or a LoRA adapter on the frozen base.
  let model: CausalLM;
  let adapter: LoraAdapter | undefined;
  if (config.mode === 'full') {
    model = await CausalLM.load(ckpt ? join(ckpt.dir, 'model') : modelDir, { trainable: true });
  } else {
    model = await CausalLM.load(modelDir);
    adapter = ckpt
      ? loadPeftAdapter(join(ckpt.dir, 'adapter'), 'sft', model.config)
      : LoraAdapter.create('sft', model.config, { r: config.loraR, alpha: config.loraAlpha, dropout: 0, targets: config.loraTargets }, { seed: config.seed });
  }
  const params: Record<string, tf.Variable> = Object.fromEntries(adapter ? adapter.variables() : model.variables());
  const trainableParameters = Object.values(params).reduce((n, v) => n + v.size, 0);
  const optimizer = new AdamW(params, {
    lr: config.lr,
    warmupSteps: config.warmupSteps,
    schedule: config.lrSchedule,
    totalSteps: totalSteps,
    minLrRatio: config.minLrRatio,
    weightDecay: config.weightDecay,
    maxGradNorm: config.maxGradNorm,
  });
  if (ckpt) optimizer.importState(loadOptimizerState(ckpt.dir));
  log(`model: ${modelDir} (${model.config.architecture}, ${(model.parameterCount() / 1e6).toFixed(2)}M parameters); ${config.mode === 'full' ? 'full-weight' : `LoRA r=${config.loraR} alpha=${config.loraAlpha} on ${config.loraTargets.join(',')}`}, ${trainableParameters.toLocaleString('en-US')} trainable`);
  hooks.onStart?.({ runDir, backend, modelDir, firstStep, totalSteps, trainExamples: train.length, evalExamples: held.length, trainableParameters, ...(ckpt ? { resumedFrom: ckpt.step } : {}) });

  const baseModel = peftBaseModel(resolved);
  const saveTrained = async (dir: string, dtype: SftConfig['saveDtype']): Promise<void> => {
    if (adapter) await savePeftAdapter(adapter, dir, { baseModel });
    else await saveFullModel(model, modelDir, dir, dtype);
  };
  let lastCheckpoint: string | undefined;
  const saveCheckpoint = async (step: number): Promise<void> => {
    const root = join(runDir, 'checkpoints');
    const final = join(root, `step-${step}`);
    const tmp = join(root, `.step-${step}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    ensureDir(tmp);
    await saveTrained(join(tmp, adapter ? 'adapter' : 'model'), 'f32');
    saveOptimizerState(tmp, optimizer.exportState());
    writeJsonAtomic(join(tmp, 'state.json'), { step, seed: config.seed, savedAt: new Date().toISOString() });
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    lastCheckpoint = final;
    // Older complete checkpoints beyond the kept count go (newest first).
    const older = readdirSync(root)
      .map((n) => /^step-(\d+)$/.exec(n))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => b - a)
      .slice(config.keepCheckpoints);
    for (const s of older) rmSync(join(root, `step-${s}`), { recursive: true, force: true });
    log(`checkpoint: ${final}`);
  };
  const runEval = (step: number): SftEvalRecord | undefined => {
    if (held.length === 0) return undefined;
    const e = evalLoss(model, held, config, padTokenId, adapter);
    const record = { step, evalLoss: e.loss, evalTargets: e.targets };
    appendLoss(record);
    log(`step ${step}: eval loss ${e.loss.toFixed(4)} over ${e.targets} held-out tokens`);
    hooks.onEval?.(record);
    return record;
  };

  let firstLoss: number | undefined;
  let lastLoss: number | undefined;
  let firstEvalLoss: number | undefined;
  let lastEvalLoss: number | undefined;
  let lastStep = firstStep - 1;
  let stoppedEarly = false;
  let finalDir: string | undefined;
  try {
    if (firstStep === 1) firstEvalLoss = runEval(0)?.evalLoss;
    for (let step = firstStep; step <= totalSteps; step++) {
      const { batch, epoch } = batchOfStep(train, step, config.batchSize, config.seed);
      const r = sftStep(model, adapter, params, optimizer, batch, { microBatchSize: config.microBatchSize, microBatchTokens: config.microBatchTokens, padTokenId, logitsChunkSize: config.logitsChunkSize, recomputeLayers: config.recomputeLayers });
      const record: SftStepRecord = { step, epoch, loss: r.loss, lr: r.lr, gradNorm: r.gradNorm, clipped: r.clipped, targets: r.targets, tokens: r.tokens, tokensPerSecond: r.tokens / r.seconds, seconds: r.seconds };
      appendLoss(record);
      firstLoss ??= r.loss;
      lastLoss = r.loss;
      lastStep = step;
      hooks.onStep?.(record);
      // A step is synchronous tensor work: without a turn of the event loop here no signal handler (Ctrl-C,
      // SIGTERM) ever runs, and shouldStop could not see a stop that was asked for (src/util/yield.ts).
      await yieldToEventLoop();
      const stop = hooks.shouldStop?.() ?? false;
      if (config.evalEvery > 0 && step % config.evalEvery === 0 && step < totalSteps) lastEvalLoss = runEval(step)?.evalLoss ?? lastEvalLoss;
      if (step % config.saveEvery === 0 || step === totalSteps || stop) await saveCheckpoint(step);
      if (stop && step < totalSteps) {
        stoppedEarly = true;
        log(`stopped at step ${step} on request; resume with --resume ${runDir}`);
        break;
      }
    }
    if (!stoppedEarly) {
      lastEvalLoss = runEval(totalSteps)?.evalLoss ?? lastEvalLoss;
      finalDir = join(runDir, 'final');
      const tmp = join(runDir, `.final.${process.pid}.tmp`);
      rmSync(tmp, { recursive: true, force: true });
      await saveTrained(tmp, config.saveDtype);
      rmSync(finalDir, { recursive: true, force: true });
      renameSync(tmp, finalDir);
      log(`trained ${adapter ? 'adapter' : 'model'}: ${finalDir}`);
    }
  } finally {
    optimizer.dispose();
    adapter?.dispose();
    model.dispose();
  }
  return {
    runDir,
    firstStep,
    lastStep,
    totalSteps,
    stoppedEarly,
    ...(ckpt ? { resumedFrom: ckpt.step } : {}),
    ...(firstLoss !== undefined ? { firstLoss } : {}),
    ...(lastLoss !== undefined ? { lastLoss } : {}),
    ...(firstEvalLoss !== undefined ? { firstEvalLoss } : {}),
    ...(lastEvalLoss !== undefined ? { lastEvalLoss } : {}),
    ...(finalDir ? { finalDir } : {}),
    ...(lastCheckpoint ? { lastCheckpoint } : {}),
    ...(changed && changed.length > 0 ? { changed } : {}),
  };
}
