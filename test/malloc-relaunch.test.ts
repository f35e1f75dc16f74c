// bin/sesa-train.mjs starts itself again without its heap-retaining malloc settings for a model whose native
// weights fit only once (src/cli/malloc-relaunch.ts): when it does, what the restarted process gets, how a
// signal reaches it, and how the bin ends. The signal tests run a real child through the same forwarding.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { flagValue, mallocRelaunchPlan, RELAUNCHED_ENV } from '../src/cli/malloc-relaunch.js';
import { loadModelConfig } from '../src/model/config.js';
import { memoryNeedOfConfig, nativeLayout } from '../src/model/memory-need.js';
import { writeTinyHf } from './helpers/tiny-hf.js';

const ROOT = join(import.meta.dirname, '..');
const root = mkdtempSync(join(tmpdir(), 'sesa-relaunch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const model = writeTinyHf(join(root, 'model'), { arch: 'qwen3', hidden: 16, heads: 2, kvHeads: 1, layers: 1, ff: 32, vocab: 300, tie: true, seed: 1, tokenizer: 'bytebpe' }).dir;
const need = memoryNeedOfConfig(loadModelConfig(model));
// A machine on which this model's native weights fit once but not packed twice, and one on which they fit packed.
const onceBytes = need.weightBytes;
const packedBytes = 100 * need.weightBytes;
const BIN_ENV = { MALLOC_MMAP_THRESHOLD_: '999999999', MALLOC_TRIM_THRESHOLD_: '4294967296', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', PATH: '/usr/bin' };

describe('flagValue', () => {
  it('reads --name V and --name=V, the last one winning, and nothing after --', () => {
    expect(flagValue(['train', '--model', 'a'], 'model')).toBe('a');
    expect(flagValue(['--model=b'], 'model')).toBe('b');
    expect(flagValue(['--model', 'a', '--model=c'], 'model')).toBe('c');
    expect(flagValue(['--models', 'a', '--model-dir=x'], 'model')).toBeUndefined();
    expect(flagValue(['--model'], 'model')).toBeUndefined();
    expect(flagValue(['--', '--model', 'a'], 'model')).toBeUndefined();
  });
});

describe('mallocRelaunchPlan', () => {
  it('the fixture: its layout is once on the small machine and packed on the large one', () => {
    expect(nativeLayout(need, onceBytes)).toBe('once');
    expect(nativeLayout(need, packedBytes)).toBe('packed');
  });

  it('restarts a native load held once, without the two retaining settings, keeping hugetlb and marking the restart', async () => {
    for (const argv of [['train', '--model', model], ['--model', model, '--steps', '2'], ['generate', `--model=${model}`, '--backend', 'native', '--prompt', 'x']]) {
      const plan = await mallocRelaunchPlan(argv, BIN_ENV, { systemBytes: onceBytes });
      expect(plan).toBeDefined();
      expect(plan?.env).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', PATH: '/usr/bin', [RELAUNCHED_ENV]: '1' });
      expect(plan?.reason).toContain(model);
      expect(plan?.reason).toContain('starting again without them');
    }
  });

  it('does not restart: packed layout, another backend, a command that loads nothing natively, no model, a built-in model, a missing one, no settings, already restarted', async () => {
    const cases: [string[], NodeJS.ProcessEnv, number][] = [
      [['train', '--model', model], BIN_ENV, packedBytes],
      [['train', '--model', model, '--backend', 'native-int8'], BIN_ENV, onceBytes],
      [['train', '--model', model, '--backend', 'wasm'], BIN_ENV, onceBytes],
      [['train'], BIN_ENV, onceBytes],
      [['doctor', '--model', model], BIN_ENV, onceBytes],
      [['export', '--model', model], BIN_ENV, onceBytes],
      [['train', '--model', 'demo'], BIN_ENV, onceBytes],
      [['train', '--model', join(root, 'nowhere')], BIN_ENV, onceBytes],
      [['train', '--model', model], { PATH: '/usr/bin' }, onceBytes],
      [['train', '--model', model], { ...BIN_ENV, [RELAUNCHED_ENV]: '1' }, onceBytes],
    ];
    for (const [argv, env, systemBytes] of cases) expect(await mallocRelaunchPlan(argv, env, { systemBytes }), argv.join(' ')).toBeUndefined();
  });
});

/** Runs the forwarding wrapper around `node -e script`; resolves at its exit with what it printed. */
function wrapped(script: string): { pid: () => number; ready: Promise<void>; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/helpers/forwarding-wrapper.ts'), script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let markReady: () => void = () => {};
  const ready = new Promise<void>((res) => {
    markReady = res;
  });
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready')) markReady();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }>((res) => child.on('close', (code, signal) => res({ code, signal, out })));
  return { pid: () => child.pid as number, ready, done };
}

describe('the restarted process and its signals', () => {
  it('a SIGTERM sent to the bin alone reaches the restarted process once, and the bin exits with its code', async () => {
    const run = wrapped("let n = 0; process.on('SIGTERM', () => { n++; setTimeout(() => { console.log('sigterms ' + n); process.exit(7); }, 300); }); console.log('ready'); setInterval(() => {}, 1000);");
    await run.ready;
    process.kill(run.pid(), 'SIGTERM');
    const end = await run.done;
    expect(end.out).toContain('sigterms 1');
    expect(end.code).toBe(7);
  }, 30_000);

  it('a restarted process ended by the signal ends the bin by the same signal', async () => {
    const run = wrapped("console.log('ready'); setInterval(() => {}, 1000);");
    await run.ready;
    process.kill(run.pid(), 'SIGTERM');
    const end = await run.done;
    expect(end.signal).toBe('SIGTERM');
    expect(end.code).toBeNull();
  }, 30_000);

  it('the exit code of a restarted process that ends by itself is the bin\'s', async () => {
    const run = wrapped("console.log('ready'); process.exit(3);");
    const end = await run.done;
    expect(end.out).toContain('ready');
    expect(end.code).toBe(3);
  }, 30_000);
});
