// The generated world as a task environment (src/agent/environment.ts, docs/world.md): BM25 over the world's
// passages, its answer seeds (held-out answers never among them), the held-out sets `world` (its own questions)
// and `eval-worlds` (the evaluation worlds', each in its own corpus), and its LLM-free roles: exact match with
// aliases for the judge, the RAG reader and the template distiller (./scripted-roles.ts).
import type { TaskEnvironment } from '../agent/environment.js';
import { EVAL_WORLDS_DATA } from './eval-worlds.js';
import { TemplateDistiller, WorldRagReader } from './scripted-roles.js';
import { WORLD_EVAL_DATA, worldEvalSets, worldFor, worldSeeds } from './setup.js';

export async function worldEnvironment(seed: number): Promise<TaskEnvironment> {
  const world = worldFor(seed);
  const seeds = worldSeeds(world);
  return {
    description: `BM25 over the generated world of seed ${seed} (${world.passages.length} passages, ${seeds.length} answer seeds)`,
    searcher: await world.searcher(),
    seeds,
    heldOutNames: [WORLD_EVAL_DATA, EVAL_WORLDS_DATA],
    heldOut: (name, limit) => worldEvalSets(name, seed, limit),
    scripted: { judge: 'exact match with aliases', ragReader: new WorldRagReader(world), distiller: new TemplateDistiller() },
  };
}
