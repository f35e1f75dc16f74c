// node-llama-cpp is an optional peer dependency (its GPU builds weigh ~680 MB; see docs/usage.md, "Install size"), so it
// is loaded at run time and never named in a static import: the project typechecks and runs without it. The
// interfaces below are the small part of its API this project calls, written out here so that `tsc` does not
// need the package; the llama.cpp tests (test/reference-llamacpp*.test.ts, test/llama-cpp-engine.test.ts) use
// them against the real thing.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../util/shared-data.js';

/** The version this project is tested with (package.json's peer dependency). */
export const NODE_LLAMA_CPP_VERSION = '3.21.1';

/**
 * The side folder (under the repository root) llama.cpp is installed into: `--omit=optional` there drops
 * node-llama-cpp's GPU builds without touching the project's own optional packages (esbuild's and rolldown's
 * native binaries, which the same flag would remove from the project's node_modules), and `npm ci` in the
 * project leaves it alone. (`npm install --no-save node-llama-cpp` in the project itself installs nothing,
 * because package.json lists it as an optional peer.)
 */
export const LLAMA_CPP_SIDE_DIR = '.llama-cpp';

/** The one command that adds llama.cpp, per target (run in the repository root). */
export const LLAMA_CPP_INSTALL = {
  /** Every prebuilt binary for this platform (CPU, CUDA, Vulkan; ~750 MB unpacked): what a GPU box wants. */
  full: `npm install --prefix ${LLAMA_CPP_SIDE_DIR} --no-save node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`,
  /** The CPU build for x64 Linux alone (~80 MB unpacked). */
  cpuOnly: `npm install --prefix ${LLAMA_CPP_SIDE_DIR} --no-save --omit=optional node-llama-cpp@${NODE_LLAMA_CPP_VERSION} @node-llama-cpp/linux-x64@${NODE_LLAMA_CPP_VERSION}`,
} as const;

export type LlamaToken = number;

export interface LlamaSequenceEvaluateOptions {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
}

export type LlamaControlledInputItem = LlamaToken | [LlamaToken, { generateNext?: { probabilities?: boolean; token?: boolean; options?: { temperature?: number } } }];

export interface LlamaControlledOutputItem {
  next: { token?: LlamaToken | null; probabilities?: Map<LlamaToken, number> };
}

export interface LlamaContextSequence {
  clearHistory(): Promise<void>;
  evaluate(tokens: LlamaToken[], options?: LlamaSequenceEvaluateOptions): AsyncGenerator<LlamaToken, void, void | LlamaToken | LlamaToken[]>;
  evaluateWithoutGeneratingNewTokens(tokens: LlamaToken[]): Promise<void>;
  controlledEvaluate(input: LlamaControlledInputItem[]): Promise<Array<LlamaControlledOutputItem | undefined>>;
  dispose(): void;
}

export interface LlamaContextOptions {
  contextSize: number;
  sequences: number;
  batchSize?: number;
  flashAttention?: boolean;
  experimentalKvCacheKeyType?: 'F32' | 'F16';
  experimentalKvCacheValueType?: 'F32' | 'F16';
  threads?: number | { ideal: number; min: number };
  lora?: { adapters: Array<{ filePath: string; scale?: number }> };
}

export interface LlamaContext {
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  createContext(options: LlamaContextOptions): Promise<LlamaContext>;
  tokenize(text: string, specialTokens?: boolean): LlamaToken[];
  dispose(): Promise<void>;
}

export type LlamaGpuType = 'cuda' | 'vulkan' | 'metal' | false;

export interface Llama {
  readonly gpu: LlamaGpuType;
  readonly buildType: 'localBuild' | 'prebuilt';
  loadModel(options: { modelPath: string; gpuLayers?: number | 'auto' | 'max' }): Promise<LlamaModel>;
  getGpuDeviceNames(): Promise<string[]>;
  dispose(): Promise<void>;
}

export interface GgufFileInfoLike {
  version: number;
  metadata: unknown;
  fullTensorInfo?: Array<{ name: string; dimensions: Array<number | bigint>; fileOffset: number | bigint }>;
}

export interface NodeLlamaCpp {
  getLlama(options: { gpu?: 'auto' | LlamaGpuType; build?: 'never' | 'auto'; logLevel?: string; maxThreads?: number; progressLogs?: boolean }): Promise<Llama>;
  getLlamaGpuTypes(include: 'supported' | 'allValid'): Promise<LlamaGpuType[]>;
  getModuleVersion(): Promise<string>;
  readGgufFileInfo(path: string, options?: { readTensorInfo?: boolean }): Promise<GgufFileInfoLike>;
}

export class LlamaCppUnavailableError extends Error {
  constructor(override readonly cause: unknown) {
    super(
      `node-llama-cpp is not installed (it is an optional peer dependency: ${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}). ` +
        `Install it with \`${LLAMA_CPP_INSTALL.full}\` (GPU box) or \`${LLAMA_CPP_INSTALL.cpuOnly}\` (CPU only, x64 Linux).`,
    );
    this.name = 'LlamaCppUnavailableError';
  }
}

// A string-typed specifier keeps TypeScript from resolving the module at compile time.
const SPECIFIER: string = 'node-llama-cpp';
let loaded: Promise<NodeLlamaCpp> | undefined;

/** Where node-llama-cpp is found: the normal module resolution first, then the side folder. */
async function importNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  try {
    return (await import(SPECIFIER)) as NodeLlamaCpp;
  } catch (first) {
    const side = join(repoRoot(), LLAMA_CPP_SIDE_DIR, 'node_modules', SPECIFIER);
    if (!existsSync(side)) throw first;
    const entry = createRequire(join(repoRoot(), LLAMA_CPP_SIDE_DIR, 'node_modules', '')).resolve(SPECIFIER);
    return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
  }
}

/** The node-llama-cpp module; rejects with LlamaCppUnavailableError (carrying the install command) when absent. */
export function loadNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  loaded ??= importNodeLlamaCpp().catch((err: unknown) => {
    loaded = undefined;
    throw new LlamaCppUnavailableError(err);
  });
  return loaded;
}

/** Why node-llama-cpp cannot be used here, or undefined when it loads (for test skip reasons and `doctor`). */
export async function llamaCppUnavailableReason(): Promise<string | undefined> {
  try {
    await loadNodeLlamaCpp();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

const llamaInstances = new Map<string, Promise<Llama>>();

export interface OpenLlamaOptions {
  /** false = the CPU build even where a GPU build is installed (the parity tests); default 'auto'. */
  gpu?: 'auto' | false;
  maxThreads?: number;
}

/**
 * One llama.cpp instance per process (loading the native addon takes ~0.5 s). It never builds from source: a
 * missing prebuilt binary is an error with the install command, not a compiler run.
 */
export function openLlama(options: OpenLlamaOptions = {}): Promise<Llama> {
  const key = JSON.stringify([options.gpu ?? 'auto', options.maxThreads ?? 0]);
  let instance = llamaInstances.get(key);
  if (!instance) {
    instance = loadNodeLlamaCpp()
      .then((m) => m.getLlama({ gpu: options.gpu ?? 'auto', build: 'never', logLevel: 'error', progressLogs: false, ...(options.maxThreads ? { maxThreads: options.maxThreads } : {}) }))
      .catch((err: unknown) => {
        llamaInstances.delete(key);
        throw err;
      });
    llamaInstances.set(key, instance);
  }
  return instance;
}
