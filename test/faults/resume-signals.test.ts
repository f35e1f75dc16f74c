// A run stopped and resumed, through the CLI on a tiny random model: a run of 2 steps and a run of 1 step
// resumed to 2 write byte-identical checkpoints (the bank file is serialized canonically, whatever order its
// cards' keys had in memory after a reload); SIGTERM stops a run as Ctrl-C does (the step is finished and
// checkpointed), SIGHUP ends it with the signal; both release its locks (the run folder's .lock and the bank's
// skills.json.lock).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, faultRoot, run, start, stepEnded, tinyModel, trainArgs } from './cli.js';

let root: string;
let model: string;

beforeAll(() => {
  root = faultRoot('resume-signals');
  model = tinyModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The files of a checkpoint that must match byte for byte (state.json and the manifest hold a time). */
const SAME = ['skills.json', 'proposer/adapter_model.safetensors', 'solver/adapter_model.safetensors', 'proposer/adapter_config.json', 'solver/adapter_config.json'];

describe('resume', () => {
  it('a run resumed after step 1 writes checkpoint step 2 byte for byte as the uninterrupted run', async () => {
    const whole = join(root, 'whole');
    const a = await run(root, [...trainArgs(model, whole, 2), '--threads', '1']);
    expect(a.code, a.stderr).toBe(0);
    const parted = join(root, 'parted');
    const b1 = await run(root, [...trainArgs(model, parted, 1), '--threads', '1']);
    expect(b1.code, b1.stderr).toBe(0);
    const b2 = await run(root, [CLI, 'train', '--resume', parted, '--steps', '2', '--threads', '1']);
    expect(b2.code, b2.stderr).toBe(0);
    for (const f of SAME) {
      const x = readFileSync(join(whole, 'checkpoints', 'step-2', f));
      const y = readFileSync(join(parted, 'checkpoints', 'step-2', f));
      expect(x.equals(y), f).toBe(true);
    }
    expect(readFileSync(join(whole, 'skills.json')).equals(readFileSync(join(parted, 'skills.json')))).toBe(true);
  }, 400_000);
});

describe('a run stopped by SIGTERM (what Slurm and Kubernetes send)', () => {
  it('finishes the step, writes a checkpoint, names the resume command and releases its locks', async () => {
    const out = join(root, 'by-SIGTERM');
    const args = trainArgs(model, out, 60);
    args[args.indexOf('--save-every') + 1] = '50';
    const p = start(root, [...args, '--threads', '1']);
    await p.waitFor(stepEnded(1));
    p.child.kill('SIGTERM');
    const r = await p.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('SIGTERM: stopping after this step (a checkpoint is written); send SIGTERM again to quit now');
    const m = /stopped at step (\d+) on request; resume with --resume /.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    expect(existsSync(join(out, 'checkpoints', `step-${(m as RegExpExecArray)[1]}`, 'manifest.json'))).toBe(true);
    expect(existsSync(join(out, '.lock'))).toBe(false);
    expect(existsSync(join(out, 'skills.json.lock'))).toBe(false);
  }, 300_000);
});

describe('a run ended by a signal', () => {
  for (const signal of ['SIGHUP'] as const) {
    it(`${signal}: the process ends with the signal and its locks are released`, async () => {
      const out = join(root, `by-${signal}`);
      const p = start(root, [...trainArgs(model, out, 60), '--threads', '1']);
      await p.waitFor(stepEnded(1));
      expect(existsSync(join(out, '.lock'))).toBe(true);
      expect(existsSync(join(out, 'skills.json.lock'))).toBe(true);
      p.child.kill(signal);
      const r = await p.done;
      expect(r.signal, r.stderr).toBe(signal);
      expect(existsSync(join(out, '.lock'))).toBe(false);
      expect(existsSync(join(out, 'skills.json.lock'))).toBe(false);
    }, 300_000);
  }
});
