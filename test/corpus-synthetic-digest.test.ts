// Pins the generator's output bit for bit: the SHA-256 of the JSON of everything generateSyntheticCorpus returns
// (corpus rows, answer seeds, held-out questions, entities, facts, stats) for a few seeds and sizes. The digests
// were computed before src/corpus/synthetic.ts was split into src/corpus/synthetic/, so any refactor that changes
// a generated world, even by one random draw, fails here. A deliberate change to the generator updates these
// digests in the same commit and says so (runs and eval sets keyed by a world seed change with it).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as oldPath from '../src/corpus/synthetic.js';
import { generateSyntheticCorpus, goldenAnswers, type SyntheticCorpusOptions } from '../src/corpus/synthetic/index.js';

const digest = (opts: SyntheticCorpusOptions): string =>
  createHash('sha256').update(JSON.stringify(generateSyntheticCorpus(opts))).digest('hex');

const PINNED: ReadonlyArray<readonly [SyntheticCorpusOptions, string]> = [
  [{ seed: 0, passages: 300 }, '242424a4a951c6811bd4e8edf2f35c25c5bd5852a580981b0add0ddac4e90133'],
  [{ seed: 7, passages: 300 }, 'b68f577bbdafa92a351e8536a72c5e4e07de2a93fded5004152e3d178f08524d'],
  [{ seed: 12345, passages: 300 }, '145113a4d91f1a85cf847481e5c76d87c2cfb3ef5a2130e6dde2ed144ac01366'],
  [{ seed: 5, passages: 600, heldOutPerHop: 10 }, '0eba43bae7563ad3c678f233ddf57f0b4e0f0fde7f0ba32ed90cd18f470f6453'],
  [{ seed: 7, passages: 2400 }, '8fc905698568df6930e3fd55df3c1ac0a0520dd2e7d63a03e42e6f8b6ab85edc'],
  [{ seed: 3, passages: 2400 }, 'f87f45a824d7530a7c8b62ff33c627542592b2ffc0b5d3d8f9119846d97aa3d5'],
];

describe('synthetic corpus digests', () => {
  it.each(PINNED)('generates the pinned world for %o', (opts, expected) => {
    expect(digest(opts)).toBe(expected);
  });

  it('the digest sees a one-field change (the check can fail)', () => {
    const out = generateSyntheticCorpus({ seed: 0, passages: 300 });
    const first = out.facts[0];
    if (!first) throw new Error('no facts');
    first.passageId = `${first.passageId}x`;
    expect(createHash('sha256').update(JSON.stringify(out)).digest('hex')).not.toBe(PINNED[0]?.[1]);
  });

  it('still answers on the old import path (a re-export for branches written before the split)', () => {
    expect(oldPath.generateSyntheticCorpus).toBe(generateSyntheticCorpus);
    expect(oldPath.goldenAnswers).toBe(goldenAnswers);
  });
});
