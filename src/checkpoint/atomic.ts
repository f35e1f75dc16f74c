// Every file the trainer writes goes through here: write a temp file in the same folder, fsync, rename.
// A process killed at any point leaves either the old file or the new one, never a torn one.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';

/**
 * Streams a file atomically: `fill(put)` writes the content in pieces (so a multi-GB file never sits in memory
 * whole); then the temp file is fsynced and renamed over `path`. Returns the bytes written.
 */
export function writeStreamAtomic(path: string, fill: (put: (bytes: Uint8Array) => void) => void): number {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
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
  renameSync(tmp, path);
  return written;
}

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  writeStreamAtomic(path, (put) => put(typeof data === 'string' ? Buffer.from(data, 'utf8') : data));
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}
