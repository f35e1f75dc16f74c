// `sesa-train bench`: runs the benchmark suites of bench/*.bench.ts (inference vs llama.cpp, matMul), writes
// bench/results/<suite>.json and prints one table per suite (or, with --json, one JSON object).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import type { BenchBackend, RunOptions } from '../../bench/run.js';
import { repoRoot } from '../util/shared-data.js';
import { type CommonArgs, withCommonOptions } from './common.js';

/**
 * The suite names for --help, read from the file names (bench/NAME.bench.ts; a suite is named as its file,
 * test/bench-runner.test.ts checks it) so that help does not import every suite.
 */
export function benchSuiteNames(dir: string = join(repoRoot(), 'bench')): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.slice(0, -'.bench.ts'.length))
    .sort();
}

interface BenchArgs extends CommonArgs {
  only?: string[];
  quick: boolean;
  out?: string;
}

/**
 * `--backend auto` measures both in-process backends; any other choice measures that one only. The suites time
 * kernels as the synchronous backends run them, which says nothing on webgpu (its kernels run after the call
 * returns): its numbers come from the device check.
 */
function backendsFor(choice: CommonArgs['backend'], defaults: BenchBackend[]): BenchBackend[] {
  if (choice === 'webgpu') throw new Error('sesa-train bench times synchronous backends only; the webgpu numbers come from the device check (bench/gpu-check.ts, scripts/gpu-check.sh; docs/scale-out.md)');
  return choice === 'auto' ? defaults : [choice];
}

export const command: CommandModule<object, BenchArgs> = {
  command: 'bench',
  describe: 'benchmark inference (side by side with llama.cpp) and matMul; results go to bench/results/*.json',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('only', {
        type: 'string',
        array: true,
        describe: `suites to run, comma-separated (default: all): ${benchSuiteNames().join(', ')}`,
        coerce: (v: string[]) => v.flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s.length > 0),
      })
      .option('quick', { type: 'boolean', default: false, describe: 'small sizes and few repeats (a smoke run)' })
      .option('out', { type: 'string', describe: 'results folder (default: bench/results)' })
      .epilog('--backend auto measures native (where onnxruntime-node loads), wasm and cpu; --backend native|wasm|cpu|tensorflow measures only that backend.')
      .check((a) => {
        if (a.threads !== undefined && (!Number.isInteger(a.threads) || a.threads < 1)) throw new Error('--threads must be a positive integer');
        return true;
      }) as unknown as Argv<BenchArgs>,
  handler: async (args) => {
    const { defaultBackends, runBenchmarks } = await import('../../bench/run.js');
    const opts: RunOptions = {
      quick: args.quick,
      backends: backendsFor(args.backend, defaultBackends()),
      ...(args.only ? { only: args.only } : {}),
      ...(args.threads !== undefined ? { threads: args.threads } : {}),
      ...(args.out !== undefined ? { resultsDir: args.out } : {}),
      // With --json, stdout carries only the final JSON object; progress always goes to stderr.
      ...(args.json ? { print: null } : {}),
    };
    const results = await runBenchmarks(opts);
    if (args.json) process.stdout.write(`${JSON.stringify({ suites: results })}\n`);
    const failed = results.filter((r) => r.error !== undefined);
    if (failed.length > 0) {
      process.stderr.write(`error: benchmark suite(s) failed: ${failed.map((r) => r.suite).join(', ')}\n`);
      process.exitCode = 1;
    }
  },
};
