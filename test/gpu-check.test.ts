// The device check's CPU side (docs/scale-out.md, "The device check"): the pack holds what the device needs and
// travels under the limit; scripts/gpu-check.sh run, from a copy of the pack outside the repository (so no
// node_modules can be reached), takes the no-adapter path with Dawn's reason and still runs wasm and the PEFT
// layout check; the bundled check runs every stage on a CPU renderer where Dawn's GLES backend exists (--quick);
// scripts/peft-check.py compiles, passes our fixture's layout and names what is wrong in a broken one.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE, maxAbsDiff, readFixtureLogprobs, type GpuCheckReport } from '../bench/gpu-check.js';
import { type PackManifest, packGpuCheck, TRAVEL_LIMIT_BYTES } from '../scripts/gpu-check-pack.js';
import { locateWebgpu, probeWebgpu, WEBGPU_FLAGS_ENV } from '../src/tensor/webgpu.js';

const ROOT = join(import.meta.dirname, '..');
const located = locateWebgpu();
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' }).status === 0;
// No __pycache__ beside scripts/peft-check.py.
process.env.PYTHONDONTWRITEBYTECODE = '1';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('maxAbsDiff', () => {
  it('is the largest difference over nested lists; NaN is infinite; a length mismatch throws', () => {
    expect(maxAbsDiff([[1, 2], [3]], [[1, 2.5], [2]])).toBe(1);
    expect(maxAbsDiff([1, Number.NaN], [1, 2])).toBe(Number.POSITIVE_INFINITY);
    expect(() => maxAbsDiff([[1, 2]], [[1]])).toThrow(/2 values against 1/);
  });
});

describe.skipIf(!located.ok)('the device check, packed and run on this machine', () => {
  let root: string;
  let pack: string;
  let manifest: PackManifest;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sesa-gpu-check-'));
    // Outside the repository, like the pack's place on the device: nothing resolves to node_modules.
    pack = join(root, 'pack');
    manifest = await packGpuCheck({ out: pack, noVulkanLoader: true, log: () => {} });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('holds Node, dawn.node, the bundle, the wasm builds and the PEFT fixture, each as its manifest says', () => {
    const peft = (...p: string[]): string => join('peft', ...p);
    for (const f of ['node.gz', 'dawn.node.gz', 'check.mjs', 'tfjs-backend-wasm-simd.wasm', 'manifest.json', peft(FIXTURE.model, 'config.json'), peft(FIXTURE.model, 'model.safetensors'), peft(FIXTURE.adapter, 'adapter_config.json'), peft(FIXTURE.adapter, 'adapter_model.safetensors'), peft(FIXTURE.logprobs)]) {
      expect(existsSync(join(pack, f)), f).toBe(true);
    }
    for (const [f, { bytes, sha256 }] of Object.entries(manifest.files)) {
      const data = readFileSync(join(pack, f));
      expect(data.length, f).toBe(bytes);
      expect(sha(data), f).toBe(sha256);
    }
    // The packed Node is this Node, and dawn.node the installed one, byte for byte.
    expect(sha(gunzipSync(readFileSync(join(pack, 'node.gz'))))).toBe(sha(readFileSync(process.execPath)));
    if (located.ok) expect(sha(gunzipSync(readFileSync(join(pack, 'dawn.node.gz'))))).toBe(sha(readFileSync(located.runtime.dawnNode)));
    expect(manifest.versions).toEqual({ webgpu: '0.6.2', '@tensorflow/tfjs-backend-webgpu': '4.22.0', '@tensorflow/tfjs': '4.22.0' });
    expect(manifest.vulkanLoader).toBe('not asked for');
  });

  it('travels under the 64 MiB a device call carries, with this working tree', () => {
    const packBytes = Object.values(manifest.files).reduce((a, f) => a + f.bytes, 0);
    expect(manifest.packBytes).toBe(packBytes);
    expect(manifest.treeBytes).toBeGreaterThan(1e6);
    expect(manifest.travelBytes).toBe(packBytes + manifest.treeBytes);
    // The Vulkan loader .deb (~0.1 MB) that a real pack adds still fits.
    expect(manifest.travelBytes + 2 ** 20).toBeLessThanOrEqual(TRAVEL_LIMIT_BYTES);
    expect(statSync(join(pack, 'check.mjs')).size).toBeLessThan(8 * 2 ** 20);
  });

  it("scripts/gpu-check.sh run without an adapter: Dawn's reason, the wasm part, the PEFT layout, exit 2, results in $OUT", () => {
    // Dawn's default where it finds nothing (this machine), else the null backend, which is always refused.
    const none = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: '' });
    const out = join(root, 'out');
    mkdirSync(out, { recursive: true });
    const r = spawnSync('bash', ['scripts/gpu-check.sh', 'run'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, GPU_CHECK_PACK: pack, GPU_CHECK_WORK: join(root, 'work'), OUT: out, [WEBGPU_FLAGS_ENV]: none.ok ? 'backend=null' : '' },
    });
    const log = r.stdout;
    expect(r.status, log).toBe(2);
    expect(log).toContain(`adapter: none: ${none.ok ? "SESA_WEBGPU_FLAGS selects Dawn's null backend, which computes nothing" : none.reason}`);
    expect(log).toContain('tiny Qwen3 on wasm: max |Δ logp| against the packed fixture 0.00e+0');
    expect(log).toMatch(/gpu-check\.sh: webgpu check exit 2, peft check exit \d/);
    expect(readFileSync(join(out, 'gpu-check.log'), 'utf8')).toBe(log);
    const report = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8')) as GpuCheckReport;
    expect(report.noAdapter).toBeTruthy();
    expect(report.failures).toEqual([]);
    if (python) {
      expect(log).toContain('peft layout: ok');
      const peft = JSON.parse(readFileSync(join(out, 'peft-check.json'), 'utf8')) as { layout_problems: string[] };
      expect(peft.layout_problems).toEqual([]);
    }
  });

  const gles = probeWebgpu({ ...process.env, [WEBGPU_FLAGS_ENV]: 'backend=opengles' });
  it.skipIf(!gles.ok)('the bundle on a CPU renderer (Dawn GLES on llvmpipe, --quick): every stage runs and webgpu meets 1e-4 against wasm', () => {
    const work = join(root, 'gles');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'node'), gunzipSync(readFileSync(join(pack, 'node.gz'))), { mode: 0o755 });
    writeFileSync(join(work, 'dawn.node'), gunzipSync(readFileSync(join(pack, 'dawn.node.gz'))));
    const json = join(work, 'report.json');
    const r = spawnSync(join(work, 'node'), [join(pack, 'check.mjs'), '--dawn-node', join(work, 'dawn.node'), '--peft-dir', join(pack, 'peft'), '--json', json, '--quick'], {
      cwd: work,
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, [WEBGPU_FLAGS_ENV]: 'backend=opengles' },
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as GpuCheckReport;
    expect(report.adapter?.cpuRenderer).toBe(true);
    expect(report.failures).toEqual([]);
    expect(report.skipped).toEqual([]);
    expect(report.matmul.map((m) => m.n)).toEqual([64, 128]);
    expect(report.matmul.every((m) => m.tflops > 0)).toBe(true);
    expect(report.tiny?.pass).toBe(true);
    expect(report.tiny?.wasmAgainstFixture).toBe(0);
    expect(report.tiny?.gradScale).toBeGreaterThan(1e-2);
    expect(report.large?.grpoTokensPerSecond).toBeGreaterThan(0);
    expect(report.large?.decodeTokensPerSecond).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/tiny Qwen3 webgpu − wasm \(goal ≤ 0\.0001\): max \|Δ logp\| \S+ PASS; max \|Δ LoRA grad\| \S+ PASS/);
  });

  describe.skipIf(!python)('scripts/peft-check.py (the standard-library part; torch is not installed here)', () => {
    it('compiles, and passes the layout of the fixture we export', () => {
      const compiled = spawnSync('python3', ['-c', 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)', join(ROOT, 'scripts', 'peft-check.py'), join(root, 'peft-check.pyc')], { encoding: 'utf8' });
      expect(compiled.status, compiled.stderr).toBe(0);
      const r = spawnSync('python3', [join(ROOT, 'scripts', 'peft-check.py'), '--fixture', join(pack, 'peft'), '--layout-only'], { encoding: 'utf8' });
      expect(r.stdout.trim()).toBe('peft layout: ok');
      expect(r.status).toBe(0);
    });

    it('names the file and field of a broken adapter, and refuses to compare lists of unequal length', () => {
      const broken = join(root, 'broken');
      cpSync(join(pack, 'peft'), broken, { recursive: true });
      const cfgFile = join(broken, FIXTURE.adapter, 'adapter_config.json');
      const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, unknown>;
      writeFileSync(cfgFile, JSON.stringify({ ...cfg, peft_type: 'IA3', r: 8 }));
      const r = spawnSync('python3', [join(ROOT, 'scripts', 'peft-check.py'), '--fixture', broken, '--layout-only'], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stdout).toContain(`${cfgFile}: field 'peft_type' is 'IA3', PEFT wants 'LORA'`);
      expect(r.stdout).toMatch(/adapter_model\.safetensors: tensor 'base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight' is F32 \[4, 64\], PEFT wants a float \[8, 64\]/);
      const unit = spawnSync('python3', ['-c', `import importlib.util, sys
spec = importlib.util.spec_from_file_location('peft_check', sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
assert m.max_abs_diff([[1.0, 2.0], [3.0]], [[1.0, 2.5], [2.0]]) == 1.0
assert m.max_abs_diff([[float('nan')]], [[0.0]]) == float('inf')
try:
    m.max_abs_diff([[1.0]], [[1.0, 2.0]]); sys.exit('no error')
except ValueError as e:
    assert 'sequence 0: 1 values against 2' in str(e)
print('ok')`, join(ROOT, 'scripts', 'peft-check.py')], { encoding: 'utf8', cwd: root });
      expect(unit.stdout.trim(), unit.stderr).toBe('ok');
    });

    it('our log-probs in the fixture are the ones this checkout computes (wasm)', () => {
      const f = readFixtureLogprobs(join(pack, 'peft'));
      expect(f.backend).toBe('wasm');
      expect(f.sequences.map((s) => s.length)).toEqual(f.logprobs.map((l) => l.length + 1));
    });
  });
});
