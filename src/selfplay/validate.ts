// Question extraction and validation (docs/method.md, "Validating questions": SSP's checks). The RAG check
// needs the judge model and runs separately (see step.ts); everything here is a pure function of the
// proposer's rollout, the seed's answers and the rules.
import { TRAIN_DEFAULTS } from '../settings/train.js';
import type { Rollout } from '../agent/rollout.js';

export type InvalidReason =
  | 'no-question'
  | 'too-short'
  | 'too-long'
  | 'too-few-words'
  | 'contains-answer'
  | 'too-few-searches'
  | 'repeated-query'
  | 'nothing-retrieved'
  | 'rag-check-failed'
  | 'answerable-in-one-search'
  | 'answerable-from-first-search';

export interface QuestionCheck {
  question?: string;
  /** undefined when the rule-based checks pass (the RAG check may still fail it). */
  invalid?: InvalidReason;
}

/** The rule checks' settings (from the proposer group of the config). */
export interface QuestionRules {
  minChars: number;
  maxChars: number;
  minWords: number;
  minDistinctQueries: number;
  /** A proposal that sends the same query twice (compared trimmed and lowercased) is invalid. */
  rejectRepeatedQueries: boolean;
}

/** The defaults of the configuration table. */
export const QUESTION_RULES: Readonly<QuestionRules> = Object.freeze({
  minChars: TRAIN_DEFAULTS.questionMinChars,
  maxChars: TRAIN_DEFAULTS.questionMaxChars,
  minWords: TRAIN_DEFAULTS.questionMinWords,
  minDistinctQueries: TRAIN_DEFAULTS.minDistinctQueries,
  rejectRepeatedQueries: TRAIN_DEFAULTS.rejectRepeatedQueries,
});

/**
 * The first rule a proposal breaks, in this order: a question was extracted; its length in characters and
 * words; it names neither the answer nor any alias (case-insensitive); enough distinct searches; no repeated
 * search; something was retrieved.
 */
export function checkQuestion(rollout: Rollout, answer: string, aliases: readonly string[] = [], rules: QuestionRules = QUESTION_RULES): QuestionCheck {
  const question = rollout.final?.trim();
  if (!question) return { invalid: 'no-question' };
  if (question.length < rules.minChars) return { question, invalid: 'too-short' };
  if (question.length > rules.maxChars) return { question, invalid: 'too-long' };
  if (question.split(/\s+/).filter((w) => w.length > 0).length < rules.minWords) return { question, invalid: 'too-few-words' };
  const lower = question.toLowerCase();
  const names = [answer, ...aliases].map((a) => a.trim().toLowerCase()).filter((a) => a.length > 0);
  if (names.some((a) => lower.includes(a))) return { question, invalid: 'contains-answer' };
  const queries = rollout.queries.map((q) => q.trim().toLowerCase()).filter((q) => q.length > 0);
  const distinct = new Set(queries);
  if (distinct.size < rules.minDistinctQueries) return { question, invalid: 'too-few-searches' };
  if (rules.rejectRepeatedQueries && distinct.size < queries.length) return { question, invalid: 'repeated-query' };
  if (!rollout.retrieved.some((r) => r.length > 0)) return { question, invalid: 'nothing-retrieved' };
  return { question };
}
