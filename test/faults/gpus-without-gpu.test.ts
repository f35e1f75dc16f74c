// `--gpus N` on a machine without a GPU backend, and what a failed start leaves: `--model tiny --gpus 8` here
// used to start 8 CPU workers without a word (a silent fallback from GPUs to the CPU); it is refused, naming
// --workers N, and the failed start leaves no run folder, no train.log and no lock. `doctor --gpus N` was an
// unknown argument: it checks the GPU backend and that N GPUs are visible.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGpuWorkers } from '../../src/doctor/tensor-backends.js';
import type { CommandOutput, Probes } from '../../src/doctor/types.js';
import { CLI, faultRoot, run } from './cli.js';

let root: string;

beforeAll(() => {
  root = faultRoot('gpus');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A doctor probe double whose nvidia-smi lists `gpus` H100s. */
function smi(gpus: number): Probes {
  const stdout = Array.from({ length: gpus }, () => 'NVIDIA H100 80GB HBM3, 9.0, 81559').join('\n');
  return {
    nodeVersion: process.version,
    importPackage: async () => ({}),
    run: async (): Promise<CommandOutput> => ({ code: 0, stdout, stderr: '' }),
    libraryDirs: [],
    freeBytes: () => 2 ** 40,
    totalMemoryBytes: 2 ** 36,
    webgpu: () => ({ ok: false, installed: false, reason: 'not installed (test double)' }),
    hugePages: () => ({ thpMode: 'madvise', tunables: 'glibc.malloc.hugetlb=1', glibc: '2.36' }),
  };
}

describe('--gpus N without a GPU backend', () => {
  it('train --model tiny --gpus 8 on wasm is refused, naming --workers 8, and the failed start leaves nothing', async () => {
    const out = join(root, 'runs', 'sesa');
    const r = await run(root, [CLI, 'train', '--model', 'tiny', '--gpus', '8', '--backend', 'wasm', '--threads', '1', '--out', out], { SESA_HOME: join(root, 'home') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--gpus 8 places one worker process on each of 8 GPUs, which needs the tensorflow GPU backend (@tensorflow/tfjs-node-gpu)');
    expect(r.stderr).toContain('--workers 8 runs 8 worker processes on the CPU instead');
    expect(r.stderr).not.toMatch(/sharded over 8 worker processes/);
    // Neither the run folder nor the runs/ folder it made: not train.log, not the lock.
    expect(existsSync(join(root, 'runs')), 'the failed start left runs/').toBe(false);
  }, 120_000);

  it('doctor --gpus 8 is a known argument and fails the GPU check here, naming --workers 8', async () => {
    const r = await run(root, [CLI, 'doctor', '--model', 'tiny', '--gpus', '8', '--json']);
    expect(r.stderr).not.toMatch(/Unknown argument/);
    const report = JSON.parse(r.stdout) as { ready: boolean; results: Array<{ check: string; status: string; detail: string; fix?: string }> };
    const gpu = report.results.find((x) => x.check === 'gpu-workers');
    expect(gpu?.status).toBe('fail');
    expect(gpu?.fix).toContain('--workers 8 runs 8 worker processes on the CPU');
    expect(report.ready).toBe(false);
    expect(r.code).toBe(1);
    const bad = await run(root, [CLI, 'doctor', '--gpus', '0']);
    expect(bad.stderr).toContain('--gpus must be a positive integer, got 0');
  }, 120_000);

  it('with the GPU backend: N GPUs visible (CUDA_VISIBLE_DEVICES counts when set), or a failure naming how many', async () => {
    expect((await checkGpuWorkers(smi(8), 8, true, undefined)).status).toBe('ok');
    const two = await checkGpuWorkers(smi(2), 8, true, undefined);
    expect(two).toMatchObject({ status: 'fail', detail: '--gpus 8 needs 8 GPUs, one per worker process; nvidia-smi lists 2' });
    const named = await checkGpuWorkers(smi(8), 4, true, '0,1');
    expect(named.detail).toBe('--gpus 4 needs 4 GPUs, one per worker process; CUDA_VISIBLE_DEVICES=0,1 names 2 of the 8 GPUs nvidia-smi lists');
    expect((await checkGpuWorkers(smi(8), 8, false, undefined)).status).toBe('fail');
  });
});
