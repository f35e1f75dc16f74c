// Which tensor backends load here, and why not. tfjs-node-gpu 4.22 links libtensorflow 2.9, built against
// CUDA 11.2 and cuDNN 8.1: it needs libcudart.so.11.0 and libcudnn.so.8 on the library path, and on GPUs newer
// than its compiled kernels (compute capability 9.0, Hopper, and up) CUDA JIT-compiles PTX at start-up, which
// takes minutes and can fail.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type CheckResult, type DoctorOptions, firstLine, type Probes } from './types.js';

export const TFJS_NODE_VERSION = '4.22.0';
/** The CUDA runtime and cuDNN sonames libtensorflow 2.9 (inside tfjs-node-gpu 4.22) opens. */
export const CUDA_LIBRARIES = ['libcudart.so.11.0', 'libcudnn.so.8'] as const;
/** Compute capability from which the GPU has no precompiled kernels in libtensorflow 2.9 (Hopper). */
export const PTX_JIT_FROM = 9.0;

function isMissingModule(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** The library folder holding `soname`, if any. */
export function findLibrary(soname: string, dirs: readonly string[]): string | undefined {
  return dirs.find((d) => existsSync(join(d, soname)));
}

/** The folders a dynamic loader would search (roughly): LD_LIBRARY_PATH, CUDA installs, the system folders. */
export function defaultLibraryDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const fromEnv = (env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== '');
  return [...fromEnv, '/usr/local/cuda/lib64', '/usr/local/cuda-11.2/lib64', '/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu'];
}

export interface GpuInfo {
  name: string;
  computeCapability: number;
  memoryMiB: number;
}

/** Parses `nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(stdout: string): GpuInfo[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((line) => {
      const parts = line.split(',').map((s) => s.trim());
      const [name, cc, mem] = parts;
      const computeCapability = Number(cc);
      const memoryMiB = Number(mem);
      if (!name || !Number.isFinite(computeCapability) || !Number.isFinite(memoryMiB)) throw new Error(`nvidia-smi: cannot read the line '${line}' (expected name, compute_cap, memory.total)`);
      return { name, computeCapability, memoryMiB };
    });
}

export async function listGpus(probes: Probes): Promise<{ gpus: GpuInfo[] } | { error: string }> {
  const out = await probes.run('nvidia-smi', ['--query-gpu=name,compute_cap,memory.total', '--format=csv,noheader,nounits'], 10_000);
  if (out.error) return { error: `nvidia-smi cannot run (${out.error})` };
  if (out.code !== 0) return { error: `nvidia-smi failed (exit ${out.code}): ${firstLine(out.stderr || out.stdout)}` };
  try {
    return { gpus: parseNvidiaSmi(out.stdout) };
  } catch (err) {
    return { error: firstLine(err) };
  }
}

const GPU_FIX = `npm install @tensorflow/tfjs-node-gpu@${TFJS_NODE_VERSION} (needs CUDA 11.2 and cuDNN 8.1 libraries and its libtensorflow download), or run on wasm`;
const CPU_FIX = `npm install @tensorflow/tfjs-node@${TFJS_NODE_VERSION} (downloads libtensorflow), or run on wasm`;

/** The CUDA side of tfjs-node-gpu: the libraries it links against, the GPUs, their compute capability. */
export async function checkCuda(probes: Probes, required: boolean): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const missing = CUDA_LIBRARIES.filter((lib) => findLibrary(lib, probes.libraryDirs) === undefined);
  const bad = required ? 'fail' : 'info';
  results.push(
    missing.length === 0
      ? { check: 'cuda-libraries', status: 'ok', detail: `${CUDA_LIBRARIES.join(', ')} found (${CUDA_LIBRARIES.map((l) => findLibrary(l, probes.libraryDirs)).join(', ')})` }
      : {
          check: 'cuda-libraries',
          status: bad,
          detail: `${missing.join(', ')} not found in ${probes.libraryDirs.length} library folders (tfjs-node-gpu ${TFJS_NODE_VERSION} links CUDA 11.2 / cuDNN 8.1)`,
          fix: 'install the CUDA 11.2 runtime and cuDNN 8.1 (e.g. the nvidia-cuda-runtime-cu11 / nvidia-cudnn-cu11 8.1 wheels or the CUDA 11.2 toolkit) and add their lib folders to LD_LIBRARY_PATH',
        },
  );
  const listed = await listGpus(probes);
  if ('error' in listed) {
    results.push({ check: 'gpus', status: bad, detail: listed.error, fix: 'install the NVIDIA driver (nvidia-smi comes with it), or run on wasm / the CPU' });
    return results;
  }
  if (listed.gpus.length === 0) {
    results.push({ check: 'gpus', status: bad, detail: 'nvidia-smi lists no GPU', fix: 'check CUDA_VISIBLE_DEVICES and the driver' });
    return results;
  }
  const summary = listed.gpus.map((g, i) => `${i}: ${g.name} (compute ${g.computeCapability.toFixed(1)}, ${(g.memoryMiB / 1024).toFixed(0)} GiB)`).join('; ');
  results.push({ check: 'gpus', status: 'ok', detail: `${listed.gpus.length} visible: ${summary}` });
  const jit = listed.gpus.filter((g) => g.computeCapability >= PTX_JIT_FROM);
  if (jit.length > 0) {
    results.push({
      check: 'ptx-jit',
      status: 'warn',
      detail: `compute capability ${jit[0]?.computeCapability.toFixed(1)} (${jit[0]?.name}) is newer than libtensorflow 2.9's precompiled kernels: CUDA JIT-compiles PTX at start-up (minutes, cached in ~/.nv/ComputeCache) and may fail`,
      fix: 'set CUDA_CACHE_MAXSIZE=4294967296 so the JIT cache survives, expect a slow first start; or use --rollout-engine llama.cpp (its CUDA build has Hopper kernels) for generation',
    });
  }
  return results;
}

/**
 * `--gpus N` (N > 1): one worker process on each of N GPUs, which needs the tensorflow GPU backend and N visible
 * GPUs (CUDA_VISIBLE_DEVICES, when set, names them). Without a GPU backend it fails, naming --workers N, which
 * runs N worker processes on the CPU: the trainer refuses --gpus there too rather than fall back to the CPU.
 */
export async function checkGpuWorkers(probes: Probes, gpus: number, gpuBackend: boolean, visible: string | undefined = process.env.CUDA_VISIBLE_DEVICES): Promise<CheckResult> {
  const cpuWorkers = `--workers ${gpus} runs ${gpus} worker processes on the CPU (one wasm thread each)`;
  if (!gpuBackend) {
    return {
      check: 'gpu-workers',
      status: 'fail',
      detail: `--gpus ${gpus} places one worker process on each of ${gpus} GPUs, which needs @tensorflow/tfjs-node-gpu to load, and it does not (see tfjs-node-gpu above)`,
      fix: `${GPU_FIX.replace(', or run on wasm', '')}; or ${cpuWorkers}`,
    };
  }
  const listed = await listGpus(probes);
  if ('error' in listed) return { check: 'gpu-workers', status: 'fail', detail: `--gpus ${gpus}: ${listed.error}`, fix: `install the NVIDIA driver (nvidia-smi comes with it); or ${cpuWorkers}` };
  const named = visible !== undefined && visible.trim() !== '' ? visible.split(',').map((d) => d.trim()).filter((d) => d !== '') : undefined;
  const count = named ? Math.min(named.length, listed.gpus.length) : listed.gpus.length;
  const where = named ? `CUDA_VISIBLE_DEVICES=${visible} names ${named.length} of the ${listed.gpus.length} GPUs nvidia-smi lists` : `nvidia-smi lists ${listed.gpus.length}`;
  if (count < gpus) return { check: 'gpu-workers', status: 'fail', detail: `--gpus ${gpus} needs ${gpus} GPUs, one per worker process; ${where}`, fix: `--gpus ${count} (or fewer), or make more GPUs visible` };
  return { check: 'gpu-workers', status: 'ok', detail: `--gpus ${gpus}: one worker process on each of ${gpus} GPUs (${where}); each holds the whole model and both adapters` };
}

/** tfjs-node-gpu, tfjs-node and wasm: which load, and why not. */
export async function checkTensorBackends(probes: Probes, options: Pick<DoctorOptions, 'backend'>): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const tensorflowWanted = options.backend === 'tensorflow';
  const loaded: string[] = [];
  for (const [pkg, fix] of [
    ['@tensorflow/tfjs-node-gpu', GPU_FIX],
    ['@tensorflow/tfjs-node', CPU_FIX],
  ] as const) {
    const name = pkg.replace('@tensorflow/', '');
    try {
      await probes.importPackage(pkg);
      loaded.push(pkg);
      results.push({ check: name, status: 'ok', detail: `${pkg} loads` });
    } catch (err) {
      if (isMissingModule(err)) results.push({ check: name, status: 'info', detail: `${pkg}: not installed`, fix });
      else {
        const msg = firstLine(err);
        const cudaHint = /libcud|cuda/i.test(msg) ? ' (a CUDA library is missing or the wrong version: see cuda-libraries)' : '';
        results.push({ check: name, status: tensorflowWanted || options.backend === 'auto' ? 'fail' : 'warn', detail: `${pkg} is installed but does not load: ${msg}${cudaHint}`, fix: `fix the libraries it names, or uninstall it (npm uninstall ${pkg}) so auto picks wasm` });
      }
    }
  }
  if (tensorflowWanted && loaded.length === 0) {
    results.push({ check: 'backend', status: 'fail', detail: '--backend tensorflow, but neither tfjs-node-gpu nor tfjs-node loads', fix: `${GPU_FIX}; or --backend wasm` });
  }
  const gpuImportable = results.some((r) => r.check === 'tfjs-node-gpu' && r.status !== 'info');
  results.push(...(await checkCuda(probes, gpuImportable && loaded.length === 0 && tensorflowWanted)));
  return results;
}

/**
 * The wasm backend as training starts it (src/tensor/backend.ts): the threaded-SIMD build on every core, or the
 * stock single-threaded build on a one-core machine. The stock build's own multithread flag is off in Node
 * whatever the trainer runs, so it is not what this reports.
 */
export async function checkWasm(options: Pick<DoctorOptions, 'backend' | 'threads'>): Promise<CheckResult> {
  const needed = options.backend === 'wasm' || options.backend === 'auto';
  try {
    const { tf, initBackend } = await import('../tensor/backend.js');
    const { releaseThreadedWasm, threadedWasmThreads } = await import('../tensor/wasm-threads.js');
    await import('@tensorflow/tfjs-backend-wasm');
    const simd = (await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')) === true;
    const info = await initBackend('wasm', options.threads !== undefined ? { threads: options.threads } : {});
    if (tf.getBackend() !== 'wasm') throw new Error(`active backend is '${tf.getBackend()}'`);
    const running = threadedWasmThreads() ?? 1;
    if (running !== info.threads) throw new Error(`asked for ${info.threads} threads, the backend runs ${running}`);
    releaseThreadedWasm();
    return {
      check: 'wasm',
      status: simd ? 'ok' : 'warn',
      detail: `@tensorflow/tfjs-backend-wasm initialises as training starts it; SIMD ${simd ? 'on' : 'off'}, ${running} thread${running === 1 ? '' : 's'} (${running > 1 ? `the threaded-SIMD build; ${options.threads !== undefined ? 'as --threads asks' : "training's --threads N changes it"}` : options.threads !== undefined ? 'the single-threaded build, as --threads 1 asks' : 'one core'})`,
      ...(simd ? {} : { fix: 'use Node ≥ 20.19 (SIMD is on by default there)' }),
    };
  } catch (err) {
    return { check: 'wasm', status: needed ? 'fail' : 'warn', detail: `the wasm backend does not initialise: ${firstLine(err)}`, fix: 'reinstall with npm ci; --backend cpu runs without it (slowly)' };
  }
}

/**
 * The native backend (src/tensor/backend.ts): onnxruntime-node's binding loads or not, and the layout a run would
 * get (matMuls and the frozen base on MLAS on --threads threads, the rest on the single-threaded wasm build).
 * `auto` picks it on a CPU machine wherever the binding loads.
 */
export async function checkNative(options: Pick<DoctorOptions, 'backend' | 'threads'>, cores: number): Promise<CheckResult> {
  const { ortAvailability } = await import('../tensor/ort-binding.js');
  const ort = ortAvailability();
  const wanted = options.backend === 'native' || options.backend === 'native-int8';
  if (!ort.ok) {
    return {
      check: 'native',
      status: wanted ? 'fail' : 'warn',
      detail: `${ort.reason}: matMuls run on wasm's XNNPACK (about a quarter of MLAS's speed here) and models over ~0.5B parameters do not fit the wasm heap`,
      fix: 'npm ci (onnxruntime-node is a dependency; its CPU binary ships in the package)',
    };
  }
  const threads = options.threads ?? cores;
  const picked = wanted ? `as --backend ${options.backend} asks${options.backend === 'native-int8' ? ', with the frozen base in 8-bit blocks' : ''}` : options.backend === 'auto' ? 'auto picks it unless a TensorFlow binding or a GPU adapter loads' : `not used: --backend ${options.backend}`;
  return {
    check: 'native',
    status: 'ok',
    detail: `onnxruntime-node ${ort.version} loads: matMuls and the frozen base on MLAS on ${threads} thread${threads === 1 ? '' : 's'}, the rest on the single-threaded wasm build (${picked})`,
  };
}
