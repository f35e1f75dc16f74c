// The world loop (`npx sesa-train --model demo`: SESA in the demo world from the shipped warm-start model), cut to
// one small step: the mechanics are alive, unlike a random model's exactly zero gradient. Asserts counts and
// gradient norms, never timings or accuracies. Skipped with the reason when no model is shipped.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { train } from '../src/selfplay/trainer.js';
import { hopQuotas } from '../src/selfplay/seed-draw.js';
import { repoRoot } from '../src/util/shared-data.js';

const shipped = existsSync(join(repoRoot(), 'models', 'demo', 'model.safetensors'));
const root = mkdtempSync(join(tmpdir(), 'sesa-world-loop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const reason = !shipped ? ' (skipped: models/demo has no model.safetensors; run scripts/make-demo-model.ts)' : '';

describe.skipIf(reason !== '')(`the default world loop${reason}`, () => {
  // One step of the world default's layout (SSP's: seeds × 1 proposal, one- and two-hop seeds 1 : 3, drawn over
  // every training world, a solver batch of 8): the shipped proposer writes a valid question about one time in
  // four at this mix, and the run is deterministic, so this step has some. The reuse pool is empty at step 1, so
  // the solver batch is the valid questions and, when they are fewer than the batch, the other slots stay
  // empty. The solver's groups are mostly all wrong or all right at this size (p̂ of 0 or 1: no solver
  // advantage); the world run leaves such groups out of the update (--skip-uniform-groups), so the solver is
  // updated, with a non-zero gradient, exactly when some group has 0 < p̂ < 1.
  it('proposes valid questions in the hop mix, solves each G times, and updates the proposer with a non-zero gradient', async () => {
    const config: TrainConfig = {
      ...TRAIN_DEFAULTS,
      ...WORLD_DEFAULTS,
      backend: 'wasm',
      steps: 1,
      evalEvery: 0,
      evalData: undefined,
      out: join(root, 'run'),
      saveEvery: 1,
    } as TrainConfig;
    const lines: string[] = [];
    const summary = await train(config, { log: (l) => lines.push(l) });
    const m = summary.metrics[0];
    expect(m).toBeDefined();
    if (!m) return;
    expect(lines.join('\n')).toMatch(new RegExp(`BM25 over ${config.trainingWorlds} generated worlds, each its own corpus \\(seeds 0, 1,`));
    // --step-corpora all: the step spans the training worlds, so it names no one corpus.
    expect(config.stepCorpora).toBe('all');
    expect(m.corpus).toBeUndefined();
    expect(m.proposals).toBe(config.seedsPerStep * config.proposalsPerSeed);
    // --hop-mix 1,3,0: a quarter of the step's seeds one-hop, the rest two-hop (largest remainder), none three-hop.
    const quotas = hopQuotas(config.seedsPerStep, [1, 3, 0]);
    expect(quotas[2]).toBe(0);
    expect(Object.fromEntries(Object.entries(m.validByHops).map(([h, v]) => [h, v.proposals]))).toEqual({ '1': quotas[0], '2': quotas[1] });
    expect(m.validQuestions).toBeGreaterThan(0);
    expect(config.solverBatch).toBeGreaterThan(0);
    expect([m.solverQuestions, m.reusedQuestions, m.emptySlots]).toEqual([m.validQuestions, 0, Math.max(0, config.solverBatch - m.validQuestions)]);
    expect(m.solverRollouts).toBe(m.solverQuestions * config.groupSize);
    expect(m.reusePool).toBe(m.solverQuestions);
    const mixed = Object.entries(m.pHatHistogram).filter(([p]) => Number(p) > 0 && Number(p) < 1).reduce((n, [, c]) => n + c, 0);
    if (mixed > 0) expect(m.solver?.gradNorm ?? 0).toBeGreaterThan(0);
    else expect(m.solver).toBeUndefined();
    expect(m.proposer?.gradNorm ?? 0).toBeGreaterThan(0);
  });
});
