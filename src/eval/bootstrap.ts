// Intervals for accuracy differences (docs/evaluation.md, "Intervals"): the paired bootstrap over questions.
//
// Two systems A and B answered the same n questions; a_i, b_i ∈ {0, 1} are their scores on question i. The
// gain is  Δ = (1/n) Σ_i (b_i − a_i).  One bootstrap replicate draws n question indices uniformly with
// replacement, i*_1 … i*_n, and computes  Δ* = (1/n) Σ_j (b_{i*_j} − a_{i*_j}):  the same questions for both
// systems (paired), so what two systems share (a question both get right or both get wrong) does not widen the
// interval. The 95% interval is the 2.5th and 97.5th percentiles of R replicates (the percentile method).
//
// Over several run seeds s = 1 … S (one trained system B_s per seed, each compared with the same baseline A,
// or each with its own A_s), the gain is the mean over seeds,  Δ = (1/S) Σ_s Δ_s,  and one replicate resamples
// the questions once and applies the same indices to every seed: the interval is then over questions, for
// these S runs. The spread over run seeds is reported beside it as the sd of the Δ_s (it is not in the interval).
import { Rng } from '../util/rng.js';

export interface PairedGain {
  /** The mean gain Δ over seeds (B − A), as a fraction. */
  gain: number;
  /** The 2.5th and 97.5th percentiles of the bootstrap replicates. */
  low: number;
  high: number;
  /** Questions per system. */
  questions: number;
  /** Run seeds (pairs of score vectors). */
  runs: number;
  /** The per-run gains Δ_s. */
  perRun: number[];
  /** The sample sd of the per-run gains (0 with one run). */
  sd: number;
  replicates: number;
}

/** One run's pair: the baseline's scores and the system's, question by question (same order, same length). */
export interface ScorePair {
  a: readonly number[];
  b: readonly number[];
}

export interface BootstrapOptions {
  /** R, the number of replicates (default 10,000). */
  replicates?: number;
  /** The resampling stream's seed (default 0): the same inputs and seed give the same interval. */
  seed?: number;
}

/** The q-quantile of sorted values, by linear interpolation between order statistics. */
export function quantile(sorted: Float64Array | readonly number[], q: number): number {
  if (sorted.length === 0) throw new Error('quantile of no values');
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const vlo = sorted[lo] as number;
  return vlo + ((sorted[hi] as number) - vlo) * (pos - lo);
}

/** Δ and its paired-bootstrap 95% interval over questions, for one or more runs (see the header). */
export function pairedBootstrap(pairs: readonly ScorePair[], opts: BootstrapOptions = {}): PairedGain {
  if (pairs.length === 0) throw new Error('pairedBootstrap: no runs');
  const n = (pairs[0] as ScorePair).a.length;
  if (n === 0) throw new Error('pairedBootstrap: no questions');
  for (const [s, p] of pairs.entries()) {
    if (p.a.length !== n || p.b.length !== n) throw new Error(`pairedBootstrap: run ${s} has ${p.a.length} and ${p.b.length} scores, run 0 has ${n}: every run must score the same questions`);
  }
  const R = opts.replicates ?? 10_000;
  if (!Number.isInteger(R) || R < 1) throw new Error(`pairedBootstrap: replicates must be a positive integer, got ${R}`);
  // d[i] = (1/S) Σ_s (b_si − a_si): the per-question gain averaged over runs; Δ is its mean, and a replicate's
  // Δ* is the mean of d over the resampled indices (the same indices for every run).
  const S = pairs.length;
  const d = new Float64Array(n);
  for (const p of pairs) for (let i = 0; i < n; i++) d[i] = (d[i] as number) + ((p.b[i] as number) - (p.a[i] as number)) / S;
  const mean = (xs: ArrayLike<number>): number => {
    let t = 0;
    for (let i = 0; i < xs.length; i++) t += xs[i] as number;
    return t / xs.length;
  };
  const perRun = pairs.map((p) => mean(p.b) - mean(p.a));
  const gain = mean(d);
  const rng = new Rng(opts.seed ?? 0);
  const reps = new Float64Array(R);
  for (let r = 0; r < R; r++) {
    let t = 0;
    for (let j = 0; j < n; j++) t += d[rng.int(n)] as number;
    reps[r] = t / n;
  }
  reps.sort();
  const m = mean(perRun);
  const sd = S > 1 ? Math.sqrt(perRun.reduce((a, g) => a + (g - m) ** 2, 0) / (S - 1)) : 0;
  return { gain, low: quantile(reps, 0.025), high: quantile(reps, 0.975), questions: n, runs: S, perRun, sd, replicates: R };
}

/** "+6.4 [+2.1, +10.8]" in points (percent of questions). */
export function gainText(g: Pick<PairedGain, 'gain' | 'low' | 'high'>): string {
  const pts = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(1)}`;
  return `${pts(g.gain)} [${pts(g.low)}, ${pts(g.high)}]`;
}
