// The world tokenizer: a byte-level BPE trained on the world's text, written as a Hugging Face folder and
// loaded through the project's tokenizer code (transformers.js). Round trips of unseen words, unicode and the
// protocol, whole-token protocol tags and specials, and the chat template's exact render.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSyntheticCorpus } from '../src/corpus/synthetic/index.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';
import { solverMessages } from '../src/agent/prompts.js';
import { CHAT_SPECIALS, PROTOCOL_TAGS, pretokenize, specialIds, trainBpe, type TrainedBpe, writeWorldTokenizer } from '../src/world/tokenizer.js';

describe('world tokenizer', () => {
  let dir: string;
  let bpe: TrainedBpe;
  let tok: Tokenizer;
  const world = generateSyntheticCorpus({ seed: 3, passages: 300 });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'world-tok-'));
    const texts = [...world.corpus.map((r) => r.contents), ...world.heldOut.map((q) => q.question), solverMessages('Who wrote it?')[0]?.content ?? ''];
    bpe = trainBpe(texts, { vocabSize: 700 });
    writeWorldTokenizer(dir, bpe);
    tok = await loadTokenizer(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has the requested size: 256 bytes, the merges, then the added tokens', () => {
    expect(bpe.vocab.size).toBe(700);
    expect(bpe.merges.length).toBe(700 - 256 - CHAT_SPECIALS.length - PROTOCOL_TAGS.length);
    expect(tok.vocabSize).toBe(700);
  });

  it('compresses the text it was trained on (fewer tokens than bytes)', () => {
    const text = world.corpus[0]?.contents ?? '';
    expect(tok.encode(text).length).toBeLessThan(new TextEncoder().encode(text).length / 2);
  });

  it('round-trips words it never saw, unicode, emoji, control characters and whitespace runs', () => {
    const samples = [
      'Zyqxwv Plomburgh visited Ærøskøbing in 1783.',
      'naïve café — “quoted” ½ ∑ 😀 中文',
      'tabs\tand\nnewlines\r\n  and   spaces  ',
      '\u0000\u0001 odd bytes',
      'Who wrote the novel The Beekeeper of Isay?',
    ];
    for (const s of samples) expect(tok.decode(tok.encode(s))).toBe(s);
  });

  it('encodes like its own pre-tokenizer splits (byte characters) and reads merges from training', () => {
    const words = pretokenize(' the River');
    expect(words).toEqual(['Ġthe', 'ĠRiver']);
    expect(tok.encode(' the')).toEqual([bpe.vocab.get('Ġthe')]);
  });

  it('keeps every protocol tag and chat special as one token, and decodes tags even when specials are skipped', () => {
    for (const t of [...PROTOCOL_TAGS, ...CHAT_SPECIALS]) expect(tok.encode(t)).toEqual([bpe.vocab.get(t)]);
    const text = '<think> x </think>\n<search> Kalumost Press </search>\n<information>\nDoc 1(Title: "A") b\n</information>\n\n<answer> Y </answer><|im_end|>';
    const ids = tok.encode(text);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe(text.replace('<|im_end|>', ''));
  });

  it('renders the ChatML chat template exactly, and ends generation at <|im_end|>', () => {
    const rendered = tok.applyChatTemplate([{ role: 'user', content: 'Question: who?' }], { addGenerationPrompt: true, enableThinking: false });
    expect(rendered).toBe('<|im_start|>user\nQuestion: who?<|im_end|>\n<|im_start|>assistant\n');
    const withAnswer = tok.applyChatTemplate([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    expect(withAnswer).toBe('<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n');
    const ids = specialIds(bpe);
    expect(tok.eosTokenIds[0]).toBe(ids.imEnd);
    expect(tok.padTokenId).toBe(ids.endOfText);
    expect(tok.encode(rendered).slice(0, 1)).toEqual([ids.imStart]);
  });

  it('is a function of its input: training twice gives the same merges', () => {
    const again = trainBpe(world.corpus.slice(0, 50).map((r) => r.contents), { vocabSize: 400 });
    const once = trainBpe(world.corpus.slice(0, 50).map((r) => r.contents), { vocabSize: 400 });
    expect(again.merges).toEqual(once.merges);
  });

  it('refuses a vocabulary smaller than bytes plus added tokens', () => {
    expect(() => trainBpe(['x'], { vocabSize: 200 })).toThrow(/vocabSize must be an integer ≥ 269/);
  });
});
