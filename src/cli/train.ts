// `sesa-train` / `sesa-train train`: SESA self-play training. With no arguments it runs the embedded default:
// SESA in the demo world from its shipped warm start (docs/world.md); `--model tiny` is the tiny random model.
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { gainText } from '../eval/bootstrap.js';
import { TINY_DEFAULTS, flagName, flagValue, groupTitleOf, keyOf, parseConfigObject, RECIPE_PRESETS, type RecipeName, SETTING_KEYS, type SettingKey, TRAIN_DEFAULTS, type TrainConfig, yargsOption } from '../settings/train.js';
import { WORLD_DEFAULTS } from '../world/defaults.js';
import { readSettingsFile } from '../settings/table.js';
import type { StepMetrics } from '../selfplay/step.js';
import { train, type TrainSummary } from '../selfplay/trainer.js';
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { join } from 'node:path';
import { halves, type Pooled, pooledNewQuestionAccuracy, pooledPHat, pooledSolverAccuracy, pooledValid } from '../report/pooled.js';
import { renderReport } from '../report/html.js';
import { readRun, type StepRow } from '../report/run-data.js';
import { writeFileAtomic } from '../util/atomic.js';
import { TrainProgressText } from './progress.js';
import { SKILL_SP_RECIPE } from './recipe-dispatch.js';
import { DEMO_MODEL_NAME } from '../world/setup.js';
import { printedConfig, resumedConfig } from './print-config.js';
import { listenForStop } from './stop-signals.js';
import { RunFolder } from '../selfplay/run-folder.js';
import { backendLabel } from '../tensor/backend.js';

interface TrainArgs {
  [key: string]: unknown;
  config?: string;
  resume?: string;
  printConfig?: boolean;
  json: boolean;
}

function readConfigFile(file: string): Partial<TrainConfig> {
  const raw = readSettingsFile(file);
  if (typeof raw === 'object' && raw !== null && (raw as { recipe?: unknown }).recipe === SKILL_SP_RECIPE) {
    throw new Error(`${file}: recipe '${SKILL_SP_RECIPE}' has its own settings, not the trainer's: drop the recipe key and run sesa-train --recipe ${SKILL_SP_RECIPE} --config ${file} (its settings: sesa-train --recipe ${SKILL_SP_RECIPE} --help)`);
  }
  return parseConfigObject(raw, file);
}

/**
 * defaults ← the demo world's (`--model demo`, the default) or the tiny model's (`--model tiny`) ← the recipe's fixed values ← config file ← flags given on
 * the command line. `fromFlags` holds only what was typed (for --resume).
 */
export function resolveTrainConfig(args: TrainArgs, given: ReadonlySet<string>): { config: TrainConfig; fromFlags: Partial<TrainConfig> } {
  const fromFile = args.config ? readConfigFile(args.config) : {};
  const fromFlags: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) if (given.has(key) && args[key] !== undefined) fromFlags[key] = flagValue(key as SettingKey, args[key]);
  const typed = fromFlags as Partial<TrainConfig>;
  const model = typed.model ?? fromFile.model ?? TRAIN_DEFAULTS.model;
  const recipe: RecipeName = typed.recipe ?? fromFile.recipe ?? TRAIN_DEFAULTS.recipe;
  const config = { ...TRAIN_DEFAULTS, ...(model === TINY_DEFAULT_NAME ? TINY_DEFAULTS : model === DEMO_MODEL_NAME ? WORLD_DEFAULTS : {}), ...RECIPE_PRESETS[recipe], ...fromFile, ...typed };
  return { config, fromFlags: typed };
}

/** Which options the user actually typed (yargs fills defaults in, so look at the raw argv). */
export function givenKeys(argv: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const a of argv) {
    if (a === '--') break;
    const m = /^--(?:no-)?([a-z0-9-]+)/.exec(a);
    if (m) keys.add(keyOf(m[1] as string));
  }
  return keys;
}

function stepLine(m: StepMetrics): string {
  const parts = [
    `valid ${m.validQuestions}/${m.proposals}`,
    `acc ${m.solverAccuracy.toFixed(2)}`,
    `r_p ${m.proposerMeanReward.toFixed(2)}`,
    m.solver ? `loss ${m.solver.loss.toFixed(3)} kl ${m.solver.kl.toFixed(4)}` : '',
    m.bankSize !== undefined ? `bank ${m.bankSize}` : '',
    `${m.seconds.total.toFixed(1)}s`,
  ];
  return parts.filter(Boolean).join(' | ');
}

/** `{0: 40%, (0,1): 35%, 1: 25%} of 20` over the valid questions of `steps`; undefined when there were none. */
export function pHatLine(steps: ReadonlyArray<Partial<Pick<StepMetrics, 'pHatHistogram'>>>): string | undefined {
  const p = pooledPHat(steps);
  if (p === undefined) return undefined;
  const pct = (n: number): string => `${((100 * n) / p.of).toFixed(0)}%`;
  return `{0: ${pct(p.zero)}, (0,1): ${pct(p.middle)}, 1: ${pct(p.one)}} of ${p.of}`;
}

/** The run's HTML report (docs/report.md), written next to its metrics; returns its path. */
function writeRunReport(runDir: string): string {
  const out = join(runDir, 'report.html');
  writeFileAtomic(out, renderReport({ run: readRun(runDir), evals: [], generatedAt: new Date().toISOString() }).html);
  return out;
}

/** Valid questions of the given steps, pooled: "14% (26 of 192)"; undefined without proposals. */
export function validLine(steps: ReadonlyArray<Partial<Pick<StepMetrics, 'validQuestions' | 'proposals'>>>): string | undefined {
  const p = pooledValid(steps);
  return p === undefined ? undefined : `${(100 * p.rate).toFixed(0)}% (${p.count} of ${p.of})`;
}

/** The solver's training accuracy over the given steps' rollouts, pooled: "17% of 104 rollouts". */
export function solverAccuracyLine(steps: ReadonlyArray<Partial<Pick<StepMetrics, 'solverAccuracy' | 'solverRollouts'>>>): string | undefined {
  return rolloutsText(pooledSolverAccuracy(steps));
}

/** The solver's training accuracy on the steps' new valid questions only (reused questions left out), pooled. */
export function newQuestionAccuracyLine(steps: ReadonlyArray<Partial<Pick<StepMetrics, 'validQuestionAccuracy' | 'validQuestionRollouts'>>>): string | undefined {
  return rolloutsText(pooledNewQuestionAccuracy(steps));
}

/** "17% of 104 rollouts", or undefined without rollouts. */
function rolloutsText(p: Pooled | undefined): string | undefined {
  return p === undefined ? undefined : `${(100 * p.rate).toFixed(0)}% of ${p.of} rollouts`;
}

/** What the run-level lines pool: a step's row as metrics.jsonl holds it (this process's or an earlier one's). */
type SummaryStep = Pick<StepRow, 'step' | 'validQuestions' | 'proposals' | 'solverAccuracy' | 'solverRollouts' | 'validQuestionAccuracy' | 'validQuestionRollouts' | 'pHatHistogram'>;

/** "label: a → b" over the first and second half of the steps, or "label: a" for one step or one empty half. */
function halvesLine<T>(label: string, steps: readonly T[], line: (steps: readonly T[]) => string | undefined): string | undefined {
  const [first, second] = halves(steps);
  const early = line(first);
  const late = line(second);
  if (steps.length > 1 && early !== undefined && late !== undefined) return `${label}, first half → second half of the steps: ${early} → ${late}`;
  const all = line(steps);
  return all === undefined ? undefined : `${label}: ${all}`;
}

/**
 * The closing summary. `runSteps`: every step row of the run (metrics.jsonl), so that a resumed run's summary
 * covers the whole run and says which steps came from before the resume; absent, this process's steps.
 */
export function summaryText(s: TrainSummary, tiny: boolean, runSteps?: readonly SummaryStep[]): string {
  if (s.finished) {
    return [
      '',
      `run folder: ${s.runDir}`,
      `the run is finished: all ${s.lastStep} steps are done, nothing was trained${s.changed ? ` (config.json updated: ${s.changed.map((c) => `--${flagName(c.key)}`).join(', ')})` : ''}`,
      `to train further: --resume ${s.runDir} --steps N with N > ${s.lastStep}`,
    ].join('\n');
  }
  const steps: readonly SummaryStep[] = runSteps && runSteps.length > 0 ? runSteps : s.metrics;
  const first = steps[0]?.step ?? s.firstStep;
  const resumed =
    s.resumedFrom === undefined
      ? ''
      : s.resumedFrom >= first
        ? ` (steps ${first}–${s.resumedFrom} before the resume from checkpoint step ${s.resumedFrom}, ${s.firstStep}–${s.lastStep} trained now)`
        : ` (resumed from step ${s.resumedFrom})`;
  const lines = ['', `run folder: ${s.runDir}`, `steps ${first}–${s.lastStep}${resumed}${s.stoppedEarly ? ' (stopped early)' : ''}`];
  // The new questions' accuracy is the learning signal; the whole batch's also counts the questions reused from
  // the pool (questions the solver has solved before), so it runs higher.
  const reused = steps.some((m) => m.solverRollouts !== undefined && m.validQuestionRollouts !== undefined && m.solverRollouts !== m.validQuestionRollouts);
  const accuracyLines = reused
    ? [halvesLine("solver accuracy on the proposer's new questions", steps, newQuestionAccuracyLine), halvesLine('solver accuracy on its whole batch (reused questions too)', steps, solverAccuracyLine)]
    : [halvesLine("solver accuracy on the proposer's questions", steps, solverAccuracyLine)];
  for (const line of [halvesLine('valid questions', steps, validLine), ...accuracyLines]) {
    if (line !== undefined) lines.push(line);
  }
  for (const h of s.heldOut ?? []) {
    lines.push(
      `held-out EM, skills ${h.skills}: ${(100 * h.first.em).toFixed(1)}% (step ${h.first.step}) → ${(100 * h.last.em).toFixed(1)}% (step ${h.last.step})` +
        (h.gain ? `, gain ${gainText(h.gain)} (paired bootstrap 95% interval over ${h.gain.questions} questions)` : '') +
        `; F1 ${(100 * h.first.f1).toFixed(1)}% → ${(100 * h.last.f1).toFixed(1)}%`,
    );
  }
  const pHat = halvesLine('p̂ of valid questions', steps, pHatLine);
  if (pHat !== undefined) lines.push(pHat);
  if (s.bank) {
    lines.push(
      `skill bank${s.resumedFrom !== undefined ? ` since the resume (step ${s.resumedFrom})` : ''}: ${s.bank.cardsAtStart} → ${s.bank.cardsAtEnd} cards (version ${s.bank.versionAtEnd}); ${s.bank.admitted} distilled card${s.bank.admitted === 1 ? '' : 's'} admitted; ` +
        `${s.bank.cardsWithEvidence} card${s.bank.cardsWithEvidence === 1 ? '' : 's'} with utility evidence from retrievals`,
    );
  }
  if (s.lastCheckpoint) lines.push(`last checkpoint: ${s.lastCheckpoint}`);
  lines.push(`metrics: ${s.runDir}/metrics.jsonl`);
  if (tiny) {
    lines.push(
      '',
      'This was the tiny model with random weights, which learns nothing meaningful (its',
      'questions and answers are noise). It shows the whole loop running. Train a real model with',
      '  npx sesa-train --model qwen3-0.6b   (or any Hugging Face Qwen3 folder; --corpus FILE.jsonl for your own passages)',
      "on the native backend (the CPU default where onnxruntime-node loads) or a GPU's tfjs-node-gpu: a 0.6B model does not fit the wasm backend's 4 GiB heap (docs/models.md).",
    );
  }
  return lines.join('\n');
}

/**
 * What a forced quit leaves: the newest complete checkpoint and the command that continues from it (the steps
 * after it are trained again), or that there is none yet.
 */
export function quitNote(runDir: string | undefined): string {
  if (runDir === undefined) return 'no step had started';
  const last = new RunFolder(runDir).latestCheckpoint();
  return last === undefined
    ? `${runDir} has no complete checkpoint yet: a resume starts it over (sesa-train --resume ${runDir})`
    : `the last complete checkpoint is ${last.dir} (step ${last.step}): continue with sesa-train --resume ${runDir}`;
}

export const command: CommandModule<object, TrainArgs> = {
  command: ['train', '$0'],
  describe: 'SESA self-play training (the default command; with no arguments: SESA in the demo world from its warm start; --model tiny: the tiny random model)',
  builder: (y: Argv) => {
    let b = y.usage(
      '$0 [train] [options]\n\nSESA self-play training. Every setting below can also be given in a --config file (JSON or YAML, same names).\n' +
        'Defaults: with no arguments (npx sesa-train = --model demo, the demo world) the demo world\'s apply; with --model M (a real model) the general ones; with --model tiny the tiny model\'s. ' +
        'Where they differ, each setting lists all three (docs/options.md).',
    );
    for (const key of SETTING_KEYS) {
      const option = yargsOption(key, WORLD_DEFAULTS);
      // --recipe skill-sp is handed to its own command before this one parses (./recipe-dispatch.ts).
      b = b.option(flagName(key), { ...option, ...(key === 'recipe' ? { choices: [...(option.choices ?? []), SKILL_SP_RECIPE] } : {}), group: `${groupTitleOf(key)}:` });
    }
    return b
      .option('resume', { type: 'string', describe: 'continue the run in this folder from its last checkpoint (flags given with it change its config.json, or are refused where unsound)' })
      .option('config', { type: 'string', describe: 'settings file (JSON or YAML); flags override it' })
      .option('print-config', { type: 'boolean', describe: 'print the resolved settings (what RUN_DIR/config.json would hold; a valid --config file) and exit: nothing is written or loaded' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' }) as unknown as Argv<TrainArgs>;
  },
  handler: async (args) => {
    const given = givenKeys(process.argv.slice(2));
    if (args.resume !== undefined && args.config !== undefined) {
      throw new Error(`--config with --resume: a resumed run keeps its own ${args.resume}/config.json; give the settings to change as flags`);
    }
    const { config, fromFlags } = resolveTrainConfig(args, given);
    if (args.printConfig === true) {
      process.stdout.write(printedConfig(args.resume !== undefined ? resumedConfig(args.resume, fromFlags) : config));
      return;
    }
    const human = !args.json;
    const tty = human && process.stderr.isTTY === true;
    let bar: SingleBar | undefined;
    // A line per step, per eval batch and per phase that took long (./progress.ts); on a terminal, the bar.
    let progress: TrainProgressText | undefined;
    const log = (line: string): void => {
      if (!human) return;
      // Warnings are printed in full even under the progress bar, which redraws itself on its next update.
      if (bar && !line.startsWith('warning:')) bar.update({ activity: line.slice(0, 80) });
      else process.stderr.write(`${bar ? '\n' : ''}${line}\n`);
    };
    // Ctrl-C and SIGTERM (Slurm, Kubernetes) finish the step, checkpoint and stop; the second one quits at
    // once, naming the checkpoint a resume starts from.
    let runDir: string | undefined;
    const stopSignal = listenForStop('stopping after this step (a checkpoint is written)', () => quitNote(runDir));
    try {
      const summary = await train(
        args.resume ? undefined : config,
        {
          log,
          onStart: (info) => {
            runDir = info.runDir;
            if (!human) return;
            process.stderr.write(
              `training ${info.runDir}: steps ${info.firstStep}–${info.lastStep} on ${backendLabel(info.backend)}${info.resumedFrom !== undefined ? ` (resumed from step ${info.resumedFrom})` : ''}\n`,
            );
            progress = new TrainProgressText(info.firstStep, info.lastStep, info.heldOutSteps);
            if (tty) {
              bar = new SingleBar({ format: 'step {value}/{total} [{bar}] {percentage}% | {left} | {activity}', hideCursor: true });
              bar.start(info.lastStep, info.firstStep - 1, { left: progress.eta(), activity: 'starting…' });
            }
          },
          onProgress: (e) => {
            if (!progress) return;
            const line = progress.line(e);
            const activity = progress.activity(e);
            if (bar) {
              if (activity !== undefined) bar.update({ activity });
            } else if (line !== undefined) process.stderr.write(`${line}\n`);
          },
          onStepEnd: (m) => {
            if (!progress) return;
            const eta = progress.stepEnd(m.step);
            if (bar) bar.update(m.step, { left: progress.eta(), activity: `step ${m.step}: ${stepLine(m)}` });
            else process.stderr.write(`${progress.stamp()} step ${m.step}/${progress.lastStep}: ${stepLine(m)} | ${eta}\n`);
          },
          shouldStop: () => stopSignal.requested(),
        },
        args.resume,
        args.resume ? fromFlags : {},
      );
      bar?.stop();
      const report = summary.finished ? undefined : writeRunReport(summary.runDir);
      if (args.json) process.stdout.write(`${JSON.stringify({ ...summary, ...(report ? { report } : {}) })}\n`);
      else {
        // A resumed run's summary covers the steps before the resume too (metrics.jsonl holds every step).
        const runSteps = summary.resumedFrom !== undefined && !summary.finished ? readRun(summary.runDir).steps : undefined;
        process.stdout.write(`${summaryText(summary, summary.model === TINY_DEFAULT_NAME, runSteps)}${report ? `\nreport: ${report}` : ''}\n`);
      }
    } finally {
      bar?.stop();
      stopSignal.dispose();
    }
  },
};
