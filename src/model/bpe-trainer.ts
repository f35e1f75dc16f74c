// The project's one byte-level BPE trainer, and the Hugging Face `tokenizer.json` it is written as. Two tokenizers
// are trained with it: make-tiny's small vocabularies for test and benchmark checkpoints
// (src/checkpoint/make-tiny.ts) and the world tokenizer of the shipped warm start (src/world/tokenizer.ts).
// It lives in src/model/, next to the tokenizer loader (./tokenizer.ts), because both callers sit above
// model/ in the layer order (checkpoint → model, world → model) and it imports nothing of the project: a
// tokenizer is part of a model, and training one needs no checkpoint or world code.
//
// Byte-level BPE (GPT-2's scheme): text is cut into words by a pre-tokenizer regex, each word's UTF-8 bytes are
// mapped to printable characters (so the vocabulary is plain strings), and training starts from the 256 byte
// characters and repeatedly merges the most frequent adjacent pair of symbols:
//
//   count(x, y) = Σ_words freq(word) · #{k : sym_k = x, sym_{k+1} = y}
//   merge       = argmax_(x, y) count(x, y), ties broken by the smaller pair text
//
// until a budget is spent or no pair reaches `minFrequency`. The tie rule and sorted word order make the
// result a function of the input alone. The callers differ in three ways, kept as options because each
// shipped tokenizer's ids depend on them (test/tokenizer-bpe-digest.test.ts pins both):
// - the id order of the 256 byte characters: GPT-2's (printable bytes first, as Qwen's vocabulary) or by value;
// - the budget: a number of merges (the world's), or a number of tokens, bytes + merged tokens (make-tiny's, as
//   Hugging Face's trainer counts). They agree unless a merge makes a token that already exists (`ab`+`c` after
//   `a`+`bc`), which costs a merge but adds no token; greedy left-to-right merging may never produce one (a
//   random search found none), but without a proof each caller keeps its own stopping rule;
// - tokens cut out of the text before pre-tokenizing (added tokens such as `<search>`), so no merge spans them.

/** GPT-2's byte → printable character table, in its vocabulary order (printable bytes first). */
export function byteLevelAlphabet(): Array<{ byte: number; char: string }> {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  return bs.map((byte, i) => ({ byte, char: String.fromCodePoint(cs[i] as number) }));
}

/** The same table indexed by byte: `bytesToUnicode()[b]` is byte b's character. */
export function bytesToUnicode(): string[] {
  const out = new Array<string>(256);
  for (const { byte, char } of byteLevelAlphabet()) out[byte] = char;
  return out;
}

const BYTE_CHARS = bytesToUnicode();
const UTF8 = new TextEncoder();

/** Splits text with a pre-tokenizer regex (global, unicode), each piece mapped to byte characters; empty matches dropped. */
export function byteLevelWords(text: string, split: RegExp): string[] {
  const re = new RegExp(split.source, split.flags.includes('g') ? split.flags : `${split.flags}g`);
  const out: string[] = [];
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    let s = '';
    for (const b of UTF8.encode(m[0])) s += BYTE_CHARS[b];
    out.push(s);
  }
  return out;
}

export interface ByteLevelBpeTrainOptions {
  /** The pre-tokenizer: a regex with the `u` flag (it is matched globally). */
  split: RegExp;
  /** Id order of the 256 byte characters: GPT-2's vocabulary order, or id = byte value. */
  byteOrder: 'gpt2' | 'byte';
  /** Stop after this many merges, or when bytes plus merged tokens number this many. */
  budget: { merges: number } | { tokens: number };
  /** A pair must occur at least this often to be merged (default 1: any pair that occurs). */
  minFrequency?: number;
  /** Strings cut out of the text before pre-tokenizing (added tokens), so that no word spans one. */
  cutOut?: readonly string[];
}

export interface ByteLevelBpe {
  /** Token → id: the 256 byte characters, then one entry per merge that made a new token. */
  vocab: Map<string, number>;
  /** The tokens in id order (the same entries as `vocab`). */
  tokens: string[];
  /** Merges in rank order. */
  merges: Array<[string, string]>;
}

/** Trains a byte-level BPE on `texts` (see the header for the rule). */
export function trainByteLevelBpe(texts: Iterable<string>, opts: ByteLevelBpeTrainOptions): ByteLevelBpe {
  const minFrequency = opts.minFrequency ?? 1;
  const cutOut = opts.cutOut ?? [];
  const splitter = cutOut.length > 0 ? new RegExp(cutOut.map((t) => t.replace(/[|[\]\\/^$.*+?()]/g, '\\$&')).join('|'), 'g') : undefined;

  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const piece of splitter ? text.split(splitter) : [text]) {
      for (const w of byteLevelWords(piece, opts.split)) counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  // Sorted so that the result never depends on Map insertion details.
  const words = [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([w, c]) => ({ syms: [...w], count: c }));

  const vocab = new Map<string, number>();
  const tokens: string[] = [];
  const add = (t: string): void => {
    vocab.set(t, tokens.length);
    tokens.push(t);
  };
  for (const ch of opts.byteOrder === 'gpt2' ? byteLevelAlphabet().map((a) => a.char) : BYTE_CHARS) add(ch);
  const merges: Array<[string, string]> = [];
  const budget = opts.budget;
  const more = 'merges' in budget ? () => merges.length < budget.merges : () => tokens.length < budget.tokens;

  while (more()) {
    // The separator sorts below every byte character (all ≥ U+0021), so comparing keys compares (left, right)
    // lexicographically: the tie rule does not depend on the separator.
    const pairCounts = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const key = `${w.syms[i]}\u0000${w.syms[i + 1]}`;
        pairCounts.set(key, (pairCounts.get(key) ?? 0) + w.count);
      }
    }
    let best: string | undefined;
    let bestCount = 0;
    for (const [key, c] of pairCounts) {
      if (c > bestCount || (c === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (best === undefined || bestCount < minFrequency) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    if (!vocab.has(a + b)) add(a + b);
    for (const w of words) {
      const next: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
          next.push(a + b);
          i++;
        } else next.push(w.syms[i] as string);
      }
      w.syms = next;
    }
  }
  return { vocab, tokens, merges };
}

/**
 * The Hugging Face `tokenizer.json` object of a byte-level BPE (GPT-2 style: a regex split, then bytes mapped
 * to printable characters), as the tiny tokenizers and the world tokenizer write it.
 */
export function byteLevelBpeJson(o: {
  addedTokens: Array<Record<string, unknown>>;
  normalizer: Record<string, unknown> | null;
  splitPattern: string;
  vocab: Record<string, number>;
  merges: unknown[];
}): Record<string, unknown> {
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: o.addedTokens,
    normalizer: o.normalizer,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'Split', pattern: { Regex: o.splitPattern }, behavior: 'Isolated', invert: false }, byteLevel],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: o.vocab,
      merges: o.merges,
    },
  };
}
