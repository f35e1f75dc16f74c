// What one step and its rollouts are told, read from the training configuration. The trainer, the benchmarks
// and the step tests build them the same way, so a recipe's fixed values reach the step only through here.
import type { TrainConfig } from './config.js';
import type { RolloutSettings } from './roles.js';
import type { StepSettings } from './step.js';

export function rolloutSettingsOf(config: TrainConfig): RolloutSettings {
  return {
    maxTurns: config.maxTurns,
    maxTokensPerTurn: config.maxNewTokens,
    maxResponseTokens: config.maxResponseTokens,
    temperature: config.temperature,
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
    failureEvidenceChars: config.failureEvidenceChars,
    skipUniformGroups: config.skipUniformGroups,
    epochs: { solver: config.solverEpochs, proposer: config.proposerEpochs },
  };
}
