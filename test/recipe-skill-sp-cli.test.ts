// `sesa-train --recipe skill-sp` through the real command line: the train command hands it to the Skill
// Self-Play command with that recipe's own settings (a one-iteration run on a tiny random model writes its
// run folder, and --resume extends it), refuses flags that belong to the SESA/SSP trainer or to nothing, and
// shows the recipe's help.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { dispatchRecipe } from '../src/cli/recipe-dispatch.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let root: string;
let modelDir: string;

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, COLUMNS: '200' }, timeout: 240_000 });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ssp-cli-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 1, hidden: 32, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, vocab: 'full', seed: 3 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('--recipe skill-sp', () => {
  it('rewrites only the train command (named or implied) and leaves the other recipes to it', () => {
    expect(dispatchRecipe(['train', '--recipe', 'skill-sp', '--iterations', '2'])).toEqual(['skill-sp', '--iterations', '2']);
    expect(dispatchRecipe(['--iterations', '2', '--recipe=skill-sp'])).toEqual(['skill-sp', '--iterations', '2']);
    expect(dispatchRecipe(['skill-sp', '--recipe', 'skill-sp'])).toEqual(['skill-sp']);
    expect(dispatchRecipe(['--recipe', 'ssp', '--steps', '2'])).toEqual(['--recipe', 'ssp', '--steps', '2']);
    expect(dispatchRecipe(['sft', '--recipe', 'skill-sp'])).toEqual(['sft', '--recipe', 'skill-sp']);
  });

  it('runs Skill Self-Play from the train command with the recipe settings', () => {
    const out = join(root, 'run');
    const r = cli([
      'train', '--recipe', 'skill-sp', '--model', modelDir, '--backend', 'wasm', '--out', out, '--iterations', '1',
      '--prompts-per-iteration', '1', '--proposals-per-prompt', '2', '--solver-rollouts', '2', '--proposer-tokens', '8', '--solver-tokens', '8', '--lora-r', '2', '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop() as string) as { out: string; metrics: Array<{ iteration: number; proposals: number }> };
    expect(summary.out).toBe(out);
    expect(summary.metrics.map((m) => [m.iteration, m.proposals])).toEqual([[1, 2]]);
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect([config.iterations, config.proposalsPerPrompt, config.solverRollouts, config.loraR]).toEqual([1, 2, 2, 2]);
    expect('recipe' in config).toBe(false);
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
    for (const role of ['proposer', 'solver']) expect(existsSync(join(out, role, 'adapter_config.json'))).toBe(true);

    // --resume takes the recorded settings: a setting the table fixes for the run is refused with its reason,
    // and --iterations extends the run by one iteration.
    const refused = cli(['--recipe', 'skill-sp', '--resume', out, '--iterations', '2', '--lr', '0.1', '--config', 'x.yaml']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('--lr cannot change on --resume: a resumed run continues with the settings it recorded');
    expect(refused.stderr).toContain('--config cannot be given with --resume');
    const resumed = cli(['--recipe', 'skill-sp', '--resume', out, '--iterations', '2', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    const more = JSON.parse(resumed.stdout.trim().split('\n').pop() as string) as { resumedFrom: number; metrics: Array<{ iteration: number }> };
    expect([more.resumedFrom, more.metrics.map((m) => m.iteration)]).toEqual([1, [2]]);
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
  }, 400_000);

  it('refuses a flag of the SESA/SSP trainer and an unknown flag, naming each', () => {
    const r = cli(['--recipe', 'skill-sp', '--steps', '3', '--group-size', '2', '--nope', '1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--recipe skill-sp runs Skill Self-Play with its own settings');
    expect(r.stderr).toContain('--steps is a setting of the SESA/SSP trainer');
    expect(r.stderr).toContain('--group-size is a setting of the SESA/SSP trainer');
    expect(r.stderr).toContain('--nope is not a setting of any recipe');
  });

  it("a training config file that names the recipe is sent to the recipe's own command line", () => {
    const file = join(root, 'train.yaml');
    writeFileSync(file, 'recipe: skill-sp\niterations: 1\n');
    const r = cli(['--config', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}: recipe 'skill-sp' has its own settings, not the trainer's: drop the recipe key and run sesa-train --recipe skill-sp --config ${file}`);
  });

  it('--help shows the recipe settings, not the training settings', () => {
    const r = cli(['--recipe', 'skill-sp', '--help']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('--solver-rollouts');
    expect(r.stdout).toContain('--prune-min-attempts');
    expect(r.stdout).not.toContain('--group-size');
  });
});
