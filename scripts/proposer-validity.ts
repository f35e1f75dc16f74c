// How often a model's proposer writes a valid question in a world, by the hop count asked (docs/world.md, "The
// oracle supply of one- and two-hop questions"): --seeds answer seeds that admit that many hops, --proposals
// each at the world run's proposer settings (WORLD_DEFAULTS, --set overrides), no adapter (or --adapter DIR, a
// run's checkpoints/step-N/proposer). Each
// proposal goes through the rule checks and then the world RAG reader on the proposal's own results, without
// the run's distractor blocks (a block can only add facts, never make a question fail), so the valid count is
// what a step's validation would pass (with `--set '{"hopCheck":true}'`, its hop check too; with
// `--set '{"firstSearchCheck":true}'`, its first-search check). Prints a table
// of outcomes per hop count and writes them with --out.
//   npx tsx scripts/proposer-validity.ts [--model models/demo] [--world-seed 0] [--hops 1,2] [--seeds 24] [--proposals 4] [--threads 2] [--show] [--out FILE.json]
import { parseArgs } from 'node:util';
import { intFlag as int } from './flags.js';
import { loadPeftAdapter } from '../src/checkpoint/peft.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { parseConfigObject, TRAIN_DEFAULTS, type TrainConfig, validateConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { AnswerJudge } from '../src/agent/judge.js';
import { ragCheckMessages } from '../src/agent/prompts.js';
import { ragVerdict } from '../src/selfplay/step-judging.js';
import { ProposerRole } from '../src/agent/roles.js';
import { rolloutSettingsOf, stepSettingsOf } from '../src/selfplay/step-settings.js';
import { checkQuestion } from '../src/selfplay/validate.js';
import { initBackend } from '../src/tensor/backend.js';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { WorldRagReader } from '../src/world/scripted-roles.js';
import { demoModelDir, worldFor, worldSeeds } from '../src/world/setup.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    adapter: { type: 'string' },
    'world-seed': { type: 'string', default: '0' },
    hops: { type: 'string', default: '1,2' },
    seeds: { type: 'string', default: '24' },
    proposals: { type: 'string', default: '4' },
    'rollout-seed': { type: 'string', default: '7' },
    threads: { type: 'string', default: '2' },
    set: { type: 'string', default: '{}' },
    show: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const worldSeed = int('world-seed', values['world-seed'], 0);
const hopCounts = (values.hops as string).split(',').map((h) => int('hops', h, 1));
const seedCount = int('seeds', values.seeds, 1);
const perSeed = int('proposals', values.proposals, 1);
const rolloutSeed = int('rollout-seed', values['rollout-seed'], 0);
const config: TrainConfig = validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...parseConfigObject(JSON.parse(values.set as string), '--set') });

await initBackend('wasm', { threads: int('threads', values.threads, 1) });
const world = worldFor(worldSeed);
const searcher = await world.searcher();
const reader = new WorldRagReader(world);
const modelDir = values.model ?? demoModelDir();
const model = await CausalLM.load(modelDir);
const tokenizer = await loadTokenizer(modelDir);
const adapter = values.adapter ? loadPeftAdapter(values.adapter, 'proposer', model.config) : undefined;
const policy = new ModelPolicy('proposer', model, tokenizer, adapter, { enableThinking: config.enableThinking });
const settings = rolloutSettingsOf(config, 'proposer');
const proposer = new ProposerRole(policy, searcher, settings);
const { rules, ragMaxTokens } = stepSettingsOf(config);
// The world run's judge: exact match with aliases, no semantic fallback (docs/world.md, "LLM-free roles").
const judge = new AnswerJudge(undefined);

/** Per hop count: proposals, valid ones, and each way of failing (the step metrics' InvalidReason names). */
const results: Record<string, { proposals: number; valid: number; outcomes: Record<string, number> }> = {};
for (const hops of hopCounts) {
  // Seeds whose answer some chain of `hops` facts reaches (a seed's own hop count is the longest it admits).
  const seeds = worldSeeds(world)
    .filter((s) => s.hops >= hops)
    .slice(0, seedCount)
    .map((s) => ({ ...s, hops }));
  if (seeds.length === 0) throw new Error(`--hops ${hops}: no answer seed of world ${worldSeed} admits ${hops} hops`);
  const row = { proposals: 0, valid: 0, outcomes: {} as Record<string, number> };
  const count = (k: string): void => {
    row.outcomes[k] = (row.outcomes[k] ?? 0) + 1;
  };
  const proposed = await proposer.propose(seeds, perSeed, rolloutSeed);
  for (const [i, rollouts] of proposed.entries()) {
    const s = seeds[i] as (typeof seeds)[number];
    const golds = [s.answer, ...(s.aliases ?? [])];
    for (const r of rollouts) {
      row.proposals++;
      const check = checkQuestion(r, s.answer, s.aliases ?? [], rules);
      if (check.invalid || check.question === undefined) {
        count(check.invalid ?? 'no-question');
        continue;
      }
      const passed = await ragVerdict(reader, judge, { shard: i, messages: ragCheckMessages(check.question, r.retrieved.flat()), question: check.question, golds }, ragMaxTokens);
      // --set '{"hopCheck":true}': the step's hop check (docs/method.md, "Validating questions"), one search for the question itself.
      const oneSearch = passed && config.hopCheck && hops >= 2 ? ((await searcher.search([check.question], config.passagesPerQuery))[0] ?? []) : undefined;
      const answeredInOne = oneSearch !== undefined && (await ragVerdict(reader, judge, { shard: i, messages: ragCheckMessages(check.question, oneSearch), question: check.question, golds }, ragMaxTokens));
      // --set '{"firstSearchCheck":true}': the step's first-search check, the passages of the proposal's first search alone.
      const answeredFromFirst =
        passed && !answeredInOne && config.firstSearchCheck && hops >= 2 && (await ragVerdict(reader, judge, { shard: i, messages: ragCheckMessages(check.question, r.retrieved[0] ?? []), question: check.question, golds }, ragMaxTokens));
      const outcome = !passed ? 'rag-check-failed' : answeredInOne ? 'answerable-in-one-search' : answeredFromFirst ? 'answerable-from-first-search' : 'valid';
      count(outcome);
      if (outcome === 'valid') row.valid++;
      if (values.show) console.log(`${hops} hop(s) ${outcome.padEnd(24)} ${check.question} | answer ${s.answer} | searched ${r.queries.join(' ; ')}`);
    }
  }
  results[String(hops)] = row;
  console.log(`${hops} hop(s): ${row.valid} valid of ${row.proposals} (${seeds.length} seeds × ${perSeed}, T ${settings.temperature}); ${Object.entries(row.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')}`);
}
if (values.out) writeJsonAtomic(values.out, { model: modelDir, adapter: values.adapter ?? null, worldSeed, perSeed, temperature: settings.temperature, results });
adapter?.dispose();
model.dispose();
