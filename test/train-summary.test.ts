// The end-of-run summary's pooled lines: the share of valid questions whose solve rate p̂ was 0, strictly
// between, or 1; the valid-question rate; the solver's training accuracy. Each pools the given steps (the
// summary gives each half of the run), and says nothing when there is nothing to pool.
import { describe, expect, it } from 'vitest';
import { newQuestionAccuracyLine, pHatLine, solverAccuracyLine, summaryText, validLine } from '../src/cli/train.js';
import type { StepMetrics } from '../src/selfplay/step.js';
import type { TrainSummary } from '../src/selfplay/trainer.js';
import { pooledPHat } from '../src/report/pooled.js';

describe('pHatLine', () => {
  it('pools the histograms of the given steps into {0, (0,1), 1} shares', () => {
    const steps: Array<{ pHatHistogram: Record<string, number> }> = [{ pHatHistogram: { '0.00': 3, '0.40': 1 } }, { pHatHistogram: { '0.20': 2, '1.00': 2, '0.00': 2 } }];
    // 10 questions: 5 at 0, 3 strictly between, 2 at 1.
    expect(pHatLine(steps)).toBe('{0: 50%, (0,1): 30%, 1: 20%} of 10');
  });

  it('pooledPHat counts the questions at 0, strictly between and at 1; a step without a histogram adds none', () => {
    const steps: Array<{ pHatHistogram?: Record<string, number> }> = [{ pHatHistogram: { '0.00': 3, '0.25': 1, '0.75': 2 } }, {}, { pHatHistogram: { '1.00': 4, '0.00': 1 } }];
    expect(pooledPHat(steps)).toEqual({ zero: 4, middle: 3, one: 4, of: 11 });
    expect(pooledPHat([{}])).toBeUndefined();
  });

  it('says nothing without valid questions', () => {
    expect(pHatLine([{ pHatHistogram: {} }])).toBeUndefined();
    expect(pHatLine([])).toBeUndefined();
  });
});

describe('validLine and solverAccuracyLine', () => {
  it('pool counts over steps, not the steps\' rates', () => {
    // Rates 0/16 and 4/16 → 4 of 32; solver 1 of 4 and 8 of 8 → 9 of 12 (the mean of the rates would be 62.5%).
    expect(validLine([{ validQuestions: 0, proposals: 16 }, { validQuestions: 4, proposals: 16 }])).toBe('13% (4 of 32)');
    expect(solverAccuracyLine([{ solverAccuracy: 0.25, solverRollouts: 4 }, { solverAccuracy: 1, solverRollouts: 8 }])).toBe('75% of 12 rollouts');
  });

  it('say nothing without proposals or rollouts', () => {
    expect(validLine([])).toBeUndefined();
    expect(solverAccuracyLine([{ solverAccuracy: 0, solverRollouts: 0 }])).toBeUndefined();
  });
});

describe('the solver accuracy lines with a reuse pool', () => {
  // Step 1: 1 new question (5 rollouts, 1 right), 7 reused (35 rollouts, 34 right); step 2: 2 new (10, 6 right),
  // 6 reused (30, 30 right).
  const steps = [
    { step: 1, validQuestions: 1, proposals: 8, solverAccuracy: 35 / 40, solverRollouts: 40, validQuestionAccuracy: 0.2, validQuestionRollouts: 5, pHatHistogram: {} },
    { step: 2, validQuestions: 2, proposals: 8, solverAccuracy: 36 / 40, solverRollouts: 40, validQuestionAccuracy: 0.6, validQuestionRollouts: 10, pHatHistogram: {} },
  ] as unknown as StepMetrics[];

  it("pools the new questions' rollouts alone, and says what the whole batch adds", () => {
    expect(newQuestionAccuracyLine(steps)).toBe('47% of 15 rollouts');
    const text = summaryText({ runDir: 'runs/x', model: 'demo', firstStep: 1, lastStep: 2, stoppedEarly: false, metrics: steps }, false);
    expect(text).toContain("solver accuracy on the proposer's new questions, first half → second half of the steps: 20% of 5 rollouts → 60% of 10 rollouts");
    expect(text).toContain('solver accuracy on its whole batch (reused questions too), first half → second half of the steps: 88% of 40 rollouts → 90% of 40 rollouts');
    expect(text).not.toContain("solver accuracy on the proposer's questions,");
  });

  it('without reused questions keeps the one line', () => {
    const plain = steps.map((m) => ({ ...m, solverRollouts: m.validQuestionRollouts, solverAccuracy: m.validQuestionAccuracy }));
    const text = summaryText({ runDir: 'runs/x', model: 'demo', firstStep: 1, lastStep: 2, stoppedEarly: false, metrics: plain }, false);
    expect(text).toContain("solver accuracy on the proposer's questions, first half → second half of the steps: 20% of 5 rollouts → 60% of 10 rollouts");
    expect(text).not.toContain('whole batch');
  });
});

describe('the summary of a resumed run', () => {
  // Steps 1–4 ran before the run was killed and resumed from checkpoint step 4; this process trained 5–8.
  const row = (step: number, valid: number): StepMetrics => ({ step, validQuestions: valid, proposals: 8, solverAccuracy: 0.5, solverRollouts: 4 * valid, pHatHistogram: valid > 0 ? { '0.50': valid } : {} }) as unknown as StepMetrics;
  const before = [1, 2, 3, 4].map((s) => row(s, 1));
  const now = [5, 6, 7, 8].map((s) => row(s, 2));
  const summary: TrainSummary = { runDir: 'runs/x', model: 'qwen3-0.6b', firstStep: 5, lastStep: 8, stoppedEarly: false, resumedFrom: 4, metrics: now };

  it('covers the whole run, saying which steps came before the resume', () => {
    const text = summaryText(summary, false, [...before, ...now]);
    expect(text).toContain('steps 1–8 (steps 1–4 before the resume from checkpoint step 4, 5–8 trained now)');
    // Pooled over halves of all 8 steps: 4 of 32 → 8 of 32, not over 5–8 alone (4 of 16 → 4 of 16).
    expect(text).toContain('valid questions, first half → second half of the steps: 13% (4 of 32) → 25% (8 of 32)');
  });

  it("the tiny model's closing hint names a real model with a backend that holds it", () => {
    const text = summaryText({ ...summary, resumedFrom: undefined, firstStep: 1 }, true);
    expect(text).toContain('npx sesa-train --model qwen3-0.6b ');
    expect(text).toContain("on the native backend (the CPU default where onnxruntime-node loads) or a GPU's tfjs-node-gpu: a 0.6B model does not fit the wasm backend's 4 GiB heap (docs/models.md)");
  });

  it('without the run folder rows it still says it was resumed', () => {
    expect(summaryText(summary, false)).toContain('steps 5–8 (resumed from step 4)');
  });
});
