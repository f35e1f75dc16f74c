// Options and output shared by every command: --backend and --json; and the checks of what was typed that hold
// for every command (a number flag given a word, a thread count over the wasm backend's pool, an unknown flag).
import type { Argv } from 'yargs';
import { keyOf } from '../settings/table.js';
import { nearestSetting } from '../settings/suggest.js';
import { cut } from '../util/text-file.js';
import { BACKEND_CHOICES, type BackendChoice, describeBackend, initBackend, type BackendInfo } from '../tensor/backend.js';
import { WASM_MAX_THREADS, wasmThreadsRefusal } from '../tensor/wasm-threads.js';

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
      describe: 'tensor backend (auto picks the fastest available and says which; native-int8: native with the frozen base in 8-bit blocks, docs/method.md)',
    })
    .option('threads', { type: 'number', describe: `compute threads of the wasm backend (at most ${WASM_MAX_THREADS}), or of the native backend's matMuls (default: all cores)` })
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

/**
 * `--threads N` over the wasm backend's pool, said with the maximum, where --backend wasm is asked for; undefined
 * when fine or another backend (auto decides on start, and initBackend says it there: src/tensor/backend.ts).
 */
export function threadsProblem(threads: unknown, backend: unknown): string | undefined {
  if (typeof threads !== 'number' || !Number.isFinite(threads) || threads <= WASM_MAX_THREADS || backend !== 'wasm') return undefined;
  return wasmThreadsRefusal(threads);
}

/** The text typed for option `name` (`--name v` or `--name=v`, any spelling), the last one; undefined when none. */
export function typedValue(argv: readonly string[], name: string): string | undefined {
  const key = keyOf(name);
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') break;
    const m = /^--([A-Za-z0-9][A-Za-z0-9-]*)(?:=(.*))?$/s.exec(a);
    if (!m || keyOf(m[1] as string) !== key) continue;
    out = m[2] ?? argv[i + 1];
  }
  return out;
}

/**
 * Number options that yargs turned into NaN (`--steps abc`), each as "--steps must be a number, got 'abc'":
 * the typed text, not the NaN it became.
 */
export function notNumberFlags(argv: readonly string[], numberOptions: readonly string[], parsed: Readonly<Record<string, unknown>>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const name of numberOptions) {
    const key = keyOf(name);
    if (seen.has(key)) continue;
    seen.add(key);
    const v = parsed[key] ?? parsed[name];
    if (typeof v !== 'number' || !Number.isNaN(v)) continue;
    const typed = typedValue(argv, name);
    out.push(`--${name.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)} must be a number, got ${typed === undefined ? 'no value' : `'${cut(typed)}'`}`);
  }
  return out;
}

/**
 * yargs' "Unknown arguments: dry-run, dryRun" said once per flag (it lists the kebab and the camel spelling of
 * one), with the nearest declared option: "unknown option --stepz (did you mean --steps?)". undefined when `msg`
 * is another message.
 */
export function unknownArgumentsText(msg: string, declared: readonly string[]): string | undefined {
  const m = /^Unknown arguments?: (.*)$/s.exec(msg);
  if (!m) return undefined;
  const names = new Map<string, string>();
  for (const raw of (m[1] as string).split(', ')) {
    const key = keyOf(raw);
    // The kebab spelling is the one typed (yargs adds the camel one).
    if (!names.has(key) || raw.includes('-')) names.set(key, raw);
  }
  const flags = [...new Set(declared.map((d) => d.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)))];
  const parts = [...names.values()].map((name) => {
    const near = nearestSetting(name, flags);
    return `--${cut(name)}${near !== undefined ? ` (did you mean --${near}?)` : ''}`;
  });
  return `unknown option${parts.length === 1 ? '' : 's'} ${parts.join(', ')}`;
}
