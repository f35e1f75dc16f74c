// Two writers at once, as real processes: a skill bank held open by one process refuses a second writer
// (`skills import`) with the holder's pid instead of losing one side's commit; two imports started together
// never both report success with one card set lost; a run folder being trained refuses a second --resume,
// and the lock of a SIGKILLed trainer is taken over (it is stale) with a warning.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBankFile } from '../../src/skills/bank-file.js';
import { CARD_A } from '../skills-helpers.js';
import { CLI, faultRoot, run, start, stepEnded, tinyModel, trainArgs } from './cli.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
let root: string;

beforeAll(() => {
  root = faultRoot('writers');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function cardsFile(name: string, ids: string[]): string {
  const file = join(root, `${name}.jsonl`);
  writeFileSync(file, ids.map((id) => JSON.stringify({ ...CARD_A, id, description: `${CARD_A.description} (${id})`, source: 'mined', stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 0 })).join('\n') + '\n');
  return file;
}

async function initBank(name: string): Promise<string> {
  const bank = join(root, `${name}.json`);
  const r = await run(root, [CLI, 'skills', 'init', '--bank', bank, '--no-seed-cards']);
  expect(r.code, r.stderr).toBe(0);
  return bank;
}

const ids = (bank: string): string[] => readBankFile(bank).cards.map((c) => c.id).sort();

describe('a skill bank with two writers', () => {
  it('a bank held open by another process refuses `skills import` with the holder pid; nothing is lost', async () => {
    const bank = await initBank('held');
    const holder = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/faults/bank-holder.ts'), bank], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    holder.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((res) => holder.on('exit', (code) => res(code)));
    await new Promise<void>((res, rej) => {
      holder.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (/open \d+\n/.test(out)) res();
      });
      holder.on('exit', () => rej(new Error(`holder exited: ${err}`)));
    });
    const pid = Number(/open (\d+)/.exec(out)?.[1]);

    const refused = await run(root, [CLI, 'skills', 'import', cardsFile('mine', ['import-card']), '--bank', bank]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`skill bank ${bank} is in use by process ${pid}`);

    holder.stdin.write('commit\n');
    expect(await exited).toBe(0);
    expect(ids(bank)).toEqual(['holder-card']);
    // Once the holder is gone, the import goes through and both cards are kept.
    const again = await run(root, [CLI, 'skills', 'import', cardsFile('mine', ['import-card']), '--bank', bank]);
    expect(again.code, again.stderr).toBe(0);
    expect(ids(bank)).toEqual(['holder-card', 'import-card']);
  }, 400_000);

  it('two imports started together never both succeed with one lost', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const bank = await initBank(`race-${attempt}`);
      const [a, b] = await Promise.all([
        run(root, [CLI, 'skills', 'import', cardsFile(`a${attempt}`, [`a-${attempt}`]), '--bank', bank]),
        run(root, [CLI, 'skills', 'import', cardsFile(`b${attempt}`, [`b-${attempt}`]), '--bank', bank]),
      ]);
      const want: string[] = [];
      for (const [r, id] of [[a, `a-${attempt}`], [b, `b-${attempt}`]] as const) {
        if (r.code === 0) want.push(id);
        else expect(r.stderr).toMatch(/is in use by process \d+/);
      }
      expect(want.length).toBeGreaterThan(0);
      expect(ids(bank)).toEqual(want.sort());
    }
  }, 400_000);
});

describe('a run folder with two trainers', () => {
  it('a second --resume is refused with the owner pid; after a SIGKILL the stale lock is taken over', async () => {
    const model = tinyModel(root);
    const out = join(root, 'run');
    // More steps than the test lets it run, so that it still holds the folder when the second one starts
    // (a 3-step run could end first on a fast backend) and when it is killed.
    const first = start(root, trainArgs(model, out, 400));
    await first.waitFor(stepEnded(1));
    const second = await run(root, [CLI, 'train', '--resume', out]);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain(`run folder ${out} is in use by process ${first.child.pid}`);

    first.child.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    const saved = readdirSync(join(out, 'checkpoints')).map((d) => /^step-(\d+)$/.exec(d)).filter((m) => m !== null).map((m) => Number(m[1]));
    const last = Math.max(...saved);
    expect(last).toBeGreaterThanOrEqual(1);
    // Resumed from its last checkpoint for one more step: the stale lock is taken over, and the metrics hold
    // one line per step (any line the killed process wrote past its checkpoint is dropped).
    const third = await run(root, [CLI, 'train', '--resume', out, '--steps', String(last + 1)]);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).toContain(`warning: run folder ${out}: took over the stale lock of process ${first.child.pid}`);
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(last + 1);
  }, 400_000);
});
