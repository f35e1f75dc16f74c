// Letting the event loop run between long stretches of synchronous work. Tensor ops on the wasm and CPU
// backends run synchronously, and an `await` on a promise that is already settled resumes without giving the
// loop a turn, so a run that only computes never lets a signal handler (Ctrl-C, SIGTERM), a timer or an I/O
// callback in. The rollout engine, the GRPO update and the step call this between turns, micro-batches and
// phases: a handler then runs within one turn or micro-batch of its signal.

/** Resolves on the event loop's next check phase, after pending I/O, signal and timer callbacks have run. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
