// Rates over a span of steps, pooled: the counts are summed, then divided, so a step with 2 rollouts weighs less
// than one with 40 (a mean of per-step rates would weigh them alike). In a small world most single steps
// have no valid question at all, so the run summary and the report's headline compare the two halves of a run.
export interface Pooled {
  rate: number;
  count: number;
  of: number;
}

/** Valid questions among the proposals; undefined without proposals. */
export function pooledValid(steps: ReadonlyArray<{ validQuestions?: number; proposals?: number }>): Pooled | undefined {
  const count = steps.reduce((n, m) => n + (m.validQuestions ?? 0), 0);
  const of = steps.reduce((n, m) => n + (m.proposals ?? 0), 0);
  return of === 0 ? undefined : { rate: count / of, count, of };
}

/** Correct solver rollouts among the rollouts on the proposer's questions; undefined without rollouts. */
export function pooledSolverAccuracy(steps: ReadonlyArray<{ solverAccuracy?: number; solverRollouts?: number }>): Pooled | undefined {
  const of = steps.reduce((n, m) => n + (m.solverRollouts ?? 0), 0);
  const count = Math.round(steps.reduce((n, m) => n + (m.solverAccuracy ?? 0) * (m.solverRollouts ?? 0), 0));
  return of === 0 ? undefined : { rate: count / of, count, of };
}

/**
 * Correct solver rollouts among those on the step's new valid questions (the proposer's questions of that step,
 * without the questions reused from the pool); undefined without such rollouts.
 */
export function pooledNewQuestionAccuracy(steps: ReadonlyArray<{ validQuestionAccuracy?: number; validQuestionRollouts?: number }>): Pooled | undefined {
  return pooledSolverAccuracy(steps.map((m) => ({ solverAccuracy: m.validQuestionAccuracy, solverRollouts: m.validQuestionRollouts })));
}

/** Valid questions by their solver group's p̂: at 0, strictly between, at 1 (counts). */
export interface PooledPHat {
  zero: number;
  middle: number;
  one: number;
  of: number;
}

/** The p̂ histograms of the steps, pooled into PooledPHat; undefined without any valid question. */
export function pooledPHat(steps: ReadonlyArray<{ pHatHistogram?: Record<string, number> }>): PooledPHat | undefined {
  let zero = 0;
  let one = 0;
  let of = 0;
  for (const m of steps) {
    for (const [p, n] of Object.entries(m.pHatHistogram ?? {})) {
      of += n;
      if (Number(p) === 0) zero += n;
      else if (Number(p) === 1) one += n;
    }
  }
  return of === 0 ? undefined : { zero, middle: of - zero - one, one, of };
}

/** The first and the second half of the steps (the first takes the middle step of an odd count). */
export function halves<T>(steps: readonly T[]): [T[], T[]] {
  const half = Math.ceil(steps.length / 2);
  return [steps.slice(0, half), steps.slice(half)];
}
