// Running the CLI as a real child process in tests, and reading what a run wrote, without the fields that
// measure time (so an interrupted-and-resumed run can be compared with an uninterrupted one).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
}

/** Starts `node ARGS` in `cwd` with `env` added to the environment; `done` resolves at exit with its output. */
export function startNode(args: string[], cwd: string, env: Record<string, string>): { child: ChildProcess; done: Promise<ProcessExit> } {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  let stdout = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  // 'close' (not 'exit'): both pipes are drained by then.
  const done = new Promise<ProcessExit>((res) => child.on('close', (code, signal) => res({ code, signal, stderr, stdout })));
  return { child, done };
}

/**
 * SIGKILLs `run` as soon as `marker` exists (e.g. a checkpoint's state.json); rejects if the run ends on its
 * own first. Resolves once the kill is sent.
 */
export function killWhenExists(run: { child: ChildProcess; done: Promise<ProcessExit> }, marker: string): Promise<void> {
  return new Promise<void>((res, rej) => {
    const poll = setInterval(() => {
      if (existsSync(marker)) {
        clearInterval(poll);
        run.child.kill('SIGKILL');
        res();
      }
    }, 20);
    void run.done.then((r) => {
      clearInterval(poll);
      if (r.signal !== 'SIGKILL') rej(new Error(`the run ended on its own (code ${r.code}) before it could be killed: ${r.stderr}`));
    });
  });
}

/** The lines of `runDir/metrics.jsonl`, with every `seconds` and `tokensPerSecond` field removed at any depth. */
export function metricsWithoutTimings(runDir: string): unknown[] {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'seconds' && k !== 'tokensPerSecond').map(([k, x]) => [k, strip(x)]));
    return v;
  };
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => strip(JSON.parse(l)));
}
