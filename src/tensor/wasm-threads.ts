// The multi-threaded wasm backend in Node.
//
// @tensorflow/tfjs-backend-wasm ships a threaded-SIMD build (XNNPACK with a pthread pool over worker threads)
// but never uses it in Node: its thread-support flag is hard-wired off there, and forcing it on makes the
// package hand Node's Worker a `blob:` URL, which Node refuses (tfjs then falls back to the cpu backend
// without a word). So we instantiate the threaded build ourselves:
//
// - Its pthread workers need two real files: the worker script (the package exports its text as a string) and
//   a "main script" every worker evaluates to get the module factory. Both are written once per package
//   version to a folder under the OS temp dir.
// - The backend sizes its thread pool as min(requested, logical cores / 2) (it assumes two hyperthreads per
//   core). On a machine without SMT that halves the threads, so while the pool is created we report twice the
//   requested count as the number of logical cores; the count that resulted is checked afterwards.
// - The instance is registered under the backend name `wasm`, so every wasm kernel (and our own, in
//   ./wasm-fixes.ts) runs on it unchanged.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import * as wasmBackend from '@tensorflow/tfjs-backend-wasm';
import { writeFileAtomic } from '../util/atomic.js';

const require = createRequire(import.meta.url);

/**
 * The most compute threads the wasm backend runs: @tensorflow/tfjs-backend-wasm's threaded build is compiled
 * with a pool of 8 pthreads (its `pthreadPoolSize`), and XNNPACK gets no more (docs/usage.md, "Backends").
 */
export const WASM_MAX_THREADS = 8;

/** Why --threads N over that pool is refused, with the maximum. */
export function wasmThreadsRefusal(threads: number): string {
  return `--threads ${threads}: the wasm backend runs at most ${WASM_MAX_THREADS} compute threads (the thread pool its threaded build is compiled with); give --threads ${WASM_MAX_THREADS} or fewer, or use --backend native (its matMuls take any count)`;
}
const PACKAGE = '@tensorflow/tfjs-backend-wasm';
const BUILD = 'tfjs-backend-wasm-threaded-simd';

/** What the backend class needs from the Emscripten module (the bridge tfjs builds in its own init). */
interface ThreadedModule {
  cwrap(name: string, ret: string | null, args: string[]): (...args: number[]) => unknown;
  PThread: { terminateAllThreads(): void; runningWorkers: Array<{ unref(): void }> };
  tfjs?: Record<string, (...args: number[]) => unknown>;
}

type ModuleFactory = (config: Record<string, unknown>) => Promise<ThreadedModule>;

let current: { module: ThreadedModule; threads: number } | undefined;

function packageFolder(): { wasmOut: string; version: string } {
  const root = dirname(require.resolve(`${PACKAGE}/package.json`));
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return { wasmOut: join(root, 'wasm-out'), version };
}

/** Writes (once) the worker script and the main script the pthread workers load; returns their paths. */
function workerFiles(wasmOut: string, version: string): { worker: string; main: string } {
  const dir = join(os.tmpdir(), `sesa-train-tfjs-wasm-${version}-${os.userInfo().uid}`);
  const worker = join(dir, `${BUILD}.worker.js`);
  const main = join(dir, `${BUILD}.main.js`);
  const factoryPath = join(wasmOut, `${BUILD}.js`);
  // The package keeps the worker source in a template string whose `\n` escapes became real newlines; inside
  // the script's own string literals they must be escapes again (the package does the same for its blob).
  const workerText = (require(join(wasmOut, `${BUILD}.worker.js`)) as { wasmWorkerContents: string }).wasmWorkerContents.replace(/\n/g, '\\n');
  // Workers evaluate this text in their global scope: it loads the factory as a CommonJS module.
  const mainText = `var WasmBackendModuleThreadedSimd = require(${JSON.stringify(factoryPath)});\n`;
  for (const [path, text] of [
    [worker, workerText],
    [main, mainText],
  ] as const) {
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileAtomic(path, text);
  }
  return { worker, main };
}

/** The JS bridge to the module's exported C functions (what tfjs's own init attaches as `module.tfjs`). */
function bridge(module: ThreadedModule): Record<string, (...args: number[]) => unknown> {
  return {
    init: module.cwrap('init', null, []),
    initWithThreadsCount: module.cwrap('init_with_threads_count', null, ['number']),
    getThreadsCount: module.cwrap('get_threads_count', 'number', []),
    registerTensor: module.cwrap('register_tensor', null, ['number', 'number', 'number']),
    disposeData: module.cwrap('dispose_data', null, ['number']),
    dispose: module.cwrap('dispose', null, []),
  };
}

/**
 * Runs `body` while `os.cpus()` reports `2 × threads` logical cores (see the header: the backend sizes its pool
 * from that count while the module starts and while the backend is made), then restores it.
 */
async function withReportedCores<T>(threads: number, body: () => Promise<T>): Promise<T> {
  const realCpus = os.cpus;
  (os as { cpus: () => os.CpuInfo[] }).cpus = () => {
    const cpus = realCpus();
    return Array.from({ length: 2 * threads }, (_, i) => (cpus[i] ?? cpus[0]) as os.CpuInfo);
  };
  try {
    return await body();
  } finally {
    (os as { cpus: () => os.CpuInfo[] }).cpus = realCpus;
  }
}

/** Creates the backend instance with exactly `threads` XNNPACK threads, or throws. */
function createBackend(module: ThreadedModule, threads: number): tf.KernelBackend {
  wasmBackend.setThreadsCount(threads);
  const Backend = (wasmBackend as unknown as { BackendWasm: new (m: ThreadedModule) => tf.KernelBackend }).BackendWasm;
  const backend = new Backend(module);
  const got = wasmBackend.getThreadsCount();
  if (got !== threads) throw new Error(`the threaded wasm backend started ${got} threads, not the ${threads} requested`);
  // The pool's threads wait for work forever; unreferenced, they do not keep Node from exiting.
  for (const worker of module.PThread.runningWorkers) worker.unref();
  return backend;
}

/** The package's own `wasm` registration (single-threaded SIMD build), kept to restore it. */
let stockRegistration: { factory: () => tf.KernelBackend | Promise<tf.KernelBackend>; priority: number } | undefined;

function registry(): Record<string, { factory: () => tf.KernelBackend | Promise<tf.KernelBackend>; priority: number } | undefined> {
  return (tf.engine() as unknown as { registryFactory: Record<string, { factory: () => tf.KernelBackend; priority: number } | undefined> }).registryFactory;
}

/**
 * Registers the threaded-SIMD wasm build as the `wasm` backend with `threads` threads (replacing whatever was
 * registered under that name) and makes it active. Throws when anything does not come up as asked.
 */
export async function activateThreadedWasm(threads: number): Promise<void> {
  if (!Number.isInteger(threads) || threads < 2) throw new Error(`threaded wasm needs at least 2 threads, got ${threads}`);
  if (current?.threads === threads) {
    if (!(await tf.setBackend('wasm')) || tf.getBackend() !== 'wasm') throw new Error('tfjs could not switch back to the threaded wasm backend');
    return;
  }
  releaseThreadedWasm();
  stockRegistration ??= registry().wasm;
  const { wasmOut, version } = packageFolder();
  const files = workerFiles(wasmOut, version);
  const factory = require(join(wasmOut, `${BUILD}.js`)) as ModuleFactory;
  const { module, backend } = await withReportedCores(threads, async () => {
    const module = await factory({
      locateFile: (path: string) => (path.endsWith('.worker.js') ? files.worker : join(wasmOut, path)),
      mainScriptUrlOrBlob: files.main,
    });
    module.tfjs = bridge(module);
    // The backend instance is made here, synchronously, so that a failure is an error of this call (inside
    // tf.setBackend it would only be logged, and tfjs would fall back to another backend).
    try {
      return { module, backend: createBackend(module, threads) };
    } catch (err) {
      module.PThread.terminateAllThreads();
      throw err;
    }
  });
  if (registry().wasm) tf.removeBackend('wasm');
  tf.registerBackend('wasm', () => backend, 2);
  current = { module, threads };
  const ok = await tf.setBackend('wasm');
  if (!ok || tf.getBackend() !== 'wasm') throw new Error(`the threaded wasm backend did not initialise (active backend is '${tf.getBackend()}')`);
}

/** Threads of the threaded wasm backend when it is registered, else undefined (the stock build, one thread). */
export function threadedWasmThreads(): number | undefined {
  return current?.threads;
}

/**
 * Removes the threaded backend (its tensors go with it), stops its worker threads and restores the package's
 * own single-threaded `wasm` registration.
 */
export function releaseThreadedWasm(): void {
  if (!current) return;
  const { module } = current;
  current = undefined;
  tf.removeBackend('wasm');
  module.PThread.terminateAllThreads();
  wasmBackend.setThreadsCount(1);
  if (stockRegistration) tf.registerBackend('wasm', stockRegistration.factory, stockRegistration.priority);
}
