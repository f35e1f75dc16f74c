// One training setting, declared once: its kind, default, help text and check. Everything else about a
// setting (its TypeScript type, its command-line flag, how a config file spells it, its validation, its line
// in the option table of docs/options.md, whether --resume may change it) is derived from this declaration by
// ../config.ts. The group tables (run.ts, rollout.ts, ...) are lists of these.
import { hasUserInfo, redactUrl } from '../util/redact.js';
import { cut } from '../util/text-file.js';

export type SettingKind = 'int' | 'number' | 'string' | 'boolean' | 'on-off' | 'choice' | 'list';

/**
 * What `--resume RUN_DIR` does with a new value for the setting: 'change' writes it to the run's config.json
 * (and logs the change); 'refuse' rejects it, for the reason given.
 */
export type ResumePolicy = { kind: 'change' } | { kind: 'refuse'; reason: string };

export interface Setting<T> {
  kind: SettingKind;
  /** The default for a real model (undefined for an optional setting that is unset by default). */
  default: T;
  /** The default with the tiny random model (`--model tiny`), where it differs. */
  tiny?: T;
  /** One line for --help and docs/options.md, with the paper's symbol where there is one. */
  help: string;
  /** The allowed values of a 'choice' setting, or of each item of a 'list'. */
  choices?: readonly string[];
  /** The value may be left unset. */
  optional?: boolean;
  /** No default: every configuration must give it (a command's input file, its run folder). */
  required?: boolean;
  /** A problem with a value, as the rest of a sentence after the flag ("must be ..."); undefined when fine. */
  check?: (value: T) => string | undefined;
  resume: ResumePolicy;
  /**
   * The value is an endpoint URL: it is written to config.json and shown only with the secrets a query may
   * hold removed (src/util/redact.ts), and a resumed run whose config.json holds such a URL must be given it again.
   */
  url?: boolean;
}

/** Any setting, whatever its value type (for code that walks the tables). */
export type AnySetting = Setting<any>;

export type SettingTable = Record<string, AnySetting>;

/** The value type of a setting. */
export type ValueOf<S> = S extends Setting<infer T> ? T : never;

/** The configuration object a table describes. */
export type ConfigOf<Table extends SettingTable> = { -readonly [K in keyof Table]: ValueOf<Table[K]> };

const CHANGE: ResumePolicy = { kind: 'change' };

interface Common<T> {
  help: string;
  tiny?: T;
  resume?: ResumePolicy;
  check?: (value: T) => string | undefined;
}

/** Refused on resume, with the reason. */
export function fixedForRun(reason: string): ResumePolicy {
  return { kind: 'refuse', reason };
}

function both<T>(a: ((v: T) => string | undefined) | undefined, b: ((v: T) => string | undefined) | undefined): ((v: T) => string | undefined) | undefined {
  if (!a) return b;
  if (!b) return a;
  return (v) => a(v) ?? b(v);
}

/** An integer ≥ `min` (default 1). */
export function int(def: number, o: Common<number> & { min?: number }): Setting<number> {
  const min = o.min ?? 1;
  const range = (v: number): string | undefined =>
    Number.isInteger(v) && v >= min ? undefined : min === 1 ? `must be a positive integer, got ${String(v)}` : `must be an integer ≥ ${min}, got ${String(v)}`;
  return { kind: 'int', default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}), check: both(range, o.check) as (v: number) => string | undefined };
}

/** A finite number; `min`/`max` are inclusive unless `above`/`below` (exclusive) are used. */
export function num(def: number, o: Common<number> & { min?: number; above?: number; max?: number; below?: number }): Setting<number> {
  const range = (v: number): string | undefined => {
    if (typeof v !== 'number' || !Number.isFinite(v)) return `must be a number, got ${String(v)}`;
    if (o.min !== undefined && !(v >= o.min)) return o.min === 0 ? `must be a number ≥ 0, got ${v}` : `must be ≥ ${o.min}, got ${v}`;
    if (o.above !== undefined && !(v > o.above)) return o.above === 0 ? `must be a positive number, got ${v}` : `must be > ${o.above}, got ${v}`;
    if (o.max !== undefined && !(v <= o.max)) return `must be ≤ ${o.max}, got ${v}`;
    if (o.below !== undefined && !(v < o.below)) return `must be < ${o.below}, got ${v}`;
    return undefined;
  };
  return { kind: 'number', default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}), check: both(range, o.check) as (v: number) => string | undefined };
}

/** An optional finite number (unset = the behaviour the help text names). */
export function optionalNum(o: Common<number | undefined> & { min?: number; max?: number }): Setting<number | undefined> {
  const range = (v: number | undefined): string | undefined => {
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return `must be a number, got ${String(v)}`;
    if (o.min !== undefined && v < o.min) return `must be ≥ ${o.min}, got ${v}`;
    if (o.max !== undefined && v > o.max) return `must be ≤ ${o.max}, got ${v}`;
    return undefined;
  };
  return { kind: 'number', default: undefined, optional: true, help: o.help, resume: o.resume ?? CHANGE, check: both(range, o.check) };
}

/** A non-empty string. */
export function str(def: string, o: Common<string>): Setting<string> {
  const nonEmpty = (v: string): string | undefined => (typeof v === 'string' && v.trim().length > 0 ? undefined : `must not be empty`);
  return { kind: 'string', default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}), check: both(nonEmpty, o.check) as (v: string) => string | undefined };
}

/** An optional string (unset by default). */
export function optionalStr(o: Common<string | undefined>): Setting<string | undefined> {
  const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v.trim().length > 0 ? undefined : 'must not be empty');
  return { kind: 'string', default: undefined, optional: true, help: o.help, resume: o.resume ?? CHANGE, check: both(nonEmpty, o.check) };
}

/** A string with no default, which every configuration must give (an input file, a run folder). */
export function requiredStr(o: Common<string>): Setting<string> {
  return { ...str('', o), default: undefined as unknown as string, required: true };
}

/** One of a fixed set of strings, with no default: every configuration must choose. */
export function requiredChoice<const C extends string>(values: readonly C[], o: Common<C>): Setting<C> {
  return { ...choice(values, values[0] as C, o), default: undefined as unknown as C, required: true };
}

/** A switch: `--name` / `--no-name` on the command line, true/false in a file. */
export function bool(def: boolean, o: Common<boolean>): Setting<boolean> {
  return { kind: 'boolean', default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}) };
}

/** A switch written `--name on|off` on the command line (true/false or "on"/"off" in a file). */
export function onOff(def: boolean, o: Common<boolean>): Setting<boolean> {
  return { kind: 'on-off', default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}) };
}

/** One of a fixed set of strings. */
export function choice<const C extends string>(values: readonly C[], def: C, o: Common<C>): Setting<C> {
  const member = (v: C): string | undefined => (values.includes(v) ? undefined : `must be ${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}, got ${cut(String(v))}`);
  return { kind: 'choice', choices: values, default: def, help: o.help, resume: o.resume ?? CHANGE, ...(o.tiny !== undefined ? { tiny: o.tiny } : {}), check: both(member, o.check) as (v: C) => string | undefined };
}

/** A non-empty list of strings, each from `values` (comma-separated on the command line, a list in a file). */
export function list<const C extends string>(values: readonly C[], def: readonly C[], o: Common<C[]>): Setting<C[]> {
  const members = (v: C[]): string | undefined => {
    if (!Array.isArray(v) || v.length === 0) return `must list at least one of ${values.join(', ')}`;
    const bad = v.filter((x) => !values.includes(x));
    if (bad.length > 0) return `has unknown ${bad.map((b) => `'${cut(String(b))}'`).join(', ')} (known: ${values.join(', ')})`;
    if (new Set(v).size !== v.length) return 'lists a value twice';
    return undefined;
  };
  return { kind: 'list', choices: values, default: [...def], help: o.help, resume: o.resume ?? CHANGE, check: both(members, o.check) as (v: C[]) => string | undefined };
}

/**
 * A check for an endpoint setting: the value must parse as an http(s) URL without a user name or password
 * (fetch cannot send them, and they would be shown); the value is echoed with its secrets removed.
 */
export function httpUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const shown = redactUrl(value);
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `must be a URL such as http://host:port/..., got ${JSON.stringify(shown)}`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http:// or https:// URL, got ${shown}`;
  if (hasUserInfo(value)) return `must not hold a user name or password (${shown}): fetch cannot send them, and they would be shown in logs; put the key in the environment variable that --api-key-env names`;
  return undefined;
}

/** An optional endpoint URL (unset by default): checked by httpUrl, redacted wherever it is written or shown. */
export function optionalUrl(o: Omit<Common<string | undefined>, 'check'>): Setting<string | undefined> {
  return { ...optionalStr({ ...o, check: httpUrl }), url: true };
}

/**
 * The table with every setting refused on --resume, for `reason`, except those in `mayChange` (for a recipe
 * whose resumed run continues with the settings it recorded).
 */
export function fixedOnResumeExcept<T extends SettingTable>(table: T, mayChange: ReadonlyArray<keyof T>, reason: string): T {
  return Object.fromEntries(Object.entries(table).map(([k, s]) => [k, mayChange.includes(k) ? s : { ...s, resume: fixedForRun(reason) }])) as T;
}
