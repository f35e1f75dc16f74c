// The WebGPU backend (src/tensor/webgpu.ts): whether its packages are installed, the adapter Dawn finds (name,
// limits, f16) or Dawn's reason for none, and whether a model's largest tensor fits one storage binding (tfjs
// binds each tensor whole: an embedding table over maxStorageBufferBindingSize cannot run).
import type { ModelConfig } from '../model/config.js';
import { describeAdapter, WEBGPU_FLAGS_ENV, WEBGPU_INSTALL, type WebgpuAdapterReport, type WebgpuProbe } from '../tensor/webgpu.js';
import { type CheckResult, type DoctorOptions, formatBytes } from './types.js';

/** The adapter's limits that matter for training, in one phrase. */
export function adapterLimits(a: WebgpuAdapterReport): string {
  const l = a.limits;
  return [
    `maxBufferSize ${formatBytes(l.maxBufferSize)}`,
    `maxStorageBufferBindingSize ${formatBytes(l.maxStorageBufferBindingSize)}`,
    `${l.maxStorageBuffersPerShaderStage} storage buffers per shader`,
    `workgroups of ${l.maxComputeInvocationsPerWorkgroup} invocations with ${formatBytes(l.maxComputeWorkgroupStorageSize)} shared`,
  ].join(', ');
}

/** The `webgpu` line: installed or not, the adapter or Dawn's reason. Fails only where the run asks for webgpu. */
export function checkWebgpu(probe: WebgpuProbe, options: Pick<DoctorOptions, 'backend'>): CheckResult {
  const wanted = options.backend === 'webgpu';
  if (!probe.ok && !probe.installed) {
    return { check: 'webgpu', status: wanted ? 'fail' : 'info', detail: probe.reason, fix: `${WEBGPU_INSTALL} (about 54 MB download, 166 MB unpacked), or run on wasm` };
  }
  if (!probe.ok) {
    return {
      check: 'webgpu',
      status: wanted ? 'fail' : 'info',
      detail: `no adapter: ${probe.reason}`,
      fix: `install the GPU's Vulkan driver and the Vulkan loader (libvulkan1); ${WEBGPU_FLAGS_ENV} passes Dawn's options (docs/scale-out.md); or run on wasm`,
    };
  }
  const a = probe.adapter;
  const detail = `${describeAdapter(a)}; shader-f16 ${a.f16 ? 'yes' : 'no'}; ${adapterLimits(a)}${a.flags.length > 0 ? ` (${WEBGPU_FLAGS_ENV}=${a.flags.join(';')})` : ''}`;
  if (a.cpuRenderer) return { check: 'webgpu', status: wanted ? 'warn' : 'info', detail: `${detail}: auto picks wasm over it`, fix: 'a CPU renderer runs the WGSL kernels on the CPU, slower than wasm: use wasm, or a machine with a GPU' };
  return { check: 'webgpu', status: 'ok', detail };
}

/** The largest tensor of the model in f32, which one storage binding must hold on webgpu. */
export function largestTensorBytes(config: ModelConfig): { name: string; bytes: number } {
  const { hiddenSize: d, intermediateSize: ff, vocabSize: V, numHeads: H, headDim: hd } = config;
  const candidates: Array<[string, number]> = [
    ['the embedding table', V * d],
    ['an MLP projection', d * ff],
    ['the query projection', d * H * hd],
  ];
  const [name, n] = candidates.reduce((a, b) => (b[1] > a[1] ? b : a));
  return { name, bytes: 4 * n };
}

/** With the webgpu backend: does the model's largest tensor fit one binding and one buffer? */
export function checkWebgpuModel(config: ModelConfig, adapter: WebgpuAdapterReport): CheckResult {
  const { name, bytes } = largestTensorBytes(config);
  const limit = Math.min(adapter.limits.maxStorageBufferBindingSize, adapter.limits.maxBufferSize);
  const detail = `${name} is ${formatBytes(bytes)} of f32; the adapter binds at most ${formatBytes(limit)} at once`;
  return bytes <= limit
    ? { check: 'webgpu-model', status: 'ok', detail }
    : { check: 'webgpu-model', status: 'fail', detail, fix: 'a smaller model, or the tensorflow or wasm backend' };
}
