// A role updated for several epochs on the same groups (--solver-epochs, docs/method.md "GRPO") runs the
// reference forward in the first epoch only: the later epochs equal, bit for bit, updates that recompute it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { CausalLM } from '../src/model/qwen3.js';
import type { Rollout } from '../src/agent/rollout.js';
import { GrpoPolicyUpdater, type RolloutGroup, type TrainedRole } from '../src/selfplay/updater.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { trainedRoles } from './helpers/trained-roles.js';

let root: string;
let model: CausalLM;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-epochs-'));
  const { dir } = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, vocab: 300, seed: 8 });
  model = await CausalLM.load(dir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

const roles = (): Record<'proposer' | 'solver', TrainedRole> => trainedRoles(model, 1e-2);

/** Two groups of two rollouts with tool-output tokens masked out (scripted rollouts, not sampled). */
function groups(): RolloutGroup[] {
  const rng = new Rng(11);
  const rollout = (i: number): Rollout => {
    const n = 12 + rng.int(10);
    return {
      id: `r${i}`,
      promptIds: [1, 2, 3, 4],
      responseIds: Array.from({ length: n }, () => rng.int(300)),
      responseMask: Array.from({ length: n }, (_, j) => (j >= 4 && j < 7 ? 0 : 1)),
      logprobs: Array.from({ length: n }, () => -5.7),
      samplingTemperature: 0.7,
    } as unknown as Rollout;
  };
  return [0, 1].map((g) => ({ rollouts: [0, 1].map((i) => rollout(g * 2 + i)), rewards: [1, 0] }));
}

/** The same groups as new rollout objects: nothing an updater remembers about the old ones applies. */
function copied(gs: RolloutGroup[]): RolloutGroup[] {
  return gs.map((g) => ({ rollouts: g.rollouts.map((r) => ({ ...r })), rewards: [...g.rewards] }));
}

describe('GRPO epochs in the updater', () => {
  it('the second epoch on the same rollouts skips the reference forward and equals one that recomputes it', async () => {
    const cfg = { microBatchSize: 4, klCoef: 0.05, clipLow: 0.2, clipHigh: 0.28, recomputeLayers: false };
    const base = model.forward.bind(model);
    let referenceForwards = 0;
    const spy = vi.spyOn(model, 'forward').mockImplementation((ids, opts) => {
      if (!opts?.adapter) referenceForwards++;
      return base(ids, opts);
    });
    try {
      const gs = groups();
      const cached = new GrpoPolicyUpdater(model, roles(), cfg);
      await cached.update('solver', gs);
      expect(referenceForwards).toBe(1);
      referenceForwards = 0;
      const second = await cached.update('solver', gs);
      expect(referenceForwards).toBe(0);

      const fresh = new GrpoPolicyUpdater(model, roles(), cfg);
      await fresh.update('solver', gs);
      referenceForwards = 0;
      const recomputed = await fresh.update('solver', copied(gs));
      expect(referenceForwards).toBe(1);
      // The adapter starts off the base (random B) and the first epoch moved it: the KL term is live.
      expect(second?.kl).toBeGreaterThan(0);
      expect(second).toEqual(recomputed === undefined ? undefined : { ...recomputed, tokensPerSecond: second?.tokensPerSecond });
    } finally {
      spy.mockRestore();
    }
  });
});
