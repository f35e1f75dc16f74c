// Shared by the fault tests (not a test file itself): a tiny random model, the CLI as a child process, and
// waiting for a line of its output.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { makeTinyCheckpoint } from '../../src/checkpoint/make-tiny.js';

export const CLI = resolve(import.meta.dirname, '..', '..', 'bin', 'sesa-train.mjs');

export function faultRoot(tag: string): string {
  return mkdtempSync(join(tmpdir(), `sesa-faults-${tag}-`));
}

export function tinyModel(root: string): string {
  return makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
}

/** A small, fast training run's flags (2 steps, checkpoint every step). */
export function trainArgs(model: string, out: string, steps = 2): string[] {
  return [
    CLI, 'train', '--model', model, '--corpus', 'encyclopedia', '--steps', String(steps), '--seeds-per-step', '1', '--proposals-per-seed', '2',
    '--group-size', '2', '--max-turns', '2', '--max-new-tokens', '16', '--max-response-tokens', '64', '--embedder', 'lexical',
    '--lr', '1e-3', '--save-every', '1', '--micro-batch-size', '8', '--backend', 'wasm', '--seed', '4', '--out', out,
  ];
}

/**
 * The progress line the CLI writes on stderr when step `n` has ended ("[1.9 s] step 1/60: valid 0/2 | ..."),
 * whether or not stderr is a terminal (src/cli/progress.ts).
 */
export function stepEnded(n: number): RegExp {
  return new RegExp(`^\\[[^\\]\n]*\\] step ${n}/\\d+: `, 'm');
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Started {
  child: ChildProcess;
  done: Promise<Finished>;
  /** Resolves when stderr has matched `re` (rejects if the process ends first). */
  waitFor(re: RegExp): Promise<void>;
}

export function start(root: string, args: string[], env: Record<string, string | undefined> = {}): Started {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, XDG_CACHE_HOME: join(root, 'cache'), SESA_HOME: join(root, 'home'), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ re: RegExp; res: () => void }> = [];
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of [...waiters]) {
      if (w.re.test(stderr)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.res();
      }
    }
  });
  const done = new Promise<Finished>((res) => child.on('exit', (code, signal) => res({ code, signal, stdout, stderr })));
  const waitFor = (re: RegExp): Promise<void> =>
    new Promise<void>((res, rej) => {
      if (re.test(stderr)) return res();
      waiters.push({ re, res });
      void done.then((f) => rej(new Error(`the process ended (code ${f.code}) before its output matched ${re}: ${f.stderr}`)));
    });
  return { child, done, waitFor };
}

export async function run(root: string, args: string[], env: Record<string, string | undefined> = {}): Promise<Finished> {
  return start(root, args, env).done;
}
