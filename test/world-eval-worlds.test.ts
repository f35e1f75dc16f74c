// The evaluation worlds (src/world/eval-worlds.ts, docs/world.md "The evaluation worlds"): held-out questions of
// worlds no training touched, with every question whose chain holds a fact a training question can pass through
// left out; and the check that says so fails on a set that is not held out (the self-play world's own).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVAL_WORLD_SEEDS, evalWorlds, heldOutFactProblems, questionFactKeys, trainedFactKeys, trainedWorldSeeds, WARM_START_WORLDS } from '../src/world/eval-worlds.js';
import { TRAINING_WORLDS_DATA, worldEvalSets } from '../src/world/setup.js';
import { MAX_TRAINING_WORLDS, selfPlayWorldSeeds } from '../src/world/training-worlds.js';
import { worldEnvironment } from '../src/world/environment.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
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

  it('and the worlds self-play trains in are disjoint, whatever --training-worlds, and their facts count as trained', () => {
    const trained = new Set(trainedWorldSeeds());
    const evalSet = new Set(EVAL_WORLD_SEEDS);
    for (let n = 1; n <= MAX_TRAINING_WORLDS; n++) {
      const worlds = selfPlayWorldSeeds(DEMO_WORLD.seed, n);
      expect(worlds.length).toBe(n);
      expect(new Set(worlds).size).toBe(n);
      expect(worlds.filter((w) => evalSet.has(w))).toEqual([]);
      // Every training world is one whose facts the evaluation set's check already counts as trained.
      expect(worlds.filter((w) => !trained.has(w))).toEqual([]);
    }
    // The default run's worlds, and the world of another --world-seed.
    const defaults = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS };
    expect(selfPlayWorldSeeds(defaults.worldSeed, defaults.trainingWorlds).filter((w) => evalSet.has(w))).toEqual([]);
    expect(selfPlayWorldSeeds(5, 3)).toEqual([5, 1, 2]);
    expect(() => selfPlayWorldSeeds(DEMO_WORLD.seed, MAX_TRAINING_WORLDS + 1)).toThrow(/--training-worlds 50: at most 49/);
    for (const s of EVAL_WORLD_SEEDS) expect(() => selfPlayWorldSeeds(s, 1)).toThrow(`--world-seed ${s} is an evaluation world`);
  });

  it('a run of several training worlds: one corpus each, every answer seed naming its own, and their held-out sets', async () => {
    const env = await worldEnvironment(DEMO_WORLD.seed, 3);
    expect(env.corpora?.length).toBe(3);
    expect(env.description).toMatch(/3 generated worlds, each its own corpus \(seeds 0, 1, 2;/);
    const byCorpus = [0, 1, 2].map((k) => (env.seeds ?? []).filter((s) => s.corpus === k));
    for (const [k, seeds] of byCorpus.entries()) {
      const world = new World({ seed: [0, 1, 2][k] as number, passages: DEMO_WORLD.passages });
      expect(seeds.map((s) => s.answer)).toEqual(world.synth.seeds.map((s) => s.answer));
      // Each corpus's search tool is its own world's index.
      const [hit] = await (env.corpora?.[k]?.searcher as NonNullable<typeof env.searcher>).search([world.passages[0]?.title as string], 1);
      expect(hit?.[0]?.title).toBe(world.passages[0]?.title);
    }
    const sets = await env.heldOut(TRAINING_WORLDS_DATA, 4);
    expect(sets.map((s) => s.dataset)).toEqual(['world-0', 'world-1', 'world-2']);
    for (const s of sets) expect(s.questions.length).toBe(4);
    // One world: the seeds name no corpus, as before there were several.
    const one = await worldEnvironment(DEMO_WORLD.seed);
    expect(one.corpora).toBeUndefined();
    expect((one.seeds ?? []).every((s) => s.corpus === undefined)).toBe(true);
  });

  it('cover every warm-start world the shipped model was trained in', () => {
    // A record of make-demo-model.ts lists its stages' commands; one of scripts/warm-start.ts its options (--worlds)
    // and the record of the model it started from, which lists its own.
    interface Record { stages?: Array<{ command?: string }>; options?: { worlds?: string }; fromRecord?: Record }
    const worldsOf = (r: Record | undefined): number[] =>
      r === undefined
        ? []
        : [
            ...(r.stages ?? []).map((s) => /--worlds (\d+)/.exec(s.command ?? '')).filter((m): m is RegExpExecArray => m !== null).map((m) => Number(m[1])),
            ...(r.options?.worlds !== undefined ? [Number(r.options.worlds)] : []),
            ...worldsOf(r.fromRecord),
          ];
    const worlds = worldsOf(JSON.parse(readFileSync(join(import.meta.dirname, '..', 'models', 'demo', 'warm-start.json'), 'utf8')) as Record);
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
