// `sesa-train doctor`: each check against a working and a broken fixture. The outside world comes in through
// scripted probes (imports, nvidia-smi, library folders, free space); the retriever is a real HTTP server on
// 127.0.0.1 and the model folders are real tiny checkpoints, broken one file at a time.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { checkE5, checkModelFolder, checkModelMemory, parameterCount } from '../src/doctor/model.js';
import { checkRetriever } from '../src/doctor/retriever.js';
import { formatReport, runDoctor } from '../src/doctor/run.js';
import { checkDisk, checkHugePages, checkNode, type HugePageProbe, probeHugePages } from '../src/doctor/system.js';
import { checkCuda, checkNative, checkTensorBackends, checkWasm, parseNvidiaSmi } from '../src/doctor/tensor-backends.js';
import type { CheckResult, CommandOutput, DoctorOptions, Probes } from '../src/doctor/types.js';
import { checkWebgpu, checkWebgpuModel, largestTensorBytes } from '../src/doctor/webgpu.js';
import { loadModelConfig, parseModelConfig } from '../src/model/config.js';
import { WEBGPU_INSTALL, type WebgpuAdapterReport, type WebgpuProbe } from '../src/tensor/webgpu.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-doctor-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function missingModule(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}'`), { code: 'ERR_MODULE_NOT_FOUND' });
}

const WEBGPU_NOT_INSTALLED: WebgpuProbe = { ok: false, installed: false, reason: `webgpu@0.6.2 and @tensorflow/tfjs-backend-webgpu@4.22.0 are not installed (optional peers); install them with \`${WEBGPU_INSTALL}\`` };

/** An adapter as Dawn reports it (scripted: the limits an NVIDIA Vulkan driver gives are of this order). */
function adapterReport(over: Partial<WebgpuAdapterReport> = {}): WebgpuAdapterReport {
  return {
    vendor: 'nvidia',
    architecture: 'hopper',
    device: 'NVIDIA H200',
    description: 'NVIDIA: 580.159.03',
    isFallbackAdapter: false,
    cpuRenderer: false,
    f16: true,
    features: ['shader-f16', 'timestamp-query'],
    limits: {
      maxBufferSize: 2 ** 34,
      maxStorageBufferBindingSize: 2 ** 32 - 4,
      maxUniformBufferBindingSize: 65536,
      maxStorageBuffersPerShaderStage: 64,
      maxBindGroups: 4,
      maxComputeWorkgroupStorageSize: 49152,
      maxComputeInvocationsPerWorkgroup: 1024,
      maxComputeWorkgroupSizeX: 1024,
      maxComputeWorkgroupSizeY: 1024,
      maxComputeWorkgroupSizeZ: 64,
      maxComputeWorkgroupsPerDimension: 65535,
    },
    flags: [],
    featureLevel: 'core',
    ...over,
  };
}

/** Scripted probes: nothing installed, no nvidia-smi, plenty of disk, 24 GiB of RAM (overridable). */
function probes(over: Partial<Probes> = {}): Probes {
  return {
    webgpu: () => WEBGPU_NOT_INSTALLED,
    nodeVersion: 'v20.20.2',
    importPackage: async (name) => {
      throw missingModule(name);
    },
    run: async (): Promise<CommandOutput> => ({ code: null, stdout: '', stderr: '', error: 'ENOENT' }),
    libraryDirs: [],
    freeBytes: () => 100 * 2 ** 30,
    totalMemoryBytes: 24 * 2 ** 30,
    hugePages: () => ({ thpMode: 'madvise', tunables: 'glibc.malloc.hugetlb=1', glibc: '2.36' }),
    ...over,
  };
}

const smi = (stdout: string) => async (): Promise<CommandOutput> => ({ code: 0, stdout, stderr: '' });

function byCheck(results: CheckResult[], check: string): CheckResult {
  const r = results.find((x) => x.check === check);
  if (!r) throw new Error(`no '${check}' line in ${JSON.stringify(results.map((x) => x.check))}`);
  return r;
}

describe('node', () => {
  it('passes 20.19+ and fails older versions with the fix', () => {
    expect(checkNode(probes({ nodeVersion: 'v20.19.0' })).status).toBe('ok');
    expect(checkNode(probes({ nodeVersion: 'v22.1.0' })).status).toBe('ok');
    const old = checkNode(probes({ nodeVersion: 'v18.20.4' }));
    expect(old.status).toBe('fail');
    expect(old.fix).toMatch(/20\.19/);
    expect(checkNode(probes({ nodeVersion: 'garbage' })).status).toBe('fail');
  });
});

describe('tensor backends and CUDA', () => {
  it('not installed: informational lines with the install command, and auto still starts', async () => {
    const rs = await checkTensorBackends(probes(), { backend: 'auto' });
    const gpu = byCheck(rs, 'tfjs-node-gpu');
    expect(gpu.status).toBe('info');
    expect(gpu.detail).toMatch(/not installed/);
    expect(gpu.fix).toMatch(/npm install @tensorflow\/tfjs-node-gpu@4\.22\.0/);
    expect(rs.every((r) => r.status !== 'fail')).toBe(true);
  });

  it('--backend tensorflow with neither binding fails', async () => {
    const rs = await checkTensorBackends(probes(), { backend: 'tensorflow' });
    expect(byCheck(rs, 'backend').status).toBe('fail');
  });

  it('installed but broken by a missing CUDA library: a failing line that names the library', async () => {
    const p = probes({
      importPackage: async (name) => {
        if (name === '@tensorflow/tfjs-node-gpu') throw new Error('libcudart.so.11.0: cannot open shared object file: No such file or directory');
        throw missingModule(name);
      },
    });
    const gpu = byCheck(await checkTensorBackends(p, { backend: 'auto' }), 'tfjs-node-gpu');
    expect(gpu.status).toBe('fail');
    expect(gpu.detail).toMatch(/libcudart\.so\.11\.0/);
    expect(gpu.detail).toMatch(/CUDA library/);
  });

  it('finds libcudart.so.11.0 and libcudnn.so.8 in the library folders, or says which are missing', async () => {
    const libs = join(root, 'libs');
    mkdirSync(libs, { recursive: true });
    writeFileSync(join(libs, 'libcudart.so.11.0'), '');
    const half = byCheck(await checkCuda(probes({ libraryDirs: [libs] }), true), 'cuda-libraries');
    expect(half.status).toBe('fail');
    expect(half.detail).toMatch(/libcudnn\.so\.8/);
    expect(half.detail).not.toMatch(/libcudart/);
    writeFileSync(join(libs, 'libcudnn.so.8'), '');
    expect(byCheck(await checkCuda(probes({ libraryDirs: [libs] }), true), 'cuda-libraries').status).toBe('ok');
  });

  it('lists GPUs with compute capability and warns about PTX JIT on Hopper only', async () => {
    expect(parseNvidiaSmi('NVIDIA H100 80GB HBM3, 9.0, 81559\nNVIDIA H100 80GB HBM3, 9.0, 81559\n')).toEqual([
      { name: 'NVIDIA H100 80GB HBM3', computeCapability: 9, memoryMiB: 81559 },
      { name: 'NVIDIA H100 80GB HBM3', computeCapability: 9, memoryMiB: 81559 },
    ]);
    const hopper = await checkCuda(probes({ run: smi('NVIDIA H100 80GB HBM3, 9.0, 81559\n') }), false);
    expect(byCheck(hopper, 'gpus').detail).toMatch(/1 visible: 0: NVIDIA H100 80GB HBM3 \(compute 9\.0, 80 GiB\)/);
    expect(byCheck(hopper, 'ptx-jit').status).toBe('warn');
    const ampere = await checkCuda(probes({ run: smi('NVIDIA A100-SXM4-40GB, 8.0, 40960\n') }), false);
    expect(ampere.some((r) => r.check === 'ptx-jit')).toBe(false);
    expect(() => parseNvidiaSmi('No devices were found, oops')).toThrow(/cannot read the line/);
  });

  it('nvidia-smi missing or failing: the gpus line says so (fail only when the GPU backend is required)', async () => {
    const none = byCheck(await checkCuda(probes(), false), 'gpus');
    expect(none.status).toBe('info');
    expect(none.detail).toMatch(/ENOENT/);
    const broken = byCheck(await checkCuda(probes({ run: async () => ({ code: 9, stdout: '', stderr: 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' }) }), true), 'gpus');
    expect(broken.status).toBe('fail');
    expect(broken.detail).toMatch(/exit 9.*could not communicate/);
  });
});

describe('model folder', () => {
  let good: string;
  beforeAll(() => {
    good = makeTinyCheckpoint({ out: join(root, 'good'), arch: 'qwen3', hidden: 32, heads: 2, kvHeads: 1, headDim: 16, layers: 1, intermediate: 48, vocab: 300, seed: 1 }).dir;
  });

  /** A copy of the good folder with `edit` applied. */
  function broken(name: string, edit: (dir: string) => void): string {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) writeFileSync(join(dir, f), readFileSync(join(good, f)));
    edit(dir);
    return dir;
  }

  it('a complete folder passes every line', async () => {
    const { results, config } = await checkModelFolder(good);
    expect(results.map((r) => [r.check, r.status])).toEqual([
      ['model-config', 'ok'],
      ['model-weights', 'ok'],
      ['tokenizer', 'ok'],
      ['chat-template', 'ok'],
    ]);
    expect(config?.numLayers).toBe(1);
  });

  it('a missing registry name fails with the download command; a missing folder with the path to check', async () => {
    const [r] = (await checkModelFolder(join(root, 'nowhere'))).results;
    expect(r?.status).toBe('fail');
    expect(r?.fix).toMatch(/^check the path: --model takes a Hugging Face model folder/);
    const [name] = (await checkModelFolder('qwen3-0.6b')).results;
    if (name?.status === 'fail') expect(name.fix).toBe('sesa-train download qwen3-0.6b, or pass a model folder');
  });

  it('a broken config, missing weights, a missing tokenizer, no chat template: each fails on its own line', async () => {
    const cases: Array<[string, (d: string) => void, string]> = [
      ['bad-config', (d) => writeFileSync(join(d, 'config.json'), '{ not json'), 'model-config'],
      ['no-weights', (d) => rmSync(join(d, 'model.safetensors')), 'model-weights'],
      ['missing-shard', (d) => {
        rmSync(join(d, 'model.safetensors'));
        writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { 'model.embed_tokens.weight': 'model-00001-of-00002.safetensors' } }));
      }, 'model-weights'],
      ['no-tokenizer', (d) => rmSync(join(d, 'tokenizer.json')), 'tokenizer'],
      ['no-template', (d) => {
        const tc = JSON.parse(readFileSync(join(d, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
        delete tc.chat_template;
        writeFileSync(join(d, 'tokenizer_config.json'), JSON.stringify(tc));
      }, 'chat-template'],
    ];
    for (const [name, edit, failing] of cases) {
      const { results } = await checkModelFolder(broken(name, edit));
      const bad = results.filter((r) => r.status === 'fail').map((r) => r.check);
      expect(bad, name).toEqual([failing]);
      expect(byCheck(results, failing).fix, name).toBeTruthy();
    }
  });

  it('memory need against the backend limit: ok, warn (weights fit, working memory does not), fail', () => {
    const cfg = loadModelConfig(good);
    const weights = 4 * parameterCount(cfg);
    expect(checkModelMemory(cfg, 4 * 2 ** 30, 'the wasm heap').status).toBe('ok');
    expect(checkModelMemory(cfg, weights * 1.1, 'x').status).toBe('warn');
    const fail = checkModelMemory(cfg, weights - 1, 'one GPU');
    expect(fail.status).toBe('fail');
    expect(fail.detail).toMatch(/one GPU holds/);
  });

  it('parameterCount matches the tensors in the checkpoint', async () => {
    const { SafetensorsCheckpoint } = await import('../src/formats/safetensors.js');
    const ckpt = new SafetensorsCheckpoint(good);
    const n = ckpt.names().reduce((s, name) => s + ckpt.entry(name).shape.reduce((a, b) => a * b, 1), 0);
    expect(parameterCount(loadModelConfig(good))).toBe(n);
  });
});

describe('E5 folder', () => {
  it('only checked with --embedder e5; fails without the ONNX weights', () => {
    expect(checkE5({ embedder: 'lexical' })).toBeUndefined();
    expect(checkE5({ embedder: 'e5' })?.status).toBe('fail');
    const dir = join(root, 'e5');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) writeFileSync(join(dir, f), '{}');
    const r = checkE5({ embedder: 'e5', e5Model: dir });
    expect(r?.status).toBe('fail');
    expect(r?.detail).toMatch(/onnx\/model\.onnx/);
    writeFileSync(join(dir, 'onnx', 'model.onnx'), '');
    expect(checkE5({ embedder: 'e5', e5Model: dir })?.status).toBe('ok');
    // A Hub name cannot be checked without loading it: a warning that says so, not a pass.
    expect(checkE5({ embedder: 'e5', e5Model: 'intfloat/e5-base-v2' })?.status).toBe('warn');
  });
});

describe('retriever (a local server on 127.0.0.1)', () => {
  let server: Server;
  let base: string;
  let reply: (body: { queries: string[]; topk: number }) => { status: number; body: string };
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const r = reply(JSON.parse(raw) as { queries: string[]; topk: number });
        res.writeHead(r.status, { 'content-type': 'application/json' });
        res.end(r.body);
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('not asked for: no line', async () => {
    expect(await checkRetriever(undefined)).toBeUndefined();
  });

  it('a server answering in the Search-R1 format passes', async () => {
    reply = (b) => ({
      status: 200,
      body: JSON.stringify({ result: b.queries.map(() => Array.from({ length: b.topk }, (_, i) => ({ document: { id: String(i), contents: `"Darwin"\nCharles Darwin wrote it (${i}).` }, score: 1 - i / 10 }))) }),
    });
    const r = await checkRetriever(`${base}/retrieve`);
    expect(r?.status).toBe('ok');
    expect(r?.detail).toMatch(/answered 1 query with 3 passages/);
  });

  it('a server answering another format, an error, or nothing: fail with the reason', async () => {
    reply = () => ({ status: 200, body: JSON.stringify({ hits: [] }) });
    expect((await checkRetriever(`${base}/retrieve`))?.status).toBe('fail');
    reply = () => ({ status: 404, body: 'Not Found' });
    const notFound = await checkRetriever(`${base}/retrieve`);
    expect(notFound?.status).toBe('fail');
    expect(notFound?.detail).toMatch(/HTTP 404/);
    reply = (b) => ({ status: 200, body: JSON.stringify({ result: b.queries.map(() => []) }) });
    expect((await checkRetriever(`${base}/retrieve`))?.detail).toMatch(/no passages/);
    // A port nobody listens on (the server's own, after a fresh server is closed).
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    const refused = await checkRetriever(`http://127.0.0.1:${port}/retrieve`, 2000);
    expect(refused?.status).toBe('fail');
    expect(refused?.detail).toMatch(/ECONNREFUSED|cannot connect/);
    expect((await checkRetriever('not a url'))?.status).toBe('fail');
  });
});

describe('disk and the whole report', () => {
  it('too little free space fails with the need stated', () => {
    const need = { oneCheckpoint: 2 ** 20, checkpoints: 3, once: 0 };
    const r = checkDisk(probes({ freeBytes: () => 2 ** 25 }), { out: join(root, 'run') }, need);
    expect(r.status).toBe('fail');
    expect(r.detail).toMatch(/32 MiB free/);
    expect(r.detail).toContain('one checkpoint ≈ 1 MiB, 3 checkpoints');
    expect(checkDisk(probes(), { out: join(root, 'run') }, need).status).toBe('ok');
  });

  it('the disk need is the run\'s checkpoints and files, not a flat GiB: ~5 MiB checkpoints of the demo model ask for tens of MiB', () => {
    const need = { oneCheckpoint: 5 * 2 ** 20, checkpoints: 2, once: 0 };
    // 100 MiB is enough for two 5 MiB checkpoints and the run's other files (it used to ask for ≈ 1 GiB).
    expect(checkDisk(probes({ freeBytes: () => 100 * 2 ** 20 }), { out: join(root, 'run') }, need)).toMatchObject({ status: 'ok', detail: expect.stringContaining('need ≈ 74 MiB') });
    // Room for some checkpoints but not all: a warning with how many fit.
    const some = checkDisk(probes({ freeBytes: () => 80 * 2 ** 20 }), { out: join(root, 'run') }, { ...need, checkpoints: 10 });
    expect(some.status).toBe('warn');
    expect(some.detail).toContain('room for 3 of the 10 checkpoints');
  });

  const base: DoctorOptions = { model: 'tiny', backend: 'auto', embedder: 'lexical', rolloutEngine: 'native', out: join(root, 'run'), loraR: 16 };

  it('nothing optional installed, tiny model: ready, with the GPU lines informational', async () => {
    const report = await runDoctor(base, probes());
    expect(report.ready).toBe(true);
    const text = formatReport(report);
    expect(text).toMatch(/tfjs-node-gpu .*not installed/);
    expect(text).toMatch(/the run as given would start/);
  });

  it('one failing check (an old Node, or --backend tensorflow without a binding) makes it not ready', async () => {
    expect((await runDoctor(base, probes({ nodeVersion: 'v18.0.0' }))).ready).toBe(false);
    const tf = await runDoctor({ ...base, backend: 'tensorflow' }, probes());
    expect(tf.ready).toBe(false);
    expect(formatReport(tf)).toMatch(/FAIL {2}backend/);
  });
});

describe('doctor: the webgpu backend', () => {
  const base: DoctorOptions = { model: 'tiny', backend: 'auto', embedder: 'lexical', rolloutEngine: 'native', out: join(root, 'run'), loraR: 16 };

  it('not installed: informational with the install command; a failure only with --backend webgpu', () => {
    const r = checkWebgpu(WEBGPU_NOT_INSTALLED, { backend: 'auto' });
    expect(r.status).toBe('info');
    expect(r.fix).toContain(WEBGPU_INSTALL);
    expect(checkWebgpu(WEBGPU_NOT_INSTALLED, { backend: 'webgpu' }).status).toBe('fail');
  });

  it("no adapter: Dawn's reason, and what to install", () => {
    const none: WebgpuProbe = { ok: false, installed: true, reason: 'Dawn found no WebGPU adapter: Vulkan shaderUniform*ArrayDynamicIndexing required' };
    const r = checkWebgpu(none, { backend: 'webgpu' });
    expect(r.status).toBe('fail');
    expect(r.detail).toBe('no adapter: Dawn found no WebGPU adapter: Vulkan shaderUniform*ArrayDynamicIndexing required');
    expect(r.fix).toMatch(/Vulkan loader.*SESA_WEBGPU_FLAGS/);
    expect(checkWebgpu(none, { backend: 'auto' }).status).toBe('info');
  });

  it('an adapter: its name, f16 support and limits; a CPU renderer is named as one', () => {
    const r = checkWebgpu({ ok: true, adapter: adapterReport() }, { backend: 'auto' });
    expect(r.status).toBe('ok');
    expect(r.detail).toBe('NVIDIA H200 (nvidia, hopper, NVIDIA: 580.159.03); shader-f16 yes; maxBufferSize 16.0 GiB, maxStorageBufferBindingSize 4.0 GiB, 64 storage buffers per shader, workgroups of 1024 invocations with 49152 B shared');
    const cpu = checkWebgpu({ ok: true, adapter: adapterReport({ device: 'llvmpipe-llvm-15', description: 'OpenGL ES 3.2 Mesa', vendor: '', architecture: '', cpuRenderer: true, f16: false, flags: ['backend=opengles'] }) }, { backend: 'webgpu' });
    expect(cpu.status).toBe('warn');
    expect(cpu.detail).toMatch(/^llvmpipe-llvm-15 \(OpenGL ES 3\.2 Mesa\), a CPU renderer; shader-f16 no; .*\(SESA_WEBGPU_FLAGS=backend=opengles\): auto picks wasm over it$/);
  });

  it("a model whose embedding table is over the adapter's largest binding fails on webgpu", () => {
    const qwen3_8b = parseModelConfig({ architectures: ['Qwen3ForCausalLM'], hidden_size: 4096, intermediate_size: 12288, num_hidden_layers: 36, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, rms_norm_eps: 1e-6, rope_theta: 1e6, max_position_embeddings: 40960, tie_word_embeddings: false });
    expect(largestTensorBytes(qwen3_8b)).toEqual({ name: 'the embedding table', bytes: 4 * 151936 * 4096 });
    expect(checkWebgpuModel(qwen3_8b, adapterReport()).status).toBe('ok');
    const small = adapterReport({ limits: { ...adapterReport().limits, maxStorageBufferBindingSize: 2 ** 30 } });
    const r = checkWebgpuModel(qwen3_8b, small);
    expect(r.status).toBe('fail');
    expect(r.detail).toBe('the embedding table is 2.3 GiB of f32; the adapter binds at most 1.0 GiB at once');
  });

  it('the whole report: --backend webgpu without an adapter is not ready; with one, the model is checked against it', async () => {
    const none = await runDoctor({ ...base, backend: 'webgpu' }, probes({ webgpu: () => ({ ok: false, installed: true, reason: "Dawn found no WebGPU adapter: Couldn't load Vulkan" }) }));
    expect(none.ready).toBe(false);
    expect(formatReport(none)).toMatch(/FAIL {2}webgpu +no adapter: Dawn found no WebGPU adapter: Couldn't load Vulkan/);
    const dir = join(root, 'webgpu-model');
    makeTinyCheckpoint({ out: dir, seed: 3 });
    const ok = await runDoctor({ ...base, model: dir, backend: 'auto' }, probes({ webgpu: () => ({ ok: true, adapter: adapterReport() }) }));
    expect(ok.ready).toBe(true);
    expect(byCheck(ok.results, 'webgpu-model').status).toBe('ok');
    expect(byCheck(ok.results, 'model-memory').detail).toMatch(/system memory \(WebGPU reports no device memory\)/);
  });
});

describe('doctor: huge pages for the native backend', () => {
  // The glibc version is an explicit argument: `undefined` means a C library that is not glibc.
  const madvise = (tunables: string | undefined, glibc: string | undefined): (() => HugePageProbe) => () => ({ thpMode: 'madvise', tunables, glibc });

  it('madvise mode: ok when malloc asks for them, a warning naming the fix when it does not', () => {
    expect(checkHugePages(madvise('glibc.malloc.hugetlb=1', '2.36'), true)).toEqual({ check: 'huge pages', status: 'ok', detail: 'mode madvise, asked for by malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)' });
    expect(checkHugePages(madvise('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1', '2.36'), true)?.status).toBe('ok');
    // 2 asks for hugetlbfs pages, not transparent ones; 10 and a longer name are other settings.
    for (const tunables of [undefined, '', 'glibc.malloc.hugetlb=0', 'glibc.malloc.hugetlb=2', 'glibc.malloc.hugetlb=10', 'xglibc.malloc.hugetlb=1']) {
      const r = checkHugePages(madvise(tunables, '2.36'), true);
      expect(r?.status, String(tunables)).toBe('warn');
      expect(r?.fix).toContain('GLIBC_TUNABLES=glibc.malloc.hugetlb=1');
    }
  });

  it('a C library that cannot be asked (glibc before 2.35, not glibc) is informational, asked or not; always and never need nothing', () => {
    for (const tunables of ['glibc.malloc.hugetlb=1', undefined]) {
      const old = checkHugePages(madvise(tunables, '2.31'), true);
      expect(old?.status).toBe('info');
      expect(old?.detail).toContain('glibc 2.31 cannot be asked for them');
      const musl = checkHugePages(madvise(tunables, undefined), true);
      expect(musl?.status).toBe('info');
      expect(musl?.detail).toContain('not glibc');
    }
    expect(checkHugePages(madvise('glibc.malloc.hugetlb=1', '2.35'), true)?.status).toBe('ok');
    expect(checkHugePages(() => ({ thpMode: 'always', tunables: undefined, glibc: undefined }), true)?.status).toBe('ok');
    expect(checkHugePages(() => ({ thpMode: 'never', tunables: 'glibc.malloc.hugetlb=1', glibc: '2.36' }), true)?.detail).toMatch(/off in this kernel \(mode never\): the frozen weights sit on 4 KiB pages/);
    expect(checkHugePages(() => ({ thpMode: undefined, tunables: undefined, glibc: undefined }), true)?.status).toBe('info');
  });

  it('reported for the native backends only, and probed only then', async () => {
    let probed = 0;
    const counting = (): HugePageProbe => {
      probed++;
      return { thpMode: 'madvise', tunables: undefined, glibc: '2.36' };
    };
    expect(checkHugePages(counting, false)).toBeUndefined();
    expect(probed).toBe(0);
    const base: DoctorOptions = { model: 'tiny', backend: 'native', embedder: 'lexical', rolloutEngine: 'native', out: join(root, 'run'), loraR: 16 };
    const native = await runDoctor(base, probes({ hugePages: counting }));
    expect(byCheck(native.results, 'huge pages').status).toBe('warn');
    expect(native.ready).toBe(true);
    expect(probed).toBe(1);
    const wasm = await runDoctor({ ...base, backend: 'wasm' }, probes({ hugePages: counting }));
    expect(wasm.results.some((r) => r.check === 'huge pages')).toBe(false);
    expect(probed).toBe(1);
  });

  it('the real probe: a mode the kernel names, and a glibc version as numbers where the C library is glibc', () => {
    const p = probeHugePages();
    if (p.thpMode !== undefined) expect(['always', 'madvise', 'never']).toContain(p.thpMode);
    if (p.glibc !== undefined) expect(p.glibc).toMatch(/^\d+\.\d+/);
    if (process.platform === 'linux' && process.report?.getReport && (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime) expect(p.glibc).toBeDefined();
  });
});

describe('doctor: the wasm check', () => {
  it('native: the binding loads here, with its version and the thread layout a run gets', async () => {
    const r = await checkNative({ backend: 'auto', threads: 3 }, 2);
    expect(r.status).toBe('ok');
    expect(r.detail).toMatch(/^onnxruntime-node \d+\.\d+\.\d+ loads: matMuls and the frozen base on MLAS on 3 threads, the rest on the single-threaded wasm build \(auto picks it/);
    expect((await checkNative({ backend: 'wasm' }, 2)).detail).toContain('on 2 threads');
    expect((await checkNative({ backend: 'wasm' }, 2)).detail).toContain('not used: --backend wasm');
  });

  it('reports the threads training runs on (the threaded build on every core), not the stock build\'s flag', async () => {
    const r = await checkWasm({ backend: 'wasm' });
    expect(r.status).toBe('ok');
    const cores = availableParallelism();
    expect(r.detail).toContain(`${cores} thread${cores === 1 ? '' : 's'}`);
    expect(r.detail).not.toMatch(/threads off/);
    // doctor --threads N checks the count the run asks for, as train --threads N starts it.
    const one = await checkWasm({ backend: 'wasm', threads: 1 });
    expect(one.status).toBe('ok');
    expect(one.detail).toContain('1 thread (the single-threaded build, as --threads 1 asks)');
  });
});
