// An exclusive lock on a file or folder, held as a lock file that records its owner (pid, host, process
// start time). A second writer is refused with the owner's pid and host. A lock left by a process that no
// longer runs on this host (killed, crashed) is stale: it is taken over, and the caller is told.
//
// The lock file is created complete in one step (a temp file hard-linked to the lock name, which fails if
// the name exists), so a reader never sees a half-written owner.
import { existsSync, linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname } from 'node:path';
import { sweepStaleTemps, writeError } from './atomic.js';

export interface LockOwner {
  pid: number;
  host: string;
  /** The kernel's start time of the process (Linux), so a reused pid is not mistaken for the owner. */
  procStart?: string;
  since: string;
  /** What the owner is doing, e.g. "training" or "skills import". */
  purpose: string;
}

export class LockedError extends Error {
  constructor(
    message: string,
    readonly owner?: LockOwner,
  ) {
    super(message);
    this.name = 'LockedError';
  }
}

/** Field 22 of /proc/PID/stat (start time in clock ticks since boot), or undefined off Linux. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `owner` (recorded on this host) is certainly gone. */
function ownerGone(owner: LockOwner): boolean {
  if (!processAlive(owner.pid)) return true;
  const start = processStart(owner.pid);
  return owner.procStart !== undefined && start !== undefined && start !== owner.procStart;
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const o = JSON.parse(readFileSync(path, 'utf8')) as LockOwner;
    return Number.isInteger(o.pid) && typeof o.host === 'string' ? o : undefined;
  } catch {
    return undefined;
  }
}

/** Lock files this process holds, with how many FileLock objects share each. */
const held = new Map<string, number>();
let exitHookInstalled = false;

export class FileLock {
  private released = false;

  private constructor(readonly path: string) {}

  /**
   * Takes the lock at `path` for `purpose` (`what` names the thing locked in messages). Refuses with a
   * LockedError naming the owner when another live process holds it; takes over a stale lock and reports
   * it through `onStale`.
   */
  static acquire(path: string, what: string, purpose: string, onStale?: (message: string) => void): FileLock {
    const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString(), purpose };
    const start = processStart(process.pid);
    if (start !== undefined) me.procStart = start;
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    try {
      try {
        writeFileSync(tmp, `${JSON.stringify(me)}\n`);
      } catch (err) {
        // A full disk: the temp file may exist, empty or torn (removed below, as always).
        throw new Error(`${what}: cannot create the lock file ${path} (${writeError(tmp, err).message})`);
      }
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          linkSync(tmp, path);
          held.set(path, 1);
          installExitHook();
          FileLock.sweep(path, tmp, what, onStale);
          return new FileLock(path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`${what}: cannot create the lock file ${path} (${(err as Error).message})`);
        }
        const owner = readOwner(path);
        if (!owner) {
          if (!existsSync(path)) continue; // released meanwhile
          throw new LockedError(`${what} is locked by ${path}, which cannot be read; if no other process is using it, delete ${path}`);
        }
        if (owner.host === me.host && owner.pid === process.pid && held.has(path)) {
          // This process holds it already (e.g. a bank opened twice by one program): share it, counted.
          held.set(path, (held.get(path) ?? 0) + 1);
          installExitHook();
          return new FileLock(path);
        }
        if (owner.host === me.host && ownerGone(owner)) {
          rmSync(path, { force: true });
          onStale?.(`${what}: took over the stale lock of process ${owner.pid} (${owner.purpose} since ${owner.since}), which no longer runs`);
          continue;
        }
        const where = owner.host === me.host ? '' : ` on host ${owner.host} (if that process is gone, delete ${path})`;
        throw new LockedError(`${what} is in use by process ${owner.pid}${where} (${owner.purpose} since ${owner.since}); a second writer would lose data`, owner);
      }
      throw new LockedError(`${what}: could not take the lock ${path} (it kept changing hands)`);
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  /**
   * Temp files of this lock (`<path>.<pid>.<ms>.tmp`) that a writer which no longer runs left behind (a full
   * disk while it created its lock file, a kill): the new owner removes them and says so.
   */
  private static sweep(path: string, mine: string, what: string, onStale?: (message: string) => void): void {
    const prefix = `${basename(path)}.`;
    const swept = sweepStaleTemps(dirname(path), (name) => name !== basename(mine) && name.startsWith(prefix) && /^\d+\.\d+\.tmp$/.test(name.slice(prefix.length)));
    if (swept.length > 0) onStale?.(`${what}: removed ${swept.length} temp file(s) of lock ${path} left by a process that no longer runs: ${swept.join(', ')}`);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    const count = (held.get(this.path) ?? 0) - 1;
    if (count > 0) {
      held.set(this.path, count);
      return;
    }
    held.delete(this.path);
    const owner = readOwner(this.path);
    if (owner && owner.pid === process.pid && owner.host === hostname()) {
      try {
        unlinkSync(this.path);
      } catch {
        // already gone
      }
    }
  }
}

/** Drops every lock this process still holds. */
function releaseAll(): void {
  for (const path of held.keys()) {
    const owner = readOwner(path);
    if (owner && owner.pid === process.pid) rmSync(path, { force: true });
  }
  held.clear();
}

/** Signals whose default action ends the process: a lock holder releases its locks first. */
const ENDING_SIGNALS = ['SIGTERM', 'SIGHUP', 'SIGINT'] as const;

/**
 * A process that exits (normally, on an error, or by process.exit) drops the locks it still holds; so does one
 * ended by SIGTERM, SIGHUP or SIGINT (no 'exit' event fires then). A signal that another listener handles
 * (the trainer's Ctrl-C: stop at the next step boundary) is left to it; otherwise the locks are dropped and
 * the signal is raised again with its default action, so the process still ends by that signal.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', releaseAll);
  for (const signal of ENDING_SIGNALS) {
    const onSignal = (): void => {
      if (process.listenerCount(signal) > 1) return;
      releaseAll();
      process.off(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}
