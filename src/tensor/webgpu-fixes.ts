// The workarounds tfjs' WebGPU backend needs in Node (docs/scale-out.md, "The WebGPU backend"), all in one place.
//
// 1. Synchronous reads (`dataSync`, `arraySync`): the backend implements them by drawing into a browser
//    `OffscreenCanvas`, which Node does not have, so every `dataSync` threw. The trainer reads a few scalars
//    synchronously (the gradient norm, micro-batch losses, the KL), so we re-implement `readSync` as the
//    backend's own asynchronous `read` does it (copy to a mappable staging buffer, map it), and finish the map
//    by running Dawn's event processing ourselves until it is done (./webgpu.ts, `captureDawnTick`).
// 2. Errors: WebGPU reports a failed dispatch (a shader that does not compile, a binding over a limit, running
//    out of memory) as an event and goes on returning whatever the buffers hold. Every read, synchronous or
//    not, first waits for the work it reads and then throws the first such error or a lost device, so a wrong
//    value is never returned silently.
// 3. `AddN` over more inputs than a shader may bind (below).
import * as tf from '@tensorflow/tfjs';
import type { WebgpuDevice } from './webgpu.js';

/** The part of tfjs' WebGPUBackend these fixes touch (its own fields and methods, version 4.22.0). */
interface WebGPUBackendLike {
  tensorMap: { get(dataId: object): TensorData | undefined; has(dataId: object): boolean };
  bufferManager: { acquireBuffer(size: number, usage: number): GpuBufferLike; releaseBuffer(buffer: GpuBufferLike, reuse?: boolean): void };
  commandEncoder: { copyBufferToBuffer(src: GpuBufferLike, srcOffset: number, dst: GpuBufferLike, dstOffset: number, size: number): void } | null;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
  convertAndCacheOnCPU(dataId: object, values: tf.backend_util.BackendValues): tf.backend_util.BackendValues;
  readSync(dataId: object): tf.backend_util.BackendValues;
  read(dataId: object): Promise<tf.backend_util.BackendValues>;
}

interface TensorData {
  dtype: tf.DataType;
  values: tf.backend_util.BackendValues | null;
  resource?: GpuBufferLike | null;
}

interface GpuBufferLike {
  size: number;
  mapState: 'unmapped' | 'pending' | 'mapped';
  mapAsync(mode: number): Promise<void>;
  getMappedRange(): ArrayBuffer;
  unmap(): void;
}

/** How long a synchronous read waits for the GPU before it gives up (a hung device must not hang the run). */
export const WEBGPU_READ_TIMEOUT_MS = 10 * 60_000;

function gpuConstant(group: string, name: string): number {
  const value = ((globalThis as Record<string, unknown>)[group] as Record<string, number> | undefined)?.[name];
  if (typeof value !== 'number') throw new Error(`webgpu: the global ${group}.${name} is missing (Dawn's globals were not installed)`);
  return value;
}

function throwIfFailed(device: WebgpuDevice): void {
  const failure = device.failure();
  if (failure !== undefined) throw new Error(failure);
}

/** Copies `buffer` to a staging buffer and maps it, finishing the map synchronously; returns its bytes. */
function readBufferSync(backend: WebGPUBackendLike, device: WebgpuDevice, buffer: GpuBufferLike): ArrayBuffer {
  const size = buffer.size;
  const staging = backend.bufferManager.acquireBuffer(size, gpuConstant('GPUBufferUsage', 'COPY_DST') | gpuConstant('GPUBufferUsage', 'MAP_READ'));
  backend.ensureCommandEncoderReady();
  backend.endComputePassEncoder();
  backend.commandEncoder?.copyBufferToBuffer(buffer, 0, staging, 0, size);
  backend.submitQueue();
  let mapError: unknown;
  staging.mapAsync(gpuConstant('GPUMapMode', 'READ')).catch((err: unknown) => {
    mapError = err;
  });
  const deadline = Date.now() + WEBGPU_READ_TIMEOUT_MS;
  while (staging.mapState === 'pending') {
    device.tick();
    throwIfFailed(device);
    if (Date.now() > deadline) throw new Error(`webgpu: a synchronous read waited ${WEBGPU_READ_TIMEOUT_MS / 1000} s for the GPU and gave up`);
  }
  throwIfFailed(device);
  if (staging.mapState !== 'mapped') throw new Error(`webgpu: mapping a staging buffer for a synchronous read failed${mapError ? `: ${String(mapError)}` : ''}`);
  const bytes = staging.getMappedRange().slice(0);
  staging.unmap();
  backend.bufferManager.releaseBuffer(staging);
  return bytes;
}

/**
 * `AddN` binds every input as its own storage buffer, so adding more tensors than the device's
 *    `maxStorageBuffersPerShaderStage` − 1 (15 on Mesa's GLES, 8 by WebGPU's default) fails validation; the
 *    optimizer's global gradient norm adds one square sum per adapter tensor (28 for rank-r LoRA on seven
 *    projections of two layers). We add in chunks that fit, then add the partial sums.
 */
function registerChunkedAddN(): void {
  const stock = tf.getKernel('AddN', 'webgpu');
  if (!stock || (stock.kernelFunc as { sesaChunked?: boolean }).sesaChunked) return;
  const addN = stock.kernelFunc;
  const chunked = (args: Parameters<tf.KernelFunc>[0]): tf.TensorInfo => {
    const backend = args.backend as unknown as { device: { limits: Record<string, number> }; disposeData(dataId: object): void };
    const max = Math.max(2, (backend.device.limits.maxStorageBuffersPerShaderStage ?? 8) - 1);
    let level = args.inputs as unknown as tf.TensorInfo[];
    if (level.length <= max) return addN(args) as tf.TensorInfo;
    const partials: tf.TensorInfo[] = [];
    while (level.length > max) {
      const next: tf.TensorInfo[] = [];
      for (let i = 0; i < level.length; i += max) {
        const chunk = level.slice(i, i + max);
        if (chunk.length === 1) {
          next.push(chunk[0] as tf.TensorInfo);
          continue;
        }
        const sum = addN({ ...args, inputs: chunk as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
        partials.push(sum);
        next.push(sum);
      }
      level = next;
    }
    const out = addN({ ...args, inputs: level as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
    // Released once the queued kernels that read them have run (the backend defers the release).
    for (const p of partials) backend.disposeData(p.dataId);
    return out;
  };
  tf.unregisterKernel('AddN', 'webgpu');
  tf.registerKernel({ ...stock, kernelFunc: Object.assign(chunked, { sesaChunked: true }) as unknown as tf.KernelFunc });
}

const patched = new WeakSet<object>();

/** Installs the fixes on one backend instance (see the file header). */
export function registerWebgpuFixes(device: WebgpuDevice, kernelBackend: tf.KernelBackend): void {
  const backend = kernelBackend as unknown as WebGPUBackendLike;
  if (patched.has(backend)) return;
  patched.add(backend);
  registerChunkedAddN();

  backend.readSync = function readSync(dataId: object): tf.backend_util.BackendValues {
    const data = this.tensorMap.get(dataId);
    if (!data) throw new Error('webgpu: readSync of a tensor that is not registered (disposed?)');
    if (data.values != null || data.dtype === 'string') return data.values as tf.backend_util.BackendValues;
    if (data.dtype === 'complex64') throw new Error('webgpu: synchronous reads of complex64 tensors are not supported; use await tensor.data()');
    if (!data.resource) throw new Error('webgpu: readSync of a tensor without data');
    const bytes = readBufferSync(this, device, data.resource);
    const values = tf.util.convertBackendValuesAndArrayBuffer(bytes, data.dtype);
    return this.convertAndCacheOnCPU(dataId, values);
  };

  const read = backend.read.bind(backend);
  backend.read = async function checkedRead(dataId: object): Promise<tf.backend_util.BackendValues> {
    throwIfFailed(device);
    const values = await read(dataId);
    throwIfFailed(device);
    return values;
  };
}
