// Tensor backend selection. Every other module imports `tf` from here and stays backend-agnostic.
//
// - `tensorflow`: @tensorflow/tfjs-node-gpu (CUDA) or @tensorflow/tfjs-node, optional peer dependencies that
//   are imported only when installed (their install downloads libtensorflow, impossible on some machines).
// - `wasm`: @tensorflow/tfjs-backend-wasm (XNNPACK, SIMD), with the workarounds in ./wasm-fixes.ts; on more
//   than one thread (the default: all cores) its threaded build, started by ./wasm-threads.ts.
// - `webgpu`: @tensorflow/tfjs-backend-webgpu on Dawn (npm `webgpu`), optional peers in the side folder
//   `.webgpu/`, started by ./webgpu.ts with the workarounds in ./webgpu-fixes.ts. Where Dawn finds no adapter it
//   is refused with Dawn's reason.
// - `native`: wasm's single-threaded build for the elementwise kernels, with every large matMul and the frozen
//   base model on onnxruntime-node's MLAS on `threads` threads (./native-matmul.ts, ./frozen-matrix.ts). The
//   threaded wasm build is not used: its heap is shared memory, which the binding refuses to read without a copy.
// - `cpu`: the pure-JS reference backend (slow, but exact and always present).
// - `auto`: the fastest that is available and it says which it picked, and why not the ones before it:
//   tfjs-node-gpu, then webgpu on a GPU adapter (not a CPU renderer), then tfjs-node, then native (where
//   onnxruntime-node's binding loads), then wasm.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { registerWasmFixes } from './wasm-fixes.js';
import { prepareBatchedMatMul } from './batched-matmul.js';
import { prepareFusedWat } from './fused-wat.js';
import { activateThreadedWasm, releaseThreadedWasm, WASM_MAX_THREADS, wasmThreadsRefusal } from './wasm-threads.js';
import { registerGradientFixes } from './gradient-fixes.js';
import { activateWebgpu, describeAdapter, probeWebgpu, WEBGPU_FLAGS_ENV, type WebgpuAdapterReport } from './webgpu.js';
import { registerWebgpuFixes } from './webgpu-fixes.js';
import { activateNativeMatMul, deactivateNativeMatMul } from './native-matmul.js';
import { ortAvailability } from './ort-binding.js';

export { tf };

export const BACKEND_CHOICES = ['auto', 'tensorflow', 'webgpu', 'native', 'native-int8', 'wasm', 'cpu'] as const;
export type BackendChoice = (typeof BACKEND_CHOICES)[number];
export type BackendName = 'tensorflow' | 'webgpu' | 'native' | 'wasm' | 'cpu';

export interface BackendInfo {
  /** The tfjs backend that is active. */
  name: BackendName;
  /** The package that provides it. */
  provider: string;
  /** Why it was picked (for `auto`) or that it was asked for. */
  reason: string;
  /**
   * Compute threads: wasm runs exactly this many; native runs its matMuls on this many (and the rest of tfjs on
   * one); cpu is 1; tensorflow, webgpu: not ours to set (undefined).
   */
  threads: number | undefined;
  /** The WebGPU adapter, on the webgpu backend. */
  adapter?: WebgpuAdapterReport;
  /** On native: the frozen base in 8-bit blocks (`--backend native-int8`, src/tensor/block-int8.ts). */
  frozenBase?: 'int8';
}

export interface BackendOptions {
  /** Compute threads for wasm (default: all cores, `availableParallelism()`); cpu accepts only 1. */
  threads?: number;
}

/** The backend as a user names it: its name, or `native-int8` for native with the 8-bit base. */
export function backendLabel(info: BackendInfo): string {
  return info.frozenBase === 'int8' ? 'native-int8' : info.name;
}

/** `backend: wasm (provider; reason; 2 threads)`, the line commands print at start. */
export function describeBackend(info: BackendInfo): string {
  const plural = (n: number): string => `${n} thread${n === 1 ? '' : 's'}`;
  const threads =
    info.name === 'webgpu'
      ? `adapter ${info.adapter ? describeAdapter(info.adapter) : '?'}`
      : info.threads === undefined
        ? 'threads managed by libtensorflow'
        : info.name === 'native'
          ? `matMuls on ${plural(info.threads)}, the rest on 1`
          : plural(info.threads);
  return `${backendLabel(info)} (${info.provider}; ${info.reason}; ${threads}${info.frozenBase === 'int8' ? '; the frozen base in 8-bit blocks' : ''})`;
}

let active: BackendInfo | undefined;

/**
 * Production mode: skips tfjs's debug checks and silences its warnings, including the "Hi, looks like you
 * are running TensorFlow.js in Node.js" banner of the cpu backend (we choose backends deliberately).
 */
function quietTfjsBanner(): void {
  tf.enableProdMode();
}

/** Whether node_modules holds `pkg`, decided by resolution, not by the error of an import. */
export function isInstalled(pkg: string): boolean {
  const require = createRequire(import.meta.url);
  for (const request of [`${pkg}/package.json`, pkg]) {
    try {
      require.resolve(request);
      return true;
    } catch {
      // not this way; try the next
    }
  }
  return false;
}

async function tryImport(pkg: string): Promise<boolean> {
  // A bundler's loader (vitest's) reports a missing package with its own error, without Node's code, so
  // absence is decided by resolution first and only an installed package's failure is an error.
  if (!isInstalled(pkg)) return false;
  try {
    await import(pkg);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return false;
    // Installed but broken (for example a CUDA library that does not load): say so, never fall back silently.
    throw new Error(`${pkg} is installed but failed to load: ${(err as Error).message}`);
  }
}

/** Loads the native TensorFlow binding if one is installed; returns its package name or undefined. */
async function loadTensorflowBinding(which: 'gpu' | 'cpu' | 'any' = 'any'): Promise<string | undefined> {
  const pkgs = { gpu: ['@tensorflow/tfjs-node-gpu'], cpu: ['@tensorflow/tfjs-node'], any: ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'] }[which];
  for (const pkg of pkgs) {
    if (await tryImport(pkg)) return pkg;
  }
  return undefined;
}

const WEBGPU_PROVIDER = '@tensorflow/tfjs-backend-webgpu on Dawn (webgpu)';

/** The sentence `--backend webgpu` is refused with where it cannot run. */
export function webgpuRefusal(reason: string): string {
  return `--backend webgpu cannot start: ${reason}. Use --backend wasm (or auto, which picks wasm here)${reason.includes('not installed') ? '' : `; ${WEBGPU_FLAGS_ENV} passes Dawn's options (docs/scale-out.md)`}.`;
}

async function activate(name: BackendName, threads: number | undefined, frozenBase: 'f32' | 'int8'): Promise<void> {
  // The native matMul path routes only on the `native` backend; every other start turns it off.
  if (name !== 'native') deactivateNativeMatMul();
  if (name === 'webgpu') {
    await activateWebgpu(probeWebgpu(), registerWebgpuFixes);
    registerGradientFixes();
    return;
  }
  // The tfjs backend underneath: native is the single-threaded wasm build.
  const tfName = name === 'native' ? 'wasm' : name;
  if (name === 'wasm' && threads !== undefined && threads > 1) {
    await activateThreadedWasm(threads);
  } else {
    // One wasm thread is the package's own (single-threaded SIMD) build; it is also what cpu tests switch to.
    if (tfName === 'wasm') releaseThreadedWasm();
    const ok = await tf.setBackend(tfName);
    await tf.ready();
    // tfjs falls back to another backend when initialisation fails; never accept that silently.
    if (!ok || tf.getBackend() !== tfName) {
      throw new Error(`tfjs backend '${tfName}' failed to initialise (active backend is '${tf.getBackend()}')`);
    }
  }
  registerGradientFixes();
  if (tfName === 'wasm') {
    registerWasmFixes();
    await prepareBatchedMatMul();
    await prepareFusedWat();
  }
  if (name === 'native') activateNativeMatMul(threads ?? availableParallelism(), frozenBase);
}

/**
 * Selects and initialises a backend. Idempotent for the same choice; switching backends in one process is
 * allowed (tests do it) and re-activates the requested one.
 */
export async function initBackend(choice: BackendChoice = 'auto', options: BackendOptions = {}): Promise<BackendInfo> {
  quietTfjsBanner();
  const requested = options.threads;
  if (requested !== undefined && (!Number.isInteger(requested) || requested < 1)) throw new Error(`--threads must be a positive integer, got ${requested}`);
  let info: Omit<BackendInfo, 'threads'>;
  if (choice === 'webgpu') {
    const probe = probeWebgpu();
    if (!probe.ok) throw new Error(webgpuRefusal(probe.reason));
    info = { name: 'webgpu', provider: WEBGPU_PROVIDER, reason: 'requested', adapter: probe.adapter };
  } else if (choice === 'tensorflow') {
    const pkg = await loadTensorflowBinding();
    if (!pkg) {
      throw new Error(
        "--backend tensorflow needs @tensorflow/tfjs-node-gpu (CUDA) or @tensorflow/tfjs-node, and neither is installed. " +
          'Install one with `npm install @tensorflow/tfjs-node-gpu@4.22.0` where its libtensorflow download is reachable, ' +
          'or use --backend wasm.',
      );
    }
    info = { name: 'tensorflow', provider: pkg, reason: 'requested' };
  } else if (choice === 'native' || choice === 'native-int8') {
    const ort = ortAvailability();
    if (!ort.ok) throw new Error(`--backend ${choice} cannot start: ${ort.reason}. Use --backend wasm (or auto, which picks wasm then)`);
    info = { name: 'native', provider: nativeProvider(ort.version as string), reason: 'requested', ...(choice === 'native-int8' ? { frozenBase: 'int8' as const } : {}) };
  } else if (choice === 'wasm') {
    info = { name: 'wasm', provider: '@tensorflow/tfjs-backend-wasm', reason: 'requested' };
  } else if (choice === 'cpu') {
    info = { name: 'cpu', provider: '@tensorflow/tfjs', reason: 'requested' };
  } else {
    info = await autoChoice();
  }
  let threads: number | undefined;
  if (info.name === 'wasm') {
    // Every core by default, up to the threaded build's pool; more asked for is refused with the maximum.
    if (requested !== undefined && requested > WASM_MAX_THREADS) throw new Error(wasmThreadsRefusal(requested));
    threads = requested ?? Math.min(availableParallelism(), WASM_MAX_THREADS);
  } else if (info.name === 'native') threads = requested ?? availableParallelism();
  else if (info.name === 'cpu') {
    if (requested !== undefined && requested > 1) throw new Error(`--threads ${requested}: the cpu backend runs on one thread; use --backend wasm for more`);
    threads = 1;
  } else if (requested !== undefined) {
    throw new Error(
      info.name === 'webgpu'
        ? `--threads ${requested}: the webgpu backend computes on its adapter, not on CPU threads; leave --threads unset`
        : `--threads ${requested}: the tensorflow backend sizes its own thread pool; leave --threads unset`,
    );
  }
  await activate(info.name, threads, info.frozenBase ?? 'f32');
  active = { ...info, threads };
  return active;
}

/**
 * `auto`: tfjs-node-gpu, then webgpu on a GPU adapter, then tfjs-node, then native (onnxruntime-node's binding),
 * then wasm; the reason names why each one before the pick was passed over (never a silent fallback).
 */
async function autoChoice(): Promise<Omit<BackendInfo, 'threads'>> {
  const gpuPkg = await loadTensorflowBinding('gpu');
  if (gpuPkg) return { name: 'tensorflow', provider: gpuPkg, reason: `auto: ${gpuPkg} is installed` };
  const probe = probeWebgpu();
  if (probe.ok && !probe.adapter.cpuRenderer) return { name: 'webgpu', provider: WEBGPU_PROVIDER, reason: `auto: Dawn found the WebGPU adapter ${describeAdapter(probe.adapter)}`, adapter: probe.adapter };
  const webgpuWhy = probe.ok ? `webgpu's adapter is ${describeAdapter(probe.adapter)}, slower than wasm` : probe.installed ? `webgpu: ${probe.reason}` : 'webgpu is not installed';
  const cpuPkg = await loadTensorflowBinding('cpu');
  if (cpuPkg) return { name: 'tensorflow', provider: cpuPkg, reason: `auto: ${cpuPkg} is installed (${webgpuWhy})` };
  const ort = ortAvailability();
  if (ort.ok) {
    return {
      name: 'native',
      provider: nativeProvider(ort.version as string),
      reason: `auto: no native TensorFlow binding installed; ${webgpuWhy}; onnxruntime-node's binding loads, so matMuls run natively`,
    };
  }
  return {
    name: 'wasm',
    provider: '@tensorflow/tfjs-backend-wasm',
    reason: `auto: no native TensorFlow binding installed; ${webgpuWhy}; ${ort.reason}; wasm (SIMD) is the fastest available`,
  };
}

function nativeProvider(version: string): string {
  return `onnxruntime-node ${version} (MLAS) with @tensorflow/tfjs-backend-wasm`;
}

export function activeBackend(): BackendInfo {
  if (!active) throw new Error('no tensor backend initialised: call initBackend() first');
  return active;
}

export function parseBackendChoice(value: string): BackendChoice {
  if ((BACKEND_CHOICES as readonly string[]).includes(value)) return value as BackendChoice;
  throw new Error(`--backend must be one of ${BACKEND_CHOICES.join(', ')}; got '${value}'`);
}
