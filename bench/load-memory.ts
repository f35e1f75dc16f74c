// Peak resident memory of loading a model, against its weights (issue 63, item 3): a random checkpoint of a Qwen3
// shape in the real Hugging Face layout (src/checkpoint/make-tiny.ts; made once per folder and reused: the same
// options give the same bytes), loaded by `CausalLM.load` in a child process of its own, whose peak resident set
// (VmHWM of /proc/self/status) is read when the load returns. Not a bench/*.bench.ts suite: a 4B shape writes
// 16 GB of checkpoint and needs most of a 24 GiB machine, so it runs only when asked:
//
//   npx tsx bench/load-memory.ts --shape 0.6b                      f32 checkpoint, --backend native, both malloc settings
//   npx tsx bench/load-memory.ts --shape 4b --malloc bin --backward  also makes every matrix's backward session
//   options: --shape tiny|0.6b|1.7b|4b  --dtype f32|bf16  --backend native|native-int8  --malloc bin|glibc|both
//            --layout packed|once (default: what the load picks for this machine)  --dir FOLDER  --backward
//            --tied-table shared|apart (default shared: a tied table held once, by the head; apart: once more, the
//            load before the shared table)
//
// `--malloc bin` starts the child with the glibc settings of bin/sesa-train.mjs's shebang (what `npx sesa-train`
// runs with: freed memory stays resident), `glibc` with glibc's defaults. `--backward` then multiplies one row
// through every frozen matrix's backward, so that the sessions a training step makes on first use are counted
// too (as a training run's first update does). Writes bench/results/load-memory.json (machine info and rows, as
// bench/run.ts does) and prints the table. The child's rows: its resident set before the load (Node, tfjs, the
// wasm heap, onnxruntime), the peak during the load, after it, and after a full GC (and a second's wait).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { makeTinyCheckpoint, type MakeTinyOptions, type TinyDtype } from '../src/checkpoint/make-tiny.js';
import { loadModelConfig } from '../src/model/config.js';
import { parameterCount } from '../src/model/memory-need.js';
import { formatTable, machineInfo, RESULTS_DIR, type BenchBackend, type SuiteResult } from './run.js';
import type { BenchRow } from './types.js';

/** The Qwen3 shapes (config.json of Qwen/Qwen3-0.6B, -1.7B, -4B; docs/models.md), and a tiny one for a quick check. */
export const LOAD_SHAPES: Record<string, Omit<MakeTinyOptions, 'out'>> = {
  tiny: { layers: 2, hidden: 512, heads: 4, kvHeads: 2, headDim: 128, intermediate: 1536, vocab: 'full' },
  '0.6b': { layers: 28, hidden: 1024, heads: 16, kvHeads: 8, headDim: 128, intermediate: 3072, vocab: 'full', maxPositions: 40960 },
  '1.7b': { layers: 28, hidden: 2048, heads: 16, kvHeads: 8, headDim: 128, intermediate: 6144, vocab: 'full', maxPositions: 40960 },
  '4b': { layers: 36, hidden: 2560, heads: 32, kvHeads: 8, headDim: 128, intermediate: 9728, vocab: 'full', maxPositions: 40960 },
};

/** The glibc malloc settings of bin/sesa-train.mjs's shebang (test/bin-shebang.test.ts holds that line). */
export function binMallocEnv(): Record<string, string> {
  const line = readFileSync(fileURLToPath(new URL('../bin/sesa-train.mjs', import.meta.url)), 'utf8').split('\n')[0] ?? '';
  return Object.fromEntries([...line.matchAll(/\b([A-Z_]+_?)=(\S+)/g)].map((m) => [m[1] as string, m[2] as string]));
}

const MALLOC_KEYS = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'GLIBC_TUNABLES'];

function status(key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

interface ChildReport {
  layout: string;
  frozenBase: string;
  rssBefore: number;
  peak: number;
  rssAfter: number;
  rssAfterGc: number;
  loadSeconds: number;
  backwardSeconds?: number;
}

/** In the child: load `dir` and report the resident set (one JSON line on stdout). */
async function child(dir: string, backend: BenchBackend, layout: string | undefined, backward: boolean, tiedTable: string | undefined): Promise<void> {
  const { initBackend, tf } = await import('../src/tensor/backend.js');
  const { CausalLM } = await import('../src/model/qwen3.js');
  const { NativeMatrix } = await import('../src/tensor/frozen-matrix.js');
  await initBackend(backend, {});
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssBefore = status('VmRSS');
  const t0 = performance.now();
  const model = await CausalLM.load(dir, {
    ...(layout ? { nativeLayout: layout as 'packed' | 'once' } : {}),
    ...(tiedTable ? { nativeTiedTable: tiedTable as 'shared' | 'apart' } : {}),
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  let backwardSeconds: number | undefined;
  if (backward) {
    const t1 = performance.now();
    const internals = model as unknown as { layers: Array<{ proj: Record<string, unknown> }>; lmHead?: unknown };
    const all = [...internals.layers.flatMap((l) => Object.values(l.proj)), internals.lmHead];
    for (const m of all) if (m instanceof NativeMatrix) tf.tidy(() => m.timesTransposed(tf.zeros([1, m.shape[1]]) as never));
    backwardSeconds = (performance.now() - t1) / 1000;
  }
  const peak = status('VmHWM');
  const rssAfter = status('VmRSS');
  // V8 frees a collected ArrayBuffer's memory on a background thread after the GC returns (a staged table, 0.6 GB
  // on the 0.6B, was still resident right after one): collect, wait, collect again.
  gc?.();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  gc?.();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const rssAfterGc = status('VmRSS');
  const report: ChildReport = { layout: model.describeFrozenBase(), frozenBase: backend, rssBefore, peak, rssAfter, rssAfterGc, loadSeconds, ...(backwardSeconds !== undefined ? { backwardSeconds } : {}) };
  process.stdout.write(`LOAD-MEMORY ${JSON.stringify(report)}\n`);
  model.dispose();
}

function arg(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

async function main(argv: string[]): Promise<void> {
  const childDir = arg(argv, '--child');
  const backend = (arg(argv, '--backend') ?? 'native') as BenchBackend;
  const layout = arg(argv, '--layout');
  const backward = argv.includes('--backward');
  const tiedTable = arg(argv, '--tied-table');
  if (tiedTable !== undefined && tiedTable !== 'shared' && tiedTable !== 'apart') throw new Error(`--tied-table must be shared or apart, got ${tiedTable}`);
  if (childDir !== undefined) return child(childDir, backend, layout, backward, tiedTable);

  const shape = arg(argv, '--shape') ?? '0.6b';
  const spec = LOAD_SHAPES[shape];
  if (!spec) throw new Error(`--shape must be one of ${Object.keys(LOAD_SHAPES).join(', ')}, got ${shape}`);
  const dtype = (arg(argv, '--dtype') ?? 'f32') as TinyDtype;
  const malloc = arg(argv, '--malloc') ?? 'both';
  const dir = arg(argv, '--dir') ?? join(tmpdir(), 'sesa-load-memory', `${shape}-${dtype}`);
  if (!existsSync(join(dir, 'model.safetensors'))) {
    process.stderr.write(`writing a random ${shape} checkpoint (${dtype}) to ${dir}\n`);
    makeTinyCheckpoint({ ...spec, dtype, out: dir });
  }
  const weights = 4 * parameterCount(loadModelConfig(dir));
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const gib = (n: number): number => n / 2 ** 30;
  for (const settings of malloc === 'both' ? ['bin', 'glibc'] : [malloc]) {
    const env = { ...process.env };
    for (const k of MALLOC_KEYS) delete env[k];
    if (settings === 'bin') Object.assign(env, binMallocEnv());
    const script = fileURLToPath(import.meta.url);
    const args = ['--expose-gc', '--import', 'tsx', script, '--child', dir, '--backend', backend, ...(layout ? ['--layout', layout] : []), ...(backward ? ['--backward'] : []), ...(tiedTable ? ['--tied-table', tiedTable] : [])];
    process.stderr.write(`loading ${dir} on ${backend} with the ${settings} malloc settings\n`);
    const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
    const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('LOAD-MEMORY '));
    if (r.status !== 0 || !line) {
      // One setting's child killed (for memory, mostly) does not stop the other's: --malloc both compares them.
      failures.push(`${settings} malloc settings: the child exited with ${r.status ?? r.signal} (killed for memory?)${r.stdout ? `:\n${r.stdout}` : ''}`);
      continue;
    }
    const c = JSON.parse(line.slice('LOAD-MEMORY '.length)) as ChildReport;
    const label = `${shape} ${dtype} ${settings}-malloc${backward ? ' +backward' : ''}${tiedTable === 'apart' ? ' table apart' : ''}`;
    const notes = `${c.layout}; weights ${gib(weights).toFixed(2)} GiB (f32)`;
    const row = (metric: string, value: number, unit: string): void => void rows.push({ case: label, engine: `sesa/${backend}`, metric, value, unit, notes });
    row('resident before the load', gib(c.rssBefore), 'GiB');
    row('peak resident (VmHWM)', gib(c.peak), 'GiB');
    row('peak / weights', c.peak / weights, '×');
    row('(peak − before) / weights', (c.peak - c.rssBefore) / weights, '×');
    row('resident after the load, after a GC', gib(c.rssAfterGc), 'GiB');
    row('load', c.loadSeconds, 's');
    if (c.backwardSeconds !== undefined) row('backward sessions', c.backwardSeconds, 's');
  }
  const result: SuiteResult = { suite: 'load-memory', machine: machineInfo([backend]), quick: false, seconds: 0, rows };
  if (rows.length > 0) writeJsonAtomic(join(RESULTS_DIR, 'load-memory.json'), result);
  process.stdout.write(`${formatTable(result)}\n`);
  if (failures.length > 0) throw new Error(`load-memory: ${failures.join('\n')}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main(process.argv.slice(2));
