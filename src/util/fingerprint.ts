// Content digests of files, folders and this program's own sources, for caches keyed by what a result depends
// on (src/eval/held-out-cache.ts). A folder's digest covers every file under it, by relative path and bytes, in
// sorted order; a file is read in chunks, so a model's weights of gigabytes are hashed without holding them.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHUNK = 1 << 22;

function hashFileInto(h: Hash, file: string): void {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/** Every regular file under `dir`, relative paths sorted; `keep` filters by relative path. */
function filesUnder(dir: string, keep: (rel: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.isFile() && keep(relative(dir, full))) out.push(relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The sha256 of a file's bytes, or of a folder's files (each file's relative path, its size and its bytes, in
 * sorted order; `keep` picks the files by relative path).
 */
export function digestOfPath(path: string, keep: (rel: string) => boolean = () => true): string {
  const h = createHash('sha256');
  if (statSync(path).isDirectory()) {
    for (const rel of filesUnder(path, keep)) {
      const full = join(path, rel);
      h.update(`${rel}\u0000${statSync(full).size}\u0000`);
      hashFileInto(h, full);
    }
  } else hashFileInto(h, path);
  return h.digest('hex');
}

let sources: string | undefined;

/**
 * The digest of this program: every file of src/ (the TypeScript sources, which run as they are) and the package lock (the
 * versions of tfjs, onnxruntime, the tokenizer and the rest), or package.json where there is no lock.
 * Computed once per process.
 */
export function programDigest(): string {
  if (sources !== undefined) return sources;
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const h = createHash('sha256');
  h.update(digestOfPath(join(root, 'src')));
  const lock = join(root, 'package-lock.json');
  h.update(digestOfPath(existsSync(lock) ? lock : join(root, 'package.json')));
  sources = h.digest('hex');
  return sources;
}
