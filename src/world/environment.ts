// The generated world as a task environment (src/agent/environment.ts, docs/world.md): BM25 over the world's
// passages, its answer seeds (held-out answers never among them), the held-out sets `world` (its own questions),
// `training-worlds` (those of every world the run trains in) and `eval-worlds` (the evaluation worlds', each in
// its own corpus), and its LLM-free roles: exact match with aliases for the judge, the RAG reader and the
// template distiller (./scripted-roles.ts). With --training-worlds N > 1 it is N worlds, each a corpus of its
// own (docs/world.md, "Training worlds"): every answer seed names its world, and is searched there.
import type { TaskEnvironment, TrainingCorpus } from '../agent/environment.js';
import type { AnswerSeed } from '../agent/roles.js';
import { EVAL_WORLDS_DATA } from './eval-worlds.js';
import { TemplateDistiller, WorldRagReader } from './scripted-roles.js';
import { TRAINING_WORLDS_DATA, WORLD_EVAL_DATA, worldEvalSets, worldFor, worldSeeds } from './setup.js';
import { selfPlayWorldSeeds } from './training-worlds.js';

export async function worldEnvironment(seed: number, trainingWorlds = 1): Promise<TaskEnvironment> {
  const worlds = selfPlayWorldSeeds(seed, trainingWorlds).map(worldFor);
  const corpora: TrainingCorpus[] = [];
  const seeds: AnswerSeed[] = [];
  for (const [k, world] of worlds.entries()) {
    const own = worldSeeds(world);
    corpora.push({ description: `world ${world.options.seed} (${world.passages.length} passages, ${own.length} answer seeds)`, searcher: await world.searcher(), ragReader: new WorldRagReader(world) });
    // With one world the seeds name no corpus, as before there were several.
    seeds.push(...(worlds.length > 1 ? own.map((s) => ({ ...s, corpus: k })) : own));
  }
  const first = corpora[0] as TrainingCorpus;
  return {
    description:
      worlds.length === 1
        ? `BM25 over the generated world of seed ${seed} (${(worlds[0] as (typeof worlds)[number]).passages.length} passages, ${seeds.length} answer seeds)`
        : `BM25 over ${worlds.length} generated worlds, each its own corpus (seeds ${worlds.map((w) => w.options.seed).join(', ')}; ${seeds.length} answer seeds)`,
    searcher: first.searcher,
    seeds,
    ...(worlds.length > 1 ? { corpora } : {}),
    heldOutNames: [WORLD_EVAL_DATA, TRAINING_WORLDS_DATA, EVAL_WORLDS_DATA],
    heldOut: (name, limit) => worldEvalSets(name, seed, limit, trainingWorlds),
    scripted: { judge: 'exact match with aliases', ragReader: first.ragReader as WorldRagReader, distiller: new TemplateDistiller() },
  };
}
