// Stopping a long command by a signal (docs/usage.md, "Stopping a run"): Ctrl-C (SIGINT) and SIGTERM, which
// Slurm, Kubernetes and `kill` send, both ask the command to stop at its next boundary (a training step with a
// checkpoint, an eval batch); the same signal again quits at once, saying what is kept (`quitNote`), with the
// shell's code for that signal (130 for SIGINT, 143 for SIGTERM).

import { RELAUNCHED_ENV } from './malloc-relaunch.js';

export type StopSignal = 'SIGINT' | 'SIGTERM';

export const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM'];

/** The exit code of a process ended by `signal`, as a shell reports it (128 + the signal's number). */
const SIGNAL_EXIT_CODES: Record<StopSignal, number> = { SIGINT: 130, SIGTERM: 143 };

/** How the signal is named to the user: what they pressed or what was sent. */
function signalName(signal: StopSignal): string {
  return signal === 'SIGINT' ? 'Ctrl-C' : 'SIGTERM';
}

export interface StopRequest {
  /** True once a stop signal came. */
  requested(): boolean;
  /** Stops listening (the signals' default action comes back). */
  dispose(): void;
}

/** How long after a restarted process's first stop signal a repeat of it counts as the forwarded copy (`StopOptions`). */
export const DUPLICATE_SIGNAL_WINDOW_MS = 1000;

export interface StopOptions {
  /**
   * A repeat of the first signal within this many milliseconds of it is the same signal delivered twice, not a
   * second one, and is ignored. Default: DUPLICATE_SIGNAL_WINDOW_MS in a process that bin/sesa-train.mjs started again without its
   * malloc settings (./malloc-relaunch.ts), where a signal sent to the whole process group or cgroup (a terminal's
   * Ctrl-C, `timeout`, Slurm, systemd) reaches this process both directly and forwarded by the bin; else 0.
   */
  duplicateWindowMs?: number;
  /** The clock, in milliseconds (tests). */
  now?: () => number;
}

/**
 * Listens for SIGINT and SIGTERM. The first one sets requested() and prints `stopping` (e.g. "stopping after this
 * step (a checkpoint is written)"); a second one prints `quitNote()` and exits at once.
 */
export function listenForStop(
  stopping: string,
  quitNote: () => string,
  write: (text: string) => void = (t) => process.stderr.write(t),
  opts: StopOptions = {},
): StopRequest {
  const window = opts.duplicateWindowMs ?? (process.env[RELAUNCHED_ENV] !== undefined ? DUPLICATE_SIGNAL_WINDOW_MS : 0);
  const now = opts.now ?? Date.now;
  let first: { signal: StopSignal; at: number } | undefined;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = (): void => {
      if (first !== undefined) {
        if (signal === first.signal && now() - first.at < window) return;
        write(`\n${signalName(signal)} again: quitting now; ${quitNote()}\n`);
        process.exit(SIGNAL_EXIT_CODES[signal]);
      }
      first = { signal, at: now() };
      write(`\n${signalName(signal)}: ${stopping}; ${signal === 'SIGINT' ? 'press Ctrl-C' : 'send SIGTERM'} again to quit now\n`);
    };
    process.on(signal, handler);
    return { signal, handler };
  });
  return {
    requested: () => first !== undefined,
    dispose: () => {
      for (const { signal, handler } of handlers) process.off(signal, handler);
    },
  };
}
