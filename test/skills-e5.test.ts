// The e5 path end to end on the generated tiny encoder (scripts/make-tiny-e5.ts → src/skills/tiny-e5.ts):
// transformers.js tokenizes and runs the ONNX graph on onnxruntime-node; we check the E5 conventions
// (query:/passage: prefixes, masked mean pooling, L2 normalization) against a direct float64 computation.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { SkillBank } from '../src/skills/bank.js';
import { E5Embedder } from '../src/skills/e5.js';
import type { EmbedKind, Embedder } from '../src/skills/embedder.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { e5TokenizerDir, type TinyE5Result, tinyE5Forward, writeTinyE5 } from '../src/skills/tiny-e5.js';
import { sharedDataSkipReason } from '../src/util/shared-data.js';
import { tempDir } from './skills-helpers.js';

const E5_TOKENIZER_DIR = e5TokenizerDir() ?? '';
const HAVE_REAL_TOKENIZER = E5_TOKENIZER_DIR !== '' && existsSync(join(E5_TOKENIZER_DIR, 'tokenizer.json'));
if (!HAVE_REAL_TOKENIZER) console.warn(`skills-e5: real-tokenizer tests skipped: ${sharedDataSkipReason('tokenizers', 'e5-bert-uncased')}`);

interface Encoded {
  ids: number[][];
  mask: number[][];
}

async function tokenize(dir: string, texts: string[]): Promise<Encoded> {
  const tf = await import('@huggingface/transformers');
  tf.env.allowRemoteModels = false;
  const tok = await tf.AutoTokenizer.from_pretrained(dir);
  const enc = tok(texts, { padding: true, truncation: true }) as { input_ids: { tolist(): bigint[][] }; attention_mask: { tolist(): bigint[][] } };
  return { ids: enc.input_ids.tolist().map((r) => r.map(Number)), mask: enc.attention_mask.tolist().map((r) => r.map(Number)) };
}

/** The E5 recipe by hand: forward, mean over mask, L2-normalize. */
function direct(model: TinyE5Result, ids: number[], mask: number[]): number[] {
  const h = tinyE5Forward(model.weights, ids, mask);
  const pooled = new Array<number>(model.hidden).fill(0);
  let n = 0;
  h.forEach((row, t) => {
    if (!mask[t]) return;
    n++;
    row.forEach((v, j) => (pooled[j] = (pooled[j] as number) + v));
  });
  const mean = pooled.map((v) => v / n);
  const norm = Math.hypot(...mean);
  return mean.map((v) => v / norm);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

const TEXTS = [
  'who wrote Hamlet?',
  'Which royalist commander in the English Civil War was born in Prague in 1619 as the younger son of Frederick V?',
  'hi',
];

for (const variant of ['real', 'built'] as const) {
  describe.skipIf(variant === 'real' && !HAVE_REAL_TOKENIZER)(`e5 on the tiny encoder (${variant} tokenizer)`, () => {
    let model: TinyE5Result;
    let e5: E5Embedder;
    beforeAll(async () => {
      model = writeTinyE5(join(tempDir('sk-e5'), 'tiny-e5'), { hidden: 16, seed: 7, tokenizerDir: variant === 'real' ? E5_TOKENIZER_DIR : null });
      e5 = await E5Embedder.load({ model: model.dir, batchSize: 2 });
    });

    it('matches prefix + masked mean pooling + L2 normalization computed directly', async () => {
      expect(model.tokenizer).toBe(variant === 'real' ? 'e5-bert-uncased' : 'built');
      expect(e5.info).toEqual({ name: 'e5', model: model.dir, dim: 16, dedupThreshold: 0.93 });
      for (const kind of ['query', 'passage'] as EmbedKind[]) {
        const got = await e5.embed(TEXTS, kind); // batches of 2: padding inside a batch, a lone last batch
        const prefixed = TEXTS.map((t) => `${kind}: ${t}`);
        const enc = await tokenize(model.dir, prefixed);
        expect(enc.mask[2]!.includes(0)).toBe(true); // the short text was padded next to the long one
        TEXTS.forEach((_, i) => {
          const want = direct(model, enc.ids[i]!, enc.mask[i]!);
          expect(maxAbsDiff(got[i]!, want)).toBeLessThan(2e-6);
          expect(Math.abs(Math.hypot(...got[i]!) - 1)).toBeLessThan(1e-6);
        });
      }
      // The prefix matters: the same text as query and as passage gives different vectors.
      const [q] = await e5.embed(['who wrote Hamlet?'], 'query');
      const [p] = await e5.embed(['who wrote Hamlet?'], 'passage');
      expect(maxAbsDiff(q!, p!)).toBeGreaterThan(1e-3);
    });

    // The golden encodings are of the real tokenizer only: the built one registers no such test.
    if (variant === 'real') it('tokenizes exactly like the E5 golden encodings', async () => {
      const golden = JSON.parse(readFileSync(join(E5_TOKENIZER_DIR, 'golden_encodings.json'), 'utf8')) as Record<string, number[]>;
      for (const [text, ids] of Object.entries(golden)) {
        const enc = await tokenize(model.dir, [text]);
        expect(enc.ids[0]).toEqual(ids);
      }
    });

    it('serves a bank: cards are embedded once and again only when they change; another embedder is refused', async () => {
      const counting = new CountingEmbedder(e5);
      const path = join(tempDir('sk-e5bank'), 'bank.json');
      const bank = await SkillBank.open(path, { embedder: counting });
      expect(counting.texts).toBe(18);
      expect(bank.embedderInfo).toEqual({ name: 'e5', model: model.dir, dim: 16, dedupThreshold: 0.93 });
      const hits = await bank.retrieve('who was born first, the director or the author?');
      expect(hits.length).toBe(3);
      expect(counting.texts).toBe(19); // the question only
      bank.commit(1);
      expect(counting.texts).toBe(19); // unchanged cards are not embedded again
      const seed = bank.cards[0]!;
      await bank.importCards([{ ...seed, id: 'changed-copy', source: 'mined', description: `${seed.description} Changed.` }]);
      expect(counting.texts).toBe(20); // only the changed card
      await expect(SkillBank.open(path, { embedder: new LexicalEmbedder() })).rejects.toThrow(/recorded with e5 .* but this run uses lexical/);
    });
  });
}

describe('scripts/make-tiny-e5.ts', () => {
  it('writes a model folder that the e5 embedder loads', async () => {
    const { execFileSync } = await import('node:child_process');
    const dir = join(tempDir('sk-script'), 'm');
    const root = new URL('..', import.meta.url).pathname;
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/make-tiny-e5.ts'), dir, '--hidden', '8', '--built-tokenizer'], { cwd: root, encoding: 'utf8' });
    expect(out).toMatch(/^wrote .*: vocab \d+, hidden 8, tokenizer built\n$/);
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']) expect(existsSync(join(dir, f)), f).toBe(true);
    const e = await E5Embedder.load({ model: dir });
    expect(e.info.dim).toBe(8);
    expect((await e.embed(['query text'], 'query'))[0]!.length).toBe(8);
  });
});

describe('e5 loading', () => {
  it('refuses a Hugging Face name unless downloads are allowed (without touching the network), and a folder missing files', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    await expect(E5Embedder.load({ model: 'intfloat/e5-base-v2', cacheDir: tempDir('sk-cache') })).rejects.toThrow(/is not a local folder and is not in the cache .* and downloads are off/);
    await expect(E5Embedder.load({ model: './no/such/folder' })).rejects.toThrow(/folder .* does not exist/);
    await expect(E5Embedder.load({ model: tempDir('sk-empty') })).rejects.toThrow(/lacks config\.json/);
    expect(fetchSpy).not.toHaveBeenCalled();
    fetchSpy.mockRestore();
  });
});

class CountingEmbedder implements Embedder {
  texts = 0;
  constructor(private readonly inner: Embedder) {}
  get info(): Embedder['info'] {
    return this.inner.info;
  }
  async embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
    this.texts += texts.length;
    return this.inner.embed(texts, kind);
  }
}
