// The model folder (config, weights, tokenizer, chat template) and its memory need against the backend's
// limit; the E5 model folder for --embedder e5.
import { lookupModel, registryNames } from '../../models/registry.js';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SafetensorsCheckpoint } from '../formats/safetensors.js';
import { expectedTensors, loadModelConfig, type ModelConfig } from '../model/config.js';
import { projectionShape } from '../model/lora.js';
import { memoryNeedOfConfig, memoryNeedStatement, parameterCount, type MemoryNeed, WORKING_MEMORY_FRACTION } from '../model/memory-need.js';
import { resolveModel } from '../model/resolve.js';
import { packedWeightBytes } from '../tensor/wasm-heap.js';
import { type CheckResult, type DoctorOptions, firstLine, formatBytes } from './types.js';

/** The wasm heap is a 32-bit address space: ~4 GiB, whatever the machine has. */
export const WASM_HEAP_BYTES = 4 * 2 ** 30;
export { parameterCount, WORKING_MEMORY_FRACTION };

export interface ModelCheck {
  results: CheckResult[];
  /** Present when the config parsed. */
  config?: ModelConfig;
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Every file a training run reads from the model folder, checked without loading the weights. */
export async function checkModelFolder(model: string): Promise<ModelCheck> {
  const results: CheckResult[] = [];
  let dir: string;
  try {
    dir = (await resolveModel(model)).dir;
  } catch (err) {
    // Only a registry name can be downloaded; a folder that is not there is a path to check.
    const fix = lookupModel(model) !== undefined ? `sesa-train download ${model}, or pass a model folder` : `check the path: --model takes a Hugging Face model folder (config.json, *.safetensors, tokenizer.json) or a registry name (${registryNames().slice(0, 3).join(", ")}, …)`;
    return { results: [{ check: 'model', status: 'fail', detail: firstLine(err), fix }] };
  }
  let config: ModelConfig | undefined;
  try {
    config = loadModelConfig(dir);
    results.push({ check: 'model-config', status: 'ok', detail: `${join(dir, 'config.json')}: ${config.architecture}, ${config.numLayers} layers, hidden ${config.hiddenSize}, vocab ${config.vocabSize}` });
  } catch (err) {
    results.push({ check: 'model-config', status: 'fail', detail: firstLine(err), fix: 'download the model again (sesa-train download NAME --force)' });
  }
  try {
    const ckpt = new SafetensorsCheckpoint(dir);
    if (config) {
      const missing = [...expectedTensors(config).keys()].filter((name) => !ckpt.has(name));
      if (missing.length > 0) throw new Error(`${dir}: ${missing.length} tensor(s) missing from the weights, e.g. ${missing.slice(0, 3).join(', ')}`);
    }
    results.push({ check: 'model-weights', status: 'ok', detail: `${ckpt.names().length} tensors in ${dir}` });
  } catch (err) {
    results.push({ check: 'model-weights', status: 'fail', detail: firstLine(err), fix: 'the weights are incomplete: download the model again (sesa-train download NAME --force)' });
  }
  const tokFiles = ['tokenizer.json', 'tokenizer_config.json'];
  const badTok = tokFiles.find((f) => {
    try {
      readJson(join(dir, f));
      return false;
    } catch {
      return true;
    }
  });
  results.push(
    badTok === undefined
      ? { check: 'tokenizer', status: 'ok', detail: `${tokFiles.join(', ')} present` }
      : { check: 'tokenizer', status: 'fail', detail: `${join(dir, badTok)} is missing or not JSON`, fix: 'download the model again (sesa-train download NAME --force)' },
  );
  if (badTok === undefined) {
    const tc = readJson(join(dir, 'tokenizer_config.json')) as { chat_template?: unknown };
    const where = typeof tc.chat_template === 'string' || Array.isArray(tc.chat_template) ? 'tokenizer_config.json' : existsSync(join(dir, 'chat_template.jinja')) ? 'chat_template.jinja' : undefined;
    results.push(
      where
        ? { check: 'chat-template', status: 'ok', detail: `in ${where}` }
        : { check: 'chat-template', status: 'fail', detail: `${dir} has no chat template (tokenizer_config.json chat_template or chat_template.jinja)`, fix: 'use an instruct/chat model, or add its chat_template.jinja' },
    );
  }
  return config ? { results, config } : { results };
}

/**
 * The f32 weights plus working memory against what the backend can hold. On wasm (`packedCopy`) the heap also
 * holds XNNPACK's packed copy of the weights, so the model runs only when both fit (src/model/memory-need.ts).
 */
export function checkModelMemory(config: ModelConfig, limitBytes: number, limitName: string, packedCopy = false): CheckResult {
  const weights = 4 * parameterCount(config);
  const run = packedCopy ? weights + packedWeightBytes(parameterCount(config)) : weights;
  const need = run + weights * WORKING_MEMORY_FRACTION;
  const detail =
    `${(parameterCount(config) / 1e6).toFixed(1)}M parameters: ${formatBytes(weights)} of f32 weights${packedCopy ? `, ${formatBytes(run)} with XNNPACK's packed copy` : ''}, ` +
    `≈ ${formatBytes(need)} with working memory; ${limitName} holds ${formatBytes(limitBytes)}`;
  if (run > limitBytes) return { check: 'model-memory', status: 'fail', detail, fix: 'a smaller model, or a backend with more memory (tfjs-node on the CPU has no 4 GiB cap; tfjs-node-gpu uses the GPU memory; docs/models.md)' };
  if (need > limitBytes) return { check: 'model-memory', status: 'warn', detail, fix: 'lower --micro-batch-size and the token budgets, or use a backend with more memory' };
  return { check: 'model-memory', status: 'ok', detail };
}

/**
 * On the native backend: onnxruntime keeps the frozen weights packed for MLAS in system memory, twice to train
 * (forward and backward: src/model/memory-need.ts), beside the wasm heap that holds the rest; on native-int8,
 * twice in 8-bit blocks.
 */
export function checkNativeModelMemory(config: ModelConfig, systemBytes: number, base: 'f32' | 'int8' = 'f32'): CheckResult {
  const need = memoryNeedOfConfig(config);
  const weights = need.weightBytes;
  const row = need.backends.find((b) => b.backend === (base === 'int8' ? 'native-int8' : 'native')) as MemoryNeed['backends'][number];
  const params = `${(parameterCount(config) / 1e6).toFixed(1)}M parameters`;
  const int8Hint = 'or --backend native-int8, which holds the frozen base in 8-bit blocks (about a quarter of the memory; an 8-bit base, not the f32 model: docs/method.md)';
  if (base === 'int8') {
    const detail = `${params}: the frozen base in 8-bit blocks, twice to train, and the f32 embedding table (${formatBytes(row.runBytes)}), ≈ ${formatBytes(row.needBytes)} with working memory; system memory holds ${formatBytes(systemBytes)}`;
    if (row.runBytes > systemBytes) return { check: 'model-memory', status: 'fail', detail, fix: 'a smaller model, or a machine with more memory (docs/models.md)' };
    if (row.needBytes > systemBytes) return { check: 'model-memory', status: 'warn', detail: `${detail}: the working memory may not fit`, fix: 'a smaller model or shorter sequences, or a machine with more memory (docs/models.md)' };
    return { check: 'model-memory', status: 'ok', detail };
  }
  const detail = `${params}: ${formatBytes(weights)} of f32 weights, packed twice by onnxruntime to train (${formatBytes(row.runBytes)} with the embedding table), ≈ ${formatBytes(row.needBytes)} with working memory; system memory holds ${formatBytes(systemBytes)}`;
  if (weights > systemBytes) return { check: 'model-memory', status: 'fail', detail, fix: `a smaller model, or a machine with more memory (docs/models.md), ${int8Hint}` };
  if (row.needBytes > systemBytes) {
    return {
      check: 'model-memory',
      status: 'warn',
      detail: `${detail}: onnxruntime will hold each matrix once, unpacked (${formatBytes(weights)}), and MLAS packs it per product (slower)`,
      fix:
        'a machine with more memory for the faster layout, or a smaller model; `npx sesa-train --model …` starts itself again without its malloc settings for such a model ' +
        "(they keep the load's freed copies resident: a Qwen3-4B shape in f32 on 24 GiB was killed for memory with them and loaded at 1.04× its weights without: docs/models.md); " +
        int8Hint,
    };
  }
  return { check: 'model-memory', status: 'ok', detail };
}

/** What the model needs on every backend (docs/models.md): from config.json, or the registry's rounded size. */
export function checkModelNeeds(need: MemoryNeed, source: string): CheckResult {
  return { check: 'model-needs', status: 'info', detail: `${source}: ${memoryNeedStatement(need)}` };
}

/** The E5 folder the skill embedder loads (offline): config, tokenizer and the ONNX weights. */
export function checkE5(options: Pick<DoctorOptions, 'embedder' | 'e5Model'>): CheckResult | undefined {
  if (options.embedder !== 'e5') return undefined;
  const model = options.e5Model;
  if (!model) return { check: 'e5', status: 'fail', detail: '--embedder e5 needs --e5-model FOLDER', fix: 'pass --e5-model with a local intfloat/e5-base-v2 ONNX folder, or --embedder lexical' };
  const isPath = /^(\.|\/|~)/.test(model) || existsSync(model);
  if (!isPath) {
    return {
      check: 'e5',
      status: 'warn',
      detail: `--e5-model ${model} is a Hub name: it loads only from transformers.js's cache (downloads are off by default), which this check does not read`,
      fix: 'pass a local folder with the ONNX export of intfloat/e5-base-v2 to have it checked',
    };
  }
  const dir = resolve(model);
  const missing = ['config.json', 'tokenizer.json', 'tokenizer_config.json', join('onnx', 'model.onnx')].filter((f) => !existsSync(join(dir, f)));
  return missing.length === 0
    ? { check: 'e5', status: 'ok', detail: `${dir}: config, tokenizer and onnx/model.onnx present` }
    : { check: 'e5', status: 'fail', detail: `${dir} lacks ${missing.join(', ')}`, fix: 'point --e5-model at a folder with the ONNX export of intfloat/e5-base-v2 (Xenova/e5-base-v2 layout), or use --embedder lexical' };
}
