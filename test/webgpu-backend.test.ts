// Choosing the webgpu backend: `--backend webgpu` runs on an adapter or is refused in one line with Dawn's own
// reason and the backend to use; `auto` takes a GPU adapter over wasm and says why it passed one over; Dawn's
// warnings become that one line. The op coverage on an adapter is test/webgpu-ops.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeBackend, initBackend, parseBackendChoice, tf, webgpuRefusal } from '../src/tensor/backend.js';
import { dawnReason, featureLevelFor, locateWebgpu, probeWebgpu, WEBGPU_FLAGS_ENV, WEBGPU_INSTALL, webgpuFlags } from '../src/tensor/webgpu.js';
import { startNode } from './helpers/cli-process.js';
import { ortAvailability } from '../src/tensor/ort-binding.js';
import { testAdapter } from './helpers/webgpu-adapter.js';

const ROOT = join(import.meta.dirname, '..');
const installed = locateWebgpu();
const flagsBefore = process.env[WEBGPU_FLAGS_ENV];

afterAll(async () => {
  if (flagsBefore === undefined) delete process.env[WEBGPU_FLAGS_ENV];
  else process.env[WEBGPU_FLAGS_ENV] = flagsBefore;
  await initBackend('wasm', { threads: 1 });
});

describe("Dawn's adapter errors as one line", () => {
  it('keeps each warning and its context, drops the source locations (stderr of Dawn 0.6.2 here)', () => {
    // What dawn.node printed on this machine without a Vulkan loader, and with Mesa's lavapipe.
    const noLoader = "Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory\n    at operator() (/home/runner/work/node-webgpu/node-webgpu/third_party/dawn/src/dawn/native/vulkan/BackendVk.cpp:368)\n\n";
    const lavapipe = 'Warning: Vulkan shaderUniform*ArrayDynamicIndexing required.\n - While initializing adapter (backend=BackendType::Vulkan)\n    at InitializeImpl (/home/runner/work/node-webgpu/node-webgpu/third_party/dawn/src/dawn/native/vulkan/PhysicalDeviceVk.cpp:257)\n\n';
    expect(dawnReason(noLoader)).toBe("Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory");
    expect(dawnReason(lavapipe)).toBe('Vulkan shaderUniform*ArrayDynamicIndexing required (while initializing adapter (backend=BackendType::Vulkan))');
    expect(dawnReason(`${noLoader}${lavapipe}`)).toContain("libvulkan.so.1: cannot open shared object file: No such file or directory; Vulkan shaderUniform");
    expect(dawnReason('')).toBe('');
  });

  it('the refusal names the reason and the backend to use, on one line', () => {
    const line = webgpuRefusal("Dawn found no WebGPU adapter: Couldn't load Vulkan");
    expect(line).toMatch(/^--backend webgpu cannot start: Dawn found no WebGPU adapter: Couldn't load Vulkan\. Use --backend wasm/);
    expect(line).toContain(WEBGPU_FLAGS_ENV);
    expect(line).not.toContain('\n');
  });
});

describe("Dawn's options", () => {
  it(`${WEBGPU_FLAGS_ENV} is split at ';' and OpenGL backends ask for compatibility mode`, () => {
    expect(webgpuFlags({ [WEBGPU_FLAGS_ENV]: ' backend=vulkan ; adapter=NVIDIA H200;' })).toEqual(['backend=vulkan', 'adapter=NVIDIA H200']);
    expect(webgpuFlags({})).toEqual([]);
    expect(featureLevelFor(['backend=opengles'])).toBe('compatibility');
    expect(featureLevelFor(['backend=vulkan'])).toBe('core');
    expect(featureLevelFor([])).toBe('core');
  });

  it("Dawn's null backend is refused: it computes nothing", () => {
    const p = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: 'backend=null' });
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(/null backend, which computes nothing/);
  });
});

describe('where the packages are not installed', () => {
  it('the reason is the install command, and auto never looks further', () => {
    const empty = mkdtempSync(join(tmpdir(), 'sesa-no-webgpu-'));
    try {
      const p = probeWebgpu(process.env, empty);
      expect(p.ok).toBe(false);
      if (!p.ok) {
        expect(p.installed).toBe(false);
        expect(p.reason).toContain(WEBGPU_INSTALL);
        expect(p.reason).toMatch(/webgpu@0\.6\.2 and @tensorflow\/tfjs-backend-webgpu@4\.22\.0 are not installed/);
      }
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

/** The CPU path auto picks when no TensorFlow binding and no GPU adapter are there. */
const cpuPath = ortAvailability().ok ? 'native' : 'wasm';

describe.skipIf(!installed.ok)('backend selection on this machine', () => {
  it('parses webgpu as a backend choice', () => {
    expect(parseBackendChoice('webgpu')).toBe('webgpu');
    expect(() => parseBackendChoice('gpu')).toThrow(/auto, tensorflow, webgpu, native, native-int8, wasm, cpu/);
  });

  it("Dawn's default adapter: --backend webgpu runs on it or is refused with Dawn's reason; auto agrees", async () => {
    delete process.env[WEBGPU_FLAGS_ENV];
    const probe = probeWebgpu();
    if (probe.ok) {
      // A machine with an adapter (a GPU box): webgpu starts, and auto takes it unless it is a CPU renderer.
      const info = await initBackend('webgpu');
      expect(info.name).toBe('webgpu');
      expect(tf.getBackend()).toBe('webgpu');
      const auto = await initBackend('auto');
      expect(auto.name).toBe(probe.adapter.cpuRenderer ? cpuPath : 'webgpu');
    } else {
      // This project's machines: no adapter. Refused, never a silent fallback, and nothing else started.
      const before = tf.getBackend();
      await expect(initBackend('webgpu')).rejects.toThrow(`--backend webgpu cannot start: ${probe.reason}. Use --backend wasm`);
      expect(tf.getBackend()).toBe(before);
      // Auto passes webgpu over for the CPU path: native where onnxruntime-node's binding loads, else wasm.
      const auto = await initBackend('auto', { threads: 1 });
      expect(auto.name).toBe(cpuPath);
      expect(auto.reason).toContain(`webgpu: ${probe.reason}`);
      expect(describeBackend(auto)).toContain(cpuPath === 'native' ? 'matMuls run natively' : 'wasm (SIMD) is the fastest available');
    }
  });

  it("the CLI refuses with one line on stderr and exit 1, without Dawn's own warnings", async () => {
    // Dawn's default adapter where there is none (this machine: Dawn warns about Vulkan on stderr), else the
    // null backend, which is always refused.
    const none = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: '' });
    const flags = none.ok ? 'backend=null' : '';
    const want = none.ok ? "SESA_WEBGPU_FLAGS selects Dawn's null backend, which computes nothing" : none.reason;
    const run = startNode([join(ROOT, 'bin', 'sesa-train.mjs'), 'score', '--model', 'qwen3-0.6b', '--ids', '1,2', '--backend', 'webgpu'], ROOT, { [WEBGPU_FLAGS_ENV]: flags });
    const r = await run.done;
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([`error: ${webgpuRefusal(want)}`]);
  });
});

describe.skipIf(!installed.ok)('on a CPU renderer (Dawn on Mesa GLES: llvmpipe)', () => {
  const gles = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: 'backend=opengles' });
  it.skipIf(!gles.ok)("auto passes it over for wasm and says why; --backend webgpu takes it and says what it is", async () => {
    process.env[WEBGPU_FLAGS_ENV] = 'backend=opengles';
    const adapter = testAdapter();
    expect(adapter.ok).toBe(true);
    const auto = await initBackend('auto', { threads: 1 });
    expect(auto.name).toBe(cpuPath);
    expect(auto.reason).toMatch(/webgpu's adapter is llvmpipe.*a CPU renderer, slower than wasm/);
    const info = await initBackend('webgpu');
    expect(info.name).toBe('webgpu');
    expect(describeBackend(info)).toMatch(/^webgpu \(@tensorflow\/tfjs-backend-webgpu on Dawn \(webgpu\); requested; adapter llvmpipe.*a CPU renderer\)$/);
    expect(info.adapter?.featureLevel).toBe('compatibility');
    expect(info.adapter?.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    await expect(initBackend('webgpu', { threads: 2 })).rejects.toThrow('--threads 2: the webgpu backend computes on its adapter, not on CPU threads; leave --threads unset');
    // A small op, read back synchronously: the backend really runs.
    expect(Array.from(tf.tidy(() => tf.add(tf.tensor1d([1, 2]), tf.tensor1d([3, 4]))).dataSync())).toEqual([4, 6]);
  });
});
