// The trainer with --workers 2 (data-parallel GRPO updates on two worker processes) against --workers 1, end to
// end through the CLI on a tiny random model: the same metrics apart from timings and the same adapters
// (≤ 1e-5) after 3 steps; a run whose parent is SIGKILLed resumes (its workers end with it) to the same
// result. And --rollout-engine llama.cpp trains the demo world end to end.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killWhenExists, metricsWithoutTimings, startNode } from './helpers/cli-process.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { SafetensorsFile } from '../src/checkpoint/safetensors.js';
import { llamaCppMissing, llamaCppTitle } from './helpers/llama-cpp-reference.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
const TOL = 1e-5;
let root: string;
let modelDir: string;

function trainArgs(out: string, extra: string[] = [], steps = 3): string[] {
  return [
    CLI, 'train', '--model', modelDir, '--corpus', 'demo', '--steps', String(steps), '--seeds-per-step', '2', '--proposals-per-seed', '2',
    '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--embedder', 'lexical',
    '--lr', '1e-2', '--save-every', '1', '--micro-batch-size', '2', '--backend', 'wasm', '--seed', '6', '--out', join(root, out), ...extra,
  ];
}

/** Metrics compared at float tolerance: numbers within 1e-5 (relative to 1), everything else equal. */
function expectClose(a: unknown, b: unknown, path = ''): void {
  if (typeof a === 'number' && typeof b === 'number') {
    expect(Math.abs(a - b), path).toBeLessThanOrEqual(TOL * Math.max(1, Math.abs(a)));
    return;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    expect(Object.keys(a as object).sort(), path).toEqual(Object.keys(b as object).sort());
    for (const k of Object.keys(a as object)) expectClose((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    return;
  }
  expect(a, path).toEqual(b);
}

function adapterDiff(runA: string, runB: string, step: number, role: string): number {
  const file = (run: string): SafetensorsFile => new SafetensorsFile(join(root, run, 'checkpoints', `step-${step}`, role, 'adapter_model.safetensors'));
  const a = file(runA);
  const b = file(runB);
  let m = 0;
  for (const name of a.tensors.keys()) {
    const x = a.readFloat32(name);
    const y = b.readFloat32(name);
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs((x[i] as number) - (y[i] as number)));
  }
  return m;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-scale-out-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function start(args: string[]): ReturnType<typeof startNode> {
  return startNode(args, root, { XDG_CACHE_HOME: join(root, 'cache') });
}

const metricsOf = (run: string): unknown[] => metricsWithoutTimings(join(root, run));

describe('sesa-train --workers', () => {
  it('--workers 2 equals --workers 1 after 3 steps; a SIGKILLed parent resumes to the same result', async () => {
    const one = await start(trainArgs('w1', ['--workers', '1'])).done;
    expect(one.code, one.stderr).toBe(0);
    const two = await start(trainArgs('w2', ['--workers', '2'])).done;
    expect(two.code, two.stderr).toBe(0);
    expect(readFileSync(join(root, 'w2', 'train.log'), 'utf8')).toMatch(/updates: data-parallel on 2 worker processes/);
    expectClose(metricsOf('w2'), metricsOf('w1'));
    const trained = (metricsOf('w1') as Array<{ proposer?: unknown }>).filter((m) => m.proposer !== undefined).length;
    expect(trained, 'steps with a proposer update').toBeGreaterThan(0);
    for (const role of ['proposer', 'solver']) {
      const d = adapterDiff('w1', 'w2', 3, role);
      console.log(`${role}: max |adapter(N=2) − adapter(N=1)| after 3 steps = ${d.toExponential(2)}`);
      expect(d, role).toBeLessThanOrEqual(TOL);
    }

    // Kill the 2-worker run's parent right after its first checkpoint, then resume it.
    const killed = start(trainArgs('w2-killed', ['--workers', '2']));
    const marker = join(root, 'w2-killed', 'checkpoints', 'step-1', 'state.json');
    await killWhenExists(killed, marker);
    expect((await killed.done).signal).toBe('SIGKILL');
    const resumed = await start([CLI, 'train', '--resume', join(root, 'w2-killed')]).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expectClose(metricsOf('w2-killed'), metricsOf('w2'));
    for (const role of ['proposer', 'solver']) expect(adapterDiff('w2', 'w2-killed', 3, role), role).toBeLessThanOrEqual(TOL);
  }, 1_200_000);
});

describe.skipIf(llamaCppMissing !== undefined)(llamaCppTitle('sesa-train --rollout-engine llama.cpp'), () => {
  it('trains the demo world end to end and checkpoints both adapters', async () => {
    const r = await start(trainArgs('llama', ['--rollout-engine', 'llama.cpp'], 2)).done;
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(root, 'llama', 'train.log'), 'utf8')).toMatch(/rollouts: llama\.cpp \(cpu build\)/);
    expect(metricsOf('llama')).toHaveLength(2);
    expect(existsSync(join(root, 'llama', 'checkpoints', 'step-2', 'solver', 'adapter_model.safetensors'))).toBe(true);
  }, 1_200_000);
});
