// `sesa-train sft`: supervised fine-tuning on chat transcripts with tool turns (docs/sft.md), full-weight or
// LoRA, resumable, with a progress bar and the loss curve in the run folder.
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { flagName, flagsGiven, readSettingsFile, refuseRenamedFlags, type SettingsLayer, yargsOptionsOf } from '../settings/table.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnySetting } from '../settings/setting.js';
import { readSavedSftConfig, resolveSftConfig, SFT_RENAMED, SFT_RENAMED_WHY, SFT_SETTINGS, type SftConfig, validateSftConfig } from '../sft/config.js';
import { latestSftCheckpoint, runSft, type SftSummary } from '../sft/trainer.js';
import { listenForStop } from './stop-signals.js';

interface SftArgs {
  [key: string]: unknown;
  config?: string;
  printConfig?: boolean;
  full?: boolean;
  lora?: boolean;
  resume?: string;
  threads?: number;
  json: boolean;
}

/**
 * The run settings of a new run: defaults ← the --config file ← the flags given (`--full`/`--lora` are
 * `--mode full`/`--mode lora`). Old flag names are refused naming the new one. Exported for tests.
 */
export function sftConfigFromArgs(args: SftArgs): SftConfig {
  refuseRenamed(args);
  if (args.full === true && args.lora === true) throw new Error('choose exactly one of --full (train every weight) and --lora (train a LoRA adapter)');
  const flags = flagsGiven(SFT_SETTINGS, args);
  const short = args.full === true ? 'full' : args.lora === true ? 'lora' : undefined;
  if (short !== undefined) {
    if (flags.mode !== undefined && flags.mode !== short) throw new Error(`--${short} contradicts --mode ${String(flags.mode)}: give one of them`);
    flags.mode = short;
  }
  const layers: SettingsLayer[] = [...(args.config !== undefined ? [{ file: args.config, raw: readSettingsFile(args.config) }] : []), { flags }];
  return resolveSftConfig(layers);
}

/** The flags --resume takes (the settings whose resume policy is 'change'). */
function mayChangeOnResume(): string[] {
  return Object.entries(SFT_SETTINGS as unknown as Record<string, AnySetting>)
    .filter(([, s]) => s.resume.kind === 'change')
    .map(([k]) => `--${flagName(k)}`);
}

/** A run folder's sft.json, parsed (for --print-config with --resume; runSft reads it itself). */
function readSavedSettings(runDir: string): unknown {
  const file = join(runDir, 'sft.json');
  if (!existsSync(file)) throw new Error(`${runDir} is not an SFT run folder: ${file} does not exist`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
}

function refuseRenamed(args: SftArgs): void {
  refuseRenamedFlags(SFT_RENAMED, args, SFT_RENAMED_WHY);
}

/** The closing summary (exported for tests). */
export function sftSummaryText(s: SftSummary): string {
  if (s.finished) {
    return [
      '',
      `run folder: ${s.runDir}`,
      `the run is finished: all ${s.totalSteps} steps are done, nothing was trained${s.changed ? ` (sft.json updated: ${s.changed.map((c) => `--${flagName(c.key)}`).join(', ')})` : ''}`,
      ...(s.finalDir ? [`trained: ${s.finalDir}`] : []),
      `to train further: --resume ${s.runDir} with more --epochs or --max-steps`,
    ].join('\n');
  }
  const lines = [``, `run folder: ${s.runDir}`, `steps ${s.firstStep}–${s.lastStep} of ${s.totalSteps}${s.resumedFrom !== undefined ? ` (resumed from step ${s.resumedFrom})` : ''}${s.stoppedEarly ? ' (stopped early)' : ''}`];
  if (s.firstLoss !== undefined && s.lastLoss !== undefined) lines.push(`training loss: ${s.firstLoss.toFixed(4)} → ${s.lastLoss.toFixed(4)}`);
  if (s.lastEvalLoss !== undefined) lines.push(`eval loss: ${s.firstEvalLoss !== undefined ? `${s.firstEvalLoss.toFixed(4)} → ` : ''}${s.lastEvalLoss.toFixed(4)}`);
  if (s.finalDir) lines.push(`trained: ${s.finalDir}`);
  if (s.lastCheckpoint) lines.push(`last checkpoint: ${s.lastCheckpoint}`);
  lines.push(`loss curve: ${s.runDir}/loss.jsonl`);
  return lines.join('\n');
}

export const command: CommandModule<object, SftArgs> = {
  command: 'sft',
  describe: 'supervised fine-tuning on chat transcripts with tool turns (full-weight or LoRA)',
  builder: (y: Argv) => {
    let b = y
      .usage('$0 sft [options]\n\nSupervised fine-tuning on chat transcripts with tool turns. Every setting below can also be given in a --config file (JSON or YAML, the same names, kebab-case or camelCase); a setting train also has carries the same name.')
      .option('config', { type: 'string', describe: 'settings file (JSON or YAML) with the settings below as keys; flags override it' })
      .option('full', { type: 'boolean', describe: 'train every weight (small models): --mode full' })
      .option('lora', { type: 'boolean', describe: 'train a LoRA adapter on the frozen model: --mode lora' })
      .option('resume', { type: 'string', describe: 'continue the run in this folder from its last checkpoint with its saved settings; --epochs and --max-steps may grow it' })
      .option('threads', { type: 'number', describe: "compute threads of the wasm backend, or of the native backend's matMuls (default: all cores; not saved with the run, so --resume may give another count)" })
      .option('print-config', { type: 'boolean', describe: 'print the resolved settings (what sft.json would hold; a valid --config file) and exit: nothing is written or loaded' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' });
    for (const [flag, o] of Object.entries(yargsOptionsOf(SFT_SETTINGS))) b = b.option(flag, { ...o, group: 'Settings:' });
    // The old names, hidden, so that using one is refused with the new name rather than as an unknown argument.
    for (const old of Object.keys(SFT_RENAMED)) b = b.option(old, { hidden: true });
    return b
      .example('$0 sft --model qwen3-0.6b --data transcripts.jsonl --out runs/sft --lora --epochs 2', 'LoRA cold start on Search-R1-format transcripts')
      .example('$0 sft --config sft.yaml', 'every setting from a file')
      .example('$0 sft --resume runs/sft', 'continue a run from its last checkpoint') as unknown as Argv<SftArgs>;
  },
  handler: async (args) => {
    // With --resume, only the settings that may change (how long the run is) are taken; the rest are refused.
    const overrides: Partial<SftConfig> = {};
    if (args.resume !== undefined) {
      refuseRenamed(args);
      const given = flagsGiven(SFT_SETTINGS, args);
      const table = SFT_SETTINGS as unknown as Record<string, AnySetting>;
      const clash = [
        ...Object.keys(given).filter((k) => table[k]?.resume.kind !== 'change').map((k) => `--${flagName(k)}`),
        ...(['full', 'lora', 'config'] as const).filter((k) => args[k] !== undefined).map((k) => `--${k}`),
      ];
      if (clash.length > 0) throw new Error(`--resume continues with the run's saved settings (${args.resume}/sft.json), of which only ${mayChangeOnResume().join(' and ')} may change; drop ${clash.join(', ')}`);
      Object.assign(overrides, given);
    }
    const config = args.resume !== undefined ? undefined : sftConfigFromArgs(args);
    if (args.printConfig === true) {
      const shown = config ?? validateSftConfig({ ...readSavedSftConfig(readSavedSettings(args.resume as string), join(args.resume as string, 'sft.json')), ...overrides });
      process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
      return;
    }
    const human = !args.json;
    const tty = human && process.stderr.isTTY === true;
    let bar: SingleBar | undefined;
    // Ctrl-C and SIGTERM (Slurm, Kubernetes) finish the step, checkpoint and stop; the second one quits at once.
    let runDir: string | undefined;
    const stopSignal = listenForStop('stopping after this step (a checkpoint is written)', () => {
      const last = runDir !== undefined ? latestSftCheckpoint(runDir) : undefined;
      return last === undefined ? 'no checkpoint was written yet' : `the last complete checkpoint is ${last.dir} (step ${last.step}): continue with sesa-train sft --resume ${runDir}`;
    });
    let evalText = '';
    try {
      const summary = await runSft(
        config,
        {
          log: (line) => {
            if (human && !bar) process.stderr.write(`${line}\n`);
          },
          onStart: (info) => {
            runDir = info.runDir;
            if (!tty) return;
            bar = new SingleBar({ format: 'sft [{bar}] {value}/{total} | ETA {eta_formatted} | loss {loss} | {tps} tok/s{evalText}', hideCursor: true, etaBuffer: 10 });
            bar.start(info.totalSteps, info.firstStep - 1, { loss: '–', tps: '–', evalText: '' });
          },
          onStep: (r) => {
            if (bar) bar.update(r.step, { loss: r.loss.toFixed(4), tps: r.tokensPerSecond.toFixed(0), evalText });
            else if (human) process.stderr.write(`step ${r.step} (epoch ${r.epoch}): loss ${r.loss.toFixed(4)}, lr ${r.lr.toExponential(2)}, grad norm ${r.gradNorm.toFixed(3)}, ${r.tokensPerSecond.toFixed(0)} tok/s\n`);
          },
          onEval: (r) => {
            evalText = ` | eval ${r.evalLoss.toFixed(4)}`;
            bar?.update({ evalText });
          },
          shouldStop: () => stopSignal.requested(),
        },
        args.resume,
        args.threads,
        overrides,
      );
      bar?.stop();
      process.stdout.write(args.json ? `${JSON.stringify(summary)}\n` : `${sftSummaryText(summary)}\n`);
    } finally {
      bar?.stop();
      stopSignal.dispose();
    }
  },
};
