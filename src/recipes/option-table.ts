// A recipe's settings as one declarative table: each row is a key with its type, default, help line and
// check. The same table gives the yargs options, resolves defaults ← file ← flags, validates (every problem
// named by its flag) and checks the keys of a settings file. See docs/recipes.md.
import { existsSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';

export type OptionType = 'integer' | 'number' | 'string' | 'boolean';

export interface OptionRow<K extends string = string> {
  key: K;
  type: OptionType;
  default: number | string | boolean;
  help: string;
  /** A problem with the value (already of the right type), or undefined when it is fine. */
  check?: (value: never) => string | undefined;
}

export type OptionTable<K extends string = string> = ReadonlyArray<OptionRow<K>>;

/** camelCase key → kebab-case flag (without the dashes). */
export function flagOf(key: string): string {
  return key.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
}

/** yargs option definitions for every row (the default is shown in the help, not filled in by yargs). */
export function yargsOptionsOf(table: OptionTable): Record<string, { type: 'number' | 'string' | 'boolean'; describe: string }> {
  const out: Record<string, { type: 'number' | 'string' | 'boolean'; describe: string }> = {};
  for (const row of table) {
    out[flagOf(row.key)] = { type: row.type === 'integer' ? 'number' : row.type, describe: `${row.help} (default ${JSON.stringify(row.default)})` };
  }
  return out;
}

function typeProblem(row: OptionRow, value: unknown, where: string): string | undefined {
  const flag = `${where}${flagOf(row.key)}`;
  switch (row.type) {
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value) ? undefined : `${flag} must be an integer, got ${JSON.stringify(value)}`;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : `${flag} must be a finite number, got ${JSON.stringify(value)}`;
    case 'string':
      return typeof value === 'string' ? undefined : `${flag} must be a string, got ${JSON.stringify(value)}`;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `${flag} must be true or false, got ${JSON.stringify(value)}`;
  }
}

/**
 * Defaults ← `layers` in order (a settings file, then the flags given). Unknown keys in a layer and values
 * of the wrong type or failing their check are errors; `source` names where the values came from.
 */
export function resolveOptions<T extends Record<string, unknown>>(
  table: OptionTable<Extract<keyof T, string>>,
  layers: ReadonlyArray<{ source: string; values: Record<string, unknown> }>,
): T {
  const byKey = new Map(table.map((r) => [r.key as string, r]));
  const out: Record<string, unknown> = Object.fromEntries(table.map((r) => [r.key, r.default]));
  const problems: string[] = [];
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer.values)) {
      if (value === undefined) continue;
      const row = byKey.get(key);
      if (!row) {
        problems.push(`${layer.source}: unknown setting '${key}'`);
        continue;
      }
      const bad = typeProblem(row, value, layer.source === 'flags' ? '--' : `${layer.source}: `);
      if (bad) problems.push(bad);
      else out[key] = value;
    }
  }
  for (const row of table) {
    const bad = row.check?.(out[row.key] as never);
    if (bad) problems.push(`--${flagOf(row.key)} ${bad}`);
  }
  if (problems.length > 0) throw new Error(`invalid settings:\n  - ${problems.join('\n  - ')}`);
  return out as T;
}

/** Common checks, phrased to follow the flag name. */
export const atLeast = (min: number) => (v: number): string | undefined => (v >= min ? undefined : `must be ≥ ${min}, got ${v}`);
export const inRange = (lo: number, hi: number) => (v: number): string | undefined => (v >= lo && v <= hi ? undefined : `must be in [${lo}, ${hi}], got ${v}`);
export const nonEmpty = (v: string): string | undefined => (v.trim().length > 0 ? undefined : 'must not be empty');

/** A settings file (JSON, or YAML by its extension) holding one object of camelCase keys. */
export function readSettingsFile(file: string): Record<string, unknown> {
  if (!existsSync(file)) throw new Error(`--config ${file}: file not found`);
  const yaml = ['.yaml', '.yml'].includes(extname(file).toLowerCase());
  let raw: unknown;
  try {
    raw = yaml ? parseYaml(readFileSync(file, 'utf8')) : JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid ${yaml ? 'YAML' : 'JSON'} (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${file}: a settings file must hold an object`);
  return raw as Record<string, unknown>;
}
