// Runs every check that applies to the run as given, in the order a user would fix things, and decides the
// exit code: 0 only when no check fails.
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { DEMO_MODEL_NAME, demoModelPath } from '../checkpoint/model-name.js';
import { execFile } from 'node:child_process';
import { availableParallelism, totalmem } from 'node:os';
import { checkLlamaCpp } from './llama-cpp.js';
import { lookupModel } from '../../models/registry.js';
import { memoryNeedOfConfig, memoryNeedOfEntry } from '../model/memory-need.js';
import { checkE5, checkModelFolder, checkModelMemory, checkModelNeeds, checkNativeModelMemory, WASM_HEAP_BYTES } from './model.js';
import { checkRetriever } from './retriever.js';
import { checkDisk, checkHugePages, checkNode, freeBytesAt, probeHugePages } from './system.js';
import { checkpointBytes, type DiskNeed, ggufExportBytes } from '../checkpoint/disk-need.js';
import { PROJECTIONS } from '../model/qwen3.js';
import { checkGpuWorkers, checkNative, checkTensorBackends, checkWasm, defaultLibraryDirs, listGpus } from './tensor-backends.js';
import type { CheckResult, CommandOutput, DoctorOptions, Probes } from './types.js';
import { checkWebgpu, checkWebgpuModel } from './webgpu.js';
import { probeWebgpu } from '../tensor/webgpu.js';

export function defaultProbes(): Probes {
  return {
    nodeVersion: process.version,
    importPackage: (name) => import(name),
    run: (command, args, timeoutMs) =>
      new Promise<CommandOutput>((done) => {
        execFile(command, args, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
          const code = err ? ((err as { code?: unknown }).code ?? null) : 0;
          if (typeof code === 'string') done({ code: null, stdout, stderr, error: code });
          else done({ code: typeof code === 'number' ? code : null, stdout, stderr });
        });
      }),
    libraryDirs: defaultLibraryDirs(),
    freeBytes: freeBytesAt,
    totalMemoryBytes: totalmem(),
    webgpu: () => probeWebgpu(),
    hugePages: () => probeHugePages(),
  };
}

export interface DoctorReport {
  results: CheckResult[];
  /** True when the run as given would start (no check failed). */
  ready: boolean;
}

export async function runDoctor(options: DoctorOptions, probes: Probes = defaultProbes()): Promise<DoctorReport> {
  const results: CheckResult[] = [checkNode(probes)];
  const tensor = await checkTensorBackends(probes, options);
  results.push(...tensor);
  const webgpu = probes.webgpu();
  results.push(checkWebgpu(webgpu, options));
  results.push(await checkWasm(options));
  const native = await checkNative(options, availableParallelism());
  results.push(native);
  results.push(await checkLlamaCpp(options));

  // The backend the run would use, and how much memory that backend can hold.
  const tfLoads = (name: string): boolean => tensor.some((r) => r.check === name && r.status === 'ok');
  const gpuBackend = (options.backend === 'tensorflow' || options.backend === 'auto') && tfLoads('tfjs-node-gpu');
  // auto takes a GPU adapter after tfjs-node-gpu and before tfjs-node (src/tensor/backend.ts).
  const webgpuAdapter = webgpu.ok && (options.backend === 'webgpu' || (options.backend === 'auto' && !gpuBackend && !webgpu.adapter.cpuRenderer)) ? webgpu.adapter : undefined;
  const cpuTensorflow = !gpuBackend && !webgpuAdapter && (options.backend === 'tensorflow' || options.backend === 'auto') && tfLoads('tfjs-node');
  // auto takes native after tfjs-node, wherever onnxruntime-node's binding loads.
  const nativeBackend = native.status === 'ok' && (options.backend === 'native' || options.backend === 'native-int8' || (options.backend === 'auto' && !gpuBackend && !webgpuAdapter && !cpuTensorflow));
  const hugePages = checkHugePages(probes.hugePages, nativeBackend);
  if (hugePages) results.push(hugePages);
  if ((options.gpus ?? 1) > 1) results.push(await checkGpuWorkers(probes, options.gpus as number, gpuBackend));
  let limit = Math.min(WASM_HEAP_BYTES, probes.totalMemoryBytes);
  let limitName = 'the wasm heap (4 GiB cap)';
  if (gpuBackend) {
    const listed = await listGpus(probes);
    const smallest = 'gpus' in listed && listed.gpus.length > 0 ? Math.min(...listed.gpus.map((g) => g.memoryMiB)) : undefined;
    limit = smallest !== undefined ? smallest * 2 ** 20 : probes.totalMemoryBytes;
    limitName = smallest !== undefined ? 'one GPU' : 'system memory (no GPU listed)';
  } else if (webgpuAdapter) {
    // WebGPU does not report the device's memory; system memory bounds what tfjs stages through.
    limit = probes.totalMemoryBytes;
    limitName = 'system memory (WebGPU reports no device memory)';
  } else if (cpuTensorflow || options.backend === 'cpu') {
    limit = probes.totalMemoryBytes;
    limitName = 'system memory';
  }

  let disk: DiskNeed | undefined;
  if (options.model === undefined || options.model === TINY_DEFAULT_NAME) {
    results.push({ check: 'model', status: 'ok', detail: 'the embedded tiny random Qwen3 (made on first use, no folder to check)' });
  } else {
    // --model demo: the demo world's warm-start model shipped in models/demo.
    const model = await checkModelFolder(options.model === DEMO_MODEL_NAME ? demoModelPath() : options.model);
    results.push(...model.results);
    // What the model needs on each backend, also before it is downloaded (a registry name gives its size).
    const entry = lookupModel(options.model);
    if (model.config) results.push(checkModelNeeds(memoryNeedOfConfig(model.config), 'config.json'));
    else if (entry) results.push(checkModelNeeds(memoryNeedOfEntry(entry), `the registry's size of ${entry.name}`));
    if (model.config) {
      // Only wasm holds XNNPACK's packed copy of the weights besides them; native holds them packed in system
      // memory (src/model/memory-need.ts).
      if (nativeBackend) results.push(checkNativeModelMemory(model.config, probes.totalMemoryBytes, options.backend === 'native-int8' ? 'int8' : 'f32'));
      else results.push(checkModelMemory(model.config, limit, limitName, !gpuBackend && !webgpuAdapter && !cpuTensorflow && options.backend !== 'cpu'));
      if (webgpuAdapter) results.push(checkWebgpuModel(model.config, webgpuAdapter));
      disk = { oneCheckpoint: checkpointBytes(model.config, options.loraR, PROJECTIONS), checkpoints: options.checkpoints ?? 1, once: options.rolloutEngine === 'llama.cpp' ? ggufExportBytes(model.config) : 0 };
    }
  }
  const e5 = checkE5(options);
  if (e5) results.push(e5);
  const retriever = await checkRetriever(options.retrieverUrl);
  if (retriever) results.push(retriever);
  results.push(checkDisk(probes, options, disk));
  return { results, ready: results.every((r) => r.status !== 'fail') };
}

const MARK: Record<CheckResult['status'], string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', info: '--  ' };

/** One line per check, its fix indented under it. */
export function formatReport(report: DoctorReport): string {
  const width = Math.max(...report.results.map((r) => r.check.length));
  const lines = report.results.flatMap((r) => [`${MARK[r.status]}  ${r.check.padEnd(width)}  ${r.detail}`, ...(r.fix && r.status !== 'ok' ? [`${' '.repeat(width + 8)}fix: ${r.fix}`] : [])]);
  lines.push(report.ready ? 'the run as given would start' : 'the run as given would not start: fix the FAIL lines');
  return lines.join('\n');
}
