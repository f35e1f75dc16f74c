// Both recipe commands run as a newcomer runs them, without --json: they take --threads as every command does
// (skill-sp refused it, ctx2skill had no such option), and say which thread count the backend runs; each
// iteration's line is printed once (it was printed as the iteration ended and again in the summary).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let root: string;

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, SESA_HOME: join(root, 'home'), COLUMNS: '200' }, timeout: 300_000 });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'recipe-runs-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SKILL_SP = ['--recipe', 'skill-sp', '--model', 'tiny', '--backend', 'wasm', '--prompts-per-iteration', '1', '--proposals-per-prompt', '2', '--solver-rollouts', '2', '--proposer-tokens', '8', '--solver-tokens', '8', '--lora-r', '2'];
const CTX2SKILL = ['ctx2skill', '--context', 'docs/report.md', '--model', 'tiny', '--backend', 'wasm', '--iterations', '1', '--tasks', '1', '--challenger-tokens', '16', '--reasoner-tokens', '16', '--judge-tokens', '16', '--proposer-tokens', '16', '--generator-tokens', '16'];

describe('skill-sp, run as a newcomer runs it', () => {
  it('takes --threads, says the backend runs on that many, and prints each iteration line once', () => {
    const out = join(root, 'skill-sp');
    const r = cli([...SKILL_SP, '--threads', '1', '--iterations', '1', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/backend: wasm \(.*; 1 thread\)/);
    // Each iteration's line once: as it ends (stderr), not again in the summary (stdout).
    expect(`${r.stderr}\n${r.stdout}`.match(/^iteration 1: /gm), r.stdout).toHaveLength(1);
    expect(r.stdout).toContain(`run folder: ${out}`);
  }, 300_000);
});

describe('ctx2skill, run as a newcomer runs it', () => {
  it('takes --threads for its in-process model, says the backend runs on that many, and prints each iteration line once', () => {
    const out = join(root, 'ctx2skill');
    const r = cli([...CTX2SKILL, '--threads', '1', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/backend: wasm \(.*; 1 thread\)/);
    // The iteration's line and the replay's once each: as they end, not again in the summary.
    const all = `${r.stderr}\n${r.stdout}`;
    expect(all.match(/^iteration 1: solved/gm), all).toHaveLength(1);
    expect(all.match(/^replay: /gm), all).toHaveLength(1);
    expect(r.stdout).toContain(`skills: ${out}/skills.md`);
    // The random model wrote no usable task, so there was nothing to replay and no skill: skills.md says so
    // instead of scoring the empty set "ρ_hard 1.000 · ρ_easy 1.000 = 1.000".
    const md = readFileSync(join(out, 'skills.md'), 'utf8');
    expect(md).not.toContain('ρ_hard 1.000');
    expect(md).toContain('the Reasoner skill set of iteration 1 of 1, which is empty; no replay probes (no task was judged solved or failed), so every candidate scores 1 by Laplace smoothing');
    expect(md).toContain('(The selected skill set is empty.)');
  }, 300_000);
});
