// The training run: opens or resumes the run folder, builds the run (./run-setup.ts), then runs SESA steps with
// metrics, held-out evals, checkpoints and a stop on request. The step itself is in step.ts.
import { dirname, join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { redactSecrets } from '../util/redact.js';
import { saveOptimizerState } from '../checkpoint/optimizer-state.js';
import { savePeftAdapter } from '../checkpoint/peft.js';
import { type HeldOutEval, type HeldOutRow, heldOutRows, pairedGainOfFiles } from '../eval/held-out.js';
import { heldOutCacheDigest, heldOutCacheFile, readHeldOutCache, writeHeldOutCache } from '../eval/held-out-cache.js';
import { stepZeroEvalInputs } from './held-out-cache-key.js';
import { buildRun, REUSE_POOL_FILE } from './run-setup.js';
import { peftBaseModel } from '../checkpoint/model-name.js';
import { type BackendInfo } from '../tensor/backend.js';
import { configForDisk, parseSavedConfig, redactedUrlSettings, resumeChanges, showValue, shownValue, flagName, type TrainConfig, validateConfig, workerCount } from '../settings/train.js';
import { RoleFailureError, type StepCalls } from './role-health.js';
import { RunFolder } from './run-folder.js';
import { type StepMetrics, type StepPhase, sesaStep } from './step.js';
import { advantageSettingsOf, evalSettingsOf } from './step-settings.js';
import { flatEvalMetrics, flatStepMetrics } from './flat-metrics.js';
import { TensorBoardLog } from './tensorboard-log.js';

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
  | { kind: 'eval-batch'; step: number; skills: 'on' | 'off'; done: number; total: number }
  /** The eval of `step` was read from the step-0 cache; `seconds` is what it took the run that computed it. */
  | { kind: 'eval-cached'; step: number; seconds: number };

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

/** The step-0 eval cache's folder, beside the run folder (docs/evaluation.md, "The step-0 cache"). */
const HELD_OUT_CACHE_DIR = '.held-out-cache';

/**
 * The run's loop (docs/method.md, "One step"): the held-out eval at step 0, then each step, its metrics line,
 * the eval every --eval-every steps, a checkpoint every --save-every steps, and a stop on request.
 */
async function trainInRun(run: RunFolder, config: TrainConfig, hooks: TrainHooks, log: (line: string) => void, progress: { started: boolean }, resumeDir?: string): Promise<TrainSummary> {
  const built = await buildRun(run, config, hooks, log, resumeDir);
  const { backend, resolvedModel, roles, bank, cardsAtStart, watch, deps, settings, seeds, heldOut, firstStep } = built;
  const modelDir = resolvedModel.dir;
  // The steps whose held-out eval is still to run (0: before step 1), for the progress lines' ETA.
  const evalAtZeroDone = run.metrics().some((m) => (m as { kind?: unknown; step?: unknown }).kind === 'eval' && (m as { step?: unknown }).step === 0);
  const heldOutSteps = config.evalEvery === 0 ? [] : [...(evalAtZeroDone ? [] : [0]), ...Array.from({ length: config.steps - firstStep + 1 }, (_, i) => firstStep + i).filter((s) => s % config.evalEvery === 0 || s === config.steps)];
  hooks.onStart?.({ runDir: run.dir, firstStep, lastStep: config.steps, backend, modelDir, heldOutSteps, ...(built.resumedFrom !== undefined ? { resumedFrom: built.resumedFrom } : {}) });
  const metrics: StepMetrics[] = [];
  // The flat metrics (./flat-metrics.ts) also go to TensorBoard, unless --tensorboard off.
  const board = config.tensorboard ? TensorBoardLog.open(run.dir, firstStep - 1) : undefined;
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
      // The reuse pool, so a resumed run draws from the same questions (docs/method.md, "The solver batch and the reuse pool").
      if (built.reusePool) writeJsonAtomic(join(dir, REUSE_POOL_FILE), built.reusePool.toFile());
    });
    log(`checkpoint: ${lastCheckpoint}`);
  };

  // docs/evaluation.md: the same greedy evaluation as `sesa-train eval`, on the live solver adapter; each mode's
  // predictions go to eval/step-N-skills-M.jsonl (the paired intervals of the summary read them).
  const runHeldOut = async (step: number): Promise<void> => {
    if (!heldOut) return;
    const compute = (): Promise<HeldOutEval[]> =>
      heldOutRows(step, { policy: deps.solver.policy, ...(bank ? { bank } : {}) }, heldOut, evalSettingsOf(config), (skills, done, total) =>
        hooks.onProgress?.({ kind: 'eval-batch', step, skills, done, total }),
      );
    // Step 0 is the warm start's eval: reused from an identical earlier run where there is one (docs/evaluation.md,
    // "The step-0 cache").
    let cachedFrom: string | undefined;
    let evals: HeldOutEval[];
    if (step === 0 && config.evalCache) {
      const key = await stepZeroEvalInputs({ config, modelDir, adapter: roles.solver.adapter, ...(bank ? { bank } : {}), sets: heldOut, backend });
      if ('reason' in key) {
        log(`held-out eval at step 0 is computed, not cached: ${key.reason}`);
        evals = await compute();
      } else {
        const digest = heldOutCacheDigest(key.inputs);
        const file = heldOutCacheFile(join(dirname(run.dir), HELD_OUT_CACHE_DIR), digest);
        const hit = readHeldOutCache(file, digest, (w) => log(`warning: ${w}`));
        if (hit) {
          evals = hit;
          cachedFrom = file;
          hooks.onProgress?.({ kind: 'eval-cached', step, seconds: hit.reduce((n, e) => n + e.row.seconds, 0) });
        } else {
          evals = await compute();
          writeHeldOutCache(file, digest, key.inputs, evals, (w) => log(`warning: ${w}`));
        }
      }
    } else evals = await compute();
    for (const { row: computed, records } of evals) {
      const row: HeldOutRow = cachedFrom ? { ...computed, cachedFrom } : computed;
      run.writeEvalPredictions(step, row.skills, records);
      run.appendMetrics(row);
      board?.write(step, flatEvalMetrics(row));
      const how = cachedFrom ? `from ${cachedFrom}, computed in ${row.seconds.toFixed(1)} s by an earlier run with the same inputs` : `${row.seconds.toFixed(1)} s`;
      log(`held-out eval at step ${step}, skills ${row.skills}: EM ${(100 * row.em).toFixed(1)}%, F1 ${(100 * row.f1).toFixed(1)}% on ${row.questions} questions (${how})`);
    }
  };
  const evalRowsSoFar = (): HeldOutRow[] => run.metrics().filter((m): m is HeldOutRow => (m as { kind?: unknown }).kind === 'eval');

  progress.started = true;
  try {
    if (heldOut && !evalRowsSoFar().some((r) => r.step === 0)) await runHeldOut(0);
    for (let step = firstStep; step <= config.steps; step++) {
      watch.beginStep();
      const result = await sesaStep(step, seeds, deps, settings);
      const flat = flatStepMetrics(result.metrics, result.groups, { advantage: advantageSettingsOf(config), workers: workerCount(config) });
      // Calls of the judge and distiller and empty searches this step (a role failing too long throws).
      let calls: StepCalls;
      try {
        calls = watch.endStep(step);
      } catch (err) {
        if (!(err instanceof RoleFailureError)) throw err;
        // Keep the step's work: record it with its calls and warnings, checkpoint it, then stop.
        const failed = err.stepCalls;
        run.appendMetrics(failed ? { ...result.metrics, calls: failed.calls, searches: failed.searches, ...flat } : { ...result.metrics, ...flat });
        board?.write(step, flat);
        for (const w of failed?.warnings ?? []) log(`warning: ${w}`);
        await saveCheckpoint(step);
        throw new RoleFailureError(`${err.message}. Checkpoint step ${step} was written; continue with --resume ${run.dir}`);
      }
      run.appendMetrics({ ...result.metrics, calls: calls.calls, searches: calls.searches, ...flat });
      board?.write(step, flat);
      metrics.push(result.metrics);
      // The run log gets a line per step; the caller shows steps through onStepEnd.
      run.log(
        `step ${step}: valid ${result.metrics.validQuestions}/${result.metrics.proposals}${result.metrics.hopChecks > 0 ? ` (hop check: ${result.metrics.invalidReasons['answerable-in-one-search'] ?? 0} of ${result.metrics.hopChecks} multi-hop answerable in one search)` : ''}${result.metrics.firstSearchChecks > 0 ? ` (first-search check: ${result.metrics.invalidReasons['answerable-from-first-search'] ?? 0} of ${result.metrics.firstSearchChecks} multi-hop answerable from the first search)` : ''}, solver batch ${result.metrics.solverQuestions} (${result.metrics.reusedQuestions} reused${result.metrics.resampleRounds > 0 ? `, ${result.metrics.resampledQuestions} resampled in ${result.metrics.resampleRounds} round${result.metrics.resampleRounds === 1 ? '' : 's'}` : ''}), ${result.metrics.informativeGroups} with a signal, solver accuracy ${result.metrics.solverAccuracy.toFixed(3)}, ` +
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
    await built.dispose();
  }
  const last = metrics[metrics.length - 1];
  const heldOutSummary = (['on', 'off'] as const).flatMap((skills) => {
    const rows = evalRowsSoFar().filter((r) => r.skills === skills);
    const a = rows[0];
    const b = rows[rows.length - 1];
    if (!a || !b) return [];
    const gain = a.step !== b.step ? pairedGainOfFiles(run.evalPredictionsPath(a.step, skills), run.evalPredictionsPath(b.step, skills)) : undefined;
    return [{ skills, first: { step: a.step, em: a.em, f1: a.f1 }, last: { step: b.step, em: b.em, f1: b.f1 }, ...(gain ? { gain } : {}) }];
  });
  return {
    runDir: run.dir,
    model: config.model,
    firstStep,
    lastStep: last?.step ?? firstStep - 1,
    stoppedEarly,
    ...(built.resumedFrom !== undefined ? { resumedFrom: built.resumedFrom } : {}),
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
