// The GRPO update of a LoRA adapter: its gradient against an independent −A·∇log π, a no-op with zero
// advantages, micro-batch accumulation, flat tensor memory, and bit-for-bit resume from a checkpoint.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { loadOptimizerState, saveOptimizerState } from '../src/checkpoint/optimizer-state.js';
import { loadPeftAdapter, savePeftAdapter } from '../src/checkpoint/peft.js';
import { LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { disposeGrads } from '../src/rl/accumulate.js';
import { generate } from '../src/model/generate.js';
import { grpoGradients, grpoUpdate, type TrainingSequence, updateLogProbs } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';

let root: string;
let model: CausalLM;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-grpo-'));
  const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, vocab: 300, seed: 8 });
  model = await CausalLM.load(dir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

function newAdapter(seed = 1): { adapter: LoraAdapter; params: Record<string, tf.Variable> } {
  const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] }, { seed, randomB: true, randomBStd: 0.1 });
  return { adapter, params: Object.fromEntries(adapter.variables()) };
}

async function readAll(params: Record<string, tf.Variable>): Promise<Record<string, Float32Array>> {
  const out: Record<string, Float32Array> = {};
  for (const [k, v] of Object.entries(params)) out[k] = Float32Array.from(await v.data());
  return out;
}

/** Random sequences with on-policy old log-probs (so ρ = 1), some tool-output tokens masked out. */
async function sequences(adapter: LoraAdapter, seed: number, n: number): Promise<TrainingSequence[]> {
  const rng = new Rng(seed);
  const seqs: TrainingSequence[] = [];
  for (let i = 0; i < n; i++) {
    const promptIds = Array.from({ length: 3 + rng.int(6) }, () => rng.int(300));
    const responseIds = Array.from({ length: 4 + rng.int(8) }, () => rng.int(300));
    const responseMask = responseIds.map((_, j) => (j === 2 || j === 3 ? 0 : 1));
    const [scored] = await scoreBatch(model, [[...promptIds, ...responseIds]], { adapter });
    const oldLogprobs = (scored?.logprobs ?? []).slice(promptIds.length - 1);
    seqs.push({ promptIds, responseIds, responseMask, oldLogprobs, advantage: rng.next() * 2 - 1, samplingTemperature: 1 }); // scored untempered
  }
  return seqs;
}

describe('GRPO update', () => {
  it('scores tokens under the rollout temperature: at T = 0.7, with no parameter change, every ratio is 1 (1e-5)', async () => {
    const { adapter, params } = newAdapter(5);
    const rng = new Rng(21);
    const prompts = Array.from({ length: 3 }, () => Array.from({ length: 4 + rng.int(4) }, () => rng.int(300)));
    const T = 0.7;
    const gens = await generate(model, prompts, { maxNewTokens: 6, temperature: T, seed: 77, stopTokenIds: [], adapter });
    const seqs: TrainingSequence[] = gens.map((g, i) => ({
      promptIds: prompts[i] as number[],
      responseIds: g.ids,
      responseMask: g.ids.map(() => 1),
      oldLogprobs: g.logprobs,
      advantage: i - 1,
      samplingTemperature: T,
    }));
    const now = await updateLogProbs(model, adapter, seqs);
    let worst = 0;
    seqs.forEach((s, b) => s.oldLogprobs.forEach((old, j) => (worst = Math.max(worst, Math.abs(Math.exp(((now[b] as number[])[j] as number) - old) - 1)))));
    expect(worst).toBeLessThanOrEqual(1e-5);
    // Through the loss as well: nothing is clipped on the first, on-policy update.
    const g = await grpoGradients(model, adapter, params, seqs, { microBatchSize: 2, klCoef: 0 });
    expect(g.clipFrac).toBe(0);
    disposeGrads(g.grads);
    adapter.dispose();
  });

  it('for one trajectory with KL 0 and no clipping, the gradient equals −A·∇ Σ log π / N (computed independently)', async () => {
    const { adapter, params } = newAdapter();
    const [seq] = (await sequences(adapter, 1, 1)) as [TrainingSequence];
    seq.advantage = 0.7;
    const g = await grpoGradients(model, adapter, params, [seq], { microBatchSize: 1, klCoef: 0 });
    // Independent: plain autodiff through the full-vocab log-softmax (no fused kernel, no loss module).
    const full = [...seq.promptIds, ...seq.responseIds];
    const P = seq.promptIds.length;
    const N = seq.responseMask.reduce((a, b) => a + b, 0);
    const { value, grads } = tf.variableGrads(() => {
      const hidden = tf.reshape(model.forward([full], { adapter }), [full.length, -1]) as tf.Tensor2D;
      const logp = tf.logSoftmax(model.logits(hidden));
      const pick = new Float32Array(full.length * model.config.vocabSize);
      seq.responseIds.forEach((id, j) => {
        if (seq.responseMask[j]) pick[(P + j - 1) * model.config.vocabSize + id] = 1;
      });
      return tf.sum(tf.mul(logp, tf.tensor2d(pick, [full.length, model.config.vocabSize]))) as tf.Scalar;
    }, Object.values(params));
    const byVar = new Map(Object.entries(params).map(([k, v]) => [v.name, k]));
    let worst = 0;
    let scale = 0;
    for (const [varName, gradLogPi] of Object.entries(grads)) {
      const key = byVar.get(varName) as string;
      const want = await tf.mul(gradLogPi, -seq.advantage / N).data();
      const got = await (g.grads[key] as tf.Tensor).data();
      for (let i = 0; i < want.length; i++) {
        worst = Math.max(worst, Math.abs((got[i] as number) - (want[i] as number)));
        scale = Math.max(scale, Math.abs(want[i] as number));
      }
    }
    expect(scale).toBeGreaterThan(1e-4);
    expect(worst / scale).toBeLessThanOrEqual(1e-4);
    tf.dispose([value, ...Object.values(grads)]);
    disposeGrads(g.grads);
    adapter.dispose();
  });

  it('with all advantages 0 and KL 0 a step changes nothing (weight decay off)', async () => {
    const { adapter, params } = newAdapter();
    const seqs = (await sequences(adapter, 2, 3)).map((s) => ({ ...s, advantage: 0 }));
    const before = await readAll(params);
    const opt = new AdamW(params, { lr: 0.1, weightDecay: 0 });
    const m = await grpoUpdate(model, adapter, opt, params, seqs, { microBatchSize: 2, klCoef: 0 });
    expect(m.gradNorm).toBe(0);
    expect(await readAll(params)).toEqual(before);
    opt.dispose();
    adapter.dispose();
  });

  it('gradient accumulation over micro-batches equals one big batch (KL on, off-policy, clipping active)', async () => {
    const { adapter, params } = newAdapter();
    const rng = new Rng(3);
    const seqs = (await sequences(adapter, 3, 5)).map((s) => ({ ...s, oldLogprobs: s.oldLogprobs.map((v) => v + (rng.next() - 0.5) * 0.8) }));
    const cfg = { klCoef: 0.05, dualClip: 3 };
    const big = await grpoGradients(model, adapter, params, seqs, { ...cfg, microBatchSize: 5 });
    expect(big.clipFrac).toBeGreaterThan(0);
    for (const micro of [1, 2]) {
      const acc = await grpoGradients(model, adapter, params, seqs, { ...cfg, microBatchSize: micro });
      expect(acc.microBatches).toBe(Math.ceil(5 / micro));
      expect(Math.abs(acc.loss - big.loss)).toBeLessThanOrEqual(1e-6);
      for (const [k, t] of Object.entries(big.grads)) {
        const a = await t.data();
        const b = await (acc.grads[k] as tf.Tensor).data();
        const err = Math.max(...Array.from(a, (v, i) => Math.abs(v - (b[i] as number))));
        expect(err).toBeLessThanOrEqual(1e-6);
      }
      disposeGrads(acc.grads);
    }
    disposeGrads(big.grads);
    adapter.dispose();
  });

  it('identical sequences share one forward: loss, metrics, gradients and reference log-probs equal running each apart', async () => {
    const { adapter, params } = newAdapter();
    const rng = new Rng(4);
    const base = await sequences(adapter, 9, 4);
    // Copies of two sequences with their own advantages and old log-probs (one copy clipped off-policy), in an
    // order that the sort by length must undo.
    const offPolicy = (s: TrainingSequence): TrainingSequence => ({ ...s, oldLogprobs: s.oldLogprobs.map((v) => v + (rng.next() - 0.5) * 0.8) });
    const b0 = base[0] as TrainingSequence;
    const b2 = base[2] as TrainingSequence;
    const seqs = [b0, base[1] as TrainingSequence, { ...b0, advantage: -0.4 }, b2, offPolicy({ ...b2, advantage: 1.3 }), base[3] as TrainingSequence, { ...b0, advantage: 0.9 }];
    const cfg = { klCoef: 0.05, dualClip: 3, microBatchSize: 2 };
    const apart = await grpoGradients(model, adapter, params, seqs, { ...cfg, shareIdentical: false });
    const shared = await grpoGradients(model, adapter, params, seqs, cfg);
    // 7 sequences, 4 distinct forwards: 4 passes of 2 apart, 2 shared.
    expect([apart.microBatches, shared.microBatches]).toEqual([4, 2]);
    expect(shared.clipFrac).toBeGreaterThan(0);
    for (const k of ['loss', 'pgLoss', 'kl', 'clipFrac', 'entropy', 'trainedTokens'] as const) expect(Math.abs(shared[k] - apart[k])).toBeLessThanOrEqual(1e-6);
    for (const [k, t] of Object.entries(apart.grads)) {
      const a = await t.data();
      const b = await (shared.grads[k] as tf.Tensor).data();
      expect(Math.max(...Array.from(a, (v, i) => Math.abs(v - (b[i] as number))))).toBeLessThanOrEqual(1e-6);
    }
    // Reference log-probs come back per sequence, in the caller's order, for the copies as for the originals.
    expect(shared.refLogprobs?.map((r) => r.length)).toEqual(seqs.map((s) => s.responseIds.length));
    shared.refLogprobs?.forEach((r, i) => r.forEach((v, j) => expect(Math.abs(v - ((apart.refLogprobs?.[i] as number[])[j] as number))).toBeLessThanOrEqual(1e-6)));
    expect(shared.refLogprobs?.[6]).toEqual(shared.refLogprobs?.[0]);
    disposeGrads(apart.grads);
    disposeGrads(shared.grads);
    adapter.dispose();
  });

  it('a pass whose every token is masked forms no log-prob and adds nothing: the same loss and gradients without it', async () => {
    const { adapter, params } = newAdapter();
    const seqs = await sequences(adapter, 12, 3);
    // A longer sequence, so that it sorts last and runs as a pass of its own, with every token masked.
    const long = seqs[0] as TrainingSequence;
    const masked: TrainingSequence = { ...long, promptIds: [...long.promptIds, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], responseMask: long.responseMask.map(() => 0) };
    const cfg = { klCoef: 0.05, microBatchSize: 3 };
    const without = await grpoGradients(model, adapter, params, seqs, cfg);
    const withMasked = await grpoGradients(model, adapter, params, [...seqs, masked], cfg);
    expect([without.microBatches, withMasked.microBatches]).toEqual([1, 2]);
    expect(withMasked.loss).toBe(without.loss);
    expect(Number.isFinite(withMasked.loss)).toBe(true);
    for (const [k, t] of Object.entries(without.grads)) expect(Array.from(await (withMasked.grads[k] as tf.Tensor).data())).toEqual(Array.from(await t.data()));
    // Its reference log-probs come back as zeros (none formed).
    expect(withMasked.refLogprobs?.[3]?.every((v) => v === 0)).toBe(true);
    disposeGrads(without.grads);
    disposeGrads(withMasked.grads);
    adapter.dispose();
  });

  it('reference log-probs carried from an earlier pass give the same loss and gradients without the reference forward', async () => {
    const { adapter, params } = newAdapter();
    const seqs = await sequences(adapter, 5, 4);
    const cfg = { klCoef: 0.05, microBatchSize: 2 };
    const forward = vi.spyOn(model, 'forward');
    const first = await grpoGradients(model, adapter, params, seqs, cfg);
    expect(forward).toHaveBeenCalledTimes(4); // 2 passes: reference + adapter each
    expect(first.kl).toBeGreaterThan(0); // randomB: the adapter moves π away from the reference
    // What the first pass hands back are the reference's log-probs, scored independently (adapters off).
    const base = await updateLogProbs(model, undefined, seqs);
    seqs.forEach((s, b) =>
      s.responseMask.forEach((m, j) => {
        if (m > 0) expect(Math.abs((first.refLogprobs?.[b]?.[j] as number) - (base[b]?.[j] as number))).toBeLessThanOrEqual(1e-5);
      }),
    );
    forward.mockClear();
    const carried = seqs.map((s, b) => ({ ...s, refLogprobs: first.refLogprobs?.[b] as number[] }));
    const second = await grpoGradients(model, adapter, params, carried, cfg);
    expect(forward).toHaveBeenCalledTimes(2); // the adapter's passes only
    forward.mockRestore();
    expect(second.loss).toBe(first.loss);
    expect(second.kl).toBe(first.kl);
    for (const [k, t] of Object.entries(first.grads)) expect(await (second.grads[k] as tf.Tensor).data()).toEqual(await t.data());
    // One sequence without it: its pass runs the reference forward again, the other pass does not.
    const mixed = carried.map((s, b) => (b === 3 ? { ...s, refLogprobs: undefined } : s));
    const spy = vi.spyOn(model, 'forward');
    const third = await grpoGradients(model, adapter, params, mixed, cfg);
    expect(spy).toHaveBeenCalledTimes(3);
    spy.mockRestore();
    expect(third.loss).toBe(first.loss);
    await expect(grpoGradients(model, adapter, params, [{ ...(carried[0] as TrainingSequence), refLogprobs: [0] }], cfg)).rejects.toThrow(/but 1 reference log-probs/);
    for (const g of [first, second, third]) disposeGrads(g.grads);
    adapter.dispose();
  });

  it('keeps the number of live tensors flat: the same after step 5 and after step 20', async () => {
    const { adapter, params } = newAdapter();
    const seqs = await sequences(adapter, 4, 3);
    const opt = new AdamW(params, { lr: 1e-3, warmupSteps: 2 });
    let afterFive = -1;
    for (let step = 1; step <= 20; step++) {
      await grpoUpdate(model, adapter, opt, params, seqs, { microBatchSize: 2 });
      if (step === 5) afterFive = tf.memory().numTensors;
    }
    expect(tf.memory().numTensors).toBe(afterFive);
    opt.dispose();
    adapter.dispose();
  });

  it('resumed from a saved adapter and optimizer state, training continues bit for bit', async () => {
    const { adapter, params } = newAdapter(9);
    const batches = [await sequences(adapter, 10, 3), await sequences(adapter, 11, 3), await sequences(adapter, 12, 3), await sequences(adapter, 13, 3)];
    const cfg = { microBatchSize: 2, klCoef: 0.01 };
    const opt = new AdamW(params, { lr: 5e-3, warmupSteps: 2, schedule: 'cosine', totalSteps: 10 });
    await grpoUpdate(model, adapter, opt, params, batches[0] as TrainingSequence[], cfg);
    await grpoUpdate(model, adapter, opt, params, batches[1] as TrainingSequence[], cfg);
    const ckpt = join(root, 'ckpt');
    await savePeftAdapter(adapter, ckpt, { baseModel: 'tiny' });
    saveOptimizerState(ckpt, opt.exportState());
    await grpoUpdate(model, adapter, opt, params, batches[2] as TrainingSequence[], cfg);
    await grpoUpdate(model, adapter, opt, params, batches[3] as TrainingSequence[], cfg);
    const uninterrupted = await readAll(params);

    const resumed = loadPeftAdapter(ckpt, 'solver', model.config);
    const params2 = Object.fromEntries(resumed.variables());
    const opt2 = new AdamW(params2, { lr: 5e-3, warmupSteps: 2, schedule: 'cosine', totalSteps: 10 });
    opt2.importState(loadOptimizerState(ckpt));
    expect(opt2.stepCount).toBe(2);
    await grpoUpdate(model, resumed, opt2, params2, batches[2] as TrainingSequence[], cfg);
    await grpoUpdate(model, resumed, opt2, params2, batches[3] as TrainingSequence[], cfg);
    expect(await readAll(params2)).toEqual(uninterrupted);
    for (const o of [opt, opt2]) o.dispose();
    adapter.dispose();
    resumed.dispose();
  });
});
