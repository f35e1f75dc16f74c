// SFT: the masked NLL against an independent float64 forward; full-weight gradients (tied and untied heads)
// against float64 finite differences; the loss falls on a tiny model; a resumed run repeats the uninterrupted
// one bit for bit (full and LoRA); tensor memory stays flat.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { SafetensorsCheckpoint, type TensorToWrite, writeSafetensors } from '../src/formats/safetensors.js';
import { CausalLM } from '../src/model/qwen3.js';
import { accumulateGradients, disposeGrads } from '../src/rl/accumulate.js';
import { SFT_DEFAULTS, type SftConfig } from '../src/sft/config.js';
import { countTargets, maskedNll, type MaskedSequence } from '../src/sft/nll.js';
import { batchOfStep, microBatches, runSft, splitHeldOut, type SftSummary } from '../src/sft/trainer.js';
import { readTranscripts, renderTranscript } from '../src/sft/transcript.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ReferenceModel } from './helpers/reference-forward.js';

let root: string;
let tiedDir: string;
let untiedDir: string;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-sft-'));
  const shape = { arch: 'qwen3' as const, layers: 2, hidden: 32, heads: 4, kvHeads: 2, headDim: 8, intermediate: 48, vocab: 300 };
  tiedDir = makeTinyCheckpoint({ ...shape, out: join(root, 'tied'), tie: true, seed: 3 }).dir;
  untiedDir = makeTinyCheckpoint({ ...shape, out: join(root, 'untied'), tie: false, seed: 4 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Two sequences of different lengths (so one is padded), masks with gaps like tool spans. */
function sequences(seed: number): MaskedSequence[] {
  const rng = new Rng(seed);
  return [11, 7].map((len) => {
    const ids = Array.from({ length: len }, () => rng.int(300));
    const mask = ids.map((_, i) => (i >= 3 && i !== 5 ? 1 : 0));
    return { ids, mask };
  });
}

/** The masked NLL in float64 from the reference forward (one unpadded sequence at a time). */
function referenceNll(dir: string, seqs: MaskedSequence[]): number {
  const ref = new ReferenceModel(dir);
  let sum = 0;
  let n = 0;
  for (const s of seqs) {
    const lp = ref.logProbs(s.ids);
    for (let i = 1; i < s.ids.length; i++) {
      if (s.mask[i] !== 1) continue;
      sum -= (lp[i - 1] as Float64Array)[s.ids[i] as number] as number;
      n++;
    }
  }
  return sum / n;
}

/** A copy of the checkpoint in `dir` with one value of one tensor (file layout) moved by `delta`. */
function perturbed(dir: string, name: string, index: number, delta: number, out: string): string {
  mkdirSync(out, { recursive: true });
  const ck = new SafetensorsCheckpoint(dir);
  const tensors = new Map<string, TensorToWrite>();
  for (const n of ck.names()) {
    const data = Float32Array.from(ck.readFloat32(n));
    tensors.set(n, { dtype: 'F32', shape: [...ck.entry(n).shape], data });
  }
  // Float64 perturbation would be lost in f32 storage, so the reference reads the f32 value actually stored
  // and the difference quotient divides by the stored difference.
  const t = tensors.get(name) as TensorToWrite;
  (t.data as Float32Array)[index] = ((t.data as Float32Array)[index] as number) + delta;
  writeSafetensors(join(out, 'model.safetensors'), tensors);
  copyFileSync(join(dir, 'config.json'), join(out, 'config.json'));
  return out;
}

describe('data order', () => {
  it('each epoch visits every example once, in a seed-determined order that differs between epochs', () => {
    const items = Array.from({ length: 23 }, (_, i) => i);
    const perEpoch = Math.ceil(23 / 5);
    const epochs: number[][] = [[], []];
    for (let step = 1; step <= 2 * perEpoch; step++) {
      const { batch, epoch } = batchOfStep(items, step, 5, 9);
      expect(batch.length).toBe(step % perEpoch === 0 ? 3 : 5);
      epochs[epoch - 1]?.push(...batch);
    }
    for (const e of epochs) expect([...e].sort((x, y) => x - y)).toEqual(items);
    expect(epochs[1]).not.toEqual(epochs[0]);
    expect(batchOfStep(items, 7, 5, 9)).toEqual(batchOfStep(items, 7, 5, 9));
    expect(batchOfStep(items, 1, 5, 10).batch).not.toEqual(batchOfStep(items, 1, 5, 9).batch);
    const { train, held } = splitHeldOut(items, 0.2, 9);
    expect(held).toHaveLength(5);
    expect([...train, ...held].sort((x, y) => x - y)).toEqual(items);
    expect(() => splitHeldOut([1], 0.9, 0)).toThrow(/leaves no training examples/);
  });
});

describe('micro-batches', () => {
  const seq = (n: number): MaskedSequence => ({ ids: new Array<number>(n).fill(1), mask: new Array<number>(n).fill(1) });
  it('group sequences of similar length, within the count and the padded-token cap, each sequence once', () => {
    const batch = [700, 30, 40, 35, 900, 60, 32, 33].map(seq);
    const passes = microBatches(batch, 4, 256);
    expect(passes.flat().length).toBe(batch.length);
    expect(new Set(passes.flat())).toEqual(new Set(batch));
    for (const p of passes) {
      expect(p.length).toBeLessThanOrEqual(4);
      const longest = Math.max(...p.map((s) => s.ids.length));
      // A sequence over the cap goes alone; every other pass fits it.
      if (p.length > 1) expect(p.length * longest).toBeLessThanOrEqual(256);
    }
    expect(passes.map((p) => p.map((s) => s.ids.length))).toEqual([[30, 32, 33, 35], [40, 60], [700], [900]]);
    // No cap: fixed-size chunks of the sorted batch.
    expect(microBatches(batch, 3, 0).map((p) => p.length)).toEqual([3, 3, 2]);
  });
});

describe('trainable model', () => {
  it('computes exactly what the frozen model computes (hidden states and logits), tied and untied', async () => {
    const ids = [[5, 17, 200, 3, 99, 42], [0, 0, 7, 8, 9, 10]];
    const attentionMask = [[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]];
    for (const dir of [tiedDir, untiedDir]) {
      const frozen = await CausalLM.load(dir);
      const trainable = await CausalLM.load(dir, { trainable: true });
      expect(trainable.trainable && !frozen.trainable).toBe(true);
      expect(trainable.parameterCount()).toBe(frozen.parameterCount());
      expect([...trainable.variables().values()].reduce((n, v) => n + v.size, 0)).toBe(frozen.parameterCount());
      const run = (m: CausalLM) =>
        tf.tidy(() => {
          const h = m.forward(ids, { attentionMask });
          return [h.dataSync().slice(), m.logits(tf.reshape(h, [-1, 32]) as tf.Tensor2D).dataSync().slice()];
        });
      const [h1, l1] = run(frozen);
      const [h2, l2] = run(trainable);
      expect(h2).toEqual(h1);
      expect(l2).toEqual(l1);
      expect(() => frozen.variables()).toThrow(/loaded frozen/);
      frozen.dispose();
      trainable.dispose();
    }
  });
});

describe('masked NLL', () => {
  it('matches the float64 reference forward on a tiny case (tied and untied heads)', async () => {
    for (const dir of [tiedDir, untiedDir]) {
      const model = await CausalLM.load(dir);
      const seqs = sequences(1);
      const ours = tf.tidy(() => maskedNll(model, seqs, countTargets(seqs), { padTokenId: 0, chunkSize: 5 }));
      const value = (await ours.data())[0] as number;
      ours.dispose();
      const ref = referenceNll(dir, seqs);
      expect(Math.abs(value - ref)).toBeLessThan(1e-5 * Math.max(1, Math.abs(ref)));
      model.dispose();
    }
  });

  it('full-weight gradients match float64 finite differences of the reference (tied embedding: input and head)', async () => {
    const seqs = sequences(2);
    const N = countTargets(seqs);
    for (const dir of [tiedDir, untiedDir]) {
      const model = await CausalLM.load(dir, { trainable: true });
      const params = Object.fromEntries(model.variables());
      const acc = accumulateGradients(params, 1, () => ({ loss: maskedNll(model, seqs, N, { padTokenId: 0, chunkSize: 4 }) }));
      // Probes in file layout [out, in]: an embedding row of a token that is both input and target, a
      // projection (held transposed), a norm weight, and the untied head.
      const token = seqs[0]?.ids[4] as number;
      const probes: Array<{ name: string; index: number; memIndex: number }> = [
        { name: 'model.embed_tokens.weight', index: token * 32 + 5, memIndex: token * 32 + 5 },
        { name: 'model.layers.1.self_attn.q_proj.weight', index: 3 * 32 + 7, memIndex: 7 * 32 + 3 }, // [out 32, in 32] → [in, out]
        { name: 'model.layers.0.mlp.down_proj.weight', index: 10 * 48 + 20, memIndex: 20 * 32 + 10 }, // [32, 48] → [48, 32]
        { name: 'model.layers.0.input_layernorm.weight', index: 9, memIndex: 9 },
      ];
      if (dir === untiedDir) probes.push({ name: 'lm_head.weight', index: (seqs[1]?.ids[6] as number) * 32 + 2, memIndex: 2 * 300 + (seqs[1]?.ids[6] as number) });
      for (const p of probes) {
        const g = acc.grads[p.name];
        expect(g, p.name).toBeDefined();
        const ours = (g as tf.Tensor).dataSync()[p.memIndex] as number;
        const h = 1e-2;
        const plus = referenceNll(perturbed(dir, p.name, p.index, h, join(root, 'fd+')), seqs);
        const minus = referenceNll(perturbed(dir, p.name, p.index, -h, join(root, 'fd-')), seqs);
        const fd = (plus - minus) / (2 * h);
        expect(Math.abs(ours - fd), `${dir} ${p.name}: ours ${ours}, finite difference ${fd}`).toBeLessThan(2e-3 * Math.max(1, Math.abs(fd)) + 1e-4);
      }
      disposeGrads(acc.grads);
      model.dispose();
    }
  });
});

describe('masked NLL with recomputed layers', () => {
  it('gives the same loss and gradients as keeping every activation, and keeps fewer bytes', async () => {
    const seqs = sequences(2);
    const N = countTargets(seqs);
    const model = await CausalLM.load(untiedDir, { trainable: true });
    const params = Object.fromEntries(model.variables());
    const run = (recomputeLayers: boolean) => accumulateGradients(params, 1, () => ({ loss: maskedNll(model, seqs, N, { padTokenId: 0, chunkSize: 4, recomputeLayers }) }));
    const kept = run(false);
    const recomputed = run(true);
    expect(Math.abs(recomputed.loss - kept.loss)).toBeLessThan(1e-6);
    for (const [name, g] of Object.entries(kept.grads)) {
      const a = (g as tf.Tensor).dataSync();
      const b = (recomputed.grads[name] as tf.Tensor).dataSync();
      let worst = 0;
      for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs((a[i] as number) - (b[i] as number)));
      expect(worst, name).toBeLessThan(1e-6);
    }
    disposeGrads(kept.grads);
    disposeGrads(recomputed.grads);
    const peak = async (recomputeLayers: boolean): Promise<number> =>
      (
        await tf.profile(() => {
          disposeGrads(run(recomputeLayers).grads);
          return [];
        })
      ).peakBytes;
    expect(await peak(true)).toBeLessThan(await peak(false));
    model.dispose();
  });
});

// A toy task: the answer is a deterministic function of the question, reached through one search.
function writeData(file: string, n: number, seed: number): void {
  const names = ['Ada', 'Bo', 'Cyd', 'Dee', 'Eli', 'Fay', 'Gus', 'Hal'];
  const rng = new Rng(seed);
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = rng.int(names.length);
    const a = names[k] as string;
    const b = names[(k * 3 + 1) % names.length] as string;
    lines.push(
      JSON.stringify({
        messages: [
          { role: 'user', content: `Who is the friend of ${a}?` },
          { role: 'assistant', content: `<search>${a} friend</search>` },
          { role: 'tool', content: `Doc 1(Title: "${a}") ${a} is a friend of ${b}.\n` },
          { role: 'assistant', content: `<answer>${b}</answer>` },
        ],
      }),
    );
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
}

function config(over: Partial<SftConfig>): SftConfig {
  return { ...SFT_DEFAULTS, model: tiedDir, data: join(root, 'data.jsonl'), out: join(root, 'run'), mode: 'full', backend: 'wasm', ...over };
}

const quiet = { log: () => undefined };

function lossLines(dir: string): Array<{ step: number; loss?: number; evalLoss?: number }> {
  return readFileSync(join(dir, 'loss.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as { step: number; loss?: number; evalLoss?: number });
}

describe('SFT training', () => {
  beforeAll(() => writeData(join(root, 'data.jsonl'), 24, 5));

  it('full-weight SFT lowers the training and held-out loss of a tiny model, with flat tensor memory', async () => {
    const before = tf.memory().numTensors;
    const s = await runSft(config({ out: join(root, 'decrease'), epochs: 4, batchSize: 4, microBatchSize: 2, lr: 3e-3, evalFraction: 0.25, warmupSteps: 2, saveDtype: 'f16' }), quiet);
    expect(tf.memory().numTensors).toBe(before);
    expect(s.lastStep).toBe(s.totalSteps);
    expect(s.totalSteps).toBe(4 * Math.ceil(18 / 4));
    expect(s.lastLoss as number).toBeLessThan((s.firstLoss as number) * 0.5);
    expect(s.lastEvalLoss as number).toBeLessThan((s.firstEvalLoss as number) * 0.5);
    const lines = lossLines(s.runDir);
    expect(lines.filter((l) => l.loss !== undefined).map((l) => l.step)).toEqual(Array.from({ length: s.totalSteps }, (_, i) => i + 1));
    expect(lines.filter((l) => l.evalLoss !== undefined).map((l) => l.step)).toEqual([0, s.totalSteps]);
    // The final folder (f16 as asked) is a model the project's loader reads, with the tokenizer beside it,
    // and its held-out loss is the one the run reported, up to f16 rounding.
    const finalDir = s.finalDir as string;
    expect(new SafetensorsCheckpoint(finalDir).entry('model.embed_tokens.weight').dtype).toBe('F16');
    expect(JSON.parse(readFileSync(join(finalDir, 'config.json'), 'utf8')).torch_dtype).toBe('float16');
    const trained = await CausalLM.load(finalDir);
    const tok = await loadTokenizer(finalDir);
    const held = splitHeldOut(readTranscripts(join(root, 'data.jsonl')), 0.25, SFT_DEFAULTS.seed).held.map((t) => renderTranscript(t, tok));
    const nll = tf.tidy(() => maskedNll(trained, held, countTargets(held), { padTokenId: tok.padTokenId }));
    expect(Math.abs((nll.dataSync()[0] as number) - (s.lastEvalLoss as number))).toBeLessThan(0.02);
    nll.dispose();
    trained.dispose();
  });

  async function interrupted(over: Partial<SftConfig>, stopAfter: number): Promise<SftSummary> {
    const cfg = config(over);
    let steps = 0;
    const first = await runSft(cfg, { ...quiet, onStep: () => steps++, shouldStop: () => steps >= stopAfter });
    expect(first.stoppedEarly).toBe(true);
    expect(first.lastStep).toBe(stopAfter);
    return runSft(undefined, quiet, cfg.out);
  }

  for (const mode of ['full', 'lora'] as const) {
    it(`a ${mode} run stopped and resumed ends bit-identical to the uninterrupted run`, async () => {
      const common: Partial<SftConfig> = { mode, epochs: 2, batchSize: 4, microBatchSize: 2, lr: 2e-3, warmupSteps: 1, saveEvery: 100, loraR: 4, loraAlpha: 8, evalFraction: 0.2 };
      const straight = await runSft(config({ ...common, out: join(root, `${mode}-straight`) }), quiet);
      const resumed = await interrupted({ ...common, out: join(root, `${mode}-resumed`) }, 3);
      expect(resumed.resumedFrom).toBe(3);
      expect(resumed.lastStep).toBe(straight.lastStep);
      const file = mode === 'full' ? 'model.safetensors' : 'adapter_model.safetensors';
      const a = readFileSync(join(straight.finalDir as string, file));
      const b = readFileSync(join(resumed.finalDir as string, file));
      expect(b.equals(a)).toBe(true);
      const strip = (d: string) => lossLines(d).map((l) => ({ step: l.step, loss: l.loss, evalLoss: l.evalLoss }));
      expect(strip(resumed.runDir)).toEqual(strip(straight.runDir));
    });
  }

  it('refuses a folder that holds a run, and a resume folder that is not a run', async () => {
    await expect(runSft(config({ out: join(root, 'decrease') }), quiet)).rejects.toThrow(/already holds an SFT run/);
    await expect(runSft(undefined, quiet, join(root, 'nothing-here'))).rejects.toThrow(/is not an SFT run folder/);
  });
});
