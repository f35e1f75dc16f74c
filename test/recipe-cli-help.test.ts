// Both recipe commands document every option of their settings tables in --help, and settings files
// (JSON or YAML) go through the same table checks as flags.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CTX2SKILL_SETTINGS } from '../src/recipes/ctx2skill/config.js';
import { SKILL_SP_SETTINGS } from '../src/recipes/skill-sp/config.js';
import { flagName, readSettingsFile, resolveSettings } from '../src/settings/table.js';
import { CTX2SKILL_ROLES } from '../src/recipes/ctx2skill/run.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function help(command: string): string {
  const r = spawnSync(process.execPath, ['bin/sesa-train.mjs', command, '--help'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, COLUMNS: '200' } });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('recipe commands', () => {
  it('ctx2skill --help lists every setting, the shared and per-role endpoint flags', () => {
    const text = help('ctx2skill');
    for (const key of Object.keys(CTX2SKILL_SETTINGS)) expect(text).toContain(`--${flagName(key)} `);
    for (const role of ['llm', ...CTX2SKILL_ROLES]) for (const f of ['url', 'model', 'key-env', 'timeout', 'retries']) expect(text).toContain(`--${role}-${f}`);
    for (const f of ['--context', '--out', '--resume', '--config', '--model', '--backend', '--json']) expect(text).toContain(f);
  });

  it('skill-sp --help lists every setting', () => {
    const text = help('skill-sp');
    for (const key of Object.keys(SKILL_SP_SETTINGS)) expect(text).toContain(`--${flagName(key)} `);
    for (const f of ['--resume', '--config', '--json']) expect(text).toContain(f);
  });

  it('a YAML settings file is checked like flags; flags override it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'recipe-cfg-'));
    writeFileSync(join(dir, 's.yaml'), 'iterations: 2\ntasks: 3\nprobe-max: 4\n');
    const c = resolveSettings(CTX2SKILL_SETTINGS, [{ file: 's.yaml', raw: readSettingsFile(join(dir, 's.yaml')) }, { flags: { tasks: 7 } }]);
    expect([c.iterations, c.tasks, c.probeMax, c.parseRetries]).toEqual([2, 7, 4, 2]);
    writeFileSync(join(dir, 'bad.yaml'), 'iterations: two\nrubricsMax: 0\nnope: 1\n');
    const bad = () => resolveSettings(CTX2SKILL_SETTINGS, [{ file: 'bad.yaml', raw: readSettingsFile(join(dir, 'bad.yaml')) }]);
    expect(bad).toThrow(/bad.yaml: setting 'iterations' must be a number, got "two"/);
    expect(bad).toThrow(/bad.yaml: unknown setting 'nope'/);
    expect(bad).toThrow(/--rubrics-max must be a positive integer, got 0/);
    writeFileSync(join(dir, 'list.json'), '[1, 2]');
    expect(() => resolveSettings(CTX2SKILL_SETTINGS, [{ file: 'list.json', raw: readSettingsFile(join(dir, 'list.json')) }])).toThrow(/list.json: a settings file must hold an object/);
    writeFileSync(join(dir, 'broken.json'), '{');
    expect(() => readSettingsFile(join(dir, 'broken.json'))).toThrow(/broken.json: not valid JSON/);
  });
});
