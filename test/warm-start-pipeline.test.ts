// scripts/warm-start.ts as a pipeline (docs/world.md, "The card-literate warm start"): a tiny run of every stage
// from the seed (one world of transcripts, 21 SFT steps of 2 transcripts, mining from 3 questions, the controls on
// one training world), then what a user relies on: a rerun skips every recorded stage, a rerun with another option
// is refused naming it, --install writes the folder with the held-out record that test/world-demo-model.test.ts
// reproduces, and a control world that is an evaluation world is refused. It checks the control logic of the
// pipeline, not what the model learns (21 steps teach it nothing measurable).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../src/util/shared-data.js';
import { EVAL_WORLD_SEEDS } from '../src/world/world.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-warm-start-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const work = join(root, 'ws');
const small = [
  '--work', work, '--shape', '1.4m', '--worlds', '1', '--solver-per-world', '6', '--proposer-per-world', '2', '--first-turns-per-world', '1',
  '--drills-per-world', '1', '--bank-cards', '30', '--sft-steps', '21', '--batch-size', '2', '--save-every', '10',
  '--mine-worlds', '1', '--mine-questions', '3', '--control-worlds', '8', '--threads', '2',
];
const run = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join('scripts', 'warm-start.ts'), ...args], { cwd: repoRoot(), encoding: 'utf8' });

describe('scripts/warm-start.ts', () => {
  it('runs every stage, skips them on a rerun, refuses other options, installs with the held-out record', { timeout: 600_000 }, () => {
    const first = run(small);
    expect(first.status, first.stderr).toBe(0);
    const stages = JSON.parse(readFileSync(join(work, 'stages.json'), 'utf8')) as Array<{ stage: string; result: Record<string, unknown> }>;
    expect(stages.map((s) => s.stage)).toEqual(['grow', 'data', 'sft', 'ship', 'mine', 'controls']);
    // --sft-steps is the run's length, more than one pass over these few transcripts.
    const sft = stages.find((s) => s.stage === 'sft')?.result as { lastStep: number };
    expect(sft.lastStep).toBe(21);
    const table = readFileSync(join(work, 'controls', 'table.md'), 'utf8');
    expect(table).toMatch(/\| none \|/);
    expect(table).toMatch(/one-hop questions, a two-hop card/);

    const again = run([...small, '--install', '--out', join(root, 'installed')]);
    expect(again.status, again.stderr).toBe(0);
    for (const s of ['grow', 'data', 'sft', 'ship', 'mine', 'controls']) expect(again.stdout).toContain(`${s}: done before`);
    const record = JSON.parse(readFileSync(join(root, 'installed', 'warm-start.json'), 'utf8')) as {
      stages: unknown[];
      evalSettings: { maxTurns: number };
      heldOut: { demo: { skillsOff: { questions: number; accuracy: number } } };
    };
    expect(record.stages).toHaveLength(6);
    expect(record.heldOut.demo.skillsOff.questions).toBe(57);
    expect(record.evalSettings.maxTurns).toBeGreaterThan(0);
    for (const f of ['model.safetensors', 'tokenizer.json', 'priming-cards.jsonl', 'priming-cards.json']) expect(existsSync(join(root, 'installed', f)), f).toBe(true);

    const other = run(small.map((a) => (a === '21' ? '30' : a)));
    expect(other.status).not.toBe(0);
    expect(other.stderr).toMatch(/pipeline\.json: this folder was started with other options \(--sft-steps "21", now "30"\)/);
  });

  it('refuses an evaluation world for the controls before anything runs', () => {
    const r = run(['--work', join(root, 'bad'), '--shape', '1.4m', '--control-worlds', String(EVAL_WORLD_SEEDS[0])]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/--control-worlds/);
  });
});
