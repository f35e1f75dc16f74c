// The model's context: how many positions one sequence may span (config.json's max_position_embeddings, the
// positions the model was trained on). Past it the rotary positions are ones the model never saw and its
// output is noise, so an input that cannot fit is refused before any compute (docs/usage.md, "Inputs longer
// than the context").
import { join } from 'node:path';
import type { ModelConfig } from './config.js';

/** Positions one sequence may span: the prompt and everything generated after it. */
export function contextLength(config: Pick<ModelConfig, 'maxPositionEmbeddings'>): number {
  return config.maxPositionEmbeddings;
}

/**
 * Why `tokens` positions do not fit the model, naming `what` they are and where the limit comes from;
 * undefined when they fit.
 */
export function contextProblem(what: string, tokens: number, config: Pick<ModelConfig, 'maxPositionEmbeddings'>, modelDir: string): string | undefined {
  const limit = contextLength(config);
  if (tokens <= limit) return undefined;
  return `${what}: ${tokens.toLocaleString('en-US')} positions, more than the model's context of ${limit.toLocaleString('en-US')} (max_position_embeddings in ${join(modelDir, 'config.json')}); past it the model's output is noise`;
}
