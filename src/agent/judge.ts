// Judging an answer (docs/method.md, "Judging answers"): normalized exact match with any gold answer, else a
// model-based semantic match whose whole reply must be Correct or Wrong.
import { LlmEndpointError } from '../llm/openai.js';
import type { TextGenerator } from '../llm/types.js';
import { TRAIN_DEFAULTS } from '../settings/train.js';
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
 * The verdict in a judge reply: `<think>…</think>` blocks are removed (an unclosed one runs to the end), and
 * what is left, trimmed, must be exactly "Correct" or "Wrong" in any case with at most one trailing period.
 * Anything else ("Incorrect", "not correct", a sentence that contains either word) is undefined: unparsed,
 * which the judge counts and reads as Wrong (docs/method.md, "Judging answers").
 */
export function parseVerdict(reply: string): boolean | undefined {
  const text = reply
    .replace(/<think>[\s\S]*?<\/think>/gi, '')
    .replace(/<think>[\s\S]*$/i, '')
    .trim()
    .toLowerCase();
  const m = /^(correct|wrong)\.?$/.exec(text);
  if (!m) return undefined;
  return m[1] === 'correct';
}

/**
 * Whether a judge call failed at its endpoint (an HTTP error, a timeout, a broken reply, after the retries):
 * such a call gives no verdict, like an unusable reply, and the run goes on, counted and warned about by the
 * role watch (./role-health.ts) until --stop-after-failed-steps. Any other error (a bug, the in-process model
 * out of memory) still ends the step.
 */
export function isEndpointFailure(err: unknown): boolean {
  return err instanceof LlmEndpointError;
}

export type JudgeMethod = 'exact' | 'semantic' | 'no-answer';

export interface Judgement {
  correct: boolean;
  method: JudgeMethod;
}

export class AnswerJudge {
  /** Replies that were neither Correct nor Wrong (counted as Wrong). */
  unparsedReplies = 0;

  /** `maxTokens`: the semantic judge's reply budget (room for a thinking block when the judge thinks). */
  constructor(
    private readonly semantic: TextGenerator | undefined,
    private readonly maxTokens: number = TRAIN_DEFAULTS.judgeMaxTokens,
  ) {}

  async judge(question: string, golds: readonly string[], prediction: string | undefined): Promise<Judgement> {
    if (prediction === undefined || prediction.trim() === '') return { correct: false, method: 'no-answer' };
    if (exactMatch(prediction, golds)) return { correct: true, method: 'exact' };
    if (!this.semantic) return { correct: false, method: 'exact' };
    let reply: string;
    try {
      reply = await this.semantic.complete(semanticJudgeMessages(question, golds, prediction), { maxTokens: this.maxTokens, temperature: 0 });
    } catch (err) {
      // No verdict: read as Wrong; the failed call is counted by the role watch.
      if (isEndpointFailure(err)) return { correct: false, method: 'semantic' };
      throw err;
    }
    const verdict = parseVerdict(reply);
    if (verdict === undefined) this.unparsedReplies++;
    return { correct: verdict === true, method: 'semantic' };
  }
}
