// What any table of settings (./setting.ts) gives: its defaults, its yargs options and help lines, its flag
// names, the conversion and type check of a value from a flag or a settings file, a settings file read from
// disk (JSON or YAML), and the checks of a whole configuration. The trainer's tables (../config.ts) and the
// recipes' tables (src/recipes/*/config.ts) are both served by these functions.
import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { parseDocument, parse as parseYaml } from 'yaml';
import type { AnySetting, ConfigOf, SettingTable } from './setting.js';
import { own } from '../util/own.js';
import { nearestSetting } from './suggest.js';
import { cut, echo, readTextFile, TextFileError } from '../util/text-file.js';

/** camelCase key → kebab-case flag name (without the dashes). */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
}

/** --kebab-case or camelCase → camelCase key. */
export function keyOf(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, ch: string) => ch.toUpperCase());
}

/** A value as --help and docs/options.md show it. */
export function showValue(v: unknown): string {
  if (v === undefined) return 'unset';
  if (Array.isArray(v)) return v.join(',');
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  return String(v);
}

function copy<T>(v: T): T {
  return Array.isArray(v) ? ([...v] as T) : v;
}

/** The defaults with the tiny random model (`--model tiny`), for the settings that declare one. */
export function tinyDefaultsOf<T extends SettingTable>(table: T): Partial<ConfigOf<T>> {
  return Object.fromEntries(
    Object.entries(table)
      .filter(([, s]) => s.tiny !== undefined)
      .map(([k, s]) => [k, copy(s.tiny)]),
  ) as Partial<ConfigOf<T>>;
}

/** The table's defaults; optional settings that are unset by default are absent. */
export function defaultsOf<T extends SettingTable>(table: T): ConfigOf<T> {
  return Object.fromEntries(
    Object.entries(table)
      .filter(([, s]) => s.default !== undefined)
      .map(([k, s]) => [k, copy(s.default)]),
  ) as ConfigOf<T>;
}

/**
 * A value from a settings file (or a config.json, or a flag already typed by yargs) converted to the
 * setting's type: `{ value }`, or `{ want }` naming what it must be. null unsets an optional setting.
 */
export function settingValue(s: AnySetting, v: unknown): { value: unknown } | { want: string } {
  if (v === null && s.optional) return { value: undefined };
  switch (s.kind) {
    case 'int':
    case 'number':
      return typeof v === 'number' ? { value: v } : { want: 'a number' };
    case 'string':
    case 'choice':
      return typeof v === 'string' ? { value: v } : { want: 'a string' };
    case 'boolean':
      return typeof v === 'boolean' ? { value: v } : { want: 'true or false' };
    case 'on-off':
      if (typeof v === 'boolean') return { value: v };
      return v === 'on' || v === 'off' ? { value: v === 'on' } : { want: 'on, off, true or false' };
    case 'list':
      if (typeof v === 'string') return { value: v.split(',').map((x) => x.trim()).filter((x) => x.length > 0) };
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return { value: [...v] };
      return { want: 'a list of strings' };
  }
}

/**
 * The settings of a parsed settings file (kebab-case or camelCase keys), each converted to its type, and
 * every problem (unknown key, wrong type) naming `where` and the key. Ranges are checked later
 * (settingProblems), on the whole configuration.
 */
export function settingsFromObject(table: SettingTable, raw: unknown, where: string): { values: Record<string, unknown>; problems: string[] } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { values: {}, problems: [`${where}: a settings file must hold an object of settings`] };
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  // The name each key was given under: `seeds-per-step` and `seedsPerStep` in one file are one setting twice.
  const spelled = new Map<string, string>();
  for (const [name, v] of Object.entries(raw)) {
    const k = keyOf(name);
    // An own property only: `constructor` or `__proto__` in a file is an unknown setting, not Object's member.
    const s = own(table, k);
    if (!s) {
      problems.push(`${where}: unknown setting '${cut(name)}'${unknownSettingHint(name, Object.keys(table), (key) => `'${flagName(key)}'`)}`);
      continue;
    }
    const before = spelled.get(k);
    if (before !== undefined) {
      problems.push(`${where}: '${cut(before)}' and '${cut(name)}' are the same setting (--${flagName(k)}) given twice; keep one`);
      continue;
    }
    spelled.set(k, name);
    const r = settingValue(s, v);
    if ('want' in r) problems.push(`${where}: setting '${cut(name)}' must be ${r.want}, got ${echo(v)}`);
    else if (r.value !== undefined) values[k] = r.value;
  }
  return { values, problems };
}

/**
 * What follows "unknown setting 'stepz'": ` (did you mean 'steps'?)` with the nearest known name (./suggest.ts),
 * else ` (known: ...)` with them all. `show` spells a known key as the message quotes it.
 */
export function unknownSettingHint(name: string, known: readonly string[], show: (key: string) => string): string {
  const near = nearestSetting(name, known);
  return near !== undefined ? ` (did you mean ${show(near)}?)` : ` (known: ${known.map(flagName).join(', ')})`;
}

/**
 * A settings file from disk (JSON, or YAML by its extension), before its keys are checked. A key given twice
 * is an error in both (JSON.parse alone would keep the last one without a word).
 */
export function readSettingsFile(file: string): unknown {
  if (!existsSync(file)) throw new Error(`--config ${file}: file not found`);
  const yaml = ['.yaml', '.yml'].includes(extname(file).toLowerCase());
  let text: string;
  let value: unknown;
  try {
    text = readTextFile(file);
    value = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    if (err instanceof TextFileError) throw err;
    throw new Error(`${file}: not valid ${yaml ? 'YAML' : 'JSON'} (${(err as Error).message})`);
  }
  if (!yaml) {
    // JSON is YAML: its parser finds the duplicate keys JSON.parse passes over.
    const dup = parseDocument(text, { schema: 'core' }).errors.find((e) => e.code === 'DUPLICATE_KEY');
    if (dup) throw new Error(`${file}: a key appears twice (${dup.message.split('\n')[0]?.replace(/^Map keys must be unique\s*/, '').replace(/:$/, '')}); give each setting once`);
  }
  return value;
}

/** A command-line value (already typed by yargs) converted to the setting's type; throws naming the flag. */
export function flagValueOf(key: string, s: AnySetting, v: unknown): unknown {
  if (s.kind === 'on-off') {
    if (v === 'on' || v === true) return true;
    if (v === 'off' || v === false) return false;
    throw new Error(`--${flagName(key)} must be on or off, got '${cut(String(v))}'`);
  }
  if (s.kind === 'list' && typeof v === 'string') return v.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  return v;
}

/** The yargs option of a setting: its type, choices and a help line that shows the defaults. */
/** `defaults`: the help's bracket, when the caller knows more starts than the default and the tiny model's. */
export function yargsOptionOf(s: AnySetting, defaultsText?: string): { type: 'number' | 'string' | 'boolean'; choices?: string[]; describe: string } {
  const defaults = s.required ? 'required' : (defaultsText ?? (s.tiny !== undefined ? `default ${showValue(s.default)}; tiny ${showValue(s.tiny)}` : `default ${showValue(s.default)}`));
  const describe = `${s.help} [${defaults}]`;
  switch (s.kind) {
    case 'int':
    case 'number':
      return { type: 'number', describe };
    case 'boolean':
      return { type: 'boolean', describe };
    case 'on-off':
      return { type: 'string', choices: ['on', 'off'], describe };
    case 'choice':
      return { type: 'string', choices: [...(s.choices ?? [])], describe };
    case 'list':
      return { type: 'string', describe: `${describe} (comma-separated: ${(s.choices ?? []).join(', ')})` };
    default:
      return { type: 'string', describe };
  }
}

/** Every setting's yargs option, by flag name. */
export function yargsOptionsOf(table: SettingTable): Record<string, ReturnType<typeof yargsOptionOf>> {
  return Object.fromEntries(Object.entries(table).map(([k, s]) => [flagName(k), yargsOptionOf(s)]));
}

/** The settings of `table` that were given on the command line (yargs' parsed arguments), converted. */
export function flagsGiven(table: SettingTable, args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, s] of Object.entries(table)) if (args[k] !== undefined) out[k] = flagValueOf(k, s, args[k]);
  return out;
}

/** Each setting's own check (and a missing required one), naming its flag; empty when all are fine. */
export function settingProblems(table: SettingTable, values: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [k, s] of Object.entries(table)) {
    const v = values[k];
    if (v === undefined) {
      if (!s.optional) problems.push(`--${flagName(k)} is ${s.required ? 'required' : 'missing'}`);
      continue;
    }
    const p = s.check?.(v);
    if (p) problems.push(`--${flagName(k)} ${p}`);
  }
  return problems;
}

/** One layer of a configuration: a parsed settings file (`file`) or the flags given (`flags`, converted). */
export type SettingsLayer = { file: string; raw: unknown } | { flags: Record<string, unknown> };

/**
 * Flags (and settings-file keys) that were renamed: old name (camelCase, as yargs parses it) → the new key.
 * An old name is never kept as an alias: it is refused with a message naming the new one (docs/sft.md,
 * "Renamed flags"; README.md, "Commands", for `skills init`). A command declares its old names as hidden
 * yargs options, so that one given reaches these checks instead of failing as an unknown argument.
 */
export type RenamedSettings = Readonly<Record<string, string>>;

/** The new key of an old flag or file key (kebab- or camelCase, with or without `--` and `no-`), or undefined. */
export function renamedTo(renamed: RenamedSettings, name: string): string | undefined {
  return own(renamed, keyOf(name.replace(/^--/, '').replace(/^no-/, '')));
}

/**
 * One message per old flag among yargs' parsed arguments, naming the new flag and `why` it was renamed:
 * `--schedule was renamed --lr-schedule (the name train uses): use --lr-schedule` (`use --no-…` for `--no-…`).
 */
export function renamedFlagProblems(renamed: RenamedSettings, args: Readonly<Record<string, unknown>>, why: string): string[] {
  return Object.entries(renamed)
    .filter(([old]) => args[old] !== undefined)
    .map(([old, to]) => `--${flagName(old)} was renamed --${flagName(to)} (${why}): use --${args[old] === false ? 'no-' : ''}${flagName(to)}`);
}

/** Throws one error naming every old flag given (renamedFlagProblems); nothing when none was. */
export function refuseRenamedFlags(renamed: RenamedSettings, args: Readonly<Record<string, unknown>>, why: string): void {
  const problems = renamedFlagProblems(renamed, args, why);
  if (problems.length > 0) throw new Error(problems.join('; '));
}

/**
 * Values renamed, for settings that take a name: old value → new value. On a flag or in a settings file the old
 * value is refused naming the new one; a file the program wrote itself before the rename (a run's config.json)
 * reads with the new value (currentValue).
 */
export type RenamedValues = Readonly<Record<string, string>>;

/**
 * When `value` is an old one: the rest of a sentence after the flag, `demo was renamed encyclopedia (why): use
 * --corpus encyclopedia` (a setting's check, ./setting.ts, is worded so); else undefined.
 */
export function renamedValueProblem(flag: string, value: unknown, renamed: RenamedValues, why: string): string | undefined {
  const to = typeof value === 'string' ? own(renamed, value) : undefined;
  return to === undefined ? undefined : `${String(value)} was renamed ${to} (${why}): use --${flag} ${to}`;
}

/** `value`, or its new name when it is an old one. */
export function currentValue<T>(value: T, renamed: RenamedValues): T {
  return typeof value === 'string' ? ((own(renamed, value) as T | undefined) ?? value) : value;
}

/** One message per old key in the settings files among `layers`, naming the file and the new key. */
export function renamedKeyProblems(renamed: RenamedSettings, layers: readonly SettingsLayer[], why: string): string[] {
  const problems: string[] = [];
  for (const layer of layers) {
    if (!('file' in layer) || typeof layer.raw !== 'object' || layer.raw === null) continue;
    for (const k of Object.keys(layer.raw)) {
      const to = renamedTo(renamed, k);
      if (to) problems.push(`${layer.file}: setting '${k}' was renamed '${flagName(to)}' (${why}): use '${flagName(to)}'`);
    }
  }
  return problems;
}

/**
 * Defaults ← each layer in order; then every value's type and check, and the cross-setting `rules`.
 * Throws one error listing every problem, each naming its file or flag.
 */
export function resolveSettings<T extends SettingTable>(table: T, layers: readonly SettingsLayer[], rules: (c: ConfigOf<T>) => string[] = () => []): ConfigOf<T> {
  const out: Record<string, unknown> = { ...defaultsOf(table) };
  const problems: string[] = [];
  for (const layer of layers) {
    if ('file' in layer) {
      const parsed = settingsFromObject(table, layer.raw, layer.file);
      problems.push(...parsed.problems);
      Object.assign(out, parsed.values);
      continue;
    }
    for (const [k, v] of Object.entries(layer.flags)) {
      const s = own(table, k);
      if (!s) problems.push(`--${flagName(k)}: unknown setting${unknownSettingHint(k, Object.keys(table), (key) => `--${flagName(key)}`)}`);
      else if (v !== undefined) {
        const r = settingValue(s, v);
        if ('want' in r) problems.push(`--${flagName(k)} must be ${r.want}, got ${echo(v)}`);
        else out[k] = r.value;
      }
    }
  }
  problems.push(...settingProblems(table, out));
  if (problems.length === 0) problems.push(...rules(out as ConfigOf<T>));
  if (problems.length > 0) throw new Error(`invalid settings:\n  - ${problems.join('\n  - ')}`);
  return out as ConfigOf<T>;
}
