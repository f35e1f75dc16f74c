// `sesa-train` / `sesa-train train`: SESA self-play training. With no arguments it runs the embedded default
// (tiny random model, synthetic corpus, lexical embedder, a few steps on the CPU).
import { existsSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { parse as parseYaml } from 'yaml';
import { EMBEDDED_DEFAULTS, parseConfigObject, TRAIN_DEFAULTS, type TrainConfig, WORLD_DEFAULTS } from '../selfplay/config.js';
import { DEMO_MODEL_NAME } from '../world/setup.js';
import type { StepMetrics } from '../selfplay/step.js';
import { train, type TrainSummary } from '../selfplay/trainer.js';
import { TINY_DEFAULT_NAME } from '../model/tiny-default.js';

/** Flag → config key, for the flags that map one to one (yargs also gives camelCase keys). */
const FLAG_KEYS: Array<keyof TrainConfig> = [
  'model', 'gpus', 'backend', 'corpus', 'retrieverUrl', 'seeds', 'steps', 'seedsPerStep', 'proposalsPerSeed', 'groupSize',
  'maxTurns', 'maxNewTokens', 'maxResponseTokens', 'temperature', 'lr', 'warmupSteps', 'loraR', 'loraAlpha', 'klCoef',
  'clipLow', 'clipHigh', 'lambda', 'invalidReward', 'priming', 'frontier', 'distill', 'embedder', 'e5Model', 'judgeUrl',
  'judgeModel', 'distillerUrl', 'distillerModel', 'apiKeyEnv', 'microBatchSize', 'out', 'saveEvery', 'seed',
  'evalEvery', 'evalData', 'evalLimit', 'worldSeed',
];

interface TrainArgs {
  [key: string]: unknown;
  config?: string;
  resume?: string;
  skills?: string;
  json: boolean;
}

function readConfigFile(file: string): Partial<TrainConfig> {
  if (!existsSync(file)) throw new Error(`--config ${file}: file not found`);
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = ['.yaml', '.yml'].includes(extname(file).toLowerCase()) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid ${extname(file).toLowerCase().startsWith('.y') ? 'YAML' : 'JSON'} (${(err as Error).message})`);
  }
  return parseConfigObject(raw, file);
}

/** defaults ← embedded defaults (tiny model) or world defaults (demo model) ← config file ← flags given on the command line. */
export function resolveTrainConfig(args: TrainArgs, given: ReadonlySet<string>): { config: TrainConfig; fromFlags: Partial<TrainConfig> } {
  const fromFile = args.config ? readConfigFile(args.config) : {};
  const fromFlags: Record<string, unknown> = {};
  for (const key of FLAG_KEYS) if (given.has(key) && args[key] !== undefined) fromFlags[key] = args[key];
  if (args.skills !== undefined && given.has('skills')) {
    if (args.skills !== 'on' && args.skills !== 'off') throw new Error(`--skills must be on or off, got '${args.skills}'`);
    fromFlags.skills = args.skills === 'on';
  }
  const model = (fromFlags.model as string | undefined) ?? fromFile.model ?? TRAIN_DEFAULTS.model;
  const preset = model === TINY_DEFAULT_NAME ? EMBEDDED_DEFAULTS : model === DEMO_MODEL_NAME ? WORLD_DEFAULTS : {};
  const config = { ...TRAIN_DEFAULTS, ...preset, ...fromFile, ...(fromFlags as Partial<TrainConfig>) };
  return { config, fromFlags: fromFlags as Partial<TrainConfig> };
}

/** Which options the user actually typed (yargs fills defaults in, so look at the raw argv). */
function givenKeys(argv: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const a of argv) {
    const m = /^--(?:no-)?([a-z0-9-]+)/.exec(a);
    if (m) keys.add((m[1] as string).replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
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

function summaryText(s: TrainSummary, tiny: boolean): string {
  const first = s.metrics[0];
  const last = s.metrics[s.metrics.length - 1];
  const lines = [
    '',
    `run folder: ${s.runDir}`,
    `steps ${s.firstStep}–${s.lastStep}${s.resumedFrom !== undefined ? ` (resumed from step ${s.resumedFrom})` : ''}${s.stoppedEarly ? ' (stopped early)' : ''}`,
  ];
  if (first && last) {
    lines.push(`solver accuracy: ${first.solverAccuracy.toFixed(3)} (step ${first.step}) → ${last.solverAccuracy.toFixed(3)} (step ${last.step})`);
    lines.push(`valid questions: ${(first.validityRate * 100).toFixed(0)}% → ${(last.validityRate * 100).toFixed(0)}%`);
  }
  for (const h of s.heldOut ?? []) {
    lines.push(
      `held-out EM, skills ${h.skills}: ${(100 * h.first.em).toFixed(1)}% (step ${h.first.step}) → ${(100 * h.last.em).toFixed(1)}% (step ${h.last.step}); ` +
        `F1 ${(100 * h.first.f1).toFixed(1)}% → ${(100 * h.last.f1).toFixed(1)}%`,
    );
  }
  if (s.bank) lines.push(`skill bank: ${s.bank.cardsAtStart} → ${s.bank.cardsAtEnd} cards (version ${s.bank.versionAtEnd})`);
  if (s.lastCheckpoint) lines.push(`last checkpoint: ${s.lastCheckpoint}`);
  lines.push(`metrics: ${s.runDir}/metrics.jsonl`);
  if (tiny) {
    lines.push(
      '',
      'This was the embedded default: a tiny model with random weights, which learns nothing meaningful (its',
      'questions and answers are noise). It shows the whole loop running. Train a real model with',
      '  npx sesa-train --model qwen3-0.6b   (or any Hugging Face Qwen3 folder; --corpus FILE.jsonl for your own passages)',
    );
  }
  return lines.join('\n');
}

export const command: CommandModule<object, TrainArgs> = {
  command: ['train', '$0'],
  describe: 'SESA self-play training (the default command; with no arguments: the embedded tiny demo)',
  builder: (y: Argv) =>
    y
      .option('model', { type: 'string', describe: `model folder or name (qwen3-4b, ...); default: the embedded '${TINY_DEFAULT_NAME}' model` })
      .option('gpus', { type: 'number', describe: `devices (default ${TRAIN_DEFAULTS.gpus}; more needs the multi-worker trainer)` })
      .option('backend', { choices: ['auto', 'tensorflow', 'wasm', 'cpu'], describe: 'tensor backend (default auto)' })
      .option('corpus', { type: 'string', describe: "JSONL corpus ({id,contents} or {id,title,text}), 'demo', or 'world' (a generated world, see --world-seed)" })
      .option('retriever-url', { type: 'string', describe: 'Search-R1-compatible retrieval server (replaces the local index)' })
      .option('seeds', { type: 'string', describe: 'answer seeds, JSONL of {"answer","hops"} (default: the demo corpus seeds)' })
      .option('steps', { type: 'number', describe: `training steps (default ${TRAIN_DEFAULTS.steps}; demo ${EMBEDDED_DEFAULTS.steps})` })
      .option('seeds-per-step', { type: 'number', describe: `answer seeds per step (default ${TRAIN_DEFAULTS.seedsPerStep})` })
      .option('proposals-per-seed', { type: 'number', describe: `n_p, proposer rollouts per seed (default ${TRAIN_DEFAULTS.proposalsPerSeed})` })
      .option('group-size', { type: 'number', describe: `G, solver rollouts per question (default ${TRAIN_DEFAULTS.groupSize})` })
      .option('max-turns', { type: 'number', describe: `turns per rollout (default ${TRAIN_DEFAULTS.maxTurns})` })
      .option('max-new-tokens', { type: 'number', describe: `new tokens per turn (default ${TRAIN_DEFAULTS.maxNewTokens})` })
      .option('max-response-tokens', { type: 'number', describe: `tokens per rollout incl. tool output (default ${TRAIN_DEFAULTS.maxResponseTokens})` })
      .option('temperature', { type: 'number', describe: `rollout temperature (default ${TRAIN_DEFAULTS.temperature})` })
      .option('lr', { type: 'number', describe: `LoRA learning rate (default ${TRAIN_DEFAULTS.lr})` })
      .option('warmup-steps', { type: 'number', describe: `learning-rate warmup (default ${TRAIN_DEFAULTS.warmupSteps})` })
      .option('lora-r', { type: 'number', describe: `LoRA rank (default ${TRAIN_DEFAULTS.loraR})` })
      .option('lora-alpha', { type: 'number', describe: `LoRA alpha (default ${TRAIN_DEFAULTS.loraAlpha})` })
      .option('kl-coef', { type: 'number', describe: `k3 KL coefficient (default ${TRAIN_DEFAULTS.klCoef})` })
      .option('clip-low', { type: 'number', describe: `ε_low (default ${TRAIN_DEFAULTS.clipLow})` })
      .option('clip-high', { type: 'number', describe: `ε_high (default ${TRAIN_DEFAULTS.clipHigh})` })
      .option('lambda', { type: 'number', describe: `λ, the frontier penalty at p̂ ∈ {0,1} (default ${TRAIN_DEFAULTS.lambda})` })
      .option('invalid-reward', { type: 'number', describe: `r_invalid (default ${TRAIN_DEFAULTS.invalidReward})` })
      .option('skills', { type: 'string', choices: ['on', 'off'], describe: 'the skill bank (off = the SSP baseline; default on)' })
      .option('priming', { type: 'boolean', describe: 'start the bank from the seed cards (--no-priming: empty)' })
      .option('frontier', { type: 'boolean', describe: 'frontier reward shaping (--no-frontier: reward 1 − p̂)' })
      .option('distill', { type: 'boolean', describe: 'failure distillation into new cards (--no-distill: off)' })
      .option('embedder', { choices: ['e5', 'lexical'], describe: 'skill embedder (default e5; demo lexical)' })
      .option('e5-model', { type: 'string', describe: `E5 model folder or name (default ${TRAIN_DEFAULTS.e5Model})` })
      .option('judge-url', { type: 'string', describe: 'OpenAI-compatible endpoint for the judge (default: the in-process base model)' })
      .option('judge-model', { type: 'string', describe: 'model name at --judge-url' })
      .option('distiller-url', { type: 'string', describe: 'OpenAI-compatible endpoint for the distiller (default: the in-process base model)' })
      .option('distiller-model', { type: 'string', describe: 'model name at --distiller-url' })
      .option('api-key-env', { type: 'string', describe: `environment variable with the endpoints' API key (default ${TRAIN_DEFAULTS.apiKeyEnv})` })
      .option('micro-batch-size', { type: 'number', describe: `sequences per GRPO forward/backward (default ${TRAIN_DEFAULTS.microBatchSize})` })
      .option('out', { type: 'string', describe: `run folder (default ${TRAIN_DEFAULTS.out}; demo ${EMBEDDED_DEFAULTS.out})` })
      .option('resume', { type: 'string', describe: 'continue the run in this folder from its last checkpoint' })
      .option('save-every', { type: 'number', describe: `checkpoint every N steps (default ${TRAIN_DEFAULTS.saveEvery})` })
      .option('config', { type: 'string', describe: 'settings file (JSON or YAML); flags override it' })
      .option('seed', { type: 'number', describe: `run seed (default ${TRAIN_DEFAULTS.seed})` })
      .option('eval-every', { type: 'number', describe: 'held-out eval of the solver (skills on and off) at step 0, every K steps and at the end (default 0: off)' })
      .option('eval-data', { type: 'string', describe: 'held-out questions: FlashRAG JSONL, a benchmark name in $SESA_DATA, or demo' })
      .option('eval-limit', { type: 'number', describe: `held-out questions per eval, a seeded sample (default ${TRAIN_DEFAULTS.evalLimit})` })
      .option('world-seed', { type: 'number', describe: `with --corpus world: the seed of the generated world (default ${TRAIN_DEFAULTS.worldSeed}, the demo world)` })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' }) as unknown as Argv<TrainArgs>,
  handler: async (args) => {
    const given = givenKeys(process.argv.slice(2));
    const { config, fromFlags } = resolveTrainConfig(args, given);
    const human = !args.json;
    const tty = human && process.stderr.isTTY === true;
    let bar: SingleBar | undefined;
    const log = (line: string): void => {
      if (!human) return;
      if (bar) bar.update({ msg: line.slice(0, 60) });
      else process.stderr.write(`${line}\n`);
    };
    let stopRequested = false;
    const onSigint = (): void => {
      if (stopRequested) process.exit(130);
      stopRequested = true;
      process.stderr.write('\nstopping after this step (a checkpoint is written); press Ctrl-C again to quit now\n');
    };
    process.on('SIGINT', onSigint);
    try {
      const summary = await train(
        args.resume ? undefined : config,
        {
          log,
          onStart: (info) => {
            if (!human) return;
            process.stderr.write(
              `training ${info.runDir}: steps ${info.firstStep}–${info.lastStep} on ${info.backend.name}${info.resumedFrom !== undefined ? ` (resumed from step ${info.resumedFrom})` : ''}\n`,
            );
            if (tty) {
              bar = new SingleBar({ format: 'step {value}/{total} [{bar}] {percentage}% | ETA {eta_formatted} | {last}', hideCursor: true, etaBuffer: 5 });
              bar.start(info.lastStep, info.firstStep - 1, { last: 'starting…', msg: '' });
            }
          },
          onStepEnd: (m) => {
            if (bar) bar.update(m.step, { last: stepLine(m) });
            else if (human) process.stderr.write(`step ${m.step}: ${stepLine(m)}\n`);
          },
          shouldStop: () => stopRequested,
        },
        args.resume,
        args.resume ? fromFlags : {},
      );
      bar?.stop();
      if (args.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else process.stdout.write(`${summaryText(summary, summary.model === TINY_DEFAULT_NAME)}\n`);
    } finally {
      bar?.stop();
      process.off('SIGINT', onSigint);
    }
  },
};
