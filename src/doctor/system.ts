// Node itself and the disk the checkpoints go to.
import { existsSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type CheckResult, type DoctorOptions, formatBytes, GIB, type Probes } from './types.js';

/** package.json's engines.node. */
export const MIN_NODE = [20, 19] as const;

export function checkNode(probes: Probes): CheckResult {
  const m = /^v?(\d+)\.(\d+)\./.exec(probes.nodeVersion);
  if (!m) return { check: 'node', status: 'fail', detail: `cannot read the Node version '${probes.nodeVersion}'`, fix: `use Node ≥ ${MIN_NODE.join('.')}` };
  const major = Number(m[1]);
  const minor = Number(m[2]);
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return ok
    ? { check: 'node', status: 'ok', detail: `Node ${probes.nodeVersion}` }
    : { check: 'node', status: 'fail', detail: `Node ${probes.nodeVersion} is older than ${MIN_NODE.join('.')}`, fix: `install Node ≥ ${MIN_NODE.join('.')} (e.g. nvm install 20)` };
}

/** Free bytes of the file system holding `path`, through its nearest existing ancestor. */
export function freeBytesAt(path: string): number {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  const s = statfsSync(p);
  return Number(s.bavail) * Number(s.bsize);
}

/**
 * Bytes one checkpoint takes: two adapters, each with weights and AdamW's two moments in f32, for a LoRA of
 * rank r on every projection (~ r · (in + out) per projection).
 */
export function checkpointBytes(loraParamsPerRank: number, r: number): number {
  return 2 * 3 * 4 * loraParamsPerRank * r;
}

/** Disk room for the run folder: a few checkpoints plus the bank and logs. */
export function checkDisk(probes: Probes, options: Pick<DoctorOptions, 'out'>, oneCheckpoint: number | undefined): CheckResult {
  let free: number;
  try {
    free = probes.freeBytes(options.out);
  } catch (err) {
    return { check: 'disk', status: 'fail', detail: `cannot read free space for ${options.out}: ${(err as Error).message}`, fix: 'choose a writable --out folder' };
  }
  // Three checkpoints' worth (the newest, the one being written, one spare) and 1 GiB for logs, bank, GGUF exports.
  const need = 3 * (oneCheckpoint ?? 0) + GIB;
  const detail = `${formatBytes(free)} free for ${resolve(options.out)}${oneCheckpoint !== undefined ? ` (one checkpoint ≈ ${formatBytes(oneCheckpoint)}; need ≈ ${formatBytes(need)})` : ''}`;
  return free >= need ? { check: 'disk', status: 'ok', detail } : { check: 'disk', status: 'fail', detail, fix: 'free space or point --out at a larger disk' };
}
