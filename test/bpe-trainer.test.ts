// The one byte-level BPE trainer (src/model/bpe-trainer.ts) against merges worked out by hand, and its options:
// byte id order, the two budgets, the minimum pair frequency, cut-out tokens.
import { describe, expect, it } from 'vitest';
import { byteLevelAlphabet, byteLevelWords, bytesToUnicode, trainByteLevelBpe } from '../src/model/bpe-trainer.js';

const WORDS = /\S+/gu;

describe('byte-level BPE trainer', () => {
  it('merges the most frequent pair, ties to the smaller pair, on a hand-worked example', () => {
    // Words aaab, aab, ab. Pairs: (a,a) 3, (a,b) 3 → tie, "a a" < "a b": merge a+a.
    // Then aaab = [aa a b], aab = [aa b], ab = [a b]: (a,b) 2, (aa,a) 1, (aa,b) 1 → merge a+b.
    // Then [aa ab], [aa b], [ab]: (aa,ab) 1, (aa,b) 1 → tie, "aa ab" < "aa b": merge aa+ab; then aa+b, and
    // every word is one symbol: no pair is left, so training stops under its budget.
    const out = trainByteLevelBpe(['aaab aab ab'], { split: WORDS, byteOrder: 'byte', budget: { merges: 10 } });
    expect(out.merges).toEqual([['a', 'a'], ['a', 'b'], ['aa', 'ab'], ['aa', 'b']]);
    expect(out.tokens.slice(256)).toEqual(['aa', 'ab', 'aaab', 'aab']);
    expect(out.vocab.get('aaab')).toBe(258);
  });

  it('stops at the minimum frequency and at either budget', () => {
    const minFreq = trainByteLevelBpe(['aaab aab ab'], { split: WORDS, byteOrder: 'byte', budget: { merges: 10 }, minFrequency: 2 });
    expect(minFreq.merges).toEqual([['a', 'a'], ['a', 'b']]);
    const merges = trainByteLevelBpe(['aaab aab ab'], { split: WORDS, byteOrder: 'byte', budget: { merges: 1 } });
    expect(merges.merges).toEqual([['a', 'a']]);
    const tokens = trainByteLevelBpe(['aaab aab ab'], { split: WORDS, byteOrder: 'byte', budget: { tokens: 258 } });
    expect(tokens.merges).toEqual([['a', 'a'], ['a', 'b']]);
    expect(tokens.vocab.size).toBe(258);
  });

  it('orders the byte characters as GPT-2 does, or by byte value', () => {
    const char = bytesToUnicode();
    expect(char[0x20]).toBe('Ġ');
    expect(char[0x0a]).toBe('Ċ');
    expect(char[0x61]).toBe('a');
    const gpt2 = trainByteLevelBpe([''], { split: WORDS, byteOrder: 'gpt2', budget: { merges: 0 } });
    const byte = trainByteLevelBpe([''], { split: WORDS, byteOrder: 'byte', budget: { merges: 0 } });
    expect(gpt2.vocab.get('a')).toBe(0x61 - 0x21);
    expect(gpt2.vocab.get('Ġ')).toBe(188 + 0x20);
    expect(byte.vocab.get('a')).toBe(0x61);
    expect(byte.vocab.get('Ġ')).toBe(0x20);
    expect(gpt2.tokens).toEqual(byteLevelAlphabet().map((a) => a.char));
  });

  it('maps words to byte characters (multi-byte UTF-8 included) and never merges across a cut-out token', () => {
    expect(byteLevelWords(' é', /\s?\S+/gu)).toEqual(['ĠÃ©']);
    const out = trainByteLevelBpe(['x<s>x<s>x<s>'], { split: /\S+?(?=<|$)|\S+/gu, byteOrder: 'byte', budget: { merges: 5 }, cutOut: ['<s>'] });
    expect(out.merges).toEqual([]);
    const uncut = trainByteLevelBpe(['x<s>x<s>x<s>'], { split: WORDS, byteOrder: 'byte', budget: { merges: 1 } });
    expect(uncut.merges.length).toBe(1);
  });
});
