// Options and output shared by every command: --backend and --json.
import type { Argv } from 'yargs';
import { BACKEND_CHOICES, type BackendChoice, describeBackend, initBackend, type BackendInfo } from '../tensor/backend.js';

export interface CommonArgs {
  backend: BackendChoice;
  /** Compute threads (wasm); default: all cores. */
  threads?: number;
  json: boolean;
}

export function withCommonOptions<T>(y: Argv<T>): Argv<T & CommonArgs> {
  return y
    .option('backend', {
      choices: BACKEND_CHOICES,
      default: 'auto' as BackendChoice,
      describe: 'tensor backend (auto picks the fastest available and says which)',
    })
    .option('threads', { type: 'number', describe: "compute threads of the wasm backend, or of the native backend's matMuls (default: all cores)" })
    .option('json', { type: 'boolean', default: false, describe: 'print one JSON object for scripts' }) as Argv<T & CommonArgs>;
}

/** Initialises the backend; in human mode says which one runs (on stderr, so stdout stays clean). */
export async function startBackend(args: CommonArgs): Promise<BackendInfo> {
  const info = await initBackend(args.backend, args.threads !== undefined ? { threads: args.threads } : {});
  if (!args.json) process.stderr.write(`backend: ${describeBackend(info)}\n`);
  return info;
}

/** Prints a result: JSON on stdout with --json, else the human-readable text. */
export function emit(args: { json: boolean }, value: unknown, human: string): void {
  process.stdout.write(args.json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

/** Parses "1,2,3" into token ids with a clear error naming the flag. */
export function parseIdList(flag: string, value: string): number[] {
  const parts = value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  const ids = parts.map(Number);
  if (ids.length === 0 || ids.some((x) => !Number.isInteger(x) || x < 0)) {
    throw new Error(`--${flag} must be a comma-separated list of non-negative integers, got '${value}'`);
  }
  return ids;
}

/** The names of the options typed on a command line (`--no-x` as `x`, `--x=v` as `x`), up to `--`. */
export function typedFlagNames(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of argv) {
    if (a === '--') break;
    const m = /^--(?:no-)?([A-Za-z0-9][A-Za-z0-9-]*)(?:=|$)/.exec(a);
    if (m) out.push(m[1] as string);
  }
  return out;
}

/**
 * Options given more than once that are not list options, each as "--name was given N times". yargs would turn a
 * repeated option into a list, or add repeated numbers together, so a repeat is refused naming the flag.
 * `listOptions` are the options declared as arrays (any spelling); `--no-x` counts as `--x`.
 */
export function repeatedScalarFlags(argv: readonly string[], listOptions: readonly string[]): string[] {
  const camel = (s: string): string => s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const lists = new Set(listOptions.map(camel));
  const counts = new Map<string, { flag: string; n: number }>();
  for (const name of typedFlagNames(argv)) {
    const key = camel(name);
    if (lists.has(key)) continue;
    const c = counts.get(key) ?? { flag: `--${name}`, n: 0 };
    c.n++;
    counts.set(key, c);
  }
  return [...counts.values()].filter((c) => c.n > 1).map((c) => `${c.flag} was given ${c.n} times`);
}
