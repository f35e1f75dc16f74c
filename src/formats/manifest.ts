// A checkpoint's manifest: the size and SHA-256 of every file in the folder, written last. A checkpoint is
// complete when its manifest exists and every file it lists has that size and checksum; anything else (a
// truncated adapter, a flipped byte, a missing optimizer file) is named, so the caller can fall back to an
// older checkpoint and say why.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { writeJsonAtomic } from '../util/atomic.js';

export const MANIFEST_FILE = 'manifest.json';
const MANIFEST_FORMAT = 'sesa-checkpoint-manifest';

export interface ManifestEntry {
  bytes: number;
  sha256: string;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  files: Record<string, ManifestEntry>;
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Every regular file under `dir` (relative, '/'-separated, sorted), the manifest itself excluded. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, name.name);
      if (name.isDirectory()) walk(p);
      else if (name.isFile()) out.push(relative(dir, p).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.filter((f) => f !== MANIFEST_FILE).sort();
}

/** Records every file now in `dir`; call it after the last payload file is written. */
export function writeManifest(dir: string): Manifest {
  const files: Record<string, ManifestEntry> = {};
  for (const f of listFiles(dir)) {
    const p = join(dir, f);
    files[f] = { bytes: statSync(p).size, sha256: sha256(p) };
  }
  const manifest: Manifest = { format: MANIFEST_FORMAT, files };
  writeJsonAtomic(join(dir, MANIFEST_FILE), manifest);
  return manifest;
}

/**
 * What is wrong with the checkpoint in `dir`, or undefined when every listed file is intact. `missing`
 * says there is no manifest at all (a checkpoint written before manifests existed, or not a checkpoint).
 */
export function checkManifest(dir: string): { problem?: string; missing?: true } {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) return { missing: true };
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch (err) {
    return { problem: `${path}: not valid JSON (${(err as Error).message})` };
  }
  if (manifest?.format !== MANIFEST_FORMAT || typeof manifest.files !== 'object' || manifest.files === null) {
    return { problem: `${path}: not a checkpoint manifest (format ${JSON.stringify(manifest?.format)})` };
  }
  for (const [f, want] of Object.entries(manifest.files)) {
    const p = join(dir, f);
    if (!existsSync(p)) return { problem: `${p} is missing` };
    const bytes = statSync(p).size;
    if (bytes !== want.bytes) return { problem: `${p} has ${bytes} bytes, the manifest says ${want.bytes} (truncated or replaced)` };
    if (sha256(p) !== want.sha256) return { problem: `${p}: checksum differs from the manifest (the file is damaged)` };
  }
  return {};
}

/**
 * When `dir` is a checkpoint whose manifest lists `file` (a path inside it), what is wrong with that one file;
 * undefined when it matches or when no manifest lists it (an adapter folder outside a checkpoint).
 */
export function checkManifestFile(dir: string, file: string): string | undefined {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) return undefined;
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  const want = manifest?.format === MANIFEST_FORMAT && typeof manifest.files === 'object' && manifest.files !== null ? manifest.files[file] : undefined;
  if (want === undefined || !Object.hasOwn(manifest.files, file)) return undefined;
  const p = join(dir, file);
  if (!existsSync(p)) return `${p} is missing`;
  const bytes = statSync(p).size;
  if (bytes !== want.bytes) return `${p} has ${bytes} bytes, the checkpoint's manifest (${path}) says ${want.bytes} (truncated or replaced)`;
  if (sha256(p) !== want.sha256) return `${p}: checksum differs from the checkpoint's manifest (${path}): the file is damaged`;
  return undefined;
}
