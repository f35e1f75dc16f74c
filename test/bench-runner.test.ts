// The benchmark runner's formatting and result files, with a fake suite (no timing is measured or asserted).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchBackends, formatRatio, formatTable, formatValue, isWasmAbort, median, runBenchmarks, type SuiteResult } from '../bench/run.js';
import type { BenchContext, BenchRow, BenchSuite } from '../bench/types.js';
import { ortAvailability } from '../src/tensor/ort-binding.js';

const ROOT = resolve(import.meta.dirname, '..');
const root = mkdtempSync(join(tmpdir(), 'sesa-bench-runner-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FAKE_ROWS: BenchRow[] = [
  { case: 'fake b1', engine: 'sesa/wasm', metric: 'prefill', value: 1234.5678, unit: 'tok/s', ratio: 0.5, notes: 'fake note A' },
  { case: 'fake b1', engine: 'llama.cpp/1t', metric: 'prefill', value: 2469.1356, unit: 'tok/s', notes: 'fake note B' },
  { case: 'fake b1', engine: 'sesa/cpu', metric: 'decode', value: 0.123, unit: 'tok/s', ratio: 0.0123, notes: 'fake note A' },
  { case: 'fake b8', engine: 'sesa/wasm', metric: 'decode', value: 42, unit: 'tok/s' },
];

function fakeSuite(name: string, seen: BenchContext[]): BenchSuite {
  return {
    name,
    async run(ctx) {
      seen.push(ctx);
      ctx.log('fake suite running');
      return FAKE_ROWS;
    },
  };
}

const failingFakeSuite: BenchSuite = {
  name: 'fake-failing',
  async run() {
    throw new Error('fake failure\nsecond line');
  },
};

describe('benchmark runner (fake suites)', () => {
  it('formats values and ratios', () => {
    expect(formatValue(123456.7)).toBe('123,457');
    expect(formatValue(1234.5678)).toBe('1,235');
    expect(formatValue(123.456)).toBe('123.5');
    expect(formatValue(12.3456)).toBe('12.35');
    expect(formatValue(0.1234)).toBe('0.123');
    expect(formatValue(0.001234)).toBe('1.23e-3');
    expect(formatValue(0)).toBe('0.000');
    expect(formatRatio(undefined)).toBe('');
    expect(formatRatio(0.5)).toBe('0.50×');
    expect(formatRatio(0.0123)).toBe('0.0123×');
    expect(formatRatio(12.34)).toBe('12.3×');
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(/empty/);
  });

  it('prints an aligned table with ratio and shared numbered footnotes', () => {
    const table = formatTable({ suite: 'fake', rows: FAKE_ROWS, quick: true });
    const lines = table.split('\n');
    expect(lines[0]).toBe('== fake (quick) ==');
    expect(lines[1]).toMatch(/^case\s+engine\s+metric\s+value\s+unit\s+vs llama\.cpp\s+note$/);
    expect(lines[2]).toMatch(/^-+( +-+){6}$/);
    // Columns line up: every row's "tok/s" starts where the header's "unit" does.
    const unitCol = (lines[1] as string).indexOf('unit');
    for (const row of lines.slice(3, 7)) expect(row.indexOf('tok/s')).toBe(unitCol);
    expect(lines[3]).toMatch(/^fake b1\s+sesa\/wasm\s+prefill\s+1,235\s+tok\/s\s+0\.50×\s+\[1\]$/);
    expect(lines[4]).toMatch(/llama\.cpp\/1t\s+prefill\s+2,469\s+tok\/s\s+\[2\]$/);
    expect(lines[5]).toMatch(/sesa\/cpu\s+decode\s+0\.123\s+tok\/s\s+0\.0123×\s+\[1\]$/);
    expect(lines[6]).toMatch(/^fake b8\s+sesa\/wasm\s+decode\s+42\.00\s+tok\/s$/);
    expect(lines.slice(7)).toEqual(['[1] fake note A', '[2] fake note B']);
  });

  it('leaves out the ratio and note columns when no row has one', () => {
    const lines = formatTable({ suite: 'fake-plain', rows: [{ case: 'c', engine: 'e', metric: 'm', value: 2, unit: 'u' }], quick: false }).split('\n');
    expect(lines[1]).toMatch(/^case\s+engine\s+metric\s+value\s+unit$/);
    expect(lines[3]).toMatch(/^c\s+e\s+m\s+2\.000\s+u$/);
    expect(lines).toHaveLength(4);
  });

  it('shows an empty suite and the first line of an error', () => {
    const table = formatTable({ suite: 'fake-empty', rows: [], quick: false, error: 'Error: boom\n    at somewhere' });
    expect(table.split('\n')).toEqual([
      '== fake-empty ==',
      expect.stringMatching(/^case/),
      expect.stringMatching(/^-/),
      '(no rows)',
      'ERROR: Error: boom',
    ]);
  });

  it('runs the selected fake suites, writes <suite>.json with machine info, and keeps going after a failure', async () => {
    const seen: BenchContext[] = [];
    const printed: string[] = [];
    const logged: string[] = [];
    const out = join(root, 'results');
    const results = await runBenchmarks({
      suites: [fakeSuite('fake-a', seen), failingFakeSuite, fakeSuite('fake-b', seen)],
      only: ['fake-failing', 'fake-b'],
      quick: true,
      threads: 3,
      backends: ['cpu'],
      resultsDir: out,
      log: (l) => logged.push(l),
      print: (t) => printed.push(t),
    });
    expect(results.map((r) => r.suite)).toEqual(['fake-failing', 'fake-b']);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.quick).toBe(true);
    expect(seen[0]?.threads).toBe(3);
    expect(benchBackends(seen[0] as BenchContext)).toEqual(['cpu']);
    expect(logged).toContain('[fake-b] fake suite running');
    expect(printed).toHaveLength(2);
    expect(printed[0]).toContain('ERROR: Error: fake failure');
    expect(printed[0]).not.toContain('second line');
    expect(printed[1]).toBe(formatTable({ suite: 'fake-b', rows: FAKE_ROWS, quick: true }));

    expect(readdirSync(out).sort()).toEqual(['fake-b.json', 'fake-failing.json']);
    const saved = JSON.parse(readFileSync(join(out, 'fake-b.json'), 'utf8')) as SuiteResult;
    expect(saved.suite).toBe('fake-b');
    expect(saved.quick).toBe(true);
    expect(saved.rows).toEqual(FAKE_ROWS);
    expect(saved.error).toBeUndefined();
    expect(saved.machine.cores).toBeGreaterThan(0);
    expect(typeof saved.machine.cpuModel).toBe('string');
    expect(saved.machine.node).toBe(process.version);
    expect(Number.isNaN(Date.parse(saved.machine.date))).toBe(false);
    expect(saved.machine.backends).toEqual(['cpu']);
    expect(saved.machine.tfjs).toBe('4.22.0');
    const failed = JSON.parse(readFileSync(join(out, 'fake-failing.json'), 'utf8')) as SuiteResult;
    expect(failed.rows).toEqual([]);
    expect(failed.error).toMatch(/^Error: fake failure/);
  });

  it('stops after a suite that aborted the wasm module: later calls into it can spin forever', async () => {
    const logged: string[] = [];
    const seen: BenchContext[] = [];
    const aborting: BenchSuite = {
      name: 'fake-abort',
      run: () => Promise.reject(new WebAssembly.RuntimeError('Aborted(). Build with -sASSERTIONS for more info.')),
    };
    const results = await runBenchmarks({ suites: [aborting, fakeSuite('fake-b', seen)], quick: true, backends: ['cpu'], resultsDir: null, log: (l) => logged.push(l), print: null });
    expect(results.map((r) => r.suite)).toEqual(['fake-abort']);
    expect(results[0]?.error).toMatch(/Aborted\(\)/);
    expect(seen).toHaveLength(0);
    expect(logged).toContain('the wasm module aborted (out of its 4 GiB heap?): not running fake-b in this process');
    // An ordinary failure does not stop the run (see above); neither does an Error that merely mentions wasm.
    expect(isWasmAbort(new Error('wasm said no'))).toBe(false);
    expect(isWasmAbort(new Error('Aborted(OOM)'))).toBe(true);
  });

  it('rejects unknown suite names and writes nothing with resultsDir null', async () => {
    await expect(runBenchmarks({ suites: [failingFakeSuite], only: ['nope'], resultsDir: null, log: () => {}, print: null })).rejects.toThrow(
      /unknown benchmark suite\(s\): nope \(available: fake-failing\)/,
    );
    const seen: BenchContext[] = [];
    const results = await runBenchmarks({ suites: [fakeSuite('fake-c', seen)], resultsDir: null, log: () => {}, print: null });
    expect(results[0]?.rows).toEqual(FAKE_ROWS);
    expect(benchBackends(seen[0] as BenchContext)).toEqual(ortAvailability().ok ? ['native', 'wasm', 'cpu'] : ['wasm', 'cpu']);
  });

  it('discovers *.bench.ts files of a folder and names one that exports no suite', async () => {
    const { discoverSuites } = await import('../bench/run.js');
    const dir = join(root, 'fake-bench');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'b-fake.bench.ts'), "export const suite = { name: 'fake-b', run: async () => [] };\n");
    writeFileSync(join(dir, 'a-fake.bench.ts'), "export const suite = { name: 'fake-a', run: async () => [] };\n");
    writeFileSync(join(dir, 'helper.ts'), 'export const notASuite = 1;\n');
    expect((await discoverSuites(dir)).map((s) => s.name)).toEqual(['fake-a', 'fake-b']);
    writeFileSync(join(dir, 'c-broken-fake.bench.ts'), 'export const other = 1;\n');
    await expect(discoverSuites(dir)).rejects.toThrow(/c-broken-fake\.bench\.ts: does not export `suite: BenchSuite`/);
  });

  it('the inference and matmul suites export `suite` (not run here)', async () => {
    expect((await import('../bench/inference.bench.js')).suite.name).toBe('inference');
    expect((await import('../bench/matmul.bench.js')).suite.name).toBe('matmul');
  });

  it('bench --help lists every suite by name, and each suite is named as its file (which the list is read from)', async () => {
    const { benchSuiteNames } = await import('../src/cli/bench.js');
    const { discoverSuites } = await import('../bench/run.js');
    const names = benchSuiteNames();
    expect(names.length).toBeGreaterThan(5);
    expect((await discoverSuites()).map((s) => s.name).sort()).toEqual(names);
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'sesa-train.mjs'), 'bench', '--help'], { encoding: 'utf8', env: { ...process.env, COLUMNS: '400' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.replace(/\s+/g, ' ')).toContain(`suites to run, comma-separated (default: all): ${names.join(', ')}`);
  }, 120_000);
});
