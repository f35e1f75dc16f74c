// The model both native-backend suites measure (test/native-matmul.test.ts, test/native-int8.test.ts): a Qwen3 of
// d 512 whose q, o, MLP and tied head (≥ 2^18 floats) are held natively, four GRPO sequences, and one run of it on
// a backend: a scored prompt and the LoRA gradients of one update, with no tensor left behind.
import { join } from 'node:path';
import { expect } from 'vitest';
import { makeTinyCheckpoint } from '../../src/checkpoint/make-tiny.js';
import { LoraAdapter } from '../../src/model/lora.js';
import { CausalLM, type LoadOptions } from '../../src/model/qwen3.js';
import { scoreBatch } from '../../src/model/score.js';
import { disposeGrads } from '../../src/rl/accumulate.js';
import { grpoGradients, type TrainingSequence } from '../../src/rl/grpo-update.js';
import { type BackendChoice, initBackend, tf } from '../../src/tensor/backend.js';
import { Rng } from '../../src/util/rng.js';

/** The checkpoint, written under `root`; its folder. */
export function makeNativeTestModel(root: string): string {
  return makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 2, hidden: 512, heads: 8, kvHeads: 2, headDim: 64, intermediate: 1024, vocab: 512, tie: true, seed: 4, dtype: 'f32' }).dir;
}

/** Four sequences of 20–23 prompt and 24 response tokens, every fifth response token masked. */
export function nativeTestSequences(): TrainingSequence[] {
  const rng = new Rng(17);
  return Array.from({ length: 4 }, (_, i) => {
    const promptIds = Array.from({ length: 20 + i }, () => rng.int(512));
    const responseIds = Array.from({ length: 24 }, () => rng.int(512));
    return { promptIds, responseIds, responseMask: responseIds.map((_, j) => (j % 5 === 4 ? 0 : 1)), oldLogprobs: responseIds.map(() => -6), advantage: i - 1.5, samplingTemperature: 1 };
  });
}

export interface NativeTestRun {
  /** Log-probs of the first sequence's prompt. */
  logprobs: number[];
  /** The first prompt's final hidden states [T, d] and their logits [T, V] (row-major). */
  hidden: Float32Array;
  logits: Float32Array;
  grads: Record<string, Float32Array>;
  heapFloats: number;
  parameters: number;
  described: string;
}

/** Loads the model on `backend` (2 threads, `load` its options), scores and takes one update's gradients with a rank-8 LoRA. */
export async function runNativeTestModel(dir: string, seqs: TrainingSequence[], backend: BackendChoice, load: LoadOptions = {}): Promise<NativeTestRun> {
  await initBackend(backend, { threads: 2 });
  const before = tf.memory().numTensors;
  const model = await CausalLM.load(dir, load);
  const prompt = (seqs[0] as TrainingSequence).promptIds;
  const [hidden, logits] = tf.tidy(() => {
    const h = tf.reshape(model.forward([prompt]), [prompt.length, model.config.hiddenSize]) as tf.Tensor2D;
    return [h.dataSync() as Float32Array, model.logits(h).dataSync() as Float32Array];
  });
  const adapter = LoraAdapter.create('solver', model.config, { r: 8, alpha: 16, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, { seed: 1, randomB: true, randomBStd: 0.02 });
  const params = Object.fromEntries(adapter.variables());
  const [scored] = await scoreBatch(model, [(seqs[0] as TrainingSequence).promptIds]);
  const g = await grpoGradients(model, adapter, params, seqs, { microBatchSize: 2, klCoef: 0.01 });
  const grads = Object.fromEntries(Object.entries(g.grads).map(([k, v]) => [k, (v as tf.Tensor).dataSync() as Float32Array]));
  disposeGrads(g.grads);
  const out = { logprobs: scored?.logprobs ?? [], hidden, logits, grads, heapFloats: model.heapWeightFloats(), parameters: model.parameterCount(), described: model.describeFrozenBase() };
  adapter.dispose();
  model.dispose();
  // Nothing is left: the model's tensors (held transposes included) go with it.
  expect(tf.memory().numTensors).toBe(before);
  return out;
}
