// The embedded world's tokenizer: a small byte-level BPE trained on the world's own text (passages of several
// generated encyclopedias, the role prompts, the skill cards), written as a Hugging Face tokenizer folder
// (`tokenizer.json` + `tokenizer_config.json` with a ChatML chat template) so that the project loads it with
// the same code as any Hugging Face model (src/model/tokenizer.ts). Byte-level means every string has an
// encoding: a word the training text never had falls apart into smaller pieces, down to single bytes, and
// decodes back exactly. The protocol tags (`<search>`, `</answer>`, ...) and the chat specials are whole
// tokens. See docs/world.md.
import { join } from 'node:path';
import { byteLevelBpeJson, byteLevelWords, trainByteLevelBpe } from '../model/bpe-trainer.js';
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

// The byte table lives with the trainer (src/model/bpe-trainer.ts); re-exported for old importers.
export { bytesToUnicode } from '../model/bpe-trainer.js';

/** Splits text the way the tokenizer's pre-tokenizer does, each piece mapped to byte characters. */
export function pretokenize(text: string): string[] {
  return byteLevelWords(text, new RegExp(PRETOKENIZE_PATTERN, 'gu'));
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
 * Byte-level BPE training (src/model/bpe-trainer.ts): start from the 256 byte characters and repeatedly merge
 * the most frequent adjacent pair (ties broken by the pair's text, so the result depends on the input alone).
 * The added tokens are cut out of the text first, as the tokenizer does when encoding, and take the last ids.
 */
export function trainBpe(texts: Iterable<string>, opts: BpeTrainOptions): TrainedBpe {
  // The chat specials last, so that they take the ids make-tiny gives its own (bos = V−3, eos = V−1).
  const addedTokens = [...PROTOCOL_TAGS, ...CHAT_SPECIALS];
  const budget = opts.vocabSize - 256 - addedTokens.length;
  if (!Number.isInteger(opts.vocabSize) || budget < 0) throw new Error(`world tokenizer: vocabSize must be an integer ≥ ${256 + addedTokens.length}, got ${opts.vocabSize}`);
  // Counted in merges (the world tokenizer's ids were made that way); ids are byte values, then merged tokens.
  const { vocab, merges } = trainByteLevelBpe(texts, {
    split: new RegExp(PRETOKENIZE_PATTERN, 'gu'), byteOrder: 'byte', budget: { merges: budget }, minFrequency: opts.minFrequency ?? 2, cutOut: addedTokens,
  });
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
