// Every file the trainer writes goes through here: write a temp file in the same folder, fsync, rename.
// A process killed at any point leaves either the old file or the new one, never a torn one.
// A failed write (a full disk, a target that is a folder) removes its temp file and names the target.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
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
  const fd = openSync(tmp, 'w');
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
    throw err;
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

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  writeStreamAtomic(path, (put) => put(typeof data === 'string' ? Buffer.from(data, 'utf8') : data));
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}
