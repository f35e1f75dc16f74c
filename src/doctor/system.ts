// Node itself and the disk the checkpoints go to.
import { resolve } from 'node:path';
import { type DiskNeed, diskVerdict, RUN_FILES_BYTES, totalBytes } from '../checkpoint/disk-need.js';
import { type CheckResult, type DoctorOptions, formatBytes, type Probes } from './types.js';

export { freeBytesAt } from '../checkpoint/disk-need.js';

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

/** Disk room for the run folder: every checkpoint the run writes, its other files, a llama.cpp export. */
export function checkDisk(probes: Probes, options: Pick<DoctorOptions, 'out'>, need: DiskNeed | undefined): CheckResult {
  let free: number;
  try {
    free = probes.freeBytes(options.out);
  } catch (err) {
    return { check: 'disk', status: 'fail', detail: `cannot read free space for ${options.out}: ${(err as Error).message}`, fix: 'choose a writable --out folder' };
  }
  const n = need ?? { oneCheckpoint: 0, checkpoints: 0, once: 0 };
  const total = totalBytes(n);
  const detail =
    `${formatBytes(free)} free for ${resolve(options.out)}` +
    (need !== undefined ? ` (one checkpoint ≈ ${formatBytes(n.oneCheckpoint)}, ${n.checkpoints} checkpoint${n.checkpoints === 1 ? '' : 's'}${n.once > 0 ? `, the llama.cpp GGUF export ≈ ${formatBytes(n.once)}` : ''}, the run's other files ≈ ${formatBytes(RUN_FILES_BYTES)}; need ≈ ${formatBytes(total)})` : '');
  const verdict = diskVerdict(free, n);
  if (verdict === undefined) return { check: 'disk', status: 'ok', detail };
  return verdict.kind === 'refuse'
    ? { check: 'disk', status: 'fail', detail, fix: 'free space or point --out at a larger disk (training refuses to start: its first checkpoint would not fit)' }
    : { check: 'disk', status: 'warn', detail: `${detail}: room for ${verdict.fitting} of the ${n.checkpoints} checkpoints`, fix: 'free space, point --out at a larger disk, or raise --save-every' };
}
