// The benchmark runner: finds every bench/*.bench.ts (each exports `suite: BenchSuite`), runs them (or those
// named with `only`), writes bench/results/<suite>.json atomically (machine info + rows) and prints one table
// per suite. `sesa-train bench` (src/cli/bench.ts) and `npm run bench` call `runBenchmarks`.
//
// Speeds are measured, never asserted: a suite that throws is reported (and makes the run fail) but the
// other suites still run.
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, platform, arch, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { LLAMA_CPP_SIDE_DIR } from '../src/llama-cpp/binding.js';
import { initBackend } from '../src/tensor/backend.js';
import { ortAvailability } from '../src/tensor/ort-binding.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

/** tfjs backends a benchmark may run on. */
export type BenchBackend = 'native' | 'native-int8' | 'wasm' | 'cpu' | 'tensorflow';

/**
 * What the runner passes to suites: the BenchContext of bench/types.ts plus the tfjs backends to measure.
 * Suites read `backends` through `benchBackends(ctx)` so a plain BenchContext still works.
 */
export interface RunnerContext extends BenchContext {
  backends: BenchBackend[];
}

/** The in-process backends measured by default: native (where onnxruntime-node's binding loads), wasm and cpu. */
export function defaultBackends(): BenchBackend[] {
  return [...(ortAvailability().ok ? (['native'] as const) : []), 'wasm', 'cpu'];
}

/** The backends to measure: the runner's choice, else the defaults. */
export function benchBackends(ctx: BenchContext): BenchBackend[] {
  const b = (ctx as Partial<RunnerContext>).backends;
  return b && b.length > 0 ? [...b] : defaultBackends();
}

/** One engine of ours to measure: a backend and its compute threads. */
export interface BenchEngine {
  backend: BenchBackend;
  /** Compute threads (wasm); undefined: the backend's own choice (cpu: 1, tensorflow: its pool). */
  threads?: number;
  /** Row label, e.g. "sesa/wasm-2t". */
  label: string;
}

/**
 * The engines to measure: native and wasm on one thread and on `ctx.threads` (when more than one), then the other
 * backends (native's threads are its matMuls'; the rest of it runs on one). Rows on 1 and N threads in the same run give the thread speed-up as a ratio on one machine state.
 */
export function benchEngines(ctx: BenchContext, prefix = 'sesa'): BenchEngine[] {
  const out: BenchEngine[] = [];
  for (const backend of benchBackends(ctx)) {
    if (backend === 'wasm' || backend === 'native' || backend === 'native-int8') {
      for (const threads of ctx.threads > 1 ? [1, ctx.threads] : [1]) out.push({ backend, threads, label: `${prefix}/${backend}-${threads}t` });
    } else out.push({ backend, label: `${prefix}/${backend}` });
  }
  return out;
}

/** Activates an engine's backend with its threads. */
export async function initEngine(engine: BenchEngine): Promise<void> {
  await initBackend(engine.backend, engine.threads !== undefined ? { threads: engine.threads } : {});
}

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  totalMemoryGiB: number;
  platform: string;
  arch: string;
  node: string;
  date: string;
  /** tfjs backends measured in this run. */
  backends: BenchBackend[];
  tfjs: string | null;
  nodeLlamaCpp: string | null;
}

export interface SuiteResult {
  suite: string;
  machine: MachineInfo;
  quick: boolean;
  seconds: number;
  rows: BenchRow[];
  /** Set when the suite threw; rows then hold what it had not yet returned (none). */
  error?: string;
}

export interface RunOptions {
  /** Suite names to run (default: all discovered). */
  only?: string[];
  quick?: boolean;
  /** Thread count for the "all cores" reference rows (default: availableParallelism()). */
  threads?: number;
  backends?: BenchBackend[];
  /** Where <suite>.json goes (default bench/results); `null` writes nothing. */
  resultsDir?: string | null;
  /** Suites to run instead of discovering bench/*.bench.ts (tests pass fakes). */
  suites?: BenchSuite[];
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
  /** Where each finished suite's table goes (default: stdout); `null` prints nothing. */
  print?: ((table: string) => void) | null;
}

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const RESULTS_DIR = join(BENCH_DIR, 'results');

function packageVersion(pkg: string, from: string = import.meta.url): string | null {
  try {
    const require = createRequire(from);
    // Resolve the main entry, then walk up to its package.json (package.json itself may not be exported).
    let dir = dirname(require.resolve(pkg));
    for (let i = 0; i < 6; i++) {
      try {
        const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
        if (json.name === pkg && typeof json.version === 'string') return json.version;
      } catch {
        // not here; go up
      }
      dir = dirname(dir);
    }
    return null;
  } catch {
    return null;
  }
}

export function machineInfo(backends: BenchBackend[]): MachineInfo {
  const cpu = cpus()[0];
  return {
    cpuModel: cpu?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    totalMemoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    platform: platform(),
    arch: arch(),
    node: process.version,
    date: new Date().toISOString(),
    backends,
    tfjs: packageVersion('@tensorflow/tfjs'),
    // node-llama-cpp may live in the side folder of its opt-in install (src/llama-cpp/binding.ts).
    nodeLlamaCpp: packageVersion('node-llama-cpp') ?? packageVersion('node-llama-cpp', join(BENCH_DIR, '..', LLAMA_CPP_SIDE_DIR, 'node_modules', '')),
  };
}

/** Imports every bench/*.bench.ts (sorted by file name) and returns their suites. */
export async function discoverSuites(dir: string = BENCH_DIR): Promise<BenchSuite[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.bench.ts'))
    .sort();
  const suites: BenchSuite[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { suite?: BenchSuite };
    const s = mod.suite;
    if (!s || typeof s.name !== 'string' || typeof s.run !== 'function') {
      throw new Error(`${join(dir, f)}: does not export \`suite: BenchSuite\` (see bench/types.ts)`);
    }
    suites.push(s);
  }
  return suites;
}

/** A number in about 3–4 significant digits, never in exponent form for the usual ranges. */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(1);
  if (a >= 10) return v.toFixed(2);
  if (a >= 0.01 || a === 0) return v.toFixed(3);
  return v.toExponential(2);
}

export function formatRatio(r: number | undefined): string {
  if (r === undefined) return '';
  if (!Number.isFinite(r)) return String(r);
  return r >= 10 ? `${r.toFixed(1)}×` : r >= 0.1 ? `${r.toFixed(2)}×` : `${r.toFixed(4)}×`;
}

/**
 * One suite's rows as an aligned text table (case, engine, metric, value, unit, ratio vs llama.cpp), with
 * row notes as numbered footnotes below it (identical notes share one number). The ratio and note columns
 * appear only when some row has one.
 */
export function formatTable(result: Pick<SuiteResult, 'suite' | 'rows' | 'error' | 'quick'>): string {
  const notes: string[] = [];
  const full = result.rows.map((r) => {
    let mark = '';
    if (r.notes) {
      let i = notes.indexOf(r.notes);
      if (i < 0) i = notes.push(r.notes) - 1;
      mark = `[${i + 1}]`;
    }
    return [r.case, r.engine, r.metric, formatValue(r.value), r.unit, formatRatio(r.ratio), mark];
  });
  const keep = [true, true, true, true, true, result.rows.some((r) => r.ratio !== undefined), notes.length > 0];
  const pick = (cells: string[]): string[] => cells.filter((_, c) => keep[c]);
  const header = pick(['case', 'engine', 'metric', 'value', 'unit', 'vs llama.cpp', 'note']);
  const body = full.map(pick);
  const rightAligned = new Set(['value', 'vs llama.cpp']);
  const widths = header.map((h, c) => Math.max(h.length, ...body.map((row) => (row[c] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, c) => (rightAligned.has(header[c] ?? '') ? cell.padStart(widths[c] ?? 0) : cell.padEnd(widths[c] ?? 0)))
      .join('  ')
      .trimEnd();
  const out = [`== ${result.suite}${result.quick ? ' (quick)' : ''} ==`, line(header), line(widths.map((w) => '-'.repeat(w)))];
  for (const row of body) out.push(line(row));
  if (body.length === 0) out.push('(no rows)');
  notes.forEach((n, i) => out.push(`[${i + 1}] ${n}`));
  if (result.error) out.push(`ERROR: ${result.error.split('\n')[0] ?? ''}`);
  return out.join('\n');
}

export async function runBenchmarks(opts: RunOptions = {}): Promise<SuiteResult[]> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const print = opts.print === undefined ? (t: string) => process.stdout.write(`${t}\n\n`) : opts.print;
  const backends = opts.backends && opts.backends.length > 0 ? opts.backends : defaultBackends();
  const all = opts.suites ?? (await discoverSuites());
  const names = all.map((s) => s.name);
  const only = opts.only?.filter((n) => n.length > 0) ?? [];
  const unknown = only.filter((n) => !names.includes(n));
  if (unknown.length > 0) throw new Error(`unknown benchmark suite(s): ${unknown.join(', ')} (available: ${names.join(', ')})`);
  const selected = only.length > 0 ? all.filter((s) => only.includes(s.name)) : all;
  const resultsDir = opts.resultsDir === undefined ? RESULTS_DIR : opts.resultsDir;

  const results: SuiteResult[] = [];
  for (const suite of selected) {
    const ctx: RunnerContext = {
      quick: opts.quick ?? false,
      threads: opts.threads ?? availableParallelism(),
      backends,
      log: (line) => log(`[${suite.name}] ${line}`),
    };
    const machine = machineInfo(backends);
    const started = performance.now();
    log(`[${suite.name}] start${ctx.quick ? ' (quick)' : ''}`);
    let rows: BenchRow[] = [];
    let error: string | undefined;
    let aborted = false;
    try {
      rows = await suite.run(ctx);
    } catch (err) {
      error = (err as Error).stack ?? String(err);
      log(`[${suite.name}] failed: ${(err as Error).message}`);
      aborted = isWasmAbort(err);
    }
    const seconds = Math.round((performance.now() - started) / 100) / 10;
    const result: SuiteResult = { suite: suite.name, machine, quick: ctx.quick, seconds, rows, ...(error !== undefined ? { error } : {}) };
    if (resultsDir !== null) writeJsonAtomic(join(resultsDir, `${suite.name}.json`), result);
    log(`[${suite.name}] done in ${seconds} s${resultsDir !== null ? ` → ${join(resultsDir, `${suite.name}.json`)}` : ''}`);
    print?.(formatTable(result));
    results.push(result);
    if (aborted) {
      // An aborted wasm module is dead, and its threads can leave any later call spinning forever.
      const rest = selected.slice(selected.indexOf(suite) + 1).map((s) => s.name);
      if (rest.length > 0) log(`the wasm module aborted (out of its 4 GiB heap?): not running ${rest.join(', ')} in this process`);
      break;
    }
  }
  return results;
}

/** A WebAssembly abort (`RuntimeError: Aborted()`, e.g. the heap is full): the module cannot be used again. */
export function isWasmAbort(err: unknown): boolean {
  return err instanceof WebAssembly.RuntimeError || (err instanceof Error && /^Aborted\(/.test(err.message));
}

// ----- helpers shared by the suites -----

/** Median of a non-empty list. */
export function median(xs: number[]): number {
  if (xs.length === 0) throw new Error('median of an empty list');
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
