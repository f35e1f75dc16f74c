// Scoring one prediction against its golden answers the way FlashRAG scores QA (docs/evaluation.md):
// normalized exact match, and token F1 with the yes/no/noanswer rule, each the best over the golden answers.
//
// The normalization is SQuAD's, as FlashRAG runs it in Python: lowercase; delete the ASCII punctuation
// characters (Python's `string.punctuation`; other Unicode punctuation such as “ ” – — ’ stays); replace the
// whole words a/an/the with a space (a word boundary as Python's Unicode `\b` sees it: letters, digits and _
// are word characters); collapse runs of whitespace (Python's `str.split()` set) into single spaces.

/** Python's `string.punctuation`: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ */
const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/g;
/** a/an/the as whole words; Python's `\b` treats Unicode letters and digits (and _) as word characters. */
const ARTICLES = /(?<![\p{L}\p{N}_])(?:a|an|the)(?![\p{L}\p{N}_])/gu;
/** The characters Python's `str.split()` splits on. */
const PY_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;

export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(ASCII_PUNCTUATION, '')
    .replace(ARTICLES, ' ')
    .split(PY_WHITESPACE)
    .filter((t) => t.length > 0)
    .join(' ');
}

function tokens(normalized: string): string[] {
  return normalized.length === 0 ? [] : normalized.split(' ');
}

/**
 * 1 when the normalized prediction equals some normalized golden answer, else 0. A prediction that normalizes
 * to nothing (no answer, or only punctuation and articles) never matches, even a golden answer that also
 * normalizes to nothing.
 */
export function exactMatchScore(prediction: string, goldenAnswers: readonly string[]): number {
  const p = normalizeAnswer(prediction);
  return p.length > 0 && goldenAnswers.some((g) => normalizeAnswer(g) === p) ? 1 : 0;
}

const SPECIAL = new Set(['yes', 'no', 'noanswer']);

export interface TokenScores {
  f1: number;
  precision: number;
  recall: number;
}

/**
 * Token-level F1, precision and recall, each the maximum over the golden answers. A pair where either side
 * normalizes to yes/no/noanswer and the two differ scores 0, as does a pair with no token in common.
 */
export function tokenScores(prediction: string, goldenAnswers: readonly string[]): TokenScores {
  const best: TokenScores = { f1: 0, precision: 0, recall: 0 };
  const p = normalizeAnswer(prediction);
  const pTokens = tokens(p);
  for (const golden of goldenAnswers) {
    const g = normalizeAnswer(golden);
    if ((SPECIAL.has(p) || SPECIAL.has(g)) && p !== g) continue;
    const gTokens = tokens(g);
    const counts = new Map<string, number>();
    for (const t of gTokens) counts.set(t, (counts.get(t) ?? 0) + 1);
    let same = 0;
    for (const t of pTokens) {
      const c = counts.get(t) ?? 0;
      if (c > 0) {
        same++;
        counts.set(t, c - 1);
      }
    }
    if (same === 0) continue;
    const precision = same / pTokens.length;
    const recall = same / gTokens.length;
    const f1 = (2 * precision * recall) / (precision + recall);
    best.f1 = Math.max(best.f1, f1);
    best.precision = Math.max(best.precision, precision);
    best.recall = Math.max(best.recall, recall);
  }
  return best;
}

export function f1Score(prediction: string, goldenAnswers: readonly string[]): number {
  return tokenScores(prediction, goldenAnswers).f1;
}
