// Questions that cannot fit the model's context (src/model/context.ts): the solver's prompt for the question, the
// skill cards' token budget when skills are on, and the rollout's response budget must fit together, or the
// question is refused before any runs (docs/evaluation.md, "Questions longer than the context").
import { solverMessages } from '../agent/prompts.js';
import type { EvalQuestion } from '../agent/environment.js';
import type { ModelConfig } from '../model/config.js';
import { contextLength } from '../model/context.js';

export interface ContextBudget {
  /** Token ids of a chat prompt (the policy's renderChat). */
  renderChat(messages: ReturnType<typeof solverMessages>): number[];
  /** Tokens of the rendered cards in the prompt (the run's --render-token-budget); 0 with skills off. */
  cardTokens: number;
  /** Tokens a rollout may add after the prompt (--max-response-tokens). */
  responseTokens: number;
}

/** At most this many questions are named in the refusal; the rest are counted. */
const NAMED_AT_MOST = 3;

/**
 * The refusal for the questions whose prompt, cards and response budget exceed the context, each named by its
 * dataset's source (a file), id and field; undefined when all fit. `sourceOf` maps a dataset name to its file.
 */
export function questionsOverContext(questions: readonly EvalQuestion[], budget: ContextBudget, config: Pick<ModelConfig, 'maxPositionEmbeddings'>, modelDir: string, sourceOf: (dataset: string) => string): string | undefined {
  const limit = contextLength(config);
  const over: string[] = [];
  let count = 0;
  for (const q of questions) {
    const prompt = budget.renderChat(solverMessages(q.question)).length;
    const need = prompt + budget.cardTokens + budget.responseTokens;
    if (need <= limit) continue;
    count++;
    if (over.length < NAMED_AT_MOST) over.push(`${sourceOf(q.dataset)}: question ${q.id} (field 'question', ${q.question.length.toLocaleString('en-US')} characters): its prompt is ${prompt.toLocaleString('en-US')} tokens`);
  }
  if (count === 0) return undefined;
  return (
    `${count} question${count === 1 ? '' : 's'} cannot fit the model's context of ${limit.toLocaleString('en-US')} positions (max_position_embeddings in ${modelDir}/config.json) ` +
    `with ${budget.cardTokens > 0 ? `the skill cards' ${budget.cardTokens} tokens and ` : ''}the ${budget.responseTokens}-token response budget (--max-response-tokens): ` +
    `${over.join('; ')}${count > over.length ? `; and ${count - over.length} more` : ''}. Past the context the model's output is noise: remove or shorten these questions, or use a model with a longer context`
  );
}
