// The prompts of the roles, in our own wording (docs/method.md, "One step" and "Rollouts"). The proposer's prompt never has a place for
// skills: only the solver's does.
import type { ChatMessage } from '../llm/types.js';
import type { Passage } from '../search/types.js';
import { renderResults } from '../search/types.js';

export const SEARCH_PROTOCOL =
  'You can search a document collection: write a query between <search> and </search>, and the top results ' +
  'will appear between <information> and </information>. You may search as many times as you need. ' +
  'Reason briefly between <think> and </think> before each step.';

/** Proposer: reverse question construction from a target answer and a hop count (docs/method.md, "One step"). */
export function proposerMessages(answer: string, hops: number): ChatMessage[] {
  const hopText = hops === 1 ? 'one search step' : `${hops} chained search steps`;
  return [
    {
      role: 'user',
      content:
        `Your task is to write a search question whose correct answer is exactly: ${answer}\n\n` +
        `${SEARCH_PROTOCOL}\n\n` +
        `First search for facts about "${answer}" and the entities connected to it. Then write one question ` +
        `that needs ${hopText} to answer, whose only correct answer is "${answer}", and that does not contain ` +
        `the answer itself. Use facts you found in the search results, so that the question can be answered ` +
        `from the collection. Finish with the question between <question> and </question>.`,
    },
  ];
}

/** Solver: Search-R1-style answering, with the rendered skill cards (their own header included) prepended. */
export function solverMessages(question: string, skillGuidance?: string): ChatMessage[] {
  const guidance = skillGuidance && skillGuidance.trim().length > 0 ? `${skillGuidance.trim()}\n\n` : '';
  return [
    {
      role: 'user',
      content:
        `${guidance}Answer the question below.\n\n${SEARCH_PROTOCOL}\n\n` +
        `When you are sure, give only the final answer, a few words with no explanation, between <answer> and ` +
        `</answer>.\n\nQuestion: ${question}`,
    },
  ];
}

/** Judge, RAG validity check (docs/method.md, "Validating questions"): answer from the given documents only. */
export function ragCheckMessages(question: string, documents: Passage[]): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        `Answer the question using only the documents below. Give only the answer, a few words, between ` +
        `<answer> and </answer>. If the documents do not contain it, give your best guess.\n\n` +
        `Documents:\n${renderResults(documents)}\n\nQuestion: ${question}`,
    },
  ];
}

/** Judge, semantic match (docs/method.md, "Judging answers"): reply exactly Correct or Wrong. */
export function semanticJudgeMessages(question: string, goldAnswers: readonly string[], prediction: string): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        `Decide whether a predicted answer means the same as the gold answer for the question.\n\n` +
        `Question: ${question}\nGold answer: ${goldAnswers.join(' | ')}\nPredicted answer: ${prediction}\n\n` +
        `Reply with exactly one word: Correct or Wrong.`,
    },
  ];
}
