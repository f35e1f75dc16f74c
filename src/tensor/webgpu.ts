// The WebGPU backend in Node: tfjs' own WebGPU backend (@tensorflow/tfjs-backend-webgpu) on Dawn, through
// Dawn's Node binding (npm `webgpu`, a prebuilt `dawn.node` per platform). Both are optional peers installed in
// the side folder `.webgpu/` (docs/usage.md, "Install size"): nothing here is imported statically, so the project
// typechecks and runs without them.
//
// tfjs' WebGPU backend is written for browsers: it registers itself only where `navigator.gpu` exists and asks
// that for an adapter. Node has no `navigator.gpu`, so this module
// - finds Dawn's adapter first in a child process (`probeWebgpu`): Dawn reports why it found none (a missing
//   Vulkan loader, a driver that lacks a feature) only as warnings on the process's stderr, which the child
//   captures, so the reason can be said in one line and nothing leaks onto the user's terminal;
// - in this process, makes Dawn's GPU object and its globals (GPUBufferUsage, ...) what tfjs expects, asks
//   the adapter for a device with the adapter's own limits (a model's embedding table is larger than
//   WebGPU's default 128 MiB binding), and registers the backend under the name `webgpu` itself;
// - turns Dawn's uncaptured errors and a lost device into errors of the next read-back, never a silent wrong
//   value (./webgpu-fixes.ts);
// - gives the backend a synchronous read-back (`dataSync`), which tfjs only implements through a browser
//   canvas (./webgpu-fixes.ts).
//
// `SESA_WEBGPU_FLAGS` passes Dawn's own options (`;`-separated, as `create()` takes them, e.g.
// `backend=vulkan;adapter=NVIDIA H200`). `backend=opengles` selects Dawn's OpenGL ES backend in WebGPU's
// compatibility mode; with Mesa that is llvmpipe, a CPU renderer (EGL_PLATFORM=surfaceless is set for it when
// unset): the tests use it to run the real WGSL kernels where no GPU exists (test/webgpu-ops.test.ts).
// `backend=null` is refused: Dawn's null backend validates shaders but computes nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { repoRoot } from '../util/shared-data.js';

/** The versions this project is tested with (the side folder's install command pins them). */
export const DAWN_PACKAGE = { name: 'webgpu', version: '0.6.2' } as const;
export const TFJS_WEBGPU_PACKAGE = { name: '@tensorflow/tfjs-backend-webgpu', version: '4.22.0' } as const;

/** The side folder (under the repository root) the two packages are installed into. */
export const WEBGPU_SIDE_DIR = '.webgpu';

/**
 * The one command that adds the WebGPU backend (run in the repository root). `--legacy-peer-deps` keeps npm from
 * installing a second @tensorflow/tfjs-core there: the backend must register into the project's own.
 */
export const WEBGPU_INSTALL = `npm install --prefix ${WEBGPU_SIDE_DIR} --no-save --legacy-peer-deps ${DAWN_PACKAGE.name}@${DAWN_PACKAGE.version} ${TFJS_WEBGPU_PACKAGE.name}@${TFJS_WEBGPU_PACKAGE.version}`;

/** The environment variable holding Dawn's options. */
export const WEBGPU_FLAGS_ENV = 'SESA_WEBGPU_FLAGS';

/** The limits the backend asks the device for (at the adapter's maximum) and `doctor` reports. */
export const WEBGPU_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxUniformBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxBindGroups',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
] as const;
export type WebgpuLimitName = (typeof WEBGPU_LIMITS)[number];

export interface WebgpuAdapterReport {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** Dawn's fallback (software) adapter flag. */
  isFallbackAdapter: boolean;
  /** A CPU renderer (llvmpipe, lavapipe, SwiftShader): it runs, but wasm is faster. */
  cpuRenderer: boolean;
  /** `shader-f16`: WGSL f16 arithmetic (tfjs' kernels compute in f32 either way). */
  f16: boolean;
  features: string[];
  limits: Record<WebgpuLimitName, number>;
  /** The Dawn options it was found with, and the feature level asked for. */
  flags: string[];
  featureLevel: 'core' | 'compatibility';
}

export type WebgpuProbe = { ok: true; adapter: WebgpuAdapterReport } | { ok: false; reason: string; installed: boolean };

/** Where the two packages are (or a bundle's copies, see `provideWebgpuRuntime`). */
interface Runtime {
  dawnNode: string;
  /** The tfjs backend module, or the file to import it from. */
  tfjsWebgpu: { module: unknown } | { entry: string };
}

let provided: Runtime | undefined;

/**
 * For a bundled build (the device check, scripts/gpu-check.sh): the tfjs backend module it bundled and the
 * `dawn.node` file it carries, used instead of looking in node_modules and the side folder.
 */
export function provideWebgpuRuntime(runtime: { dawnNode: string; tfjsWebgpu: unknown }): void {
  provided = { dawnNode: runtime.dawnNode, tfjsWebgpu: { module: runtime.tfjsWebgpu } };
}

/** `<os>-<arch>` as the webgpu package names its dawn.node folders. */
function platformFolder(): string {
  return process.platform === 'darwin' ? 'darwin-universal' : `${process.platform}-${process.arch}`;
}

/** The package's folder by resolution from the project, then from the side folder; undefined when absent. */
function packageDir(name: string, root: string): string | undefined {
  const bases = [join(root, 'package.json'), join(root, WEBGPU_SIDE_DIR, 'node_modules', '')];
  for (const base of bases) {
    try {
      return dirname(createRequire(base).resolve(`${name}/package.json`));
    } catch {
      // not here; try the next
    }
  }
  return undefined;
}

function packageVersion(dir: string): string {
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string }).version ?? '?';
}

/** The runtime, or why it is not installed (with the install command). `root`: the project (tests vary it). */
export function locateWebgpu(root = repoRoot()): { ok: true; runtime: Runtime; versions: string } | { ok: false; reason: string } {
  if (provided) return { ok: true, runtime: provided, versions: 'bundled' };
  const dawnDir = packageDir(DAWN_PACKAGE.name, root);
  const tfjsDir = packageDir(TFJS_WEBGPU_PACKAGE.name, root);
  const missing = [!dawnDir ? `${DAWN_PACKAGE.name}@${DAWN_PACKAGE.version}` : undefined, !tfjsDir ? `${TFJS_WEBGPU_PACKAGE.name}@${TFJS_WEBGPU_PACKAGE.version}` : undefined].filter((x) => x !== undefined);
  if (!dawnDir || !tfjsDir) return { ok: false, reason: `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not installed (optional peers); install them with \`${WEBGPU_INSTALL}\`` };
  const dawnNode = join(dawnDir, 'dist', platformFolder(), 'dawn.node');
  if (!existsSync(dawnNode)) return { ok: false, reason: `${DAWN_PACKAGE.name} ${packageVersion(dawnDir)} has no Dawn build for ${platformFolder()} (${dawnNode} is missing)` };
  const entry = createRequire(join(tfjsDir, 'package.json')).resolve(TFJS_WEBGPU_PACKAGE.name);
  return { ok: true, runtime: { dawnNode, tfjsWebgpu: { entry } }, versions: `${DAWN_PACKAGE.name} ${packageVersion(dawnDir)}, ${TFJS_WEBGPU_PACKAGE.name} ${packageVersion(tfjsDir)}` };
}

/** Dawn's options from `SESA_WEBGPU_FLAGS`. */
export function webgpuFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env[WEBGPU_FLAGS_ENV] ?? '')
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function dawnBackendOf(flags: readonly string[]): string | undefined {
  return flags.find((f) => f.startsWith('backend='))?.slice('backend='.length);
}

/** OpenGL (ES) adapters exist only in WebGPU's compatibility mode. */
export function featureLevelFor(flags: readonly string[]): 'core' | 'compatibility' {
  const backend = dawnBackendOf(flags);
  return backend === 'opengles' || backend === 'opengl' ? 'compatibility' : 'core';
}

/** The environment Dawn runs in: EGL on Mesa needs a platform to start without a display. */
function dawnEnv(flags: readonly string[], env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const backend = dawnBackendOf(flags);
  if ((backend === 'opengles' || backend === 'opengl') && env.EGL_PLATFORM === undefined) return { ...env, EGL_PLATFORM: 'surfaceless' };
  return env;
}

/**
 * Dawn's warnings on stderr, as one line: each `Warning: …` message with its ` - While …` context, without
 * the source locations (`at …`).
 */
export function dawnReason(stderr: string): string {
  const messages: string[] = [];
  for (const raw of stderr.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('at ')) continue;
    if (line.startsWith('- ')) {
      if (messages.length > 0) messages[messages.length - 1] += ` (${line.slice(2).replace(/^While /, 'while ')})`;
      continue;
    }
    messages.push(line.replace(/^Warning: /, '').replace(/\.$/, ''));
  }
  return messages.join('; ');
}

const CPU_RENDERER = /llvmpipe|lavapipe|swiftshader|softpipe/i;

// The probe runs in a child process (see the header). It is plain CommonJS: it must run in a bundle too.
const PROBE_SOURCE = `
const [dawnNode, flagsJson, featureLevel, limitsJson] = process.argv.slice(1);
const out = (v) => { process.stdout.write(JSON.stringify(v)); process.exit(0); };
let dawn;
try { dawn = require(dawnNode); } catch (e) { out({ loadError: String((e && e.message) || e) }); }
const gpu = dawn.create(JSON.parse(flagsJson));
gpu.requestAdapter({ featureLevel, powerPreference: 'high-performance' }).then((a) => {
  if (!a) return out({ adapter: null });
  const i = a.info;
  const limits = {};
  for (const k of JSON.parse(limitsJson)) limits[k] = Number(a.limits[k]);
  out({ adapter: { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description, isFallbackAdapter: !!i.isFallbackAdapter, features: [...a.features].sort(), limits } });
}, (e) => out({ requestError: String((e && e.message) || e) }));
`;

const probes = new Map<string, WebgpuProbe>();

/**
 * Whether Dawn finds an adapter here, and which (cached per process and options). Never throws: a missing
 * package or adapter is a reason.
 */
export function probeWebgpu(env: NodeJS.ProcessEnv = process.env, root = repoRoot()): WebgpuProbe {
  const located = locateWebgpu(root);
  const flags = webgpuFlags(env);
  // The null backend is refused whether or not the peers are installed: installing them would not help.
  if (dawnBackendOf(flags) === 'null') return { ok: false, installed: located.ok, reason: `${WEBGPU_FLAGS_ENV} selects Dawn's null backend, which computes nothing` };
  if (!located.ok) return { ok: false, reason: located.reason, installed: false };
  const featureLevel = featureLevelFor(flags);
  const key = JSON.stringify([located.runtime.dawnNode, flags]);
  const cached = probes.get(key);
  if (cached) return cached;
  let result: WebgpuProbe;
  const child = spawnSync(process.execPath, ['-e', PROBE_SOURCE, located.runtime.dawnNode, JSON.stringify(flags), featureLevel, JSON.stringify(WEBGPU_LIMITS)], {
    encoding: 'utf8',
    env: dawnEnv(flags, env),
    timeout: 60_000,
  });
  const stderr = dawnReason(child.stderr ?? '');
  let parsed: { adapter?: Omit<WebgpuAdapterReport, 'cpuRenderer' | 'f16' | 'flags' | 'featureLevel'> | null; loadError?: string; requestError?: string } | undefined;
  try {
    parsed = JSON.parse(child.stdout || 'null') ?? undefined;
  } catch {
    parsed = undefined;
  }
  if (child.error || !parsed) {
    const why = child.error ? child.error.message : `exit ${child.status ?? child.signal}`;
    result = { ok: false, installed: true, reason: `the Dawn adapter probe failed (${why})${stderr ? `: ${stderr}` : ''}` };
  } else if (parsed.loadError !== undefined) {
    result = { ok: false, installed: true, reason: `dawn.node does not load: ${parsed.loadError.split('\n')[0]}` };
  } else if (parsed.requestError !== undefined) {
    result = { ok: false, installed: true, reason: `Dawn's requestAdapter failed: ${parsed.requestError}${stderr ? ` (${stderr})` : ''}` };
  } else if (!parsed.adapter) {
    result = { ok: false, installed: true, reason: `Dawn found no ${featureLevel === 'compatibility' ? 'compatibility-mode ' : ''}WebGPU adapter${stderr ? `: ${stderr}` : ' (it gave no reason)'}` };
  } else {
    const a = parsed.adapter;
    const name = `${a.device} ${a.description}`;
    result = { ok: true, adapter: { ...a, cpuRenderer: a.isFallbackAdapter || CPU_RENDERER.test(name), f16: a.features.includes('shader-f16'), flags, featureLevel } };
  }
  probes.set(key, result);
  return result;
}

/** `NVIDIA H200 (nvidia, hopper; Vulkan …)`: the adapter in one phrase. */
export function describeAdapter(a: WebgpuAdapterReport): string {
  const name = a.device || a.description || 'unnamed adapter';
  const more = [a.vendor, a.architecture, a.description && a.description !== name ? a.description : ''].filter((s) => s !== '');
  return `${name}${more.length > 0 ? ` (${more.join(', ')})` : ''}${a.cpuRenderer ? ', a CPU renderer' : ''}`;
}

/** What Dawn's GPU object and device look like to this module (a small part of the WebGPU API). */
interface GpuDeviceLike {
  limits: Record<string, number>;
  features: { has(name: string): boolean };
  lost: Promise<{ reason: string; message: string }>;
  addEventListener(type: 'uncapturederror', listener: (ev: { error: { message: string } }) => void): void;
  destroy(): void;
}
interface GpuAdapterLike {
  info: Record<string, unknown>;
  limits: Record<string, number>;
  features: Set<string> & { has(name: string): boolean };
  requestDevice(descriptor: { requiredLimits?: Record<string, number>; requiredFeatures?: string[] }): Promise<GpuDeviceLike>;
}
interface GpuLike {
  requestAdapter(options: { featureLevel: string; powerPreference: string }): Promise<GpuAdapterLike | null>;
}
interface DawnModule {
  create(flags: string[]): GpuLike;
  globals: Record<string, unknown>;
}

/** The state of the active WebGPU device: what ./webgpu-fixes.ts needs and what `doctor` reports. */
export interface WebgpuDevice {
  adapter: WebgpuAdapterReport;
  device: GpuDeviceLike;
  /** Runs Dawn's event processing once, synchronously (see `captureDawnTick`). */
  tick: () => void;
  /** The first uncaptured Dawn error or device loss, once there is one. */
  failure: () => string | undefined;
}

let active: { device: WebgpuDevice; key: string } | undefined;

/**
 * Dawn's Node binding processes its events (buffer maps, finished work) from a callback it hands to
 * `setImmediate` when it starts waiting for something, such as the device it creates. Calling that callback
 * ourselves is the only synchronous way to finish a buffer map in Node; it is captured here while the device
 * is created. Returns the callback, or undefined when Dawn scheduled none (a build that works otherwise).
 */
async function captureDawnTick<T>(body: () => Promise<T>): Promise<{ value: T; tick: (() => void) | undefined }> {
  const real = globalThis.setImmediate;
  let tick: (() => void) | undefined;
  const patched = ((fn: (...args: unknown[]) => void, ...args: unknown[]) => {
    if (tick === undefined && /\[native code\]/.test(Function.prototype.toString.call(fn))) tick = () => fn(...args);
    return real(fn, ...args);
  }) as typeof setImmediate;
  globalThis.setImmediate = Object.assign(patched, real);
  try {
    const value = await body();
    return { value, tick };
  } finally {
    globalThis.setImmediate = real;
  }
}

/** Makes `navigator.gpu` and Dawn's globals visible to tfjs (Node 20 has no navigator; Node 21+ has one without gpu). */
function exposeNavigatorGpu(gpu: GpuLike, globals: Record<string, unknown>): void {
  const g = globalThis as Record<string, unknown>;
  for (const [k, v] of Object.entries(globals)) if (!(k in g)) g[k] = v;
  const nav = g.navigator as Record<string, unknown> | undefined;
  if (nav === undefined) Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  else Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true, writable: true });
}

/**
 * Makes the `webgpu` tfjs backend (registered here, not by the package) run on the probed adapter, and makes
 * it active. Throws, with the reason and the backend to use instead, when there is no adapter.
 */
export async function activateWebgpu(probe: WebgpuProbe, registerFixes: (device: WebgpuDevice, backend: tf.KernelBackend) => void): Promise<WebgpuDevice> {
  if (!probe.ok) throw new Error(probe.reason);
  const located = locateWebgpu();
  if (!located.ok) throw new Error(located.reason);
  const key = JSON.stringify([located.runtime.dawnNode, probe.adapter.flags]);
  if (active && active.key !== key) throw new Error('the WebGPU backend was started with other Dawn options in this process; start a new process for new options');
  if (!active) {
    const { flags, featureLevel } = probe.adapter;
    const egl = dawnEnv(flags, process.env).EGL_PLATFORM;
    if (egl !== undefined && process.env.EGL_PLATFORM === undefined) process.env.EGL_PLATFORM = egl;
    const dawn = createRequire(import.meta.url)(located.runtime.dawnNode) as DawnModule;
    const gpu = dawn.create([...flags]);
    exposeNavigatorGpu(gpu, dawn.globals);
    const { value: opened, tick } = await captureDawnTick(async () => {
      const adapter = await gpu.requestAdapter({ featureLevel, powerPreference: 'high-performance' });
      if (!adapter) throw new Error(`Dawn found an adapter in the probe but not in this process (${describeAdapter(probe.adapter)})`);
      const requiredLimits: Record<string, number> = {};
      for (const k of WEBGPU_LIMITS) requiredLimits[k] = Number(adapter.limits[k]);
      const requiredFeatures = ['timestamp-query'].filter((f) => adapter.features.has(f));
      return { adapter, device: await adapter.requestDevice({ requiredLimits, requiredFeatures }) };
    });
    const { device } = opened;
    if (!tick) throw new Error(`${DAWN_PACKAGE.name}: Dawn scheduled no event callback while creating the device, so synchronous reads cannot work with this build (tested with ${DAWN_PACKAGE.name} ${DAWN_PACKAGE.version})`);
    let failure: string | undefined;
    device.addEventListener('uncapturederror', (ev) => {
      failure ??= `WebGPU error: ${ev.error.message.split('\n')[0]}`;
    });
    void device.lost.then((info) => {
      failure ??= `the WebGPU device was lost (${info.reason}): ${info.message}`;
    });
    const state: WebgpuDevice = { adapter: probe.adapter, device, tick, failure: () => failure };
    const mod = ('module' in located.runtime.tfjsWebgpu ? located.runtime.tfjsWebgpu.module : await import(pathToFileURL(located.runtime.tfjsWebgpu.entry).href)) as {
      WebGPUBackend?: new (device: unknown, info: unknown) => tf.KernelBackend;
    };
    const Backend = mod.WebGPUBackend;
    if (typeof Backend !== 'function') throw new Error(`${TFJS_WEBGPU_PACKAGE.name} does not export WebGPUBackend (tested with ${TFJS_WEBGPU_PACKAGE.version})`);
    const registry = (tf.engine() as unknown as { registryFactory: Record<string, unknown> }).registryFactory;
    if (registry.webgpu) tf.removeBackend('webgpu');
    // Made here, synchronously, so that a failure is an error of this call (inside tf.setBackend tfjs would
    // only log it and fall back to another backend).
    const backend = new Backend(device, opened.adapter.info);
    registerFixes(state, backend);
    // Priority 0: only ever chosen by name.
    tf.registerBackend('webgpu', () => backend, 0);
    active = { device: state, key };
  }
  const ok = await tf.setBackend('webgpu');
  await tf.ready();
  if (!ok || tf.getBackend() !== 'webgpu') throw new Error(`tfjs backend 'webgpu' failed to initialise (active backend is '${tf.getBackend()}')`);
  return active.device;
}

/** The active WebGPU device, when the backend was started in this process. */
export function activeWebgpuDevice(): WebgpuDevice | undefined {
  return active?.device;
}
