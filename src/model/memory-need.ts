// What a model needs in memory on each tensor backend, from its shape alone (config.json, or the registry's
// parameter count for a model that is not downloaded yet), and the refusal before loading when the backend
// cannot hold it (docs/models.md). Every backend holds the weights as f32, whatever the file's dtype.
//
// - wasm: one 32-bit heap of 4 GiB, whatever the machine has. Besides the weights it holds XNNPACK's packed copy
//   of every weight matrix a matMul has read (as large again: ../rl/memory-budget.ts). When the heap cannot
//   take a packed copy, XNNPACK fails to create the operator ("XNN status ... Got status 6") and the matMul
//   does not run: measured on a Qwen3-0.6B-shaped model (0.6B parameters, 2.2 GiB of f32 weights), which
//   loads, prints that warning 58 times in one 3-token forward and scores a token NaN. So a model runs on wasm
//   only when its weights and their packed copy fit in 4 GiB: about 0.5B parameters at most.
// - native (onnxruntime-node's MLAS beside the wasm heap: src/tensor/frozen-matrix.ts): onnxruntime holds each
//   frozen weight matrix packed for MLAS in system memory, once for the forward and, when the model trains, once
//   more for the backward's dy·Wᵀ, and the embedding table (f32, a Gather: src/tensor/frozen-table.ts); the wasm heap
//   keeps the activations and adapters. So
//   twice the f32 weights, plus working memory, should fit the machine (measured on a Qwen3-0.6B shape:
//   docs/models.md). Where they do not but one copy does, onnxruntime holds each matrix once, unpacked, for
//   both products (layout `once`, slower: src/tensor/frozen-matrix.ts).
// - native-int8: the same, with each matrix's two copies in 8-bit blocks (src/tensor/block-int8.ts: 36 bytes per
//   32 values) instead of packed f32; the embedding table stays f32 (counted once, where config.json gives its shape).
// - tensorflow with @tensorflow/tfjs-node-gpu (CUDA 11.2, cuDNN 8.1): the weights and the working memory on
//   each GPU (with --gpus N every worker holds the whole model).
// - tensorflow with @tensorflow/tfjs-node, and cpu: the same in system memory (cpu is the slow JS reference).
import { totalmem } from 'node:os';
import { MODEL_REGISTRY, type RegistryEntry } from '../../models/registry.js';
import { packedWeightBytes, WASM_HEAP_LIMIT_BYTES } from '../tensor/wasm-heap.js';
import { tf } from '../tensor/backend.js';
import { nativeFrozenBase, nativeMatMulThreads } from '../tensor/native-matmul.js';
import { expectedTensors, type ModelConfig } from './config.js';

/** Activations, KV cache, LoRA and optimizer state on top of the f32 weights, as a fraction of them (an estimate). */
export const WORKING_MEMORY_FRACTION = 0.3;

const F32 = 4;

export function parameterCount(cfg: ModelConfig): number {
  let n = 0;
  for (const shape of expectedTensors(cfg).values()) n += shape.reduce((a, b) => a * b, 1);
  return n;
}

/** The backends as this page names them. */
export type MemoryBackend = 'wasm' | 'native' | 'native-int8' | 'tensorflow-gpu' | 'tensorflow-cpu' | 'cpu';

/** Copies of the f32 weights the native backend keeps to train: packed for the forward and for the backward. */
export const NATIVE_WEIGHT_COPIES = 2;
/** Bytes per weight of an 8-bit block copy (32 bytes and a float32 scale per 32 values: src/tensor/block-int8.ts). */
export const INT8_BLOCK_BYTES_PER_WEIGHT = 36 / 32;

export const MEMORY_BACKEND_LABELS: Record<MemoryBackend, string> = {
  wasm: 'wasm (4 GiB heap)',
  native: '--backend native (onnxruntime-node, what auto picks on a CPU machine), system memory',
  'native-int8': '--backend native-int8 (the frozen base in 8-bit blocks), system memory',
  'tensorflow-gpu': '--backend tensorflow with @tensorflow/tfjs-node-gpu (CUDA 11.2, cuDNN 8.1), per GPU',
  'tensorflow-cpu': '--backend tensorflow with @tensorflow/tfjs-node, system memory',
  cpu: '--backend cpu (the JS reference, very slow), system memory',
};

export interface MemoryNeed {
  parameters: number;
  /** True when counted from config.json; false for the registry's rounded figure. */
  exact: boolean;
  weightBytes: number;
  /** What the model needs on each backend to run (weights, wasm's packed copy) and with working memory. */
  backends: Array<{ backend: MemoryBackend; runBytes: number; needBytes: number; limitBytes?: number; fits?: 'yes' | 'tight' | 'no' }>;
}

/** The embedding table, where the shape is known: its floats, and whether the LM head is that table. */
export interface EmbeddingTable {
  floats: number;
  tied: boolean;
}

/**
 * What a model of `parameters` needs per backend. Natively the embedding table is held once, in f32 (a Gather),
 * and a tied head is that table again as a frozen matrix: with `table` known (from config.json) the native rows
 * count exactly that; without it (a registry size) every weight is counted as a frozen matrix.
 */
export function memoryNeed(parameters: number, exact: boolean, table: EmbeddingTable = { floats: 0, tied: false }): MemoryNeed {
  const weightBytes = F32 * parameters;
  const working = weightBytes * WORKING_MEMORY_FRACTION;
  const wasmRun = weightBytes + packedWeightBytes(parameters);
  const fits = wasmRun > WASM_HEAP_LIMIT_BYTES ? 'no' : wasmRun + working > WASM_HEAP_LIMIT_BYTES ? 'tight' : 'yes';
  // Bytes of the frozen matrices (the tied head included) at `perWeight` bytes a copy, plus the f32 table.
  const native = (perWeight: number): number => NATIVE_WEIGHT_COPIES * perWeight * (parameters - table.floats + (table.tied ? table.floats : 0)) + F32 * table.floats;
  return {
    parameters,
    exact,
    weightBytes,
    backends: [
      { backend: 'wasm', runBytes: wasmRun, needBytes: wasmRun + working, limitBytes: WASM_HEAP_LIMIT_BYTES, fits },
      { backend: 'native', runBytes: native(F32), needBytes: native(F32) + working },
      { backend: 'native-int8', runBytes: native(INT8_BLOCK_BYTES_PER_WEIGHT), needBytes: native(INT8_BLOCK_BYTES_PER_WEIGHT) + working },
      ...(['tensorflow-gpu', 'tensorflow-cpu', 'cpu'] as const).map((backend) => ({ backend, runBytes: weightBytes, needBytes: weightBytes + working })),
    ],
  };
}

export function memoryNeedOfConfig(cfg: ModelConfig): MemoryNeed {
  return memoryNeed(parameterCount(cfg), true, { floats: cfg.vocabSize * cfg.hiddenSize, tied: cfg.tieWordEmbeddings });
}

export function memoryNeedOfEntry(e: RegistryEntry): MemoryNeed {
  return memoryNeed(Math.round(e.paramsB * 1e9), false);
}

/** A size shown with one decimal: in GiB from 0.1 GiB up, in MiB (or KiB) below, never "0.0 GiB". */
export function gib(n: number): string {
  if (n >= 2 ** 30 / 10) return `${(n / 2 ** 30).toFixed(1)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 2 ** 10).toFixed(1)} KiB`;
}

function paramsText(n: MemoryNeed): string {
  const count = n.parameters >= 1e9 ? `${(n.parameters / 1e9).toFixed(2)}B` : `${(n.parameters / 1e6).toFixed(1)}M`;
  return `${n.exact ? '' : '≈ '}${count} parameters, ${n.exact ? '' : '≈ '}${gib(n.weightBytes)} of f32 weights`;
}

/** One line per backend: what the model needs there, and for wasm whether it fits the 4 GiB heap. */
export function memoryNeedLines(n: MemoryNeed): string[] {
  return n.backends.map((b) => {
    if (b.backend === 'wasm') {
      const verdict = b.fits === 'no' ? 'does not fit' : b.fits === 'tight' ? 'runs, with less working memory left than this estimate' : 'fits';
      return `wasm: ${gib(b.runBytes)} with XNNPACK's packed copy of the weights, ≈ ${gib(b.needBytes)} with working memory: ${verdict} (heap 4.0 GiB)`;
    }
    if (b.backend === 'native-int8') return `native-int8: ≈ ${gib(b.needBytes)} of system memory to train (the weights in 8-bit blocks, twice, ${gib(b.runBytes)}, + working memory; an 8-bit base, not the f32 model: docs/method.md)`;
    if (b.backend === 'native') return `native: ≈ ${gib(b.needBytes)} of system memory to train (the weights packed twice by onnxruntime, ${gib(b.runBytes)}, + working memory; where that does not fit, held once, unpacked, and slower: ≥ ${gib(n.weightBytes)})`;
    return `${MEMORY_BACKEND_LABELS[b.backend]}: ≈ ${gib(b.needBytes)} (${gib(b.runBytes)} of weights + working memory)`;
  });
}

/** The statement doctor prints for a model: its size, then one clause per backend. */
export function memoryNeedStatement(n: MemoryNeed): string {
  return `${paramsText(n)}. ${memoryNeedLines(n).join('; ')}`;
}

/**
 * The refusal before loading: a message when the active tensor backend cannot hold the model (wasm: weights and
 * their packed copy over the 4 GiB heap; cpu: weights over the machine's memory), naming the model, the
 * figures and the backends that would hold it; undefined when it fits.
 */
export function backendRefusal(label: string, n: MemoryNeed, backend: string | undefined, systemBytes: number = totalmem()): string | undefined {
  const wasm = n.backends.find((b) => b.backend === 'wasm');
  const native = n.backends.find((b) => b.backend === 'native');
  const others = n.backends.filter((b) => b.backend !== 'wasm' && b.backend !== 'cpu');
  const alternatives = others.map((b) => `${MEMORY_BACKEND_LABELS[b.backend]} with ≈ ${gib(b.needBytes)}`).join(', or ');
  if (backend === 'wasm' && wasm && wasm.fits === 'no') {
    return (
      `${label}: ${paramsText(n)}; the wasm backend holds the weights and XNNPACK's packed copy of them (${gib(wasm.runBytes)}) in one 4 GiB heap, ` +
      `so it cannot run this model. Backends that would: ${alternatives} (this machine has ${gib(systemBytes)} of memory). ` +
      'The memory each model needs per backend: docs/models.md, or sesa-train doctor --model NAME'
    );
  }
  if (backend === 'native' && native && n.weightBytes > systemBytes) {
    return (
      `${label}: ${paramsText(n)}; the native backend keeps them in system memory (packed twice to train, ${gib(native.runBytes)}; at least once, unpacked), more than this machine's ${gib(systemBytes)}. ` +
      `Backends that would: ${others.filter((b) => b.backend !== 'native').map((b) => `${MEMORY_BACKEND_LABELS[b.backend]} with ≈ ${gib(b.needBytes)}`).join(', or ')} (docs/models.md)`
    );
  }
  const int8 = n.backends.find((b) => b.backend === 'native-int8');
  if (backend === 'native-int8' && int8 && int8.runBytes > systemBytes) {
    return `${label}: ${paramsText(n)}; the native-int8 backend keeps them in system memory in 8-bit blocks (${gib(int8.runBytes)} to train), more than this machine's ${gib(systemBytes)} (docs/models.md)`;
  }
  // The cpu backend keeps every tensor in this process's memory. (With tensorflow the weights may live on a GPU,
  // whose memory this process does not see: doctor checks it.)
  if (backend === 'cpu' && n.weightBytes > systemBytes) {
    return `${label}: ${paramsText(n)}, more than this machine's ${gib(systemBytes)} of memory, which the cpu backend keeps them in. Backends that would: ${alternatives} (docs/models.md)`;
  }
  return undefined;
}

/**
 * How the native backend holds a model's frozen weights on a machine of `systemBytes`: packed twice (forward and
 * backward) where that and the working memory fit, else once, unpacked, where one copy does; undefined where
 * not even that fits (`backendRefusal` refuses it).
 */
export function nativeLayout(n: MemoryNeed, systemBytes: number = totalmem()): 'packed' | 'once' | undefined {
  const native = n.backends.find((b) => b.backend === 'native');
  if (!native || native.needBytes <= systemBytes) return 'packed';
  return n.weightBytes <= systemBytes ? 'once' : undefined;
}

/**
 * The warning for a load whose native weights are held once (they barely fit) in a process started with the glibc
 * malloc settings of bin/sesa-train.mjs, which keep every freed copy of the load resident (docs/models.md: a
 * Qwen3-4B shape was killed at 24.3 GB on 24 GiB with them and peaked at 20.5 GB without); undefined otherwise.
 */
export function mallocSettingsWarning(dir: string, backend: string | undefined, layout: 'packed' | 'once', env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (backend !== 'native' || layout !== 'once' || env.MALLOC_MMAP_THRESHOLD_ === undefined) return undefined;
  return (
    `${dir}: the frozen weights barely fit this machine (held once, unpacked), and this process runs with the malloc settings of bin/sesa-train.mjs ` +
    `(MALLOC_MMAP_THRESHOLD_), which keep the load's freed copies resident: the load may be killed for memory. The bin starts itself again without ` +
    'them when --model names such a model, but not for one it cannot see there (named in a file, or fetched by --download): if it is killed, start it with ' +
    '`node bin/sesa-train.mjs …` (no settings), or use --backend native-int8 (an 8-bit base, about a quarter of the memory: docs/models.md)'
  );
}

/**
 * The tensor backend that is active, without starting one (undefined before any command started its backend):
 * 'native' (or 'native-int8') while the native matMul path runs on the wasm backend.
 */
export function activeBackendName(): string | undefined {
  const name = (tf.engine() as { backendName?: string | null }).backendName;
  if (name === 'wasm' && nativeMatMulThreads() !== undefined) return nativeFrozenBase() === 'int8' ? 'native-int8' : 'native';
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** The table of docs/models.md: every registry model, its size and what it needs per backend. */
export function modelMemoryMarkdown(): string {
  const head = '| model | parameters | f32 weights | wasm (4 GiB heap) | system memory to train (native) | the same, 8-bit base (native-int8) | GPU memory per GPU (tfjs-node-gpu) | system memory (tfjs-node, cpu) |';
  const rows = MODEL_REGISTRY.map((e) => {
    const n = memoryNeedOfEntry(e);
    const b = (k: MemoryBackend) => n.backends.find((x) => x.backend === k) as MemoryNeed['backends'][number];
    const w = b('wasm');
    const wasm = w.fits === 'no' ? `no (${gib(w.runBytes)} with the packed copy)` : w.fits === 'tight' ? `only just (${gib(w.runBytes)} to run, ≈ ${gib(w.needBytes)} with working memory)` : `yes (${gib(w.needBytes)})`;
    return `| \`${e.name}\` | ${e.paramsB}B | ${gib(n.weightBytes)} | ${wasm} | ≥ ${gib(b('native').needBytes)} (once, slower: ≥ ${gib(n.weightBytes)}) | ≥ ${gib(b('native-int8').needBytes)} | ≥ ${gib(b('tensorflow-gpu').needBytes)} | ≥ ${gib(b('tensorflow-cpu').needBytes)} |`;
  });
  return [head, '|---|---|---|---|---|---|---|---|', ...rows].join('\n');
}
