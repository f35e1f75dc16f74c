// The worlds self-play trains in (docs/world.md, "Training worlds"): the world of --world-seed (the demo world,
// seed 0, by default) and, with --training-worlds N, the first N − 1 of the warm-start training worlds (seeds
// 1, 2, 3, …, as trainingWorldSeeds lists them: never the fresh world or an evaluation world).
//
// Why the warm-start worlds: the evaluation set leaves out every question with a fact that coincides by name
// with a trained fact (src/world/eval-worlds.ts, trainedFactKeys), and every fact of the warm-start worlds is
// counted as trained already. Self-play in another world would add trained facts that check does not know
// of; so at most WARM_START_WORLDS worlds beside --world-seed, and the 342 evaluation questions stay the same.
import { WARM_START_WORLDS } from './eval-worlds.js';
import { EVAL_WORLD_SEEDS, trainingWorldSeeds } from './world.js';

/** The most worlds a run can train in: --world-seed and the warm-start worlds. */
export const MAX_TRAINING_WORLDS = WARM_START_WORLDS + 1;

/**
 * The seeds of the worlds a run trains in, --world-seed first. Refuses an evaluation world as --world-seed
 * (nothing trains there) and more worlds than MAX_TRAINING_WORLDS.
 */
export function selfPlayWorldSeeds(worldSeed: number, count: number): number[] {
  if (EVAL_WORLD_SEEDS.includes(worldSeed)) {
    throw new Error(`--world-seed ${worldSeed} is an evaluation world: no training step runs there (docs/world.md, "The evaluation worlds"); pick another seed`);
  }
  if (!Number.isInteger(count) || count < 1) throw new Error(`--training-worlds must be a positive integer, got ${count}`);
  const others = trainingWorldSeeds(WARM_START_WORLDS).filter((s) => s !== worldSeed);
  if (count - 1 > others.length) {
    throw new Error(
      `--training-worlds ${count}: at most ${others.length + 1} (the world of --world-seed and the ${others.length} other warm-start worlds), so that the evaluation set's trained-fact check covers every training world (docs/world.md, "Training worlds")`,
    );
  }
  return [worldSeed, ...others.slice(0, count - 1)];
}
