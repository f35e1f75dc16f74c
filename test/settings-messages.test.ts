// What a mistyped setting or flag is told (issue 48, finding 9 and the --threads message of finding 10): a
// settings file that gives one setting in two spellings is refused; a mistyped key or flag gets the nearest
// known name instead of the whole list; an unknown flag is named once; a number flag given a word says the
// word, not NaN; a thread count over the wasm backend's pool says the maximum. And --print-config prints the
// resolved settings without writing anything.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notNumberFlags, threadsProblem, typedValue, unknownArgumentsText } from '../src/cli/common.js';
import { WASM_MAX_THREADS } from '../src/tensor/wasm-threads.js';
import { initBackend } from '../src/tensor/backend.js';
import { nearestSetting } from '../src/settings/suggest.js';
import { printedConfig, resumedConfig } from '../src/cli/print-config.js';
import { RunFolder } from '../src/selfplay/run-folder.js';
import { parseConfigObject, SETTING_KEYS, TRAIN_DEFAULTS } from '../src/settings/train.js';
import { SFT_SETTINGS } from '../src/sft/config.js';
import { settingsFromObject } from '../src/settings/table.js';
import type { AnySetting } from '../src/settings/setting.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-settings-messages-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((res) => child.on('exit', (code) => res({ code, stdout, stderr })));
}

describe('the nearest setting', () => {
  it('finds another spelling, another trainer’s name and a slip, and nothing for a name far from all', () => {
    expect(nearestSetting('group_size', SETTING_KEYS)).toBe('groupSize');
    expect(nearestSetting('learning_rate', SETTING_KEYS)).toBe('lr');
    expect(nearestSetting('stepz', SETTING_KEYS)).toBe('steps');
    expect(nearestSetting('num_generations', SETTING_KEYS)).toBe('groupSize');
    expect(nearestSetting('num_train_epochs', Object.keys(SFT_SETTINGS))).toBe('epochs');
    expect(nearestSetting('constructor', SETTING_KEYS)).toBeUndefined();
    expect(nearestSetting('k'.repeat(100_000), SETTING_KEYS)).toBeUndefined();
  });

  it('a settings file with a mistyped key is told the nearest one, not the list of all', () => {
    for (const [key, near] of [
      ['group_size', 'group-size'],
      ['learning_rate', 'lr'],
      ['stepz', 'steps'],
    ] as const) {
      let message = '';
      try {
        parseConfigObject({ [key]: 2 }, 'c.yaml');
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toBe(`c.yaml: unknown setting '${key}' (did you mean '${near}'?)`);
    }
  });

  it('a settings file that gives one setting in both spellings is refused, naming both', () => {
    const table = { ...(SFT_SETTINGS as unknown as Record<string, AnySetting>) };
    const { problems } = settingsFromObject(table, { 'batch-size': 4, batchSize: 8 }, 'sft.yaml');
    expect(problems).toEqual(["sft.yaml: 'batch-size' and 'batchSize' are the same setting (--batch-size) given twice; keep one"]);
    expect(() => parseConfigObject({ 'seeds-per-step': 2, seedsPerStep: 3 }, 'c.json')).toThrow("c.json: 'seeds-per-step' and 'seedsPerStep' are the same setting (--seeds-per-step) given twice; keep one");
  });
});

describe('flags on the command line', () => {
  it('an unknown flag is named once, with the nearest declared option', () => {
    expect(unknownArgumentsText('Unknown arguments: stepz, dry-run, dryRun', ['steps', 'seeds-per-step', 'seedsPerStep', 'help'])).toBe('unknown options --stepz (did you mean --steps?), --dry-run');
    expect(unknownArgumentsText('Unknown argument: group_size', ['group-size', 'groupSize'])).toBe('unknown option --group_size (did you mean --group-size?)');
    expect(unknownArgumentsText('Not enough arguments', ['steps'])).toBeUndefined();
  });

  it('a number flag given a word says the word', () => {
    const argv = ['train', '--steps', 'abc', '--lr=fast', '--seeds-per-step', '3'];
    expect(typedValue(argv, 'lr')).toBe('fast');
    expect(notNumberFlags(argv, ['steps', 'lr', 'seeds-per-step', 'seedsPerStep'], { steps: Number.NaN, lr: Number.NaN, seedsPerStep: 3, 'seeds-per-step': 3 })).toEqual([
      "--steps must be a number, got 'abc'",
      "--lr must be a number, got 'fast'",
    ]);
  });

  it('a thread count over the wasm pool says the maximum; other backends are left to their own checks', async () => {
    const said = `--threads 64: the wasm backend runs at most ${WASM_MAX_THREADS} compute threads (the thread pool its threaded build is compiled with); give --threads ${WASM_MAX_THREADS} or fewer, or use --backend native (its matMuls take any count)`;
    expect(threadsProblem(64, 'wasm')).toBe(said);
    expect(threadsProblem(WASM_MAX_THREADS, 'wasm')).toBeUndefined();
    expect(threadsProblem(64, 'tensorflow')).toBeUndefined();
    // auto and native: native's matMuls take any count; wasm started with more is refused as it starts.
    expect(threadsProblem(64, 'native')).toBeUndefined();
    await expect(initBackend('wasm', { threads: 64 })).rejects.toThrow(said);
  });

  it('through the CLI: --steps abc, a flag typed wrong, --threads 64', async () => {
    const nan = await cli(['train', '--steps', 'abc']);
    expect(nan.code).toBe(1);
    expect(nan.stderr).toContain("error: --steps must be a number, got 'abc'");
    expect(nan.stderr).not.toContain('NaN');
    const unknown = await cli(['train', '--stepz', '3', '--dry-run']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('error: unknown options --stepz (did you mean --steps?), --dry-run');
    expect(unknown.stderr).not.toContain('dryRun');
    const threads = await cli(['generate', '--model', 'tiny', '--prompt-ids', '1,2', '--backend', 'wasm', '--threads', '64']);
    expect(threads.code).toBe(1);
    expect(threads.stderr).toContain(`at most ${WASM_MAX_THREADS} compute threads`);
  }, 120_000);
});

describe('--print-config', () => {
  it('prints the resolved settings as config.json would hold them, and writes nothing', async () => {
    const out = join(root, 'never-made');
    const file = join(root, 'c.yaml');
    writeFileSync(file, 'group-size: 3\n');
    const r = await cli(['train', '--print-config', '--config', file, '--steps', '5', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const printed = JSON.parse(r.stdout) as Record<string, unknown>;
    // Defaults ← the demo world's ← the file ← the flags.
    expect(printed).toEqual({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, groupSize: 3, steps: 5, out });
    expect(existsSync(out)).toBe(false);
    // The printed settings are a valid --config file.
    expect(parseConfigObject(printed, 'printed.json')).toEqual(printed);
    // With --resume: the run's config.json with the changes the flags may make; a fixed setting is refused.
    const run = join(root, 'a-run');
    RunFolder.create(run, { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, out: run }).release();
    expect(resumedConfig(run, { steps: 12 })).toEqual({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, out: run, steps: 12 });
    expect(() => resumedConfig(run, { loraR: 4 })).toThrow(`--resume ${run}: --lora-r cannot change on --resume`);
    expect(JSON.parse(printedConfig(resumedConfig(run, { steps: 12 }))).steps).toBe(12);
    const bad = await cli(['train', '--print-config', '--group-size', '1']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--group-size must be ≥ 2 for the frontier reward');
  }, 120_000);
});
