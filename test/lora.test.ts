// LoRA: a fresh adapter is the base; an adapter with non-zero B equals the base with merged weights
// W + (α/r)·B·A (checked against the float64 reference forward on a merged checkpoint); PEFT round trips.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { loadPeftAdapter, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, savePeftAdapter } from '../src/checkpoint/peft.js';
import { SafetensorsCheckpoint, type TensorToWrite, writeSafetensors } from '../src/formats/safetensors.js';
import { LoraAdapter, LORA_DEFAULTS } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { ReferenceModel } from './helpers/reference-forward.js';

let root: string;
let baseDir: string;
let model: CausalLM;
const seqs = (() => {
  const rng = new Rng(4);
  return [20, 33].map((n) => Array.from({ length: n }, () => rng.int(300)));
})();

/** Writes a copy of the base checkpoint with W ← W + scale·Bᵀ… merged in, from PEFT-layout weights. */
async function writeMerged(adapter: LoraAdapter, out: string): Promise<void> {
  cpSync(baseDir, out, { recursive: true });
  const ck = new SafetensorsCheckpoint(baseDir);
  const peft = await adapter.peftWeights();
  const tensors = new Map<string, TensorToWrite>();
  for (const name of ck.names()) {
    const e = ck.entry(name);
    const w = ck.readFloat32(name);
    const mod = name.replace(/\.weight$/, '');
    const lora = peft.get(mod);
    if (lora) {
      // W [out, in] += scale · B [out, r] · A [r, in]
      const r = adapter.config.r;
      for (let o = 0; o < lora.outDim; o++) {
        for (let i = 0; i < lora.inDim; i++) {
          let s = 0;
          for (let k = 0; k < r; k++) s += (lora.b[o * r + k] as number) * (lora.a[k * lora.inDim + i] as number);
          w[o * lora.inDim + i] = (w[o * lora.inDim + i] as number) + adapter.scale * s;
        }
      }
    }
    tensors.set(name, { dtype: 'F32', shape: e.shape, data: w });
  }
  writeSafetensors(join(out, 'model.safetensors'), tensors);
}

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-lora-'));
  baseDir = makeTinyCheckpoint({ out: join(root, 'base'), arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, vocab: 300, seed: 3 }).dir;
  model = await CausalLM.load(baseDir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe('LoRA adapter', () => {
  it('a fresh adapter (B = 0) changes no log-prob', async () => {
    const adapter = LoraAdapter.create('solver', model.config, LORA_DEFAULTS, { seed: 1 });
    const base = await scoreBatch(model, seqs);
    const adapted = await scoreBatch(model, seqs, { adapter });
    expect(adapted).toEqual(base);
    adapter.dispose();
  });

  it('with random B equals the merged-weight model in the float64 reference (≤ 1e-4) and differs from the base', async () => {
    const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] }, { seed: 2, randomB: true, randomBStd: 0.2 });
    const mergedDir = join(root, 'merged');
    await writeMerged(adapter, mergedDir);
    const ref = new ReferenceModel(mergedDir);
    const ours = await scoreBatch(model, seqs, { adapter });
    const base = await scoreBatch(model, seqs);
    let maxErr = 0;
    let maxChange = 0;
    seqs.forEach((s, b) => {
      const lp = ref.logProbs(s);
      const got = ours[b]?.logprobs as number[];
      for (let i = 0; i + 1 < s.length; i++) {
        maxErr = Math.max(maxErr, Math.abs(((lp[i] as Float64Array)[s[i + 1] as number] as number) - (got[i] as number)));
        maxChange = Math.max(maxChange, Math.abs((got[i] as number) - (base[b]?.logprobs[i] as number)));
      }
    });
    expect(maxErr).toBeLessThanOrEqual(1e-4);
    expect(maxChange).toBeGreaterThan(1e-3);
    adapter.dispose();
  });

  it('only adapter weights are trainable: gradients exist for every A and B and nothing else', async () => {
    const adapter = LoraAdapter.create('proposer', model.config, { ...LORA_DEFAULTS, r: 2 }, { seed: 5, randomB: true });
    const vars = adapter.variables();
    const before = tf.memory().numTensors;
    const { value, grads } = tf.variableGrads(() => tf.sum(model.forward([seqs[0] as number[]], { adapter })) as tf.Scalar);
    expect(Object.keys(grads).sort()).toEqual([...vars.values()].map((v) => v.name).sort());
    tf.dispose([value, ...Object.values(grads)]);
    expect(tf.memory().numTensors).toBe(before);
    adapter.dispose();
  });

  it('adapter gradients through the whole forward agree with central finite differences', async () => {
    const adapter = LoraAdapter.create('x', model.config, { r: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'down_proj'] }, { seed: 4, randomB: true, randomBStd: 0.1 });
    const ids = [seqs[0]?.slice(0, 8) as number[]];
    const d = model.config.hiddenSize;
    const weights = tf.sin(tf.reshape(tf.range(0, 8 * d), [1, 8, d]));
    const loss = (): tf.Scalar => tf.tidy(() => tf.sum(tf.mul(model.forward(ids, { adapter }), weights)) as tf.Scalar);
    const vars = adapter.variables();
    const { value, grads } = tf.variableGrads(loss, [...vars.values()]);
    for (const key of ['model.layers.0.self_attn.q_proj.lora_B', 'model.layers.0.mlp.down_proj.lora_A', 'model.layers.1.mlp.down_proj.lora_B']) {
      const v = vars.get(key) as tf.Variable;
      const g = (await (grads[v.name] as tf.Tensor).data())[3] as number;
      const vals = Float32Array.from(await v.data());
      const at = async (x: number): Promise<number> => {
        vals[3] = x;
        v.assign(tf.tensor(vals, v.shape));
        const l = loss();
        const out = (await l.data())[0] as number;
        l.dispose();
        return out;
      };
      const orig = vals[3] as number;
      const eps = 1e-2;
      const fd = ((await at(orig + eps)) - (await at(orig - eps))) / (2 * eps);
      await at(orig);
      expect(Math.abs(g - fd), key).toBeLessThanOrEqual(2e-3 * Math.max(1, Math.abs(fd)));
    }
    tf.dispose([value, weights, ...Object.values(grads)]);
    adapter.dispose();
  });
});

describe('PEFT format', () => {
  it('export → import round-trips exactly, with PEFT key names and shapes', async () => {
    const adapter = LoraAdapter.create('solver', model.config, { r: 4, alpha: 16, dropout: 0, targets: ['q_proj', 'k_proj', 'gate_proj'] }, { seed: 7, randomB: true });
    const dir = join(root, 'peft');
    await savePeftAdapter(adapter, dir, { baseModel: 'Qwen/Qwen3-0.6B' });
    const cfg = JSON.parse(readFileSync(join(dir, PEFT_CONFIG_FILE), 'utf8')) as Record<string, unknown>;
    expect(cfg).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 16, target_modules: ['q_proj', 'k_proj', 'gate_proj'], base_model_name_or_path: 'Qwen/Qwen3-0.6B' });
    const ck = new SafetensorsCheckpoint(dir, PEFT_WEIGHTS_FILE);
    expect(ck.entry('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight').shape).toEqual([4, 64]);
    expect(ck.entry('base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight').shape).toEqual([96, 4]);
    expect(ck.names()).toHaveLength(2 * 2 * 3);
    const back = loadPeftAdapter(dir, 'solver', model.config);
    const w1 = await adapter.peftWeights();
    const w2 = await back.peftWeights();
    expect([...w2.keys()]).toEqual([...w1.keys()]);
    for (const [k, v] of w1) {
      expect(Array.from(w2.get(k)?.a ?? [])).toEqual(Array.from(v.a));
      expect(Array.from(w2.get(k)?.b ?? [])).toEqual(Array.from(v.b));
    }
    expect(await scoreBatch(model, seqs, { adapter: back })).toEqual(await scoreBatch(model, seqs, { adapter }));
    adapter.dispose();
    back.dispose();
  });

  it('refuses bad adapter folders with errors naming the file and field or tensor', async () => {
    const adapter = LoraAdapter.create('x', model.config, { r: 2, alpha: 4, dropout: 0, targets: ['q_proj'] }, { seed: 1 });
    const dir = join(root, 'bad');
    await savePeftAdapter(adapter, dir, { baseModel: 'b' });
    adapter.dispose();
    const cfgPath = join(dir, PEFT_CONFIG_FILE);
    const good = readFileSync(cfgPath, 'utf8');
    writeFileSync(cfgPath, good.replace('"r": 2', '"r": 3'));
    expect(() => loadPeftAdapter(dir, 'x', model.config)).toThrow(/adapter_model\.safetensors: tensor 'base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight' has shape \[2,64\], expected \[3,64\]/);
    writeFileSync(cfgPath, good.replace('"q_proj"', '"k_proj"'));
    expect(() => loadPeftAdapter(dir, 'x', model.config)).toThrow(/k_proj\.lora_A\.weight' is missing/);
    writeFileSync(cfgPath, good.replace('"LORA"', '"IA3"'));
    expect(() => loadPeftAdapter(dir, 'x', model.config)).toThrow(/adapter_config\.json: field 'peft_type'/);
    writeFileSync(cfgPath, good.replace('"q_proj"', '"qkv"'));
    expect(() => loadPeftAdapter(dir, 'x', model.config)).toThrow(/field 'target_modules' names 'qkv'/);
  });
});
