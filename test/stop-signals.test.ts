// Stopping by a signal (issue 48, finding 5): SIGTERM, which Slurm and Kubernetes send, asks for a stop as
// Ctrl-C does; the same signal again quits at once with the shell's code for it, and a forced quit of a
// training run names the checkpoint a resume starts from. The CLI runs are in test/faults/interrupt.test.ts
// (Ctrl-C) and test/faults/resume-signals.test.ts (SIGTERM); here the handler and the note, in-process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { listenForStop } from '../src/cli/stop-signals.js';
import { quitNote } from '../src/cli/train.js';
import { RunFolder } from '../src/selfplay/run-folder.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-stop-signals-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('listenForStop', () => {
  for (const [signal, code, again] of [
    ['SIGTERM', 143, 'send SIGTERM again to quit now'],
    ['SIGINT', 130, 'press Ctrl-C again to quit now'],
  ] as const) {
    it(`${signal}: the first asks for a stop, the second quits with ${code} and says what is kept`, () => {
      const written: string[] = [];
      const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
      const stop = listenForStop('stopping after this step (a checkpoint is written)', () => 'the note', (t) => written.push(t));
      try {
        expect(stop.requested()).toBe(false);
        process.emit(signal, signal);
        expect(stop.requested()).toBe(true);
        expect(written.join('')).toContain(`stopping after this step (a checkpoint is written); ${again}`);
        expect(exit).not.toHaveBeenCalled();
        process.emit(signal, signal);
        expect(exit).toHaveBeenCalledWith(code);
        expect(written.join('')).toContain('again: quitting now; the note');
      } finally {
        stop.dispose();
        exit.mockRestore();
      }
    });
  }
});

describe('listenForStop in a process the bin started again (a signal delivered twice)', () => {
  it('a repeat of the first signal within the window is ignored; after it, or another signal, quits', () => {
    let t = 0;
    const written: string[] = [];
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const stop = listenForStop('stopping', () => 'the note', (x) => written.push(x), { duplicateWindowMs: 1000, now: () => t });
    try {
      process.emit('SIGTERM', 'SIGTERM');
      t = 999;
      process.emit('SIGTERM', 'SIGTERM');
      expect(stop.requested()).toBe(true);
      expect(exit).not.toHaveBeenCalled();
      expect(written.join('')).not.toContain('again: quitting now');
      process.emit('SIGINT', 'SIGINT');
      expect(exit).toHaveBeenCalledWith(130);
      exit.mockClear();
      t = 1000;
      process.emit('SIGTERM', 'SIGTERM');
      expect(exit).toHaveBeenCalledWith(143);
    } finally {
      stop.dispose();
      exit.mockRestore();
    }
  });
});

describe("a forced quit's note", () => {
  it('names the newest complete checkpoint and the resume command, or says there is none', async () => {
    const dir = join(root, 'run');
    const run = RunFolder.create(dir, { ...TRAIN_DEFAULTS, out: dir });
    try {
      expect(quitNote(dir)).toBe(`${dir} has no complete checkpoint yet: a resume starts it over (sesa-train --resume ${dir})`);
      await run.writeCheckpoint(3, { step: 3, seed: 0, savedAt: 'now' }, async (d) => writeFileSync(join(d, 'payload'), 'x'));
      expect(quitNote(dir)).toBe(`the last complete checkpoint is ${join(dir, 'checkpoints', 'step-3')} (step 3): continue with sesa-train --resume ${dir}`);
    } finally {
      run.release();
    }
  });
});
