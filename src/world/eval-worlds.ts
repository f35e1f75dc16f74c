// The evaluation worlds (docs/world.md, "The evaluation worlds"): generated worlds in which no self-play step
// and no warm-start stage ever ran, whose held-out questions are the held-out set every claim rests on.
//
// Which worlds train what:
// - the self-play world (seed 0, DEMO_WORLD): `npx sesa-train` proposes and solves in it; its own 57 held-out
//   questions are *in-world* questions: their facts lie on chains into the run's answer seeds, so a gain there
//   mixes search skill with learning that world's facts;
// - the warm-start worlds (trainingWorldSeeds(WARM_START_WORLDS)): the expert transcripts of models/demo;
// - the evaluation worlds (EVAL_WORLD_SEEDS): nothing but evaluation. Their seeds were fixed before any run
//   was evaluated on them, and no setting is chosen on them.
//
// Names repeat across worlds (one syllable table), so a fact of an evaluation world can coincide with a
// training world's fact by name: the same subject name, relation and object name. Such a fact could be known
// from training rather than found by search, so a question with one on its chain is left out of the set
// (heldOutFactProblems checks the result).
import type { HeldOutQuestion } from '../corpus/synthetic/index.js';
import type { EvalQuestion } from '../eval/dataset.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD, trainingWorldSeeds, World } from './world.js';

export { EVAL_WORLD_SEEDS };

/** How many training worlds the warm start's transcripts came from (models/demo/warm-start.json: `--worlds 48` at most). */
export const WARM_START_WORLDS = 48;

/** `--eval-data eval-worlds` / `eval --data eval-worlds`: the evaluation worlds' held-out questions. */
export const EVAL_WORLDS_DATA = 'eval-worlds';

/** The dataset name of one world's held-out questions. */
export function worldDatasetName(seed: number): string {
  return `world-${seed}`;
}

/** Every world something was trained in: the self-play world and the warm-start worlds. */
export function trainedWorldSeeds(): number[] {
  return [DEMO_WORLD.seed, ...trainingWorldSeeds(WARM_START_WORLDS)];
}

function worldOf(seed: number): World {
  return new World({ seed, passages: DEMO_WORLD.passages });
}

/** A fact as names: subject name, relation, object name (lowercased). */
function factKey(world: World, subject: string, relation: string, object: string): string {
  return `${world.entity(subject).name.toLowerCase()}\u0000${relation}\u0000${world.entity(object).name.toLowerCase()}`;
}

/**
 * The facts a training question can pass through, as names: in the self-play world every fact on a chain of up
 * to three hops into one of its answer seeds (the proposer builds its questions backwards from a seed), and in
 * the warm-start worlds every fact (their transcripts could state any).
 */
export function trainedFactKeys(): Set<string> {
  const keys = new Set<string>();
  const selfPlay = worldOf(DEMO_WORLD.seed);
  const into = (id: string, depth: number, seen: Set<string>): void => {
    if (depth === 0) return;
    for (const f of selfPlay.factsInto(id)) {
      keys.add(factKey(selfPlay, f.subject, f.relation, f.object));
      if (seen.has(f.subject)) continue;
      seen.add(f.subject);
      into(f.subject, depth - 1, seen);
      seen.delete(f.subject);
    }
  };
  for (const s of selfPlay.synth.seeds) into(s.entityId, 3, new Set([s.entityId]));
  for (const seed of trainingWorldSeeds(WARM_START_WORLDS)) {
    const w = worldOf(seed);
    for (const f of w.synth.facts) keys.add(factKey(w, f.subject, f.relation, f.object));
  }
  return keys;
}

/** The facts of a held-out question's chain, as names. */
export function questionFactKeys(world: World, q: HeldOutQuestion): string[] {
  return q.relations.map((r, i) => factKey(world, q.chain[i] as string, r, q.chain[i + 1] as string));
}

export interface EvalWorldSet {
  seed: number;
  world: World;
  /** The held-out questions kept (none has a trained fact on its chain). */
  questions: HeldOutQuestion[];
  /** Questions left out because a fact of their chain coincides with a trained one. */
  excluded: HeldOutQuestion[];
}

let cached: EvalWorldSet[] | undefined;

/** The evaluation worlds with their held-out questions, trained facts left out (computed once per process). */
export function evalWorlds(): EvalWorldSet[] {
  if (cached) return cached;
  const trained = trainedFactKeys();
  cached = EVAL_WORLD_SEEDS.map((seed) => {
    const world = worldOf(seed);
    const questions: HeldOutQuestion[] = [];
    const excluded: HeldOutQuestion[] = [];
    for (const q of world.heldOut) (questionFactKeys(world, q).some((k) => trained.has(k)) ? excluded : questions).push(q);
    return { seed, world, questions, excluded };
  });
  return cached;
}

/** One world's held-out questions as eval questions (dataset `world-<seed>`). */
export function asEvalQuestions(seed: number, questions: readonly HeldOutQuestion[]): EvalQuestion[] {
  const dataset = worldDatasetName(seed);
  return questions.map((q) => ({ id: q.id, dataset, question: q.question, goldenAnswers: [...q.golden_answers], hops: q.hops }));
}

/**
 * Problems with the evaluation set, empty when it is sound: an evaluation world that is also a trained world
 * (or the fresh world the docs measured on), or a kept question with a trained fact on its chain.
 */
export function heldOutFactProblems(sets: readonly EvalWorldSet[] = evalWorlds()): string[] {
  const problems: string[] = [];
  const trainedSeeds = new Set([...trainedWorldSeeds(), FRESH_WORLD.seed]);
  const trained = trainedFactKeys();
  for (const s of sets) {
    if (trainedSeeds.has(s.seed)) problems.push(`evaluation world ${s.seed} is a training world`);
    for (const q of s.questions) {
      const hit = questionFactKeys(s.world, q).find((k) => trained.has(k));
      if (hit) problems.push(`world ${s.seed} ${q.id}: the fact ${hit.replaceAll('\u0000', ' | ')} is a trained fact`);
    }
  }
  return problems;
}
