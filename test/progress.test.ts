// Progress lines (src/cli/progress.ts): a line per training step, per eval batch and per phase of a step that
// took longer than a few seconds, also when stderr is not a terminal, each with an ETA that says what it rests
// on. The default run used to print nothing between "training runs/world" and the first eval line when its
// output went to a file. The line logic is checked on a scripted clock; the command lines of a short --model
// tiny run and eval are checked for the lines themselves (never their times).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etaText, formatSeconds } from '../src/cli/progress.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'progress-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('progress text (scripted clock)', () => {
  it('formats durations and says what an ETA rests on', () => {
    expect([formatSeconds(0.44), formatSeconds(45.4), formatSeconds(190), formatSeconds(3 * 3600 + 5 * 60)]).toEqual(['0.4 s', '45 s', '3 min 10 s', '3 h 05 min']);
    expect(etaText(40, 16, 41, 'question')).toBe('about 1 min 43 s to go at 2.5 s a question (16 done in 40 s)');
    expect(etaText(40, 16, 0, 'question')).toBe('16 questions in 40 s');
    expect(etaText(0, 0, 57, 'question')).toBe('57 questions to go');
  });

});

describe('progress lines without a terminal', () => {
  function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
    // spawnSync with pipes: stderr is not a TTY, as in CI logs and under nohup.
    return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, SESA_HOME: join(root, 'home') }, timeout: 400_000 });
  }

  it('eval prints a line per batch with the time left at the pace so far, and what the setup took', () => {
    const r = cli(['eval', '--model', 'tiny', '--data', 'demo', '--limit', '9', '--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--backend', 'wasm', '--threads', '1', '--out', join(root, 'eval')]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^eval: 9 questions from demo; skills off; 9 to go \(the model, search and bank took .+ to set up\)$/m);
    expect(r.stderr).toMatch(/^eval: 8\/9 \(EM so far [\d.]+\); about .+ to go at .+ a question \(8 done in .+\)$/m);
    expect(r.stderr).toMatch(/^eval: 9\/9 \(EM so far [\d.]+\); 9 questions in .+$/m);
  }, 400_000);
});
