// The end-of-run summary's p̂ line: the share of valid questions whose solve rate p̂ was 0, strictly between,
// or 1, pooled over steps; nothing when no question was valid.
import { describe, expect, it } from 'vitest';
import { pHatLine } from '../src/cli/train.js';

describe('pHatLine', () => {
  it('pools the histograms of the given steps into {0, (0,1), 1} shares', () => {
    const steps: Array<{ pHatHistogram: Record<string, number> }> = [{ pHatHistogram: { '0.00': 3, '0.40': 1 } }, { pHatHistogram: { '0.20': 2, '1.00': 2, '0.00': 2 } }];
    // 10 questions: 5 at 0, 3 strictly between, 2 at 1.
    expect(pHatLine(steps)).toBe('{0: 50%, (0,1): 30%, 1: 20%} of 10');
  });

  it('says nothing without valid questions', () => {
    expect(pHatLine([{ pHatHistogram: {} }])).toBeUndefined();
    expect(pHatLine([])).toBeUndefined();
  });
});
