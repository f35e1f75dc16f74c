// Every file the trainer writes goes through here: write a temp file in the same folder, fsync, rename.
// A process killed at any point leaves either the old file or the new one, never a torn one.
// A failed write (a full disk, a target that is a folder) removes its temp file and names the target; temp
// files a killed writer left are swept by the next writer (sweepStaleTemps).
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, basename, join, resolve } from 'node:path';

/**
 * Creates `dir` and its missing parents one level at a time, so an impossible path (under /proc, under a
 * file, without permission) is an error naming it rather than a retry loop (a recursive mkdir under /proc
 * never returns).
 */
export function ensureDir(dir: string): void {
  const missing: string[] = [];
  let d = resolve(dir);
  while (!existsSync(d)) {
    missing.unshift(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  if (existsSync(d) && !statSync(d).isDirectory()) throw new Error(`cannot create ${dir}: ${d} is not a folder`);
  for (const m of missing) {
    try {
      mkdirSync(m);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EEXIST' && statSync(m).isDirectory()) continue;
      throw new Error(`cannot create ${dir}: mkdir ${m} failed (${e.code ?? e.message})`);
    }
  }
}

/**
 * Streams a file atomically: `fill(put)` writes the content in pieces (so a multi-GB file never sits in memory
 * whole); then the temp file is fsynced and renamed over `path`. Returns the bytes written.
 */
export function writeStreamAtomic(path: string, fill: (put: (bytes: Uint8Array) => void) => void): number {
  const dir = dirname(path);
  if (existsSync(path) && statSync(path).isDirectory()) throw new Error(`${path} is a folder; give a file name to write`);
  ensureDir(dir);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  let fd: number;
  try {
    fd = openSync(tmp, 'w');
  } catch (err) {
    throw writeError(path, err);
  }
  let written = 0;
  try {
    fill((bytes) => {
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      written += bytes.length;
    });
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw writeError(path, err);
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new Error(`${path}: cannot be written (${(err as Error).message})`);
  }
  return written;
}

/**
 * A file-system error of a write, naming the file it was for (Node's own message names only the call:
 * "ENOSPC: no space left on device, write"); any other error (the content's own) passes unchanged.
 */
export function writeError(path: string, err: unknown): Error {
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string') return err as Error;
  const wrapped = new Error(`${path}: cannot be written (${e.message})`) as NodeJS.ErrnoException;
  wrapped.code = e.code;
  return wrapped;
}

/** Appends `text` to `path` (a log); a failure names the file. */
export function appendToFile(path: string, text: string): void {
  try {
    appendFileSync(path, text);
  } catch (err) {
    throw writeError(path, err);
  }
}

/** The pid in one of our temp-file names (`.name.<pid>.<ms>.tmp`, `name.lock.<pid>.<ms>.tmp`, `.step-N.<pid>.tmp`). */
export function tempOwnerPid(name: string): number | undefined {
  const m = /\.(\d+)(?:\.\d+)?\.tmp$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Whether process `pid` runs on this machine (ours counts as gone: our leftovers from before are never in use). */
function pidAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temp files and folders in `dir` that `match` accepts and whose writer (the pid in the name) no
 * longer runs: what a killed or failed writer left. Call it holding the lock of what they belong to. Returns
 * the paths removed.
 */
export function sweepStaleTemps(dir: string, match: (name: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  const swept: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.tmp') || !match(name)) continue;
    const pid = tempOwnerPid(name);
    if (pid !== undefined && pidAlive(pid)) continue;
    rmSync(join(dir, name), { recursive: true, force: true });
    swept.push(join(dir, name));
  }
  return swept;
}

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  writeStreamAtomic(path, (put) => put(typeof data === 'string' ? Buffer.from(data, 'utf8') : data));
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}
