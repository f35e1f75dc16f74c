// Running the CLI as a real child process in tests, and reading what a run wrote, without the fields that
// measure time (so an interrupted-and-resumed run can be compared with an uninterrupted one).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

/** A field that holds a time or a rate: `seconds`, `tokensPerSecond`, and their flat names (src/selfplay/flat-metrics.ts). */
function isTiming(k: string): boolean {
  return k === 'seconds' || k === 'tokensPerSecond' || k.startsWith('timing_s/') || k === 'perf/throughput' || k.endsWith('/update_tokens_per_s');
}

/** `v` with every time and rate field removed at any depth (isTiming). */
export function stripTimings(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripTimings);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => !isTiming(k)).map(([k, x]) => [k, stripTimings(x)]));
  return v;
}

/** The lines of `runDir/metrics.jsonl`, with every `seconds` and `tokensPerSecond` field removed at any depth. */
export function metricsWithoutTimings(runDir: string): unknown[] {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => stripTimings(JSON.parse(l)));
}

/** The living processes below `pid` (children, their children, …), from /proc (Linux), with their command lines. */
export function descendantPids(pid: number): Array<{ pid: number; cmdline: string }> {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: the fields after its last ')' are plain.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      parent.set(Number(name), Number(fields[1]));
    } catch {
      // the process ended while we read
    }
  }
  const out: Array<{ pid: number; cmdline: string }> = [];
  const visit = (p: number): void => {
    for (const [child, ppid] of parent) {
      if (ppid !== p) continue;
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        // ended meanwhile
      }
      out.push({ pid: child, cmdline });
      visit(child);
    }
  };
  visit(pid);
  return out;
}
