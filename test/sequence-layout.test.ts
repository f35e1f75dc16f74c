// The layout of a GRPO pass (src/rl/sequence-layout.ts): identical sequences share a forward row, and the LM
// head forms only the response slots that carry loss; every copy's cell reads its own slot, or the zero.
import { describe, expect, it } from 'vitest';
import { copyValues, forwardRows, layoutMicroBatch, type TrainingSequence } from '../src/rl/sequence-layout.js';

function seq(promptIds: number[], responseIds: number[], responseMask: number[], advantage: number): TrainingSequence {
  return { promptIds, responseIds, responseMask, oldLogprobs: responseIds.map((_, j) => -1 - j), advantage, samplingTemperature: 0.5 };
}

describe('layoutMicroBatch', () => {
  // Sequences 0 and 2 are identical (one forward row); 1 is shorter, with a tool-output token.
  const seqs = [seq([5, 6], [7, 8, 9], [1, 0, 1], 0.5), seq([5], [4, 3], [1, 1], -1), seq([5, 6], [7, 8, 9], [1, 0, 1], 2)];
  const rows = forwardRows(seqs, true);
  const layout = layoutMicroBatch(rows, seqs, 0);

  it('forms one slot per trained token of each forward row, predicted by the hidden state one position earlier', () => {
    expect(rows.map((r) => r.members)).toEqual([[1], [0, 2]]); // shortest first
    expect(layout.U).toBe(2);
    expect(layout.B).toBe(3);
    expect(layout.R).toBe(3);
    // T = 5: row 0 is [pad, pad, 5, 4, 3], row 1 is [5, 6, 7, 8, 9].
    expect(layout.ids).toEqual([[0, 0, 5, 4, 3], [5, 6, 7, 8, 9]]);
    expect(layout.S).toBe(4); // 2 of row 0, 2 of row 1 (its middle token is tool output)
    expect(Array.from(layout.hiddenRows)).toEqual([2, 3, 5 + 1, 5 + 3]);
    expect(Array.from(layout.targets)).toEqual([4, 3, 7, 9]);
    expect(Array.from(layout.invTemperature)).toEqual([2, 2, 2, 2]);
  });

  it('each copy reads its row’s slots where its mask is 1 and the zero (slot S) elsewhere', () => {
    const S = layout.S;
    // Copies in row order: sequence 1, then 0 and 2 (both row 1).
    expect(layout.members).toEqual([1, 0, 2]);
    expect(Array.from(layout.copySlots)).toEqual([0, 1, S, 2, S, 3, 2, S, 3]);
    expect(Array.from(layout.mask)).toEqual([1, 1, 0, 1, 0, 1, 1, 0, 1]);
    expect(Array.from(copyValues(layout, Float32Array.from([10, 11, 12, 13])))).toEqual([10, 11, 0, 12, 0, 13, 12, 0, 13]);
    expect(Array.from(layout.advantages)).toEqual([-1, 0.5, 2]);
  });

  it('with everySlot forms every response token, masked or not', () => {
    const all = layoutMicroBatch(rows, seqs, 0, true);
    expect(all.S).toBe(5);
    expect(Array.from(all.targets)).toEqual([4, 3, 7, 8, 9]);
    expect(Array.from(all.copySlots)).toEqual([0, 1, 5, 2, 3, 4, 2, 3, 4]);
  });
});
