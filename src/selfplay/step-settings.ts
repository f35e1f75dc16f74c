// What one step, its rollouts and its updates are told, read from the training configuration. The trainer, the
// benchmarks, the step tests and the world's diagnostics build them the same way, so a recipe's fixed values
// reach the step only through here.
import type { GrpoUpdateConfig } from '../rl/grpo-update.js';
import type { EvalSettings } from '../eval/runner.js';
import type { AdamWConfig } from '../rl/optimizer.js';
import type { TrainConfig } from '../settings/train.js';
import { parseHopMix } from '../settings/train/run.js';
import type { RolloutSettings } from '../agent/roles.js';
import type { StepSettings } from './step.js';
import type { AdvantageSettings, Role } from './updater.js';

/** How a role's rollouts are sampled; the solver's temperature is --solver-temperature where that is set. */
export function rolloutSettingsOf(config: TrainConfig, role: Role): RolloutSettings {
  return {
    maxTurns: config.maxTurns,
    maxTokensPerTurn: config.maxNewTokens,
    maxResponseTokens: config.maxResponseTokens,
    temperature: (role === 'solver' ? config.solverTemperature : undefined) ?? config.temperature,
    passagesPerQuery: config.passagesPerQuery,
  };
}

export function stepSettingsOf(config: TrainConfig): StepSettings {
  return {
    seedsPerStep: config.seedsPerStep,
    proposalsPerSeed: config.proposalsPerSeed,
    groupSize: config.groupSize,
    reward: { lambda: config.lambda, invalidReward: config.invalidReward, frontier: config.frontier },
    seed: config.seed,
    ragDistractorBlocks: config.ragDistractorBlocks,
    ragMaxTokens: config.ragMaxTokens,
    rules: {
      minChars: config.questionMinChars,
      maxChars: config.questionMaxChars,
      minWords: config.questionMinWords,
      minDistinctQueries: config.minDistinctQueries,
      rejectRepeatedQueries: config.rejectRepeatedQueries,
    },
    ...(config.hopCheck ? { hopCheck: { passages: config.passagesPerQuery } } : {}),
    ...(config.firstSearchCheck ? { firstSearchCheck: true } : {}),
    failureEvidenceChars: config.failureEvidenceChars,
    queueFailures: config.queueFailures,
    cardsInGroup: config.cardsInGroup,
    skipUniformGroups: config.skipUniformGroups,
    ...(config.proposerBaseline === 'step' ? { proposerBaseline: 'step' as const } : {}),
    epochs: { solver: config.solverEpochs, proposer: config.proposerEpochs },
    ...(config.stepCorpora === 'all' ? { stepCorpora: 'all' as const } : {}),
    ...(config.hopMix !== undefined ? { hopMix: hopMixOf(config.hopMix) } : {}),
    solverBatch: config.solverBatch,
    ...(config.extractionFailure === 'reuse' ? { reuse: { threshold: config.reuseThreshold, clearEvery: config.reusePoolClearEvery, ...(config.reuseByHops ? { byHops: true } : {}) } } : {}),
    cardUtility: config.cardUtility,
    ...(config.minInformativeGroups > 0 ? { resample: { minGroups: config.minInformativeGroups, rounds: config.resampleRounds } } : {}),
  };
}

/** The weights of --hop-mix (checked by the settings table; a bad value here is a bug). */
function hopMixOf(v: string): number[] {
  const w = parseHopMix(v);
  if (typeof w === 'string') throw new Error(`--hop-mix ${w}`);
  return w;
}

/**
 * The AdamW settings of one role's adapter (docs/method.md, "GRPO": the optimizer settings). The cosine
 * schedule ends after the role's updates of all steps: --steps × its epochs.
 */
export function optimizerConfigOf(config: TrainConfig, role: Role): AdamWConfig {
  return {
    lr: (role === 'solver' ? config.solverLr : config.proposerLr) ?? config.lr,
    warmupSteps: config.warmupSteps,
    weightDecay: config.weightDecay,
    maxGradNorm: config.maxGradNorm,
    schedule: config.lrSchedule,
    totalSteps: config.steps * (role === 'solver' ? config.solverEpochs : config.proposerEpochs),
    minLrRatio: config.minLrRatio,
    beta1: config.adamBeta1,
    beta2: config.adamBeta2,
    eps: config.adamEps,
  };
}

/** The GRPO update's settings (docs/method.md, "GRPO"); `padTokenId` is the tokenizer's. */
export function grpoConfigOf(config: TrainConfig, padTokenId: number): GrpoUpdateConfig {
  return {
    microBatchSize: config.microBatchSize,
    klCoef: config.klCoef,
    clipLow: config.clipLow,
    clipHigh: config.clipHigh,
    dualClip: config.dualClip === 0 ? null : config.dualClip,
    aggregation: config.lossAggregation,
    maxLen: config.maxResponseTokens,
    padTokenId,
  };
}

/** What the advantage kernel is asked for. */
export function advantageSettingsOf(config: TrainConfig): AdvantageSettings {
  return { mode: config.advantage, eps: config.advantageEps };
}

/** The held-out eval's settings (docs/evaluation.md): the solver's rollout limits of the run, greedy. */
export function evalSettingsOf(config: TrainConfig): EvalSettings {
  return {
    maxTurns: config.maxTurns,
    maxTokensPerTurn: config.maxNewTokens,
    maxResponseTokens: config.maxResponseTokens,
    batchSize: config.evalBatchSize,
    passagesPerQuery: config.passagesPerQuery,
  };
}
