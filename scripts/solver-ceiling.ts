// A diagnostic of the world run (docs/world.md, "The solver with an oracle question supply"): how far the
// solver's GRPO takes the held-out accuracy when the proposer is taken out of the loop. Each step draws
// --questions one-hop questions about the demo world's answer seeds (never a held-out answer), written by the
// world's generator (World.phrase over a fact into the seed), solves each G times with the solver adapter,
// judges by exact match and updates the solver as the world run does (WORLD_DEFAULTS, --set overrides). The
// generator's questions stand in for an ideal proposer here only: no training run or eval uses them.
// --max-hops H draws chains of 1..H facts into the seeds instead (each hop count equally often, or as
// --hop-pattern lists them), built backwards from the seed through random facts as the proposer would search
// them. --fresh also evaluates on the fresh world (FRESH_WORLD) at every --eval-at step, to tell learning to
// search from fitting the demo world.
// --training-worlds N draws the questions over the answer seeds of the N worlds a run with that setting trains in
// (each question's world uniformly, then its hop count), each solved in its own world's corpus, and evaluates on
// the first --eval-limit held-out questions of each of them (the world experiment's `--eval-data
// training-worlds --curve-limit`): the ceiling of that layout with an ideal proposer (docs/world.md, "The ceiling
// of this layout with an ideal proposer"); --world-per-step takes each step's questions from one world, in turn.
// Every eval after the first prints its gain over the first with the paired bootstrap 95% interval over the
// questions (this one run; docs/evaluation.md, "Intervals"), and --out keeps each question's exact match.
//   npx tsx scripts/solver-ceiling.ts [--seed 0] [--steps 24] [--questions 16] [--max-hops 1] [--hop-pattern 1,2,3] [--fresh] [--eval-at 0,8,16,24] [--threads 2] [--backend wasm] [--training-worlds 1 --eval-limit 12 --world-per-step] [--set '{"temperature":0.3}'] [--out FILE.json]
import { parseArgs } from 'node:util';
import { intFlag as int } from './flags.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { parseConfigObject, TRAIN_DEFAULTS, type TrainConfig, validateConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { exactMatch } from '../src/agent/judge.js';
import { SolverRole } from '../src/agent/roles.js';
import { hasAdvantageSignal } from '../src/selfplay/step.js';
import { advantageSettingsOf, grpoConfigOf, optimizerConfigOf, rolloutSettingsOf } from '../src/selfplay/step-settings.js';
import { freshRoles } from '../src/selfplay/run-setup.js';
import { GrpoPolicyUpdater, type RolloutGroup } from '../src/selfplay/updater.js';
import { type BackendChoice, initBackend } from '../src/tensor/backend.js';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { Rng } from '../src/util/rng.js';
import { gainText, pairedBootstrap } from '../src/eval/bootstrap.js';
import { evalWorld } from '../src/world/eval.js';
import { demoModelDir, worldFor } from '../src/world/setup.js';
import { chainInto } from '../src/world/transcripts.js';
import type { SynthFact } from '../src/corpus/synthetic/index.js';
import { DEMO_WORLD, FRESH_WORLD, World } from '../src/world/world.js';
import { selfPlayWorldSeeds } from '../src/world/training-worlds.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '0' },
    steps: { type: 'string', default: String(WORLD_DEFAULTS.steps) },
    questions: { type: 'string', default: '16' },
    'max-hops': { type: 'string', default: '1' },
    'hop-pattern': { type: 'string' },
    'world-per-step': { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    'eval-at': { type: 'string' },
    threads: { type: 'string', default: '2' },
    backend: { type: 'string', default: 'wasm' },
    'training-worlds': { type: 'string', default: '1' },
    'eval-limit': { type: 'string' },
    set: { type: 'string', default: '{}' },
    out: { type: 'string' },
  },
});
const seed = int('seed', values.seed, 0);
const steps = int('steps', values.steps, 1);
const perStep = int('questions', values.questions, 1);
const threads = int('threads', values.threads, 1);
const maxHops = int('max-hops', values['max-hops'], 1);
const trainingWorlds = int('training-worlds', values['training-worlds'], 1);
const evalLimit = values['eval-limit'] === undefined ? undefined : int('eval-limit', values['eval-limit'], 1);
if (values.fresh && trainingWorlds > 1) throw new Error('--fresh evaluates the demo world run of --training-worlds 1 only');
if (maxHops > 3) throw new Error(`--max-hops must be 1, 2 or 3 (the world's chains), got ${maxHops}`);
// --hop-pattern 1,1,1,1,1,2,2,2: question i of a step has the hop count at i modulo the list (default 1, 2, …,
// --max-hops in turn), so a step's batch can have another mix than equal thirds.
const hopPattern = (values['hop-pattern'] ?? Array.from({ length: maxHops }, (_, i) => String(i + 1)).join(',')).split(',').map((h) => int('hop-pattern', h, 1));
if (hopPattern.some((h) => h > maxHops)) throw new Error(`--hop-pattern ${values['hop-pattern']}: a hop count above --max-hops ${maxHops}`);
const evalAt = new Set((values['eval-at'] ?? `0,${Math.round(steps / 3)},${Math.round((2 * steps) / 3)},${steps}`).split(',').map((s) => int('eval-at', s, 0)));
const config: TrainConfig = validateConfig({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...parseConfigObject(JSON.parse(values.set as string), '--set'), steps, seed });

await initBackend(values.backend as BackendChoice, { threads });
const worlds = selfPlayWorldSeeds(DEMO_WORLD.seed, trainingWorlds).map(worldFor);
const searchers = await Promise.all(worlds.map((w) => w.searcher()));
const modelDir = demoModelDir();
const model = await CausalLM.load(modelDir);
const tokenizer = await loadTokenizer(modelDir);
// The trainer's adapters (the same LoRA and seeds) and AdamW; only the solver is updated.
const roles = freshRoles(config, model.config);
const updater = new GrpoPolicyUpdater(model, roles, grpoConfigOf(config, tokenizer.padTokenId), advantageSettingsOf(config));
const policy = new ModelPolicy('solver', model, tokenizer, roles.solver.adapter, { enableThinking: config.enableThinking });
const settings = rolloutSettingsOf(config, 'solver');
const solvers = searchers.map((searcher) => new SolverRole(policy, searcher, undefined, settings));

// Every one-hop question into an answer seed that does not name its answer; with --max-hops, also up to
// CHAINS_PER_SEED random longer chains into each seed (distinct entities, built backwards from the seed).
const CHAINS_PER_SEED = 4;
type Pick = { question: string; golds: string[]; hops: number; world: number };
const poolsByWorld = worlds.map((world, w) => {
  const pools: Pick[][] = Array.from({ length: maxHops }, () => []);
  const wording = new Rng(1000 + seed + 7919 * w);
  for (const s of world.synth.seeds) {
    const golds = world.golden(s.entityId);
    const add = (hops: number, path: SynthFact[]): void => {
      const question = world.phrase(path, wording);
      if (!golds.some((g) => question.toLowerCase().includes(g.toLowerCase()))) pools[hops - 1]?.push({ question, golds, hops, world: w });
    };
    for (const f of world.factsInto(s.entityId)) add(1, [f]);
    for (let hops = 2; hops <= maxHops; hops++) {
      for (let c = 0; c < CHAINS_PER_SEED; c++) {
        const path = chainInto(world, s.entityId, hops, wording);
        if (path) add(hops, path);
      }
    }
  }
  pools.forEach((p, i) => {
    if (p.length === 0) throw new Error(`--max-hops ${maxHops}: no ${i + 1}-hop chain into an answer seed of world ${world.options.seed}`);
  });
  return pools;
});
const counts = Array.from({ length: maxHops }, (_, i) => poolsByWorld.reduce((n, pools) => n + (pools[i]?.length ?? 0), 0));
console.log(`oracle supply: ${counts.map((n, i) => `${n} ${i + 1}-hop`).join(', ')} questions about the answer seeds of ${worlds.length} world(s); ${perStep} a step, G ${config.groupSize}, ${config.solverEpochs} epochs, lr ${optimizerConfigOf(config, 'solver').lr}, T ${settings.temperature}`);

const fresh = values.fresh ? new World(FRESH_WORLD) : undefined;
const freshSearcher = fresh ? await fresh.searcher() : undefined;
// em: each held-out question's exact match, pooled over the worlds in a fixed order, so two points pair up.
const curve: Array<{ step: number; accuracy: number; byHops: Record<string, number>; em: number[]; fresh?: { accuracy: number; byHops: Record<string, number>; em: number[] } }> = [];
const stepRows: Array<{ step: number; rolloutAccuracy: number; mixedGroups: number; mixedByHops: Record<string, number>; seconds: number }> = [];
const evalSettings = { maxTurns: settings.maxTurns, maxTokensPerTurn: settings.maxTokensPerTurn, maxResponseTokens: settings.maxResponseTokens, passagesPerQuery: settings.passagesPerQuery };
const hopsOf = (r: { byHops: Record<string, { accuracy: number }> }): Record<string, number> => Object.fromEntries(Object.entries(r.byHops).map(([h, v]) => [h, v.accuracy]));
const describe = (accuracy: number, byHops: Record<string, number>): string =>
  `${(100 * accuracy).toFixed(1)}% (by hops ${Object.entries(byHops).map(([h, a]) => `${h}: ${(100 * a).toFixed(1)}`).join(', ')})`;
const evaluate = async (step: number): Promise<void> => {
  // Every world's first --eval-limit held-out questions, pooled (hop accuracies weighted by their questions).
  const hopRight: Record<string, number> = {};
  const hopTotal: Record<string, number> = {};
  const em: number[] = [];
  for (const [w, world] of worlds.entries()) {
    const r = await evalWorld(policy, searchers[w] as (typeof searchers)[number], world.heldOut.slice(0, evalLimit ?? world.heldOut.length), { settings: evalSettings });
    em.push(...r.em);
    for (const [h, v] of Object.entries(r.byHops)) {
      hopRight[h] = (hopRight[h] ?? 0) + v.accuracy * v.n;
      hopTotal[h] = (hopTotal[h] ?? 0) + v.n;
    }
  }
  const sum = (xs: Record<string, number>): number => Object.values(xs).reduce((a, b) => a + b, 0);
  const point: (typeof curve)[number] = { step, accuracy: sum(hopRight) / sum(hopTotal), byHops: Object.fromEntries(Object.keys(hopTotal).map((h) => [h, (hopRight[h] as number) / (hopTotal[h] as number)])), em };
  if (fresh && freshSearcher) {
    const f = await evalWorld(policy, freshSearcher, fresh.heldOut, { settings: evalSettings });
    point.fresh = { accuracy: f.accuracy, byHops: hopsOf(f), em: f.em };
  }
  // The gain over the first evaluated step, with its paired bootstrap 95% interval over these questions (one run).
  const first = curve[0];
  const gain = (a: number[], b: number[]): string => `${gainText(pairedBootstrap([{ a, b }]))} over step ${first?.step}`;
  const heldOutGain = first ? `, ${gain(first.em, point.em)}` : '';
  const freshGain = first?.fresh && point.fresh ? `, ${gain(first.fresh.em, point.fresh.em)}` : '';
  curve.push(point);
  console.log(`held-out at step ${step}: ${describe(point.accuracy, point.byHops)}${heldOutGain}${point.fresh ? `; fresh world ${describe(point.fresh.accuracy, point.fresh.byHops)}${freshGain}` : ''}`);
};
if (evalAt.has(0)) await evaluate(0);
const draw = new Rng(seed);
for (let step = 1; step <= steps; step++) {
  const started = performance.now();
  const picks = Array.from({ length: perStep }, (_, i) => {
    // --world-per-step: every question of step s from world (s − 1) mod N, as a training step proposes in one
    // corpus (src/selfplay/seed-draw.ts); else each question's world drawn uniformly.
    const pools = poolsByWorld[values['world-per-step'] ? (step - 1) % worlds.length : worlds.length === 1 ? 0 : draw.int(worlds.length)] as Pick[][];
    const hopsPool = pools[(hopPattern[i % hopPattern.length] as number) - 1] as Pick[];
    return hopsPool[draw.int(hopsPool.length)] as Pick;
  });
  // Each world's questions solved in its own corpus; the groups keep the picks' order.
  const groups: RolloutGroup[] = new Array(picks.length);
  for (let w = 0; w < worlds.length; w++) {
    const mine = picks.flatMap((p, i) => (p.world === w ? [i] : []));
    if (mine.length === 0) continue;
    const solved = await (solvers[w] as SolverRole).solve(mine.map((i) => (picks[i] as Pick).question), config.groupSize, worlds.length === 1 ? seed * 100_000 + step : seed * 100_000 + step * 100 + w);
    solved.forEach((g, k) => {
      const pick = picks[mine[k] as number] as Pick;
      groups[mine[k] as number] = { rollouts: g.rollouts, rewards: g.rollouts.map((r) => (r.final !== undefined && exactMatch(r.final, pick.golds) ? 1 : 0)) };
    });
  }
  const trained = config.skipUniformGroups ? groups.filter(hasAdvantageSignal) : groups;
  for (let epoch = 0; epoch < config.solverEpochs && trained.length > 0; epoch++) await updater.update('solver', trained);
  const rewards = groups.flatMap((g) => g.rewards);
  const mixedByHops: Record<string, number> = {};
  groups.forEach((g, i) => {
    const h = String((picks[i] as Pick).hops);
    mixedByHops[h] = (mixedByHops[h] ?? 0) + (hasAdvantageSignal(g) ? 1 : 0);
  });
  const row = { step, rolloutAccuracy: rewards.reduce((a, b) => a + b, 0) / rewards.length, mixedGroups: groups.filter(hasAdvantageSignal).length, mixedByHops, seconds: (performance.now() - started) / 1000 };
  stepRows.push(row);
  console.log(`step ${step}/${steps}: rollout accuracy ${(100 * row.rolloutAccuracy).toFixed(0)}%, ${row.mixedGroups} of ${perStep} groups with 0 < p̂ < 1 (by hops ${JSON.stringify(row.mixedByHops)}), ${row.seconds.toFixed(0)} s`);
  if (evalAt.has(step)) await evaluate(step);
}
if (values.out) writeJsonAtomic(values.out, { seed, steps, questionsPerStep: perStep, maxHops, hopPattern, worldPerStep: values['world-per-step'], trainingWorlds, evalLimit: evalLimit ?? null, backend: values.backend, overrides: JSON.parse(values.set as string), curve, stepRows });
model.dispose();
