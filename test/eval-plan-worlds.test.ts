// `sesa-train eval` on the world data names: `training-worlds` is one of them (as a run's --eval-data), so
// `eval --run RUN_DIR` of a run that evaluated on its training worlds scores those worlds again, each in its
// own corpus, and never reads the name as a file.
import { describe, expect, it } from 'vitest';
import { evalSetsOf, planEval } from '../src/cli/eval-plan.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { isWorldEvalData } from '../src/world/setup.js';
import { selfPlayWorldSeeds } from '../src/world/training-worlds.js';

describe('eval on training-worlds', () => {
  it('is a world data name, planned with the training worlds of the model default', () => {
    expect(['world', 'training-worlds', 'eval-worlds'].every(isWorldEvalData)).toBe(true);
    expect(isWorldEvalData('nq')).toBe(false);
    const plan = planEval({ model: 'demo', data: ['training-worlds'], limit: 2, sampleSeed: 0 });
    expect(plan.trainingWorlds).toBe(WORLD_DEFAULTS.trainingWorlds);
    expect(plan.data).toEqual(['training-worlds']);
  });

  it("gives one set per training world, each with its world's questions and searcher", async () => {
    const plan = planEval({ model: 'demo', data: ['training-worlds'], limit: 2, sampleSeed: 0 });
    const lines: string[] = [];
    const { sets, sources } = await evalSetsOf(plan, { sampleSeed: 0 }, (l) => lines.push(l));
    const seeds = selfPlayWorldSeeds(plan.worldSeed, plan.trainingWorlds);
    expect(sets).toHaveLength(seeds.length);
    expect(new Set(sets.map((s) => s.dataset)).size).toBe(seeds.length);
    for (const s of sets) expect(s.questions).toHaveLength(2);
    expect(sources).toEqual([`training-worlds (${seeds.length} from world ${plan.worldSeed})`]);
    expect(lines.join('\n')).toMatch(/each in its own world's corpus/);
  });
});
