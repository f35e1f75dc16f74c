// A PEFT adapter folder whose adapter_config.json and safetensors disagree, through the CLI on a tiny random
// model: target_modules listing fewer modules than the weights hold would load the listed ones and drop the
// rest without a word; it is refused, naming both files and the modules. Tensors no LoRA module of the model
// would read (another layer, a non-LoRA name) are refused the same way.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsFile, writeSafetensors, type TensorToWrite } from '../../src/formats/safetensors.js';
import { CLI, faultRoot, run, tinyModel } from './cli.js';

let root: string;
let model: string;
let adapter: string;

beforeAll(async () => {
  root = faultRoot('adapter-modules');
  model = tinyModel(root);
  adapter = join(root, 'adapter');
  const r = await run(root, [CLI, 'lora-init', '--model', model, '--out', adapter, '--r', '2', '--alpha', '4', '--random-b', '--seed', '1', '--backend', 'wasm']);
  expect(r.code, r.stderr).toBe(0);
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const generate = (dir: string) => run(root, [CLI, 'generate', '--model', model, '--adapter', dir, '--prompt', 'hello', '--max-new-tokens', '2', '--backend', 'wasm', '--threads', '1']);

describe('an adapter whose target_modules lists fewer modules than its weights hold', () => {
  it('is refused naming the config, the weights file and the modules left out', async () => {
    const ok = await generate(adapter);
    expect(ok.code, ok.stderr).toBe(0);
    const cfgFile = join(adapter, 'adapter_config.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as { target_modules: string[] };
    expect(cfg.target_modules).toContain('v_proj');
    const kept = cfg.target_modules.filter((m) => m !== 'v_proj' && m !== 'down_proj');
    writeFileSync(cfgFile, JSON.stringify({ ...cfg, target_modules: kept }));
    const r = await generate(adapter);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `${join(adapter, 'adapter_model.safetensors')} holds LoRA weights for down_proj, v_proj, which ${cfgFile} does not list in target_modules (${kept.join(', ')}): loading would drop them; add them to target_modules or remove their tensors`,
    );
    writeFileSync(cfgFile, JSON.stringify(cfg));
  }, 120_000);

  it('tensors that no module of the model reads are refused, named', async () => {
    const weights = join(adapter, 'adapter_model.safetensors');
    const original = readFileSync(weights);
    const file = new SafetensorsFile(weights);
    const tensors = new Map<string, TensorToWrite>();
    for (const [name, e] of file.tensors) tensors.set(name, { dtype: e.dtype, shape: e.shape, data: new Uint8Array(file.readBytes(name)) });
    tensors.set('base_model.model.model.layers.99.self_attn.q_proj.lora_A.weight', { dtype: 'F32', shape: [1], data: new Float32Array(1) });
    tensors.set('base_model.model.lm_head.weight', { dtype: 'F32', shape: [1], data: new Float32Array(1) });
    writeSafetensors(weights, tensors);
    const r = await generate(adapter);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${weights} holds 2 tensors no LoRA module of the model reads: base_model.model.lm_head.weight, base_model.model.model.layers.99.self_attn.q_proj.lora_A.weight`);
    writeFileSync(weights, original);
  }, 120_000);
});
