// Scoring (docs/evaluation.md): a table of (prediction, golden answers) pairs with EM and F1 worked out by hand
// from the FlashRAG/SQuAD rules: lowercase, delete ASCII punctuation, drop a/an/the, collapse whitespace;
// F1 from the multiset of common tokens, 0 when either side is yes/no/noanswer and they differ; best over
// the golden answers.
import { describe, expect, it } from 'vitest';
import { exactMatchScore, f1Score, normalizeAnswer, tokenScores } from '../src/eval/score.js';

interface Row {
  what: string;
  prediction: string;
  golden: string[];
  em: 0 | 1;
  f1: number;
}

// F1 = 2PR/(P+R); the working is in each comment: common tokens / prediction tokens, / golden tokens.
const TABLE: Row[] = [
  { what: 'identical', prediction: 'Paris', golden: ['Paris'], em: 1, f1: 1 },
  { what: 'case', prediction: 'PARIS', golden: ['paris'], em: 1, f1: 1 },
  { what: 'trailing period', prediction: 'Paris.', golden: ['Paris'], em: 1, f1: 1 },
  { what: 'apostrophe deleted, not spaced', prediction: "O'Brien", golden: ['OBrien'], em: 1, f1: 1 },
  { what: 'hyphen deleted joins the words', prediction: 'Jean-Paul Sartre', golden: ['Jean Paul Sartre'], em: 0, f1: 0.4 }, // jeanpaul sartre vs jean paul sartre: 1/2, 1/3 → 2·(1/6)/(5/6) = 0.4
  { what: 'comma inside a number', prediction: '1,000', golden: ['1000'], em: 1, f1: 1 },
  { what: 'decimal point deleted', prediction: '3.5', golden: ['35'], em: 1, f1: 1 },
  { what: 'article the', prediction: 'The Beatles', golden: ['Beatles'], em: 1, f1: 1 },
  { what: 'article a inside', prediction: 'a dog and a cat', golden: ['dog and cat'], em: 1, f1: 1 },
  { what: 'article an', prediction: 'an apple', golden: ['apple'], em: 1, f1: 1 },
  { what: 'article only as a whole word', prediction: 'Theatre', golden: ['atre'], em: 0, f1: 0 },
  { what: 'an inside a word stays', prediction: 'Annapolis', golden: ['napolis'], em: 0, f1: 0 },
  { what: 'whitespace collapses', prediction: '  New \t York\n', golden: ['new york'], em: 1, f1: 1 },
  { what: 'no-break space is whitespace', prediction: 'New\u00a0York', golden: ['New York'], em: 1, f1: 1 },
  { what: 'partial overlap, longer prediction', prediction: 'New York City', golden: ['New York'], em: 0, f1: 0.8 }, // 2/3, 2/2 → (4/3)/(5/3)
  { what: 'partial overlap, shorter prediction', prediction: 'York', golden: ['New York'], em: 0, f1: 2 / 3 }, // 1/1, 1/2 → 1/(3/2)
  { what: 'no overlap', prediction: 'London', golden: ['Paris'], em: 0, f1: 0 },
  { what: 'repeated token counted once per golden occurrence', prediction: 'very very good', golden: ['very good'], em: 0, f1: 0.8 }, // 2/3, 2/2
  { what: 'repeated token on both sides', prediction: 'no no no', golden: ['no no'], em: 0, f1: 0.8 }, // 2/3, 2/2; neither side is exactly "no"
  { what: 'accents are kept', prediction: 'José', golden: ['Jose'], em: 0, f1: 0 },
  { what: 'accents match themselves', prediction: 'Gödel', golden: ['GÖDEL'], em: 1, f1: 1 },
  { what: 'curly quotes are not ASCII punctuation', prediction: '“Hamlet”', golden: ['Hamlet'], em: 0, f1: 0 },
  { what: 'en dash is not ASCII punctuation', prediction: '1990–1995', golden: ['1990 1995'], em: 0, f1: 0 },
  { what: 'non-Latin script', prediction: '東京', golden: ['東京'], em: 1, f1: 1 },
  { what: 'a next to a non-ASCII letter is not a word', prediction: 'àa', golden: ['à'], em: 0, f1: 0 },
  { what: 'number words vs digits', prediction: 'three', golden: ['3'], em: 0, f1: 0 },
  { what: 'year inside a date', prediction: 'June 4, 1989', golden: ['1989'], em: 0, f1: 0.5 }, // june 4 1989: 1/3, 1/1 → (2/3)/(4/3)
  { what: 'yes vs yes', prediction: 'Yes.', golden: ['yes'], em: 1, f1: 1 },
  { what: 'yes vs no', prediction: 'yes', golden: ['no'], em: 0, f1: 0 },
  { what: 'yes vs a longer golden sharing the token', prediction: 'yes', golden: ['yes it is'], em: 0, f1: 0 },
  { what: 'longer prediction vs golden no', prediction: 'no it is not', golden: ['no'], em: 0, f1: 0 },
  { what: 'noanswer vs a real golden', prediction: 'noanswer', golden: ['noanswer found'], em: 0, f1: 0 },
  { what: 'multiple golden: second matches', prediction: 'JFK', golden: ['John F. Kennedy', 'JFK'], em: 1, f1: 1 },
  { what: 'multiple golden: best F1 wins', prediction: 'John Kennedy', golden: ['Kennedy', 'John F. Kennedy'], em: 0, f1: 0.8 }, // vs john f kennedy: 2/2, 2/3 → 0.8; vs kennedy: 1/2, 1/1 → 2/3
  { what: 'multiple golden: yes/no rule applies per golden', prediction: 'no', golden: ['yes', 'No'], em: 1, f1: 1 },
  { what: 'empty prediction', prediction: '', golden: ['Paris'], em: 0, f1: 0 },
  { what: 'whitespace-only prediction', prediction: '   ', golden: ['Paris'], em: 0, f1: 0 },
  { what: 'prediction of only an article never matches', prediction: 'the', golden: ['a'], em: 0, f1: 0 },
  { what: 'no golden answers', prediction: 'Paris', golden: [], em: 0, f1: 0 },
  { what: 'underscore is punctuation', prediction: 'snake_case', golden: ['snakecase'], em: 1, f1: 1 },
];

describe('FlashRAG scoring', () => {
  it('has at least 30 hand-worked pairs', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(30);
  });

  it.each(TABLE)('$what: EM $em, F1 $f1', (row) => {
    expect(exactMatchScore(row.prediction, row.golden)).toBe(row.em);
    expect(f1Score(row.prediction, row.golden)).toBeCloseTo(row.f1, 12);
  });

  it('normalizes step by step', () => {
    expect(normalizeAnswer("  The  Man's\tbest-friend, a DOG!  ")).toBe('mans bestfriend dog');
    expect(normalizeAnswer('An   apple a day')).toBe('apple day');
    expect(normalizeAnswer('')).toBe('');
  });

  it('reports precision and recall of the best pair separately', () => {
    // new york city vs new york: P 2/3, R 1.
    const s = tokenScores('New York City', ['New York']);
    expect(s.precision).toBeCloseTo(2 / 3, 12);
    expect(s.recall).toBe(1);
  });
});
