// The world loop (`npx sesa-train --model demo`: SESA in the demo world from the shipped warm-start model), cut to
// one small step: the mechanics are alive, unlike a random model's exactly zero gradient. Asserts counts and
// gradient norms, never timings or accuracies. Skipped with the reason when no model is shipped, or (below) while the
// shipped one writes no valid question.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRAIN_DEFAULTS, type TrainConfig, WORLD_DEFAULTS } from '../src/selfplay/config.js';
import { train } from '../src/selfplay/trainer.js';
import { repoRoot } from '../src/util/shared-data.js';

const shipped = existsSync(join(repoRoot(), 'models', 'demo', 'model.safetensors'));
const root = mkdtempSync(join(tmpdir(), 'sesa-world-loop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// The shipped warm start solves held-out questions, but its proposer wrote no valid question in a 16-step
// world run (0 of 256 proposals; docs/world.md, "Training in the world"), so this loop has nothing to train on
// yet and the test is skipped with that reason until a warm start whose proposer works ships.
const PROPOSER_WRITES_VALID_QUESTIONS = false;
const reason = !shipped ? ' (skipped: models/demo has no model.safetensors; run scripts/make-demo-model.ts)' : !PROPOSER_WRITES_VALID_QUESTIONS ? " (skipped: the shipped warm start's proposer writes no valid question yet, docs/world.md)" : '';

describe.skipIf(reason !== '')(`the default world loop${reason}`, () => {
  it('proposes valid questions, solves them, and updates both roles with non-zero gradients', async () => {
    const config: TrainConfig = {
      ...TRAIN_DEFAULTS,
      ...WORLD_DEFAULTS,
      steps: 1,
      seedsPerStep: 4,
      proposalsPerSeed: 2,
      groupSize: 4,
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
    expect(lines.join('\n')).toMatch(/generated world of seed 0/);
    expect(m.proposals).toBe(8);
    expect(m.validQuestions).toBeGreaterThan(0);
    expect(m.solverRollouts).toBe(m.validQuestions * 4);
    expect(m.solver?.gradNorm ?? 0).toBeGreaterThan(0);
    expect(m.proposer?.gradNorm ?? 0).toBeGreaterThan(0);
  });
});
