// Cross-time replay (docs/recipes.md): the probe sets, Laplace-smoothed solve rates, and the selection
// i* = argmax ρ_hard(i)·ρ_easy(i). Pure functions, so the selection can be checked against worked examples.
import type { IterationRecord } from './types.js';

/** ρ = (solved + 1) / (n + 1): an empty probe set scores 1, so it never decides the product alone. */
export function laplaceRate(solved: number, n: number): number {
  if (!Number.isInteger(solved) || !Number.isInteger(n) || solved < 0 || n < 0 || solved > n) throw new Error(`laplaceRate: need 0 ≤ solved ≤ n, got ${solved}/${n}`);
  return (solved + 1) / (n + 1);
}

export interface ReplayScore {
  iteration: number;
  hardSolved: number;
  hardN: number;
  easySolved: number;
  easyN: number;
}

export interface ScoredCandidate extends ReplayScore {
  rhoHard: number;
  rhoEasy: number;
  score: number;
}

/** Scores every candidate; the selected one has the largest product, ties going to the earliest iteration. */
export function selectByReplay(candidates: readonly ReplayScore[]): { scored: ScoredCandidate[]; selected: number } {
  if (candidates.length === 0) throw new Error('cross-time replay: no candidate skill sets');
  const scored = candidates.map((c) => {
    const rhoHard = laplaceRate(c.hardSolved, c.hardN);
    const rhoEasy = laplaceRate(c.easySolved, c.easyN);
    return { ...c, rhoHard, rhoEasy, score: rhoHard * rhoEasy };
  });
  let best = scored[0] as ScoredCandidate;
  for (const c of scored) if (c.score > best.score || (c.score === best.score && c.iteration < best.iteration)) best = c;
  return { scored, selected: best.iteration };
}

/**
 * The probe sets: judged-failed tasks (hard) and solved tasks (easy) of all iterations, at most `max` each,
 * taken round-robin over the iterations so that every iteration is represented. Tasks whose judgement never
 * parsed are in neither set.
 */
export function probeSets(iterations: readonly IterationRecord[], max: number): { hard: string[]; easy: string[] } {
  const pick = (want: boolean): string[] => {
    const perIteration = iterations.map((it) => it.attempts.filter((a) => a.judgeError === undefined && a.solved === want).map((a) => a.taskId));
    const out: string[] = [];
    for (let round = 0; out.length < max; round++) {
      let any = false;
      for (const ids of perIteration) {
        const id = ids[round];
        if (id === undefined) continue;
        any = true;
        if (out.length < max) out.push(id);
      }
      if (!any) break;
    }
    return out;
  };
  return { hard: pick(false), easy: pick(true) };
}
