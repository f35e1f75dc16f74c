// The embedded world's tokenizer: a small byte-level BPE trained on the world's own text (passages of several
// generated encyclopedias, the role prompts, the skill cards), written as a Hugging Face tokenizer folder
// (`tokenizer.json` + `tokenizer_config.json` with a ChatML chat template) so that the project loads it with
// the same code as any Hugging Face model (src/model/tokenizer.ts). Byte-level means every string has an
// encoding: a word the training text never had falls apart into smaller pieces, down to single bytes, and
// decodes back exactly. The protocol tags (`<search>`, `</answer>`, ...) and the chat specials are whole
// tokens. See docs/world.md.
import { join } from 'node:path';
import { byteLevelBpeJson } from '../checkpoint/make-tiny.js';
import { writeJsonAtomic } from '../util/atomic.js';

/** Chat specials, as Qwen names them: the tokenizer folder is a drop-in for a ChatML model. */
export const CHAT_SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
/** The rollout protocol tags; added tokens that are not special, so decoding keeps them. */
export const PROTOCOL_TAGS = [
  '<think>', '</think>', '<search>', '</search>', '<information>', '</information>',
  '<answer>', '</answer>', '<question>', '</question>',
] as const;

/**
 * How text is cut into words before BPE (Qwen2's rule without its inline case-insensitive group, which
 * JavaScript lacks): a letter run with at most one leading non-letter (a space, a quote, a bracket), single
 * digits, punctuation runs, newlines, spaces.
 */
export const PRETOKENIZE_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** ChatML, with no system turn unless given and no thinking block (the world's model never thinks aloud outside `<think>`). */
export const WORLD_CHAT_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/** GPT-2's reversible map from bytes to printable characters (so a byte-level vocabulary is plain strings). */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const out: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    out[b] = keep.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return out;
}

const BYTE_CHARS = bytesToUnicode();
const UTF8 = new TextEncoder();

/** Splits text the way the tokenizer's pre-tokenizer does, each piece mapped to byte characters. */
export function pretokenize(text: string): string[] {
  const re = new RegExp(PRETOKENIZE_PATTERN, 'gu');
  const out: string[] = [];
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    let s = '';
    for (const b of UTF8.encode(m[0])) s += BYTE_CHARS[b];
    out.push(s);
  }
  return out;
}

export interface TrainedBpe {
  /** Token string → id: the 256 byte characters, then one entry per merge, then the added tokens. */
  vocab: Map<string, number>;
  /** Merges in rank order. */
  merges: Array<[string, string]>;
  /** Added tokens (chat specials and protocol tags) with their ids. */
  added: Array<{ id: number; content: string; special: boolean }>;
}

export interface BpeTrainOptions {
  /** Total vocabulary, added tokens included. */
  vocabSize: number;
  /** A pair must occur at least this often to be merged (default 2). */
  minFrequency?: number;
}

/**
 * Byte-level BPE training: start from the 256 byte characters and repeatedly merge the most frequent
 * adjacent pair (ties broken by the pair's text, so the result depends on the input alone). The added tokens
 * are cut out of the text first, as the tokenizer does when encoding.
 */
export function trainBpe(texts: Iterable<string>, opts: BpeTrainOptions): TrainedBpe {
  // The chat specials last, so that they take the ids make-tiny gives its own (bos = V−3, eos = V−1).
  const addedTokens = [...PROTOCOL_TAGS, ...CHAT_SPECIALS];
  const budget = opts.vocabSize - 256 - addedTokens.length;
  if (!Number.isInteger(opts.vocabSize) || budget < 0) throw new Error(`world tokenizer: vocabSize must be an integer ≥ ${256 + addedTokens.length}, got ${opts.vocabSize}`);
  const minFrequency = opts.minFrequency ?? 2;
  const splitter = new RegExp(addedTokens.map((t) => t.replace(/[|[\]\\/^$.*+?()]/g, '\\$&')).join('|'), 'g');

  const wordCounts = new Map<string, number>();
  for (const text of texts) {
    for (const piece of text.split(splitter)) {
      for (const w of pretokenize(piece)) wordCounts.set(w, (wordCounts.get(w) ?? 0) + 1);
    }
  }
  const words = [...wordCounts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const symbols: string[][] = words.map(([w]) => [...w]);
  const freq = words.map(([, c]) => c);

  const vocab = new Map<string, number>();
  for (const ch of BYTE_CHARS) vocab.set(ch, vocab.size);
  const merges: Array<[string, string]> = [];
  while (merges.length < budget) {
    const pairs = new Map<string, number>();
    symbols.forEach((s, i) => {
      for (let k = 0; k + 1 < s.length; k++) {
        const key = `${s[k]} ${s[k + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + (freq[i] as number));
      }
    });
    let best: string | undefined;
    let bestCount = 0;
    for (const [key, c] of pairs) {
      if (c > bestCount || (c === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (best === undefined || bestCount < minFrequency) break;
    const [a, b] = best.split(' ') as [string, string];
    const joined = a + b;
    merges.push([a, b]);
    if (!vocab.has(joined)) vocab.set(joined, vocab.size);
    for (const s of symbols) {
      for (let k = 0; k + 1 < s.length; k++) {
        if (s[k] === a && s[k + 1] === b) s.splice(k, 2, joined);
      }
    }
  }
  const added = addedTokens.map((content) => {
    const id = vocab.size;
    vocab.set(content, id);
    return { id, content, special: (CHAT_SPECIALS as readonly string[]).includes(content) };
  });
  return { vocab, merges, added };
}

/** The Hugging Face `tokenizer.json` object of a trained BPE. */
export function tokenizerJson(bpe: TrainedBpe): Record<string, unknown> {
  return byteLevelBpeJson({
    addedTokens: bpe.added.map((t) => ({ id: t.id, content: t.content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: t.special })),
    normalizer: null,
    splitPattern: PRETOKENIZE_PATTERN,
    vocab: Object.fromEntries([...bpe.vocab.entries()].filter(([t]) => !bpe.added.some((a) => a.content === t))),
    merges: bpe.merges.map(([a, b]) => [a, b]),
  });
}

/** `tokenizer_config.json`: ChatML specials, the chat template, no BOS. */
export function tokenizerConfigJson(bpe: TrainedBpe): Record<string, unknown> {
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(bpe.added.map((t) => [String(t.id), { content: t.content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: t.special }])),
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    chat_template: WORLD_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: 4096,
    tokenizer_class: 'Qwen2Tokenizer',
    errors: 'replace',
  };
}

/** Writes `tokenizer.json` and `tokenizer_config.json` into `dir`, each atomically. */
export function writeWorldTokenizer(dir: string, bpe: TrainedBpe): void {
  writeJsonAtomic(join(dir, 'tokenizer.json'), tokenizerJson(bpe));
  writeJsonAtomic(join(dir, 'tokenizer_config.json'), tokenizerConfigJson(bpe));
}

/** Ids of the chat specials in a trained BPE (for the model's config: eos, pad). */
export function specialIds(bpe: TrainedBpe): { endOfText: number; imStart: number; imEnd: number } {
  const id = (t: string): number => {
    const v = bpe.vocab.get(t);
    if (v === undefined) throw new Error(`world tokenizer: ${t} missing`);
    return v;
  };
  return { endOfText: id('<|endoftext|>'), imStart: id('<|im_start|>'), imEnd: id('<|im_end|>') };
}
