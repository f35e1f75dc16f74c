// Progress of long commands: a line per training step, per eval batch and per phase of a step that takes longer
// than a few seconds, whether or not stderr is a terminal (CI logs, nohup), each with an ETA that says what it
// rests on. On a terminal the same text goes into the cli-progress bar instead of lines. The training loop
// keeps the event loop busy, so nothing here can run on a timer: every line is written when an event arrives
// (the trainer's hooks, src/selfplay/trainer.ts), stamped with the time the command has run.

/** "0.4 s", "45 s", "3 min 10 s", "1 h 05 min". */
export function formatSeconds(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '?';
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) {
    const m = Math.floor(s / 60);
    const rest = Math.round(s - 60 * m);
    return rest === 60 ? `${m + 1} min` : rest === 0 ? `${m} min` : `${m} min ${rest} s`;
  }
  const h = Math.floor(s / 3600);
  return `${h} h ${String(Math.round((s - 3600 * h) / 60)).padStart(2, '0')} min`;
}

/**
 * The time left at the pace so far, said with what it rests on: "about 1 min 43 s to go at 2.5 s a question
 * (16 done in 40 s)". A pace is only what was measured: later items that take longer (more hops, longer
 * answers) make it late, and the next line says so by moving.
 */
export function etaText(elapsedSeconds: number, done: number, remaining: number, unit: string): string {
  if (done <= 0) return `${remaining} ${unit}${remaining === 1 ? '' : 's'} to go`;
  const pace = elapsedSeconds / done;
  if (remaining <= 0) return `${done} ${unit}${done === 1 ? '' : 's'} in ${formatSeconds(elapsedSeconds)}`;
  return `about ${formatSeconds(pace * remaining)} to go at ${formatSeconds(pace)} a ${unit} (${done} done in ${formatSeconds(elapsedSeconds)})`;
}
