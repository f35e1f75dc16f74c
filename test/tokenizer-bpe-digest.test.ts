// Pins the two byte-level BPE tokenizers the project trains, bit for bit: make-tiny's (a fixed English-and-tags
// text, exactly N ids) and the world's (the world's own text, added tokens cut out first). The digests are the
// SHA-256 of the JSON of the tokenizer files each writes for a fixed input; they were computed before the two
// trainers became one (src/model/bpe-trainer.ts), so any change to merges, ids or file layout fails here. The
// shipped world model's tokenizer (models/demo) must still load and round-trip.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tinyTokenizerFiles } from '../src/checkpoint/make-tiny.js';
import { generateSyntheticCorpus } from '../src/corpus/synthetic/index.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { tokenizerConfigJson, tokenizerJson, trainBpe } from '../src/world/tokenizer.js';
import { demoModelDir } from '../src/world/setup.js';

const sha = (x: unknown): string => createHash('sha256').update(JSON.stringify(x)).digest('hex');

describe('BPE tokenizer digests', () => {
  it.each([
    [300, 'f2b2b7ecf7094342c319e0c096ca9c4c1a6044baf2c4eb3de3d96c3f3c89d79c'],
    [512, '88b9a042c77b0076c4c6bab20017123758450ac770daac6a0bdde14ce553eee9'],
    // 1000 and 2048 run the training text out of pairs and take make-tiny's filler merges.
    [1000, 'bae258013ab5d6c9d3fa432957c06df2440829cb0ddbcf34496528e3d551f206'],
    [2048, '7c91e3881d071187e8affedbc44f0547ae13e2d71c204545ad4768bfb4ca2d20'],
  ])('make-tiny writes the pinned tokenizer files for vocab %i', (size, expected) => {
    expect(sha(tinyTokenizerFiles(size))).toBe(expected);
  });

  const world = generateSyntheticCorpus({ seed: 7, passages: 300 });
  const texts = [
    ...world.corpus.map((r) => r.contents),
    ...world.heldOut.slice(0, 20).map((q) => `<|im_start|>user\n${q.question}<|im_end|>\n<|im_start|>assistant\n<think>x</think><search>${q.question}</search><answer>${q.golden_answers[0]}</answer><|im_end|>`),
  ];
  it.each([
    [400, undefined, 'dd1277ec91fad42603462eaf6211432da2bd70b44c09b3babd21f0743c1fe4b2'],
    [1200, undefined, '1611dcfa810fe8e666dc92eec5b42cb27b3e3482a5668079d4969f539614e6ef'],
    // minFrequency 3 stops training before the budget (1,513 merges, 1,782 ids).
    [2048, 3, '3d8ac48353e085b3fef1983ba49070eaccdbe07720c49c25105b314df6ce3dee'],
  ] as const)('the world trainer gives the pinned tokenizer for vocab %i, minFrequency %s', (vocabSize, minFrequency, expected) => {
    const bpe = trainBpe(texts, { vocabSize, minFrequency });
    expect(sha([tokenizerJson(bpe), tokenizerConfigJson(bpe)])).toBe(expected);
  });

  it('the shipped world model tokenizer still loads and round-trips the protocol', async () => {
    const tok = await loadTokenizer(demoModelDir());
    expect(tok.vocabSize).toBe(2048);
    const text = '<think> x </think>\n<search> Kalumost Press </search>\n<answer> Ærøskøbing 😀 </answer><|im_end|>';
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.encode('<search>')).toHaveLength(1);
  });
});
