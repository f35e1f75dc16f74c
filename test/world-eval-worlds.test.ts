// The evaluation worlds (src/world/eval-worlds.ts, docs/world.md "The evaluation worlds"): held-out questions of
// worlds no training touched, with every question whose chain holds a fact a training question can pass through
// left out; and the check that says so fails on a set that is not held out (the self-play world's own).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVAL_WORLD_SEEDS, evalWorlds, heldOutFactProblems, questionFactKeys, trainedFactKeys, trainedWorldSeeds, WARM_START_WORLDS } from '../src/world/eval-worlds.js';
import { worldEvalSets } from '../src/world/setup.js';
import { DEMO_WORLD, FRESH_WORLD, trainingWorldSeeds, World } from '../src/world/world.js';

describe('the evaluation worlds', () => {
  it('hold at least 300 questions, balanced by hop count, none with a trained fact on its chain', () => {
    const sets = evalWorlds();
    const total = sets.reduce((a, s) => a + s.questions.length, 0);
    expect(total).toBeGreaterThanOrEqual(300);
    for (const s of sets) for (const h of [1, 2, 3]) expect(s.questions.filter((q) => q.hops === h).length).toBeGreaterThanOrEqual(15);
    expect(heldOutFactProblems(sets)).toEqual([]);
  });

  it('are no world that trained anything, and training worlds never become one', () => {
    const trained = new Set([...trainedWorldSeeds(), FRESH_WORLD.seed]);
    for (const s of EVAL_WORLD_SEEDS) expect(trained.has(s)).toBe(false);
    // However many training worlds a later warm start takes, they skip the evaluation worlds.
    const many = new Set(trainingWorldSeeds(Math.max(...EVAL_WORLD_SEEDS) + 10));
    for (const s of EVAL_WORLD_SEEDS) expect(many.has(s)).toBe(false);
  });

  it('cover every warm-start world the shipped model was trained in', () => {
    const stages = (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'models', 'demo', 'warm-start.json'), 'utf8')) as { stages: Array<{ command?: string }> }).stages;
    const worlds = stages.map((s) => /--worlds (\d+)/.exec(s.command ?? '')).filter((m): m is RegExpExecArray => m !== null).map((m) => Number(m[1]));
    expect(worlds.length).toBeGreaterThan(0);
    expect(Math.max(...worlds)).toBeLessThanOrEqual(WARM_START_WORLDS);
  });

  it('ask questions that need search: no answer is named in its question', () => {
    for (const s of evalWorlds()) {
      for (const q of s.questions) for (const g of q.golden_answers) expect(q.question.toLowerCase().includes(g.toLowerCase()), `${s.seed} ${q.id}`).toBe(false);
    }
  });

  it('flag the self-play world’s own held-out set: most of its facts lie on chains into training answer seeds', () => {
    const world = new World(DEMO_WORLD);
    const trained = trainedFactKeys();
    const withTrainedFact = world.heldOut.filter((q) => questionFactKeys(world, q).some((k) => trained.has(k)));
    expect(withTrainedFact.length).toBeGreaterThan(world.heldOut.length / 2);
    const problems = heldOutFactProblems([{ seed: DEMO_WORLD.seed, world, questions: world.heldOut, excluded: [] }]);
    expect(problems[0]).toMatch(/evaluation world 0 is a training world/);
    expect(problems.length).toBe(1 + withTrainedFact.length);
  });

  it('are searched each in its own world: a question’s supporting passages are in its set’s corpus', async () => {
    const sets = await worldEvalSets('eval-worlds', 0, 2);
    expect(sets.map((s) => s.dataset)).toEqual(EVAL_WORLD_SEEDS.map((s) => `world-${s}`));
    for (const [i, set] of sets.entries()) {
      const w = evalWorlds()[i] as (typeof evalWorlds extends () => Array<infer T> ? T : never);
      const q = w.questions[0] as (typeof w.questions)[number];
      const [hits] = await set.searcher.search([w.world.searchQuery(w.world.entity(q.chain[0] as string))], 3);
      expect((hits ?? []).map((p) => p.id)).toContain(q.supporting_ids[0]);
      expect(set.questions.map((x) => x.hops)).toEqual(w.questions.slice(0, 2).map((x) => x.hops));
    }
  });
});
