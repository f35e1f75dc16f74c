// How many of the training worlds' held-out questions the hop check would call answerable from one search
// (docs/method.md, "Validating questions"; docs/world.md, "The hop check"): each question, as written, is
// searched once in its world (the world run's passages per search) and the world's RAG reader answers it from
// those passages alone, judged by exact match with aliases. Prints the count by hop count. Training worlds
// only: nothing here reads an evaluation world.
//   npx tsx scripts/one-search-answerable.ts [--training-worlds 8] [--limit 57]
import { parseArgs } from 'node:util';
import { intFlag as int } from './flags.js';
import { AnswerJudge } from '../src/agent/judge.js';
import { ragCheckMessages } from '../src/agent/prompts.js';
import { ragVerdict } from '../src/selfplay/step-judging.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { WorldRagReader } from '../src/world/scripted-roles.js';
import { worldFor, worldHeldOut } from '../src/world/setup.js';
import { selfPlayWorldSeeds } from '../src/world/training-worlds.js';

const { values } = parseArgs({ options: { 'training-worlds': { type: 'string', default: '8' }, limit: { type: 'string', default: '57' } } });
const worlds = int('training-worlds', values['training-worlds'], 1);
const limit = int('limit', values.limit, 1);
const { passagesPerQuery: passages, ragMaxTokens } = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS };
// The world run's judge: exact match with aliases (docs/world.md, "LLM-free roles").
const judge = new AnswerJudge(undefined);
const byHops = new Map<number, { questions: number; answered: number }>();
for (const seed of selfPlayWorldSeeds(0, worlds)) {
  const world = worldFor(seed);
  const reader = new WorldRagReader(world);
  const questions = worldHeldOut(world, limit);
  const results = await (await world.searcher()).search(questions.map((q) => q.question), passages);
  for (const [i, q] of questions.entries()) {
    const item = { shard: 0, messages: ragCheckMessages(q.question, results[i] ?? []), question: q.question, golds: q.goldenAnswers };
    const answered = await ragVerdict(reader, judge, item, ragMaxTokens);
    const hops = q.hops ?? 0;
    const row = byHops.get(hops) ?? { questions: 0, answered: 0 };
    byHops.set(hops, { questions: row.questions + 1, answered: row.answered + (answered ? 1 : 0) });
  }
}
console.log(`held-out questions of ${worlds} training world(s), the first ${limit} of each, one search of ${passages} passages:`);
for (const [hops, r] of [...byHops].sort((a, b) => a[0] - b[0])) console.log(`  ${hops} hop(s): ${r.answered} of ${r.questions} answered from one search (${((100 * r.answered) / r.questions).toFixed(0)}%)`);
