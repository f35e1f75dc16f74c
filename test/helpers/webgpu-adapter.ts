// Which WebGPU adapter the webgpu tests run on here: the one Dawn finds by default (a GPU), else Dawn's OpenGL
// ES backend, which on Mesa is llvmpipe, a CPU renderer that runs the same WGSL kernels (slowly); else none,
// with both of Dawn's reasons for the skip. `SESA_WEBGPU_FLAGS`, when set, is taken as it is.
import { probeWebgpu, WEBGPU_FLAGS_ENV, type WebgpuAdapterReport } from '../../src/tensor/webgpu.js';

export type TestAdapter = { ok: true; adapter: WebgpuAdapterReport; flags: string } | { ok: false; reason: string };

/** Dawn's options for the tests' adapter; sets SESA_WEBGPU_FLAGS so that `initBackend('webgpu')` uses them. */
export function testAdapter(): TestAdapter {
  const given = process.env[WEBGPU_FLAGS_ENV];
  const tries = given !== undefined ? [given] : ['', 'backend=opengles'];
  const reasons: string[] = [];
  for (const flags of tries) {
    const probe = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: flags });
    if (probe.ok) {
      process.env[WEBGPU_FLAGS_ENV] = flags;
      return { ok: true, adapter: probe.adapter, flags };
    }
    reasons.push(`${flags === '' ? "Dawn's default" : flags}: ${probe.reason}`);
    if (!probe.installed) break;
  }
  return { ok: false, reason: `no WebGPU adapter (${reasons.join('; ')})` };
}
