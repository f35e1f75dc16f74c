// The induction init (src/world/induction-init.ts): a random-init Qwen3 rewritten so that layer 0 copies each
// token's predecessor into the residual and layer 1 attends to the position after an earlier occurrence of
// the current token and copies what stands there. At init, before any training, the model must predict the
// second occurrence of a span of random tokens from the first (the float64 reference forward and the tfjs
// model agree), must not predict a span it has not seen, and the init refuses shapes it is not written for.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { CausalLM } from '../src/model/qwen3.js';
import { countTargets, maskedNll, type MaskedSequence } from '../src/sft/nll.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { writeInductionInit } from '../src/world/induction-init.js';
import { ReferenceModel } from './helpers/reference-forward.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-induction-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const VOCAB = 600;
function model(name: string, over: Partial<Parameters<typeof makeTinyCheckpoint>[0]> = {}): string {
  return makeTinyCheckpoint({ out: join(root, name), arch: 'qwen3', layers: 3, hidden: 128, heads: 4, kvHeads: 2, headDim: 32, intermediate: 64, vocab: VOCAB, tie: true, seed: 1, ropeTheta: 1e6, ...over }).dir;
}

/**
 * A start token, a span of `span` random ids, a gap of random ids none of which is in the span (a 1-token
 * induction head splits its attention between earlier occurrences), the span again; mask on the repeat after
 * its first token.
 */
function repeated(rng: Rng, span: number, gap: number): MaskedSequence {
  const id = (): number => 10 + rng.int(VOCAB - 20);
  const s = Array.from({ length: span }, id);
  const other = (): number => {
    for (;;) {
      const v = id();
      if (!s.includes(v)) return v;
    }
  };
  const ids = [1, ...s, ...Array.from({ length: gap }, other), ...s];
  return { ids, mask: ids.map((_, i) => (i > ids.length - span ? 1 : 0)) };
}

/** Mean NLL of the masked tokens under the float64 reference. */
function referenceNll(ref: ReferenceModel, s: MaskedSequence): number {
  const lp = ref.logProbs(s.ids);
  let sum = 0;
  let n = 0;
  for (let i = 1; i < s.ids.length; i++) {
    if (s.mask[i] !== 1) continue;
    sum -= (lp[i - 1] as Float64Array)[s.ids[i] as number] as number;
    n++;
  }
  return sum / n;
}

describe('induction init', () => {
  it('copies a repeated span of random tokens at init, near and far, and the tfjs forward agrees with the float64 reference', async () => {
    await initBackend('cpu');
    const dir = model('m');
    writeInductionInit(dir, 0);
    const ref = new ReferenceModel(dir);
    const lm = await CausalLM.load(dir);
    const rng = new Rng(5);
    for (const gap of [3, 40, 300]) {
      const s = repeated(rng, 6, gap);
      const nll = referenceNll(ref, s);
      // Chance is ln(580) ≈ 6.4 nats; the copy is near certain.
      expect(nll).toBeLessThan(0.5);
      const ours = tf.tidy(() => maskedNll(lm, [s], countTargets([s]), { padTokenId: 0 }).dataSync()[0] as number);
      expect(Math.abs(ours - nll)).toBeLessThan(1e-3);
    }
    // A span that was never seen before is not predicted (the same tokens, no earlier occurrence).
    const fresh = repeated(rng, 6, 3);
    const unseen: MaskedSequence = { ids: fresh.ids.slice(7), mask: fresh.ids.slice(7).map((_, i) => (i > 3 ? 1 : 0)) };
    expect(referenceNll(ref, unseen)).toBeGreaterThan(3);
    lm.dispose();
  });

  it('refuses an untied head, a RoPE base that turns its matching pairs, and other head layouts, naming the file', () => {
    const untied = model('untied', { tie: false });
    expect(() => writeInductionInit(untied, 0)).toThrow(/untied.*config\.json: the induction init needs tied embeddings/);
    const base = model('base', { ropeTheta: 10_000 });
    expect(() => writeInductionInit(base, 0)).toThrow(/rope_theta 10000 .*use a larger base/);
    const heads = model('heads', { heads: 2, kvHeads: 1, headDim: 32 });
    expect(() => writeInductionInit(heads, 0)).toThrow(/4 heads over 2 kv heads, got 2 over 1/);
    // The refused folders are left as they were.
    const cfg = JSON.parse(readFileSync(join(base, 'config.json'), 'utf8')) as { rope_theta: number };
    expect(cfg.rope_theta).toBe(10_000);
    writeFileSync(join(root, 'touched'), '');
  });
});
