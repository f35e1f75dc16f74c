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
  if (config.retrieverUrl) return retrieverEnvironment(config, log);
  if (config.corpus === WORLD_CORPUS) return worldEnvironment(config.worldSeed);
  if (config.corpus === ENCYCLOPEDIA) return encyclopediaEnvironment(log);
  return corpusEnvironment(config, log);
}
