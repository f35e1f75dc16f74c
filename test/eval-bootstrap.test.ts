// The paired bootstrap (src/eval/bootstrap.ts, docs/evaluation.md "Intervals"), checked against what it must be:
// no spread when both systems agree, the normal approximation for many questions, pairing that narrows the
// interval of correlated systems, and the mean over run seeds.
import { describe, expect, it } from 'vitest';
import { gainText, pairedBootstrap, quantile } from '../src/eval/bootstrap.js';
import { Rng } from '../src/util/rng.js';

const bern = (rng: Rng, n: number, p: number): number[] => Array.from({ length: n }, () => (rng.next() < p ? 1 : 0));

describe('pairedBootstrap', () => {
  it('gives a zero-width interval at zero when both systems score alike', () => {
    const a = bern(new Rng(1), 200, 0.4);
    const g = pairedBootstrap([{ a, b: a }], { replicates: 500 });
    expect([g.gain, g.low, g.high]).toEqual([0, 0, 0]);
  });

  it('matches the normal approximation of the mean per-question difference', () => {
    const rng = new Rng(2);
    const n = 2000;
    const a = bern(rng, n, 0.3);
    // b right where a is, and right on 10% more of the questions: d ∈ {0, 1}.
    const b = a.map((x) => (x === 1 || rng.next() < 0.1 ? 1 : 0));
    const d = b.map((x, i) => x - (a[i] as number));
    const m = d.reduce((s, x) => s + x, 0) / n;
    const se = Math.sqrt(d.reduce((s, x) => s + (x - m) ** 2, 0) / (n - 1) / n);
    const g = pairedBootstrap([{ a, b }], { replicates: 20_000, seed: 3 });
    expect(g.gain).toBeCloseTo(m, 12);
    expect(g.low).toBeCloseTo(m - 1.96 * se, 2);
    expect(g.high).toBeCloseTo(m + 1.96 * se, 2);
  });

  it('is narrower for paired systems than the unpaired difference of two independent means', () => {
    const rng = new Rng(4);
    const n = 400;
    const a = bern(rng, n, 0.5);
    const b = a.map((x) => (rng.next() < 0.9 ? x : 1 - x));
    const g = pairedBootstrap([{ a, b }], { replicates: 5000 });
    const p = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / n;
    const unpairedSe = Math.sqrt((p(a) * (1 - p(a))) / n + (p(b) * (1 - p(b))) / n);
    expect(g.high - g.low).toBeLessThan(0.6 * 2 * 1.96 * unpairedSe);
  });

  it('averages the gain over run seeds, resampling the same questions for every seed', () => {
    const a = [0, 0, 1, 1, 0, 1, 0, 0];
    const runs = [
      { a, b: [1, 0, 1, 1, 0, 1, 1, 0] },
      { a, b: [0, 0, 1, 1, 1, 1, 0, 0] },
      { a, b: [0, 0, 1, 0, 0, 1, 0, 0] },
    ];
    const g = pairedBootstrap(runs, { replicates: 2000, seed: 5 });
    expect(g.perRun).toEqual([2 / 8, 1 / 8, -1 / 8]);
    expect(g.gain).toBeCloseTo(2 / 8 / 3, 12);
    expect(g.sd).toBeCloseTo(Math.sqrt(((2 / 8 - 1 / 12) ** 2 + (1 / 8 - 1 / 12) ** 2 + (-1 / 8 - 1 / 12) ** 2) / 2), 12);
    expect(g.low).toBeLessThanOrEqual(g.gain);
    expect(g.high).toBeGreaterThanOrEqual(g.gain);
    // The same inputs and seed give the same interval.
    expect(pairedBootstrap(runs, { replicates: 2000, seed: 5 })).toEqual(g);
  });

  it('refuses runs scored on different numbers of questions', () => {
    expect(() => pairedBootstrap([{ a: [1, 0], b: [1, 0] }, { a: [1], b: [0] }])).toThrow(/run 1 has 1 and 1 scores, run 0 has 2/);
    expect(() => pairedBootstrap([])).toThrow(/no runs/);
  });

  it('interpolates quantiles and prints a gain in points', () => {
    expect(quantile([0, 1, 2, 3], 0.5)).toBe(1.5);
    expect(gainText({ gain: 0.064, low: -0.0125, high: 0.1 })).toBe('+6.4 [−1.3, +10.0]');
  });
});
