// What each model size needs (src/model/memory-need.ts, docs/models.md): the statement per backend, printed
// by doctor, and the refusal before loading when the backend cannot hold the model. `--model qwen3-4b` on wasm
// used to go on to read the weights (or say only that it was not downloaded); here a fake Hugging Face cache
// holds nothing but a config.json of Qwen3-4B's shape, so a command that got past the refusal would fail on
// the missing weights instead.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupModel } from '../models/registry.js';
import { MODELS_END, MODELS_PAGE, MODELS_START, modelsSection } from '../scripts/model-memory-table.js';
import { parseModelConfig } from '../src/model/config.js';
import { backendRefusal, mallocSettingsWarning, memoryNeed, nativeLayout, memoryNeedOfConfig, memoryNeedOfEntry, memoryNeedStatement, modelMemoryMarkdown, parameterCount } from '../src/model/memory-need.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const GIB = 2 ** 30;

/** Qwen/Qwen3-4B's config.json (the fields the forward reads, as on the Hub). */
const QWEN3_4B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 2560,
  intermediate_size: 9728,
  max_position_embeddings: 40960,
  model_type: 'qwen3',
  num_attention_heads: 32,
  num_hidden_layers: 36,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  vocab_size: 151936,
};

let root: string;
let cache: string;
let empty: string;

function cli(args: string[], hubCache: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, HF_HUB_CACHE: hubCache, SESA_HOME: join(root, 'sesa-home'), COLUMNS: '200' },
    timeout: 240_000,
  });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'memory-need-'));
  cache = join(root, 'hub');
  const repo = join(cache, 'models--Qwen--Qwen3-4B');
  const sha = '1cfa9a7208912126459214e8b04321603b3df60c';
  mkdirSync(join(repo, 'snapshots', sha), { recursive: true });
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs', 'main'), sha);
  writeFileSync(join(repo, 'snapshots', sha, 'config.json'), JSON.stringify(QWEN3_4B));
  empty = join(root, 'empty-hub');
  mkdirSync(empty);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('memory need per backend', () => {
  it("counts Qwen3-4B's parameters from its config and says wasm cannot hold it, naming the backends that can", () => {
    const need = memoryNeedOfConfig(parseModelConfig(QWEN3_4B));
    expect(need.parameters).toBe(parameterCount(parseModelConfig(QWEN3_4B)));
    expect(need.parameters / 1e9).toBeCloseTo(4.02, 2);
    expect(need.weightBytes).toBe(4 * need.parameters);
    const wasm = need.backends.find((b) => b.backend === 'wasm');
    expect(wasm).toMatchObject({ fits: 'no', runBytes: 8 * need.parameters, limitBytes: 4 * GIB });
    const refusal = backendRefusal('qwen3-4b', need, 'wasm', 24 * GIB) as string;
    expect(refusal).toContain('qwen3-4b: 4.02B parameters, 15.0 GiB of f32 weights');
    expect(refusal).toContain('cannot run this model');
    expect(refusal).toContain('@tensorflow/tfjs-node-gpu (CUDA 11.2, cuDNN 8.1), per GPU with ≈ 19.5 GiB');
    expect(refusal).toContain('@tensorflow/tfjs-node, system memory with ≈ 19.5 GiB');
    // The same model is not refused where it fits, and a small one is not refused on wasm.
    expect(backendRefusal('qwen3-4b', need, 'tensorflow', 24 * GIB)).toBeUndefined();
    expect(backendRefusal('small', memoryNeed(100e6, true), 'wasm', 24 * GIB)).toBeUndefined();
    // The cpu backend keeps the weights in this process: more than the machine's memory is refused.
    expect(backendRefusal('qwen3-4b', need, 'cpu', 8 * GIB)).toContain("more than this machine's 8.0 GiB of memory");
    // The native backend keeps the frozen matrices packed twice (forward and backward) in system memory, the tied
    // head among them, and the embedding table itself once more, in f32 (a Gather).
    const native = need.backends.find((b) => b.backend === 'native');
    expect(native).toMatchObject({ runBytes: 8 * need.parameters + 4 * 151936 * 2560 });
    // Twice does not fit 24 GiB, once does (unpacked, slower): not refused there; 8 GiB holds not even once.
    expect(backendRefusal('qwen3-4b', need, 'native', 24 * GIB)).toBeUndefined();
    expect(nativeLayout(need, 24 * GIB)).toBe('once');
    expect(nativeLayout(need, 64 * GIB)).toBe('packed');
    expect(nativeLayout(need, 8 * GIB)).toBeUndefined();
    const nativeRefusal = backendRefusal('qwen3-4b', need, 'native', 8 * GIB) as string;
    expect(nativeRefusal).toContain("the native backend keeps them in system memory (packed twice to train, 31.4 GiB; at least once, unpacked), more than this machine's 8.0 GiB");
    expect(nativeRefusal).toContain('@tensorflow/tfjs-node-gpu (CUDA 11.2, cuDNN 8.1), per GPU with ≈ 19.5 GiB');
    expect(refusal).toContain('--backend native (onnxruntime-node, what auto picks on a CPU machine), system memory with ≈ 35.9 GiB');
    expect(backendRefusal('qwen3-0.6b', memoryNeed(0.6e9, true), 'native', 24 * GIB)).toBeUndefined();
    expect(nativeLayout(memoryNeed(0.6e9, true), 24 * GIB)).toBe('packed');
    // Held once under the bin's malloc settings: warned, naming the way out; not otherwise.
    const malloc = { MALLOC_MMAP_THRESHOLD_: '4294967296' };
    expect(mallocSettingsWarning('/m/q4b', 'native', 'once', malloc)).toMatch(/^\/m\/q4b: the frozen weights barely fit .* The bin starts itself again without them when --model names such a model.* start it with `node bin\/sesa-train\.mjs …` \(no settings\), or use --backend native-int8 \(an 8-bit base, about a quarter of the memory: docs\/models\.md\)$/);
    expect(mallocSettingsWarning('/m/q4b', 'native', 'once', {})).toBeUndefined();
    expect(mallocSettingsWarning('/m/q4b', 'native', 'packed', malloc)).toBeUndefined();
    expect(mallocSettingsWarning('/m/q4b', 'wasm', 'once', malloc)).toBeUndefined();
  });

  it('the wasm line: the weights and their packed copy must fit the 4 GiB heap', () => {
    // 0.5B parameters: 3.7 GiB with the packed copy, runs; 0.6B: 4.5 GiB, does not.
    expect(memoryNeed(0.5e9, false).backends[0]?.fits).toBe('tight');
    expect(memoryNeed(0.6e9, false).backends[0]?.fits).toBe('no');
    expect(memoryNeed(0.1e9, true).backends[0]?.fits).toBe('yes');
    const statement = memoryNeedStatement(memoryNeedOfEntry(lookupModel('qwen3-4b') as NonNullable<ReturnType<typeof lookupModel>>));
    expect(statement).toMatch(/^≈ 4\.00B parameters, ≈ 14\.9 GiB of f32 weights\. wasm: 29\.8 GiB with XNNPACK's packed copy of the weights, .*: does not fit \(heap 4\.0 GiB\); /);
    expect(statement).toContain('@tensorflow/tfjs-node-gpu (CUDA 11.2, cuDNN 8.1), per GPU: ≈ 19.4 GiB');
  });

  it('docs/models.md holds the table generated from the registry', () => {
    const page = readFileSync(join(ROOT, MODELS_PAGE), 'utf8');
    const start = page.indexOf(MODELS_START);
    const end = page.indexOf(MODELS_END);
    expect(start).toBeGreaterThan(0);
    expect(page.slice(start, end + MODELS_END.length)).toBe(modelsSection());
    expect(modelMemoryMarkdown()).toContain('| `qwen3-4b` | 4B | 14.9 GiB | no (29.8 GiB with the packed copy) | ≥ 34.3 GiB (once, slower: ≥ 14.9 GiB) | ≥ 12.9 GiB | ≥ 19.4 GiB | ≥ 19.4 GiB |');
  });
});

describe('the refusal before loading, through the command line', () => {
  it('train --model qwen3-4b on wasm is refused with the figures and the backends that fit, before any weight is read', () => {
    const out = join(root, 'run-4b');
    const r = cli(['train', '--model', 'qwen3-4b', '--backend', 'wasm', '--threads', '1', '--out', out], cache);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('models--Qwen--Qwen3-4B');
    expect(r.stderr).toContain('4.02B parameters, 15.0 GiB of f32 weights; the wasm backend holds the weights and XNNPACK');
    expect(r.stderr).toContain('Backends that would: --backend native (onnxruntime-node, what auto picks on a CPU machine), system memory with ≈ 35.9 GiB, or --backend native-int8 (the frozen base in 8-bit blocks), system memory with ≈ 14.4 GiB, or --backend tensorflow with @tensorflow/tfjs-node-gpu');
    expect(r.stderr).not.toMatch(/safetensors|tensor '.*' is missing/);
  });

  it('generate and eval refuse it the same way', () => {
    const g = cli(['generate', '--model', 'qwen3-4b', '--backend', 'wasm', '--threads', '1', '--prompt-ids', '1,2'], cache);
    expect(g.status).not.toBe(0);
    expect(g.stderr).toContain('the wasm backend holds the weights and XNNPACK');
    const e = cli(['eval', '--model', 'qwen3-4b', '--backend', 'wasm', '--threads', '1', '--data', 'encyclopedia', '--limit', '1', '--out', join(root, 'eval-4b')], cache);
    expect(e.status).not.toBe(0);
    expect(e.stderr).toContain('the wasm backend holds the weights and XNNPACK');
  });

  it('not downloaded: the refusal comes first, from the registry size, before the download hint', () => {
    const r = cli(['train', '--model', 'qwen3-4b', '--backend', 'wasm', '--threads', '1', '--out', join(root, 'run-missing')], empty);
    expect(r.status).not.toBe(0);
    const refusal = r.stderr.indexOf('--model qwen3-4b: ≈ 4.00B parameters, ≈ 14.9 GiB of f32 weights; the wasm backend');
    expect(refusal).toBeGreaterThanOrEqual(0);
    expect(r.stderr.indexOf("is not in the Hugging Face cache")).toBeGreaterThan(refusal);
  });

  it('doctor --model qwen3-4b states the need per backend, downloaded or not, and fails it on wasm', () => {
    const d = cli(['doctor', '--model', 'qwen3-4b', '--backend', 'wasm', '--json'], cache);
    const report = JSON.parse(d.stdout) as { results: Array<{ check: string; status: string; detail: string }> };
    const needs = report.results.find((x) => x.check === 'model-needs');
    expect(needs?.detail).toMatch(/^config\.json: 4\.02B parameters, 15\.0 GiB of f32 weights\. wasm: 30\.0 GiB with XNNPACK's packed copy/);
    expect(needs?.detail).toContain('per GPU: ≈ 19.5 GiB');
    const mem = report.results.find((x) => x.check === 'model-memory');
    expect(mem?.status).toBe('fail');
    expect(mem?.detail).toContain("with XNNPACK's packed copy");
    const missing = cli(['doctor', '--model', 'qwen3-4b', '--json'], empty);
    const m = (JSON.parse(missing.stdout) as { results: Array<{ check: string; detail: string }> }).results.find((x) => x.check === 'model-needs');
    expect(m?.detail).toMatch(/^the registry's size of qwen3-4b: ≈ 4\.00B parameters/);
    expect(existsSync(join(root, 'run-4b', 'config.json'))).toBe(false);
  });
});
