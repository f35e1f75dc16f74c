// Progress of long commands: a line per training step, per eval batch and per phase of a step that takes longer
// than a few seconds, whether or not stderr is a terminal (CI logs, nohup), each with an ETA that says what it
// rests on. On a terminal the same text goes into the cli-progress bar instead of lines. The training loop
// keeps the event loop busy, so nothing here can run on a timer: every line is written when an event arrives
// (the trainer's hooks, src/selfplay/trainer.ts), stamped with the time the command has run.
import type { StepPhase } from '../selfplay/step.js';
import type { TrainProgressEvent } from '../selfplay/trainer.js';

/** A phase of a step gets its own line when it took at least this long (shorter ones only count in the step line). */
export const PHASE_LINE_SECONDS = 5;

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

const PHASE_NAMES: Record<StepPhase, string> = {
  propose: 'propose',
  validate: 'validate',
  solve: 'solve',
  judge: 'judge',
  update: 'GRPO update',
  consolidate: 'consolidate',
};

/**
 * Turns the trainer's progress events into lines (no terminal) or bar text (a terminal), with the time each
 * took and the time the command has run. `now` is in seconds (a test passes a scripted clock). Steps run from
 * `firstStep` (a resumed run starts past 1) to `lastStep`; `heldOutSteps` are the steps whose held-out eval is
 * still to run (0 = before step 1). The time left is the steps left at the time a step took so far plus the
 * evals left at the time an eval took so far, and the line says both.
 */
export class TrainProgressText {
  private readonly t0: number;
  private phaseStart: number | undefined;
  private modeStart: number | undefined;
  private stepStart: number | undefined;
  private stepsDone = 0;
  private stepSeconds = 0;
  /** Seconds of each held-out eval so far (both skills modes), by step. */
  private readonly evalSeconds = new Map<number, number>();
  private readonly evalsLeft: Set<number>;
  /** Seconds left as of the last step's end. */
  private left: number | undefined;

  constructor(
    private readonly firstStep: number,
    readonly lastStep: number,
    heldOutSteps: readonly number[] = [],
    private readonly now: () => number = () => performance.now() / 1000,
  ) {
    this.t0 = now();
    this.evalsLeft = new Set(heldOutSteps);
  }

  /** The time the command has run, as every line starts: "[3 min 10 s]". */
  stamp(): string {
    return `[${formatSeconds(this.now() - this.t0)}]`;
  }

  /** What a terminal's bar shows as the current activity, or undefined when the event changes nothing. */
  activity(e: TrainProgressEvent): string | undefined {
    if (e.kind === 'phase') return e.state === 'start' ? `step ${e.step}: ${PHASE_NAMES[e.phase]}…` : undefined;
    if (e.kind === 'eval-cached') return undefined;
    return `held-out eval at step ${e.step}, skills ${e.skills}: ${e.done}/${e.total}`;
  }

  /** The line an event adds without a terminal (undefined: none for this event). Call it for every event. */
  line(e: TrainProgressEvent): string | undefined {
    const t = this.now();
    if (e.kind === 'phase') {
      if (e.state === 'start') {
        if (e.phase === 'propose') this.stepStart = t;
        this.phaseStart = t;
        return undefined;
      }
      const took = e.seconds ?? (this.phaseStart !== undefined ? t - this.phaseStart : 0);
      return took < PHASE_LINE_SECONDS ? undefined : `${this.stamp()} step ${e.step}/${this.lastStep}: ${PHASE_NAMES[e.phase]} took ${formatSeconds(took)}`;
    }
    // A cached eval took no time here; the time it took to compute is the pace of the evals to come.
    if (e.kind === 'eval-cached') {
      this.evalSeconds.set(e.step, e.seconds);
      return undefined;
    }
    // A skills mode of an eval starts with done = 0, then one event per batch.
    if (e.done === 0) {
      this.modeStart = t;
      return undefined;
    }
    const elapsed = t - (this.modeStart ?? t);
    if (e.done >= e.total) {
      // The mode is over: its time counts in the eval's (the trainer's next line gives its EM and seconds).
      this.evalSeconds.set(e.step, (this.evalSeconds.get(e.step) ?? 0) + elapsed);
      return undefined;
    }
    return `${this.stamp()} held-out eval at step ${e.step}, skills ${e.skills}: ${e.done}/${e.total} questions; ${etaText(elapsed, e.done, e.total - e.done, 'question')}`;
  }

  /** At the end of step `step`: the time left at the paces so far, said with those paces. */
  stepEnd(step: number): string {
    const t = this.now();
    this.stepsDone++;
    this.stepSeconds += t - (this.stepStart ?? t);
    this.stepStart = undefined;
    for (const s of this.evalSeconds.keys()) this.evalsLeft.delete(s);
    const stepsLeft = this.lastStep - this.firstStep + 1 - this.stepsDone;
    const stepPace = this.stepSeconds / this.stepsDone;
    const evals = [...this.evalSeconds.values()];
    const evalPace = evals.length > 0 ? evals.reduce((a, b) => a + b, 0) / evals.length : undefined;
    const evalsLeft = [...this.evalsLeft].filter((s) => s >= step).length;
    if (stepsLeft === 0 && evalsLeft === 0) {
      this.left = 0;
      return `${this.stepsDone} step${this.stepsDone === 1 ? '' : 's'} in ${formatSeconds(this.stepSeconds)}`;
    }
    const parts = stepsLeft > 0 ? [`${stepsLeft} step${stepsLeft === 1 ? '' : 's'} at ${formatSeconds(stepPace)}`] : [];
    let left = stepsLeft * stepPace;
    if (evalsLeft > 0) {
      if (evalPace !== undefined) {
        parts.push(`${evalsLeft} held-out eval${evalsLeft === 1 ? '' : 's'} at ${formatSeconds(evalPace)}`);
        left += evalsLeft * evalPace;
      } else parts.push(`${evalsLeft} held-out eval${evalsLeft === 1 ? '' : 's'} not timed yet`);
    }
    this.left = left;
    return `about ${formatSeconds(left)} to go (${parts.join(' and ')}, each as long as so far)`;
  }

  /** The ETA alone, for a terminal's bar. */
  eta(): string {
    return this.left === undefined ? 'ETA after the first step' : this.left === 0 ? 'done' : `ETA ${formatSeconds(this.left)}`;
  }
}
