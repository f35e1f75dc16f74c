// What the trainer needs to play in a world (`--corpus world --world-seed N`, and the shipped warm-start model
// `--model demo`): the answer seeds with their aliases, the held-out questions in the eval's format, and the
// model folder. See docs/world.md.
import type { EvalQuestion } from '../eval/dataset.js';
import type { AnswerSeed } from '../selfplay/roles.js';
import { DEMO_WORLD, World } from './world.js';

/** `--corpus world`: the generated world of `--world-seed` (the demo world at seed 0). */
export const WORLD_CORPUS = 'world';
/** `--eval-data world`: the held-out questions of the world the run plays in. */
export const WORLD_EVAL_DATA = 'world';
// `--model demo` (the warm-start model shipped in models/demo) is resolved with every other model name in
// src/model/model-name.ts.
export { DEMO_MODEL_NAME, demoModelDir, demoModelPath } from '../model/model-name.js';

export function worldFor(seed: number): World {
  return new World({ seed, passages: DEMO_WORLD.passages });
}

/** The world's answer seeds (held-out answers are never among them) with every other accepted spelling. */
export function worldSeeds(world: World): AnswerSeed[] {
  return world.synth.seeds.map((s) => {
    const aliases = world.golden(s.entityId).filter((a) => a !== s.answer);
    return { answer: s.answer, hops: s.hops, ...(aliases.length > 0 ? { aliases } : {}) };
  });
}

/** The world's held-out questions as eval questions (the first `limit`, balanced by hop count by the generator). */
export function worldHeldOut(world: World, limit: number): EvalQuestion[] {
  const name = `world-${world.options.seed}`;
  return world.heldOut.slice(0, limit).map((q) => ({ id: q.id, dataset: name, question: q.question, goldenAnswers: [...q.golden_answers] }));
}
