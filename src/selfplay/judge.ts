// Judging an answer (SPEC §2 step 4): normalized exact match with any gold answer, else a model-based
// semantic match that must reply Correct or Wrong (as a whole word: "Incorrect" does not count).
import type { TextGenerator } from '../llm/types.js';
import { semanticJudgeMessages } from './prompts.js';

/**
 * SQuAD/FlashRAG normalization: lowercase, delete punctuation (so "O'Brien" → "obrien", as their scripts do),
 * drop the articles a/an/the, collapse whitespace.
 */
export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, '')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

export function exactMatch(prediction: string, golds: readonly string[]): boolean {
  const p = normalizeAnswer(prediction);
  return p.length > 0 && golds.some((g) => normalizeAnswer(g) === p);
}

/**
 * The verdict in a judge reply: the first of the whole words "correct", "wrong" or "incorrect" (any case),
 * with "not correct" read as wrong; undefined if none. "Incorrect" never counts as correct (SPEC §2 step 4).
 */
export function parseVerdict(reply: string): boolean | undefined {
  const m = /\b(not\s+correct|incorrect|correct|wrong)\b/i.exec(reply);
  if (!m) return undefined;
  return (m[1] as string).toLowerCase() === 'correct';
}

export type JudgeMethod = 'exact' | 'semantic' | 'no-answer';

export interface Judgement {
  correct: boolean;
  method: JudgeMethod;
}

export class AnswerJudge {
  /** Replies that were neither Correct nor Wrong (counted as Wrong). */
  unparsedReplies = 0;

  constructor(private readonly semantic: TextGenerator | undefined) {}

  async judge(question: string, golds: readonly string[], prediction: string | undefined): Promise<Judgement> {
    if (prediction === undefined || prediction.trim() === '') return { correct: false, method: 'no-answer' };
    if (exactMatch(prediction, golds)) return { correct: true, method: 'exact' };
    if (!this.semantic) return { correct: false, method: 'exact' };
    const reply = await this.semantic.complete(semanticJudgeMessages(question, golds, prediction), { maxTokens: 8, temperature: 0 });
    const verdict = parseVerdict(reply);
    if (verdict === undefined) this.unparsedReplies++;
    return { correct: verdict === true, method: 'semantic' };
  }
}
