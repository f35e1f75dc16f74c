// Our forward (tfjs) against llama.cpp on GGUF exports of three random tiny configurations:
//   1. Qwen3, tied embeddings, head_dim 32 ≠ hidden/heads (64/4), GQA 4:2, QK norm;
//   2. Qwen2, q/k/v biases, no QK norm, untied;
//   3. Llama, untied, llama3 rope_scaling (exported as rope_freqs), NORM RoPE (q/k permuted on export).
// The float64 forward in helpers/reference-forward.ts is the arbiter when the two disagree: every check
// reports all three pairwise errors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportGguf } from '../src/checkpoint/export-gguf.js';
import { initBackend } from '../src/tensor/backend.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { generate } from '../src/model/generate.js';
import { Rng } from '../src/util/rng.js';
import { sharedDataPath } from '../src/util/shared-data.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { llamaCppMissing, llamaCppTitle, openReference, type LlamaCppReference } from './helpers/llama-cpp-reference.js';
import { ReferenceModel } from './helpers/reference-forward.js';
import { writeTinyHf, type TinySpec } from './helpers/tiny-hf.js';

const LOGPROB_TOL = 1e-4;
const F16_TOL = 5e-2;
const GREEDY_TOKENS = 32;
/** Greedy steps where llama.cpp's top-2 log-prob gap is below this are near-ties and are reported. */
const TIE_MARGIN = 1e-3;

const CASES: Array<{ label: string; spec: TinySpec }> = [
  { label: 'qwen3 tied, head_dim 32 ≠ 64/4', spec: { arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, layers: 2, ff: 128, vocab: 320, tie: true, seed: 11, tokenizer: 'bytebpe' } },
  { label: 'qwen2 q/k/v biases, no QK norm', spec: { arch: 'qwen2', hidden: 64, heads: 4, kvHeads: 2, layers: 2, ff: 128, vocab: 320, tie: false, seed: 12, tokenizer: 'bytebpe' } },
  {
    label: 'llama untied, llama3 rope_scaling',
    // original_max_position_embeddings 32 puts the head_dim-16 frequencies in all three llama3 bands.
    spec: { arch: 'llama', hidden: 64, heads: 4, kvHeads: 2, layers: 2, ff: 128, vocab: 320, tie: false, seed: 13, tokenizer: 'spm', ropeScaling: { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 32 } },
  },
];

const root = mkdtempSync(join(tmpdir(), 'sesa-llamacpp-'));

beforeAll(async () => {
  await initBackend((process.env.SESA_TEST_BACKEND as 'wasm' | 'cpu' | undefined) ?? 'wasm');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function randomIds(rng: Rng, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(vocab));
}

function maxAbsDiff(a: number[], b: number[]): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

describe.skipIf(llamaCppMissing !== undefined).each(CASES)(llamaCppTitle('llama.cpp vs our forward: $label'), ({ spec }) => {
  const dir = join(root, spec.arch);
  let ref: LlamaCppReference;
  let model: CausalLM;
  let f64: ReferenceModel;

  beforeAll(async () => {
    writeTinyHf(dir, spec);
    await exportGguf(dir, join(root, `${spec.arch}.gguf`), { dtype: 'f32' });
    ref = await openReference(join(root, `${spec.arch}.gguf`), { contextSize: 256 });
    model = await CausalLM.load(dir);
    f64 = new ReferenceModel(dir);
  });

  afterAll(async () => {
    await ref?.dispose();
    model?.dispose();
  });

  it(`log-probs of a left-padded batch agree within ${LOGPROB_TOL}`, async () => {
    const rng = new Rng(1000 + spec.seed);
    const batch = [64, 81, 72].map((n) => randomIds(rng, n, spec.vocab));
    const ours = await scoreBatch(model, batch);
    let oursVsLlama = 0;
    let llamaVsF64 = 0;
    let oursVsF64 = 0;
    let greedyChecked = 0;
    const greedyMismatches: string[] = [];
    for (let b = 0; b < batch.length; b++) {
      const ids = batch[b] as number[];
      const mine = ours[b]!;
      const dists = await ref.distributions(ids);
      const theirs = dists.slice(0, -1).map((p, i) => Math.log(p.get(ids[i + 1] as number) ?? 0));
      const exact = f64.logProbs(ids.slice(0, -1)).map((row, i) => row[ids[i + 1] as number] as number);
      oursVsLlama = Math.max(oursVsLlama, maxAbsDiff(mine.logprobs, theirs));
      llamaVsF64 = Math.max(llamaVsF64, maxAbsDiff(theirs, exact));
      oursVsF64 = Math.max(oursVsF64, maxAbsDiff(mine.logprobs, exact));
      // Greedy next token at every position, where llama.cpp's choice is not a near-tie.
      dists.forEach((p, i) => {
        const sorted = [...p.entries()].sort((x, y) => y[1] - x[1] || x[0] - y[0]);
        const [top1, top2] = sorted;
        if (!top1 || !top2 || Math.log(top1[1]) - Math.log(top2[1]) <= TIE_MARGIN) return;
        greedyChecked++;
        if (mine.greedyNext[i] !== top1[0]) greedyMismatches.push(`row ${b} pos ${i}: ours ${mine.greedyNext[i]}, llama.cpp ${top1[0]}`);
      });
    }
    console.log(`[${spec.arch}] max |Δ logp| ours–llama.cpp ${oursVsLlama.toExponential(2)}, llama.cpp–f64 ${llamaVsF64.toExponential(2)}, ours–f64 ${oursVsF64.toExponential(2)}; greedyNext checked at ${greedyChecked} positions`);
    expect(llamaVsF64, 'the GGUF export itself (llama.cpp vs float64 reference)').toBeLessThanOrEqual(LOGPROB_TOL);
    expect(oursVsLlama, `ours vs llama.cpp (ours vs float64: ${oursVsF64.toExponential(2)})`).toBeLessThanOrEqual(LOGPROB_TOL);
    expect(greedyMismatches).toEqual([]);
  });

  it(`greedy continuations of ${GREEDY_TOKENS} tokens are identical`, async () => {
    const rng = new Rng(2000 + spec.seed);
    const prompts = [5, 9, 13].map((n) => randomIds(rng, n, spec.vocab));
    // No stop ids: every row runs the full length, like the reference.
    const ours = await generate(model, prompts, { maxNewTokens: GREEDY_TOKENS, temperature: 0, stopTokenIds: [] });
    let minMargin = Infinity;
    for (let b = 0; b < prompts.length; b++) {
      const steps = await ref.greedySteps(prompts[b] as number[], GREEDY_TOKENS);
      const theirs = steps.map((s) => s.token);
      minMargin = Math.min(minMargin, ...steps.map((s) => s.margin));
      const mine = ours[b]!.ids;
      const first = theirs.findIndex((t, i) => mine[i] !== t);
      const why = first < 0 ? '' : `prompt ${b} diverges at step ${first}: ours ${mine[first]}, llama.cpp ${theirs[first]} (llama.cpp top-2 margin there ${steps[first]!.margin.toExponential(2)})`;
      expect(mine, why).toEqual(theirs);
    }
    console.log(`[${spec.arch}] greedy: ${prompts.length}×${GREEDY_TOKENS} tokens identical; smallest llama.cpp top-2 log-prob margin ${minMargin.toExponential(2)}${minMargin <= TIE_MARGIN ? ' (near-tie!)' : ''}`);
  });

  it(`an f16 export loads in llama.cpp and agrees within ${F16_TOL}`, async () => {
    const path = join(root, `${spec.arch}-f16.gguf`);
    await exportGguf(dir, path, { dtype: 'f16' });
    const half = await openReference(path, { contextSize: 128 });
    try {
      const ids = randomIds(new Rng(3000 + spec.seed), 64, spec.vocab);
      const [mine] = await scoreBatch(model, [ids]);
      const d = maxAbsDiff(mine!.logprobs, await half.logprobsOf(ids));
      console.log(`[${spec.arch}] f16 export: max |Δ logp| vs our f32 forward ${d.toExponential(2)}`);
      expect(d).toBeLessThanOrEqual(F16_TOL);
    } finally {
      await half.dispose();
    }
  });
});

// Real vocabularies: the GGUF tokenizer metadata must make llama.cpp tokenize exactly like our tokenizer
// (transformers.js over the same tokenizer.json), and the padded / SentencePiece vocabularies must load.
describe.skipIf(llamaCppMissing !== undefined)(llamaCppTitle('real vocabularies through llama.cpp'), () => {
  const texts = [
    'Hello, world! The quick brown fox jumps over 1234567 lazy dogs.',
    "  leading spaces, tabs\tand\nnew lines\n\n  don't we've I'll",
    'Once upon a time, there was a little girl named Lily. She loved to play.',
  ];

  it('Qwen3 tokenizer (151,669 ids padded to 151,936 rows): same ids as ours; log-probs agree', async () => {
    const { makeTinyCheckpoint } = await import('../src/checkpoint/make-tiny.js');
    const dir = join(root, 'qwen3-full');
    makeTinyCheckpoint({ out: dir, arch: 'qwen3', vocab: 'full', layers: 1, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, tie: true, seed: 7 });
    const res = await exportGguf(dir, join(root, 'qwen3-full.gguf'));
    expect(res.vocabSize).toBe(151_936);
    expect(res.paddedTokens).toBe(151_936 - 151_669);
    const ref = await openReference(join(root, 'qwen3-full.gguf'), { contextSize: 256 });
    const model = await CausalLM.load(dir);
    try {
      const tok = await loadTokenizer(dir);
      const chat = tok.applyChatTemplate([{ role: 'user', content: 'What is the capital of France?' }], { addGenerationPrompt: true });
      for (const text of [...texts, chat, '日本語のテキスト 🦙 émigré']) {
        expect(ref.model.tokenize(text, true).map(Number), JSON.stringify(text)).toEqual(tok.encode(text));
      }
      const ids = tok.encode(chat);
      const [mine] = await scoreBatch(model, [ids]);
      const d = maxAbsDiff(mine!.logprobs, await ref.logprobsOf(ids));
      console.log(`[qwen3 full vocab] ${ids.length} tokens, max |Δ logp| ours–llama.cpp ${d.toExponential(2)}`);
      expect(d).toBeLessThanOrEqual(LOGPROB_TOL);
    } finally {
      model.dispose();
      await ref.dispose();
    }
  });

  const stories = sharedDataPath('models', 'stories260K');
  it.skipIf(!stories)('llama2.c stories260K (SentencePiece vocab, trained weights): same ids as ours; log-probs and greedy agree', async () => {
    const { convertLlama2c } = await import('../src/checkpoint/llama2c.js');
    const dir = join(root, 'stories260K');
    convertLlama2c(join(stories!, 'stories260K.bin'), join(stories!, 'tok512.bin'), dir);
    const res = await exportGguf(dir, join(root, 'stories260K.gguf'));
    expect(res.tokenizer).toBe('llama');
    const ref = await openReference(join(root, 'stories260K.gguf'), { contextSize: 256 });
    const model = await CausalLM.load(dir);
    try {
      const tok = await loadTokenizer(dir);
      for (const text of texts) {
        const theirs = ref.model.tokenize(text, false).map(Number);
        expect(theirs, JSON.stringify(text)).toEqual(tok.encode(text));
      }
      const ids = [1, ...tok.encode(texts[2] as string)];
      const [mine] = await scoreBatch(model, [ids]);
      const d = maxAbsDiff(mine!.logprobs, await ref.logprobsOf(ids));
      const prompt = [1, ...tok.encode('Once upon a time')];
      const [gen] = await generate(model, [prompt], { maxNewTokens: GREEDY_TOKENS, temperature: 0, stopTokenIds: [] });
      const steps = await ref.greedySteps(prompt, GREEDY_TOKENS);
      console.log(`[stories260K] max |Δ logp| ours–llama.cpp ${d.toExponential(2)}; greedy: ${JSON.stringify(tok.decode(gen!.ids))}; smallest margin ${Math.min(...steps.map((s) => s.margin)).toExponential(2)}`);
      expect(d).toBeLessThanOrEqual(LOGPROB_TOL);
      expect(gen!.ids).toEqual(steps.map((s) => s.token));
      // From BOS alone, 64 greedy tokens: the same ids as llama.cpp, and the text reads as an English story.
      const [fromBos] = await generate(model, [[1]], { maxNewTokens: 64, temperature: 0, stopTokenIds: [] });
      const bosSteps = await ref.greedySteps([1], 64);
      expect(fromBos!.ids).toEqual(bosSteps.map((s) => s.token));
      const story = tok.decode(fromBos!.ids);
      console.log(`[stories260K] from BOS: ${JSON.stringify(story)}`);
      expect(story).toMatch(/^Once upon a time/);
      const words = story.split(/\s+/).filter((w) => w.length > 0);
      expect(words.length).toBeGreaterThanOrEqual(30);
      expect(words.filter((w) => /^[A-Za-z',.!?"-]+$/.test(w)).length / words.length).toBeGreaterThan(0.9);
      expect(story).toMatch(/\b(the|and|was|she|he)\b/);
    } finally {
      model.dispose();
      await ref.dispose();
    }
  });
});
