// What the trainer needs to play in a world (`--corpus world --world-seed N`, and the shipped warm-start model
// `--model demo`): the answer seeds with their aliases, the held-out questions in the eval's format, and the
// model folder. See docs/world.md.
import type { EvalQuestion } from '../eval/dataset.js';
import type { EvalSet } from '../eval/runner.js';
import type { AnswerSeed } from '../agent/roles.js';
import { asEvalQuestions, EVAL_WORLDS_DATA, evalWorlds } from './eval-worlds.js';
import { selfPlayWorldSeeds } from './training-worlds.js';
import { DEMO_WORLD, World } from './world.js';

/** `--corpus world`: the generated world of `--world-seed` (the demo world at seed 0). */
export const WORLD_CORPUS = 'world';
/** `--eval-data world`: the held-out questions of the world the run plays in. */
export const WORLD_EVAL_DATA = 'world';
/** `--eval-data training-worlds`: the held-out questions of every world the run trains in (--training-worlds). */
export const TRAINING_WORLDS_DATA = 'training-worlds';
// `--model demo` (the warm-start model shipped in models/demo) is resolved with every other model name in
// src/model/model-name.ts.
export { DEMO_MODEL_NAME, demoModelDir, demoModelPath } from '../checkpoint/model-name.js';

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
  return asEvalQuestions(world.options.seed, world.heldOut.slice(0, limit));
}

/** Whether an eval data name is one of the worlds' (`world`, `training-worlds`, `eval-worlds`). */
export function isWorldEvalData(data: string | undefined): boolean {
  return data === WORLD_EVAL_DATA || data === TRAINING_WORLDS_DATA || data === EVAL_WORLDS_DATA;
}

/**
 * The held-out sets of a world eval data name, each searched in its own world's corpus (docs/world.md, "The
 * evaluation worlds"): `world` = the held-out questions of world `worldSeed` (in-world questions when it is the
 * world the run plays in); `training-worlds` = those of each of the run's `trainingWorlds` worlds (in-world
 * questions too: their facts lie on chains into the run's answer seeds); `eval-worlds` = those of every
 * evaluation world, trained facts left out. `limit` is per world.
 */
export async function worldEvalSets(data: string, worldSeed: number, limit: number | undefined, trainingWorlds = 1): Promise<EvalSet[]> {
  if (data === WORLD_EVAL_DATA || data === TRAINING_WORLDS_DATA) {
    const sets: EvalSet[] = [];
    for (const seed of data === WORLD_EVAL_DATA ? [worldSeed] : selfPlayWorldSeeds(worldSeed, trainingWorlds)) {
      const world = worldFor(seed);
      const questions = worldHeldOut(world, limit ?? world.heldOut.length);
      sets.push({ dataset: questions[0]?.dataset ?? `world-${seed}`, questions, searcher: await world.searcher() });
    }
    return sets;
  }
  if (data === EVAL_WORLDS_DATA) {
    const sets: EvalSet[] = [];
    for (const w of evalWorlds()) {
      const questions = asEvalQuestions(w.seed, w.questions.slice(0, limit ?? w.questions.length));
      sets.push({ dataset: questions[0]?.dataset ?? `world-${w.seed}`, questions, searcher: await w.world.searcher() });
    }
    return sets;
  }
  throw new Error(`world eval data: expected ${WORLD_EVAL_DATA}, ${TRAINING_WORLDS_DATA} or ${EVAL_WORLDS_DATA}, got ${data}`);
}
