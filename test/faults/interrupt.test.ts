// Ctrl-C during a run, through the CLI on a tiny random model with a real SIGINT: the run yields to the event
// loop at every rollout turn, micro-batch and step phase, so the handler runs while the model works. The first
// Ctrl-C stops at the next step boundary after a checkpoint (the run can be resumed from it); a second one
// quits at once (exit 130). Either way the run folder's lock is released.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faultRoot, start, stepEnded, tinyModel, trainArgs } from './cli.js';

let root: string;
let model: string;

beforeAll(() => {
  root = faultRoot('interrupt');
  model = tinyModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A long run (60 steps of several seconds each) with no checkpoint before step 50 unless one is asked for. */
function longRun(out: string): string[] {
  const args = trainArgs(model, out, 60);
  const set = (flag: string, value: string): void => {
    args[args.indexOf(flag) + 1] = value;
  };
  set('--save-every', '50');
  set('--seeds-per-step', '3');
  set('--proposals-per-seed', '3');
  set('--group-size', '3');
  set('--max-turns', '3');
  set('--max-new-tokens', '40');
  set('--max-response-tokens', '200');
  return [...args, '--threads', '1'];
}

/** The run's end, or a failure (and SIGKILL) when it has not ended `seconds` after the signal. */
async function endWithin(p: ReturnType<typeof start>, seconds: number): Promise<Awaited<ReturnType<typeof start>['done']>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, rej) => {
    timer = setTimeout(() => {
      p.child.kill('SIGKILL');
      rej(new Error(`the run did not stop within ${seconds} s of Ctrl-C`));
    }, seconds * 1000);
  });
  try {
    return await Promise.race([p.done, late]);
  } finally {
    clearTimeout(timer);
  }
}

const checkpoints = (out: string): string[] => (existsSync(join(out, 'checkpoints')) ? readdirSync(join(out, 'checkpoints')).filter((n) => n.startsWith('step-')) : []);

describe('Ctrl-C during training', () => {
  it('the first Ctrl-C stops at the next step boundary after a checkpoint', async () => {
    const out = join(root, 'once');
    const p = start(root, longRun(out));
    await p.waitFor(stepEnded(1));
    p.child.kill('SIGINT');
    const r = await endWithin(p, 120);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('stopping after this step (a checkpoint is written); press Ctrl-C again to quit now');
    const m = /stopped at step (\d+) on request; resume with --resume /.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    const stoppedAt = Number((m as RegExpExecArray)[1]);
    // The step running when the signal came (step 2, or step 3 if step 2 had just ended) is finished, then it stops.
    expect(stoppedAt).toBeGreaterThanOrEqual(2);
    expect(stoppedAt).toBeLessThanOrEqual(3);
    expect(checkpoints(out)).toEqual([`step-${stoppedAt}`]);
    expect(r.stdout).toContain('(stopped early)');
    expect(existsSync(join(out, '.lock'))).toBe(false);
  }, 300_000);

  it('a second Ctrl-C quits at once, without finishing the step', async () => {
    const out = join(root, 'twice');
    const p = start(root, longRun(out));
    await p.waitFor(stepEnded(1));
    p.child.kill('SIGINT');
    await Promise.race([p.waitFor(/press Ctrl-C again to quit now/), endWithin(p, 120)]);
    p.child.kill('SIGINT');
    const r = await endWithin(p, 60);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).not.toMatch(/stopped at step/);
    // It says what a resume starts from: here no checkpoint yet (the first is at step 50).
    expect(r.stderr).toContain(`Ctrl-C again: quitting now; ${out} has no complete checkpoint yet: a resume starts it over (sesa-train --resume ${out})`);
    expect(checkpoints(out)).toEqual([]);
    expect(existsSync(join(out, '.lock'))).toBe(false);
  }, 300_000);
});
