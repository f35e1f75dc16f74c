// The task environment of a run, picked from its settings (src/agent/environment.ts, docs/method.md
// "Environments"): a retrieval server when --retriever-url is set, else the generated world for --corpus world,
// the embedded encyclopedia for --corpus encyclopedia, or a local corpus file. The trainer and its step workers open it
// the same way, so every process searches alike.
import type { TaskEnvironment } from '../agent/environment.js';
import { ENCYCLOPEDIA, type TrainConfig } from '../settings/train.js';
import { worldEnvironment } from '../world/environment.js';
import { WORLD_CORPUS } from '../world/setup.js';
import { corpusEnvironment, encyclopediaEnvironment, retrieverEnvironment } from './corpora.js';

export async function openEnvironment(config: TrainConfig, log: (line: string) => void): Promise<TaskEnvironment> {
  // Only the generated world has several training corpora (docs/world.md, "Training worlds").
  if (config.trainingWorlds > 1 && (config.retrieverUrl || config.corpus !== WORLD_CORPUS)) {
    throw new Error(`--training-worlds ${config.trainingWorlds} names generated worlds: it needs --corpus world${config.retrieverUrl ? ' (not --retriever-url)' : ''}`);
  }
  if (config.retrieverUrl) return retrieverEnvironment(config, log);
  if (config.corpus === WORLD_CORPUS) return worldEnvironment(config.worldSeed, config.trainingWorlds);
  if (config.corpus === ENCYCLOPEDIA) return encyclopediaEnvironment(log);
  return corpusEnvironment(config, log);
}
