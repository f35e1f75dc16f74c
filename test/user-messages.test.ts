// What a newcomer is told (issue 48, finding 10): `skills search` shows the prompt block within the run's card
// budget; `skills import` names --replace and takes hand-written cards (no stats, createdStep, bankVersion);
// doctor suggests a download only for a registry name, shows small sizes in MiB rather than "0.0 GiB", and
// asks for the disk the run's checkpoints take, not a flat GiB; training refuses to start where its first
// checkpoint cannot fit and warns where not all of them can. (--threads: test/settings-messages.test.ts; the
// demo model on real questions: test/context-length.test.ts.)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs from 'yargs';
import { describe, expect, it, vi } from 'vitest';
import { checkpointBytes, checkpointSteps, diskVerdict, RUN_FILES_BYTES, totalBytes } from '../src/checkpoint/disk-need.js';
import { command, promptBudget } from '../src/cli/skills.js';
import { checkModelFolder } from '../src/doctor/model.js';
import { loadModelConfig } from '../src/model/config.js';
import { gib, memoryNeedOfConfig, memoryNeedStatement } from '../src/model/memory-need.js';
import { PROJECTIONS } from '../src/model/qwen3.js';
import { readBankFile } from '../src/skills/bank-file.js';
import { diskNeedOf } from '../src/selfplay/run-setup.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { demoModelPath } from '../src/checkpoint/model-name.js';
import { tempDir } from './skills-helpers.js';

async function cli(...argv: string[]): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  try {
    await yargs(argv)
      .command(command)
      .strict()
      .fail((msg, err) => {
        throw err ?? new Error(msg);
      })
      .parseAsync();
  } finally {
    spy.mockRestore();
  }
  return out;
}

const QUESTION = 'Which river flows through the capital city where the author of the novel was born?';

describe('skills search', () => {
  it("renders the prompt block within the run's card budget when the bank is a run's, else the default, and says which", async () => {
    const run = tempDir('msg-run');
    writeFileSync(join(run, 'config.json'), JSON.stringify({ renderTokenBudget: 120 }));
    const bank = join(run, 'skills.json');
    await cli('skills', 'init', '--bank', bank);
    const inRun = JSON.parse(await cli('skills', 'search', QUESTION, '--bank', bank, '--json')) as { promptTokens: number; renderTokenBudget: number };
    expect(inRun.renderTokenBudget).toBe(120);
    expect(inRun.promptTokens).toBeLessThanOrEqual(120);
    expect(await cli('skills', 'search', QUESTION, '--bank', bank)).toContain(`card budget 120 tokens, the run's, ${join(run, 'config.json')}`);
    // A checkpoint's bank reads the run's config two folders up.
    expect(promptBudget({ bank: join(run, 'checkpoints', 'step-4', 'skills.json') })).toEqual({ tokens: 120, from: `the run's, ${join(run, 'config.json')}` });
    expect(promptBudget({ bank: join(tempDir('msg-loose'), 'bank.json') }).tokens).toBe(TRAIN_DEFAULTS.renderTokenBudget);
    expect(promptBudget({ bank, renderTokenBudget: 50 })).toEqual({ tokens: 50, from: '--render-token-budget' });
    const wide = JSON.parse(await cli('skills', 'search', QUESTION, '--bank', bank, '--render-token-budget', '600', '--json')) as { promptTokens: number };
    expect(wide.promptTokens).toBeGreaterThan(inRun.promptTokens);
  });
});

describe('skills import', () => {
  it('names --replace for a card already in the bank, and takes hand-written cards with zero stats', async () => {
    const dir = tempDir('msg-import');
    const bank = join(dir, 'bank.json');
    await cli('skills', 'init', '--bank', bank, '--no-seed-cards');
    const handWritten = { id: 'my-card-1', category: 'search', source: 'mined', description: 'Search the full name of a person before their birthplace.', triggers: ['a question about a person'], avoid: [], queries: ['[name] born'] };
    const file = join(dir, 'cards.jsonl');
    writeFileSync(file, `${JSON.stringify(handWritten)}\n`);
    const out = await cli('skills', 'import', file, '--bank', bank);
    expect(out).toContain('1 hand-written card (no stats, createdStep, bankVersion) entered with zero stats at step 0, bank version 1');
    const card = readBankFile(bank).cards.find((c) => c.id === 'my-card-1');
    expect(card).toMatchObject({ stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 1 });
    await expect(cli('skills', 'import', file, '--bank', bank)).rejects.toThrow(`${file}: card my-card-1 already in ${bank}: give --replace to overwrite it, or change the id`);
    // A card that gives some of the bank's fields but not all is still refused, naming what is missing.
    writeFileSync(file, `${JSON.stringify({ ...handWritten, id: 'my-card-2', createdStep: 3 })}\n`);
    await expect(cli('skills', 'import', file, '--bank', bank)).rejects.toThrow(/cards\.jsonl:1 \(card my-card-2\): stats must be an object/);
  });
});

describe('doctor', () => {
  it('suggests a download only for a registry name; a folder that is not there is a path to check', async () => {
    const missing = await checkModelFolder('/nonexistent');
    expect(missing.results[0]?.fix).toMatch(/^check the path: --model takes a Hugging Face model folder/);
    expect(missing.results[0]?.fix).not.toContain('download');
    const registry = await checkModelFolder('qwen3-0.6b');
    if (registry.results[0]?.status === 'fail') expect(registry.results[0]?.fix).toContain('sesa-train download qwen3-0.6b');
  });

  it('shows the demo model’s sizes in MiB, never 0.0 GiB', () => {
    const statement = memoryNeedStatement(memoryNeedOfConfig(loadModelConfig(demoModelPath())));
    expect(statement).not.toContain('0.0 GiB');
    expect(statement).toMatch(/\d+\.\d MiB of f32 weights/);
    expect(gib(5 * 2 ** 20)).toBe('5.0 MiB');
    expect(gib(15 * 2 ** 30)).toBe('15.0 GiB');
  });
});

describe('the disk a run needs', () => {
  const demo = loadModelConfig(demoModelPath());
  const run = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS };

  it('is its checkpoints (every --save-every steps and the last) and its other files', () => {
    expect(checkpointSteps(1, 8, 4)).toEqual([4, 8]);
    expect(checkpointSteps(5, 9, 4)).toEqual([8, 9]);
    const need = diskNeedOf(run, demo, 1);
    expect(need).toEqual({ oneCheckpoint: checkpointBytes(demo, run.loraR, run.loraTargets), checkpoints: 2, once: 0 });
    // The demo model's checkpoint is a few MiB (2 adapters × weights and two Adam moments in f32).
    expect(need.oneCheckpoint).toBeGreaterThan(2 ** 20);
    expect(need.oneCheckpoint).toBeLessThan(10 * 2 ** 20);
    expect(checkpointBytes(demo, 16, PROJECTIONS)).toBe(need.oneCheckpoint);
    expect(diskNeedOf({ ...run, rolloutEngine: 'llama.cpp' }, demo, 1).once).toBeGreaterThan(0);
  });

  it('refuses where the first checkpoint cannot fit, warns where only some can', () => {
    const need = { oneCheckpoint: 10 * 2 ** 20, checkpoints: 5, once: 0 };
    expect(diskVerdict(totalBytes(need), need)).toBeUndefined();
    expect(diskVerdict(RUN_FILES_BYTES + 5 * 2 ** 20, need)).toEqual({ kind: 'refuse', fitting: 0 });
    expect(diskVerdict(RUN_FILES_BYTES + 25 * 2 ** 20, need)).toEqual({ kind: 'warn', fitting: 2 });
  });
});
