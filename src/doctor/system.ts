// Node itself, the memory pages the native backend's weights get, and the disk the checkpoints go to.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type DiskNeed, diskVerdict, RUN_FILES_BYTES, totalBytes } from '../checkpoint/disk-need.js';
import { type CheckResult, type DoctorOptions, formatBytes, type Probes } from './types.js';

export { freeBytesAt } from '../checkpoint/disk-need.js';

/** package.json's engines.node. */
export const MIN_NODE = [20, 19] as const;

/** Whether version major.minor is at least `min`. */
function atLeast(major: number, minor: number, min: readonly [number, number]): boolean {
  return major > min[0] || (major === min[0] && minor >= min[1]);
}

export function checkNode(probes: Probes): CheckResult {
  const m = /^v?(\d+)\.(\d+)\./.exec(probes.nodeVersion);
  if (!m) return { check: 'node', status: 'fail', detail: `cannot read the Node version '${probes.nodeVersion}'`, fix: `use Node ≥ ${MIN_NODE.join('.')}` };
  return atLeast(Number(m[1]), Number(m[2]), MIN_NODE)
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

/** What decides whether onnxruntime's copies of the frozen weights sit on huge pages (bin/sesa-train.mjs). */
export interface HugePageProbe {
  /** The kernel's transparent-huge-page mode ('always', 'madvise', 'never'), undefined where there is none. */
  thpMode: string | undefined;
  /** This process's GLIBC_TUNABLES. */
  tunables: string | undefined;
  /** The C library's version when it is glibc ("2.36"), else undefined. */
  glibc: string | undefined;
}

/** The real machine's `HugePageProbe`. */
export function probeHugePages(): HugePageProbe {
  let thpMode: string | undefined;
  try {
    thpMode = /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1];
  } catch {
    thpMode = undefined;
  }
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return { thpMode, tunables: process.env.GLIBC_TUNABLES, glibc: header?.glibcVersionRuntime };
}

/** glibc.malloc.hugetlb came with glibc 2.35; older versions ignore the tunable. */
const HUGETLB_GLIBC = [2, 35] as const;

/**
 * Whether the native backend's frozen weights get transparent huge pages: a decoded row reads all of them, and on
 * 4 KiB pages f32 decode of one row ran ~10% slower (docs/usage.md, "Huge pages for the frozen weights"). Reported
 * for the native backends only (the probe runs only then); never a failure (the run is only slower).
 */
export function checkHugePages(probe: () => HugePageProbe, nativeBackend: boolean): CheckResult | undefined {
  if (!nativeBackend) return undefined;
  const p = probe();
  const check = 'huge pages';
  const slower = 'the frozen weights sit on 4 KiB pages (decoding one sequence about a tenth slower)';
  if (p.thpMode === undefined || p.thpMode === 'never') return { check, status: 'info', detail: `transparent huge pages ${p.thpMode === 'never' ? 'are off in this kernel (mode never)' : 'are not available here'}: ${slower}` };
  if (p.thpMode === 'always') return { check, status: 'ok', detail: 'transparent huge pages: mode always' };
  // Mode madvise: only memory that asks gets them, and glibc's malloc asks with glibc.malloc.hugetlb=1 (2 is
  // hugetlbfs pages, which a machine reserves by hand, not these).
  if (p.glibc === undefined) return { check, status: 'info', detail: `mode ${p.thpMode}, and this C library is not glibc, whose malloc alone can be asked for them: ${slower}` };
  const m = /^(\d+)\.(\d+)/.exec(p.glibc);
  if (m === null || !atLeast(Number(m[1]), Number(m[2]), HUGETLB_GLIBC)) {
    return { check, status: 'info', detail: `mode ${p.thpMode}, and glibc ${p.glibc} cannot be asked for them (glibc.malloc.hugetlb came with ${HUGETLB_GLIBC.join('.')}): ${slower}` };
  }
  if (/(^|:)glibc\.malloc\.hugetlb=1(:|$)/.test(p.tunables ?? '')) return { check, status: 'ok', detail: `mode ${p.thpMode}, asked for by malloc (GLIBC_TUNABLES=${p.tunables})` };
  return {
    check,
    status: 'warn',
    detail: `mode ${p.thpMode}, and this process did not ask for them (no glibc.malloc.hugetlb=1 in GLIBC_TUNABLES): ${slower}`,
    fix: 'start through `npx sesa-train` or ./bin/sesa-train.mjs (its first line sets it), or set GLIBC_TUNABLES=glibc.malloc.hugetlb=1',
  };
}
