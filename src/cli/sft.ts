// `sesa-train sft`: supervised fine-tuning on chat transcripts with tool turns (docs/sft.md), full-weight or
// LoRA, resumable, with a progress bar and the loss curve in the run folder.
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { PROJECTIONS, type ProjectionName } from '../model/qwen3.js';
import { SFT_DEFAULTS, type SftConfig } from '../sft/config.js';
import { runSft, type SftSummary } from '../sft/trainer.js';
import { LOSS_ON, type LossOn } from '../sft/transcript.js';
import { BACKEND_CHOICES, type BackendChoice } from '../tensor/backend.js';

interface SftArgs {
  model?: string;
  data?: string;
  out?: string;
  full?: boolean;
  lora?: boolean;
  resume?: string;
  evalData?: string;
  evalFraction: number;
  loraR: number;
  loraAlpha: number;
  loraTargets: string[];
  epochs: number;
  maxSteps: number;
  batchSize: number;
  microBatchSize: number;
  'micro-batch-tokens': number;
  lr: number;
  warmupSteps: number;
  schedule: 'constant' | 'cosine';
  minLrRatio: number;
  weightDecay: number;
  maxGradNorm: number;
  seed: number;
  maxTokens: number;
  saveEvery: number;
  evalEvery: number;
  keepCheckpoints: number;
  saveDtype: SftConfig['saveDtype'];
  thinking: boolean;
  'loss-on': string;
  logitsChunkSize: number;
  recomputeLayers: boolean;
  backend: BackendChoice;
  threads?: number;
  json: boolean;
}

/** The run settings from the flags of a new run (exported for tests). */
export function sftConfigFromArgs(args: SftArgs): SftConfig {
  for (const flag of ['model', 'data', 'out'] as const) {
    if (args[flag] === undefined) throw new Error(`--${flag} is required for a new run (or continue one with --resume DIR)`);
  }
  if (args.full === args.lora || (args.full !== true && args.lora !== true)) throw new Error('choose exactly one of --full (train every weight) and --lora (train a LoRA adapter)');
  return {
    model: args.model as string,
    data: args.data as string,
    ...(args.evalData !== undefined ? { evalData: args.evalData } : {}),
    evalFraction: args.evalFraction,
    out: args.out as string,
    mode: args.full ? 'full' : 'lora',
    loraR: args.loraR,
    loraAlpha: args.loraAlpha,
    loraTargets: args.loraTargets as ProjectionName[],
    epochs: args.epochs,
    maxSteps: args.maxSteps,
    batchSize: args.batchSize,
    microBatchSize: args.microBatchSize,
    microBatchTokens: args['micro-batch-tokens'],
    lr: args.lr,
    warmupSteps: args.warmupSteps,
    schedule: args.schedule,
    minLrRatio: args.minLrRatio,
    weightDecay: args.weightDecay,
    maxGradNorm: args.maxGradNorm,
    seed: args.seed,
    maxTokens: args.maxTokens,
    saveEvery: args.saveEvery,
    evalEvery: args.evalEvery,
    keepCheckpoints: args.keepCheckpoints,
    saveDtype: args.saveDtype,
    enableThinking: args.thinking,
    lossOn: args['loss-on'] as LossOn,
    logitsChunkSize: args.logitsChunkSize,
    recomputeLayers: args.recomputeLayers,
    backend: args.backend,
  };
}

function summaryText(s: SftSummary): string {
  const lines = [``, `run folder: ${s.runDir}`, `steps ${s.firstStep}–${s.lastStep} of ${s.totalSteps}${s.resumedFrom !== undefined ? ` (resumed from step ${s.resumedFrom})` : ''}${s.stoppedEarly ? ' (stopped early)' : ''}`];
  if (s.firstLoss !== undefined && s.lastLoss !== undefined) lines.push(`training loss: ${s.firstLoss.toFixed(4)} → ${s.lastLoss.toFixed(4)}`);
  if (s.lastEvalLoss !== undefined) lines.push(`eval loss: ${s.firstEvalLoss !== undefined ? `${s.firstEvalLoss.toFixed(4)} → ` : ''}${s.lastEvalLoss.toFixed(4)}`);
  if (s.finalDir) lines.push(`trained: ${s.finalDir}`);
  if (s.lastCheckpoint) lines.push(`last checkpoint: ${s.lastCheckpoint}`);
  lines.push(`loss curve: ${s.runDir}/loss.jsonl`);
  return lines.join('\n');
}

const D = SFT_DEFAULTS;

export const command: CommandModule<object, SftArgs> = {
  command: 'sft',
  describe: 'supervised fine-tuning on chat transcripts with tool turns (full-weight or LoRA)',
  builder: (y: Argv) =>
    y
      .option('model', { type: 'string', describe: 'model folder or name (qwen3-0.6b, ...)' })
      .option('data', { type: 'string', describe: 'training transcripts: JSONL of {"messages":[{role, content}, ...]} (roles system, user, assistant, tool)' })
      .option('out', { type: 'string', describe: 'run folder (sft.json, loss.jsonl, checkpoints/, final/)' })
      .option('full', { type: 'boolean', describe: 'train every weight (small models)' })
      .option('lora', { type: 'boolean', describe: 'train a LoRA adapter on the frozen model' })
      .option('resume', { type: 'string', describe: 'continue the run in this folder from its last checkpoint (its saved settings are used)' })
      .option('eval-data', { type: 'string', describe: 'held-out transcripts for the eval loss' })
      .option('eval-fraction', { type: 'number', default: D.evalFraction, describe: 'fraction of --data held out for the eval loss' })
      .option('lora-r', { type: 'number', default: D.loraR, describe: 'LoRA rank' })
      .option('lora-alpha', { type: 'number', default: D.loraAlpha, describe: 'LoRA alpha (scale alpha / r)' })
      .option('lora-targets', { type: 'string', array: true, choices: [...PROJECTIONS], default: [...D.loraTargets], describe: 'projections LoRA adapts' })
      .option('epochs', { type: 'number', default: D.epochs })
      .option('max-steps', { type: 'number', default: D.maxSteps, describe: 'stop after this many optimizer steps (0: all epochs)' })
      .option('batch-size', { type: 'number', default: D.batchSize, describe: 'transcripts per optimizer step' })
      .option('micro-batch-size', { type: 'number', default: D.microBatchSize, describe: 'transcripts per forward/backward (gradients accumulate)' })
      .option('micro-batch-tokens', { type: 'number', default: D.microBatchTokens, describe: 'padded tokens per forward/backward at most (0: no limit): short transcripts share a pass, long ones go alone' })
      .option('lr', { type: 'number', default: D.lr, describe: 'peak learning rate' })
      .option('warmup-steps', { type: 'number', default: D.warmupSteps, describe: 'linear warmup steps' })
      .option('schedule', { choices: ['constant', 'cosine'] as const, default: D.schedule, describe: 'learning rate after warmup' })
      .option('min-lr-ratio', { type: 'number', default: D.minLrRatio, describe: 'cosine floor as a fraction of --lr' })
      .option('weight-decay', { type: 'number', default: D.weightDecay, describe: 'AdamW decoupled weight decay' })
      .option('max-grad-norm', { type: 'number', default: D.maxGradNorm, describe: 'global gradient-norm clipping' })
      .option('seed', { type: 'number', default: D.seed, describe: 'data order, held-out split and LoRA init' })
      .option('max-tokens', { type: 'number', default: D.maxTokens, describe: 'longest rendered transcript allowed' })
      .option('save-every', { type: 'number', default: D.saveEvery, describe: 'checkpoint every N steps (and at the end)' })
      .option('eval-every', { type: 'number', default: D.evalEvery, describe: 'eval loss every N steps (0: at step 0 and the end only)' })
      .option('keep-checkpoints', { type: 'number', default: D.keepCheckpoints, describe: 'complete checkpoints kept' })
      .option('save-dtype', { choices: ['f32', 'f16', 'bf16'] as const, default: D.saveDtype, describe: 'dtype of the final full model (checkpoints stay f32)' })
      .option('loss-on', { choices: LOSS_ON, default: D.lossOn, describe: "loss targets: the assistant's tokens, or every token of the transcript" })
      .option('thinking', { type: 'boolean', default: D.enableThinking, describe: "Qwen3's enable_thinking when rendering prompts" })
      .option('logits-chunk-size', { type: 'number', default: D.logitsChunkSize, describe: 'rows of logits formed at once in the loss' })
      .option('recompute-layers', { type: 'boolean', default: D.recomputeLayers, describe: 'recompute layer activations in the backward: the same gradient in far less memory per pass (--no-recompute-layers: faster, more memory)' })
      .option('backend', { choices: BACKEND_CHOICES, default: D.backend, describe: 'tensor backend' })
      .option('threads', { type: 'number', describe: 'compute threads of the wasm backend (default: all cores; not saved with the run, so --resume may give another count)' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' })
      .example('$0 sft --model qwen3-0.6b --data transcripts.jsonl --out runs/sft --lora --epochs 2', 'LoRA cold start on Search-R1-format transcripts')
      .example('$0 sft --resume runs/sft', 'continue a run from its last checkpoint') as unknown as Argv<SftArgs>,
  handler: async (args) => {
    if (args.resume !== undefined) {
      const clash = (['model', 'data', 'out', 'full', 'lora', 'evalData'] as const).filter((k) => args[k] !== undefined);
      if (clash.length > 0) throw new Error(`--resume continues with the run's saved settings (${args.resume}/sft.json); drop ${clash.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`);
    }
    const config = args.resume !== undefined ? undefined : sftConfigFromArgs(args);
    const human = !args.json;
    const tty = human && process.stderr.isTTY === true;
    let bar: SingleBar | undefined;
    let stopRequested = false;
    const onSigint = (): void => {
      if (stopRequested) process.exit(130);
      stopRequested = true;
      process.stderr.write('\nstopping after this step (a checkpoint is written); press Ctrl-C again to quit now\n');
    };
    process.on('SIGINT', onSigint);
    let evalText = '';
    try {
      const summary = await runSft(
        config,
        {
          log: (line) => {
            if (human && !bar) process.stderr.write(`${line}\n`);
          },
          onStart: (info) => {
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
          shouldStop: () => stopRequested,
        },
        args.resume,
        args.threads,
      );
      bar?.stop();
      process.stdout.write(args.json ? `${JSON.stringify(summary)}\n` : `${summaryText(summary)}\n`);
    } finally {
      bar?.stop();
      process.off('SIGINT', onSigint);
    }
  },
};
