// Question extraction and validation (SPEC §2 step 2, SSP's checks). The RAG check needs the judge model and
// runs separately (see step.ts); everything here is a pure function of the proposer's rollout.
import type { Rollout } from './rollout.js';

export type InvalidReason = 'no-question' | 'too-short' | 'too-long' | 'too-few-words' | 'contains-answer' | 'too-few-searches' | 'nothing-retrieved' | 'rag-check-failed';

export interface QuestionCheck {
  question?: string;
  /** undefined when the rule-based checks pass (the RAG check may still fail it). */
  invalid?: InvalidReason;
}

export const QUESTION_LIMITS = { minChars: 10, maxChars: 1000, minWords: 10, minDistinctQueries: 2 };

export function checkQuestion(rollout: Rollout, answer: string): QuestionCheck {
  const question = rollout.final?.trim();
  if (!question) return { invalid: 'no-question' };
  if (question.length < QUESTION_LIMITS.minChars) return { question, invalid: 'too-short' };
  if (question.length > QUESTION_LIMITS.maxChars) return { question, invalid: 'too-long' };
  if (question.split(/\s+/).filter((w) => w.length > 0).length < QUESTION_LIMITS.minWords) return { question, invalid: 'too-few-words' };
  if (question.toLowerCase().includes(answer.trim().toLowerCase())) return { question, invalid: 'contains-answer' };
  const distinct = new Set(rollout.queries.map((q) => q.trim().toLowerCase()).filter((q) => q.length > 0));
  if (distinct.size < QUESTION_LIMITS.minDistinctQueries) return { question, invalid: 'too-few-searches' };
  if (!rollout.retrieved.some((r) => r.length > 0)) return { question, invalid: 'nothing-retrieved' };
  return { question };
}
