// The step-0 card controls of a warm start (docs/world.md, "Card literacy"), on the held-out questions of
// TRAINING worlds only (never an evaluation world): greedy, the world run's eval settings, each model with
//   none       no cards (base);
//   priming    a new bank primed with the model folder's priming cards, the top 3 in the run's render budget
//              (base-On, as a run's step-0 eval with its bank);
//   random     3 cards of that bank drawn at random (a fixed draw per question text): what a block's presence costs;
//   two-hop    the one-hop questions only, each with the best-ranked decomposition card of two or more links of
//              that bank: whether a multi-hop card makes a one-hop answer search on.
// For each, EM (by hop count) and the paired bootstrap 95% interval over questions of its difference from none,
// and whether the control holds by the rule written before the runs: priming − none above zero (interval clear of
// zero), random − none ≥ −1 point, two-hop − none on one-hop questions ≥ −1 point.
//   npx tsx scripts/card-controls.ts [--models models/demo,DIR] [--worlds 8,9,10] [--priming-cards FILE]
//     [--backend native] [--threads 2] [--out runs/card-controls]
// OUT/table.md, OUT/results.json, and OUT/predictions/<model's index>-<mode>.jsonl (every rollout).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag } from './flags.js';
import { gainText, type PairedGain, pairedBootstrap } from '../src/eval/bootstrap.js';
import { evaluateSets, type EvalSet, type PredictionRecord } from '../src/eval/runner.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { primedBankOptions } from '../src/selfplay/priming.js';
import { evalSettingsOf } from '../src/selfplay/step-settings.js';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { SkillBank } from '../src/skills/bank.js';
import { retrieveAtRandom, retrieveOnly } from '../src/skills/control-retrieval.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend, parseBackendChoice } from '../src/tensor/backend.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { demoModelDir, worldEvalSets } from '../src/world/setup.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD } from '../src/world/world.js';

const { values } = parseArgs({
  options: {
    models: { type: 'string' },
    worlds: { type: 'string', default: '8,9,10' },
    'priming-cards': { type: 'string' },
    backend: { type: 'string', default: 'native' },
    threads: { type: 'string', default: '2' },
    out: { type: 'string', default: 'runs/card-controls' },
  },
});
const models = (values.models ?? demoModelDir()).split(',');
const worlds = (values.worlds as string).split(',').map((w) => intFlag('worlds', w, 1));
for (const w of worlds) {
  if (EVAL_WORLD_SEEDS.includes(w) || w === FRESH_WORLD.seed || w === DEMO_WORLD.seed) throw new Error(`--worlds: ${w} is not a training world other than the self-play world (the controls read training worlds only)`);
}
const out = values.out as string;
mkdirSync(join(out, 'predictions'), { recursive: true });
const config = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, ...(values['priming-cards'] ? { primingCards: values['priming-cards'] } : {}) } as TrainConfig;
const settings = evalSettingsOf(config);
await initBackend(parseBackendChoice(values.backend as string), { threads: intFlag('threads', values.threads, 1) });
const sets: EvalSet[] = [];
for (const w of worlds) sets.push(...(await worldEvalSets('world', w, undefined)));
const questions = sets.reduce((n, s) => n + s.questions.length, 0);

/** Links of a decomposition card, as its description states them ("… has 2 links: …"). */
const linksOf = (description: string): number => Number(/ has (\d+) links?:/.exec(description)?.[1] ?? 0);

type Mode = 'none' | 'priming' | 'random' | 'two-hop';
const MODES: Mode[] = ['none', 'priming', 'random', 'two-hop'];
const results: Record<string, Record<Mode, PredictionRecord[]>> = {};
const lines: string[] = [];
const pct = (xs: readonly number[]): string => ((100 * xs.reduce((a, b) => a + b, 0)) / Math.max(1, xs.length)).toFixed(1);
const byHops = (rs: readonly PredictionRecord[]): string => [1, 2, 3].map((h) => pct(rs.filter((r) => r.hops === h).map((r) => r.em))).join(' / ');
const diff = (a: readonly PredictionRecord[], b: readonly PredictionRecord[]): PairedGain => pairedBootstrap([{ a: a.map((r) => r.em), b: b.map((r) => r.em) }], { seed: 1 });
lines.push(`Training worlds ${worlds.join(', ')}: ${questions} held-out questions; greedy, the world run's eval settings. Command: \`npx tsx scripts/card-controls.ts ${process.argv.slice(2).join(' ')}\``, '');
lines.push('| model | cards | EM | 1-hop / 2-hop / 3-hop | − no cards [95% CI] | control holds |', '|---|---|---|---|---|---|');
for (const dir of models) {
  const model = await CausalLM.load(dir);
  const policy = new ModelPolicy('solver', model, await loadTokenizer(dir), undefined, { enableThinking: false });
  const got = {} as Record<Mode, PredictionRecord[]>;
  for (const mode of MODES) {
    let bank: SkillBank | undefined;
    if (mode !== 'none') {
      const path = join(out, 'bank.json');
      rmSync(path, { force: true });
      bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), ...primedBankOptions(config, dir, (l) => process.stdout.write(`${l}\n`)), config: { renderTokenBudget: config.renderTokenBudget, topK: config.skillsTopK } });
      if (mode === 'random') retrieveAtRandom(bank);
      if (mode === 'two-hop') {
        if (!bank.cards.some((c) => c.category === 'decomposition' && linksOf(c.description) >= 2)) throw new Error(`${dir}: its priming bank has no decomposition card of two or more links for the two-hop control`);
        retrieveOnly(bank, (c) => c.category === 'decomposition' && linksOf(c.description) >= 2, bank.cards.length);
      }
    }
    const chosen = mode === 'two-hop' ? sets.map((s) => ({ ...s, questions: s.questions.filter((q) => q.hops === 1) })) : sets;
    const { records } = await evaluateSets({ policy, ...(bank ? { bank } : {}) }, chosen, settings);
    await bank?.dispose();
    got[mode] = records;
    // Every rollout as the eval writes it (queries, retrieved passages, the cards shown), to read what a block changed.
    writeFileAtomic(join(out, 'predictions', `${models.indexOf(dir)}-${mode}.jsonl`), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    process.stdout.write(`${dir} ${mode}: ${pct(records.map((r) => r.em))}% of ${records.length}\n`);
  }
  model.dispose();
  results[dir] = got;
  const none = got.none;
  const oneHopNone = none.filter((r) => r.hops === 1);
  const prim = diff(none, got.priming);
  const rand = diff(none, got.random);
  const two = diff(oneHopNone, got['two-hop']);
  const holds = (ok: boolean): string => (ok ? 'yes' : '**no**');
  lines.push(`| ${dir} | none | ${pct(none.map((r) => r.em))} | ${byHops(none)} | — | — |`);
  lines.push(`| ${dir} | priming (top 3) | ${pct(got.priming.map((r) => r.em))} | ${byHops(got.priming)} | ${gainText(prim)} | ${holds(prim.low > 0)} (interval above 0) |`);
  lines.push(`| ${dir} | 3 random cards | ${pct(got.random.map((r) => r.em))} | ${byHops(got.random)} | ${gainText(rand)} | ${holds(rand.gain >= -0.01)} (≥ −1 point) |`);
  lines.push(`| ${dir} | one-hop questions, a two-hop card | ${pct(got['two-hop'].map((r) => r.em))} (no cards ${pct(oneHopNone.map((r) => r.em))}) | ${pct(got['two-hop'].map((r) => r.em))} / — / — | ${gainText(two)} | ${holds(two.gain >= -0.01)} (≥ −1 point) |`);
}
const table = `${lines.join('\n')}\n`;
writeFileAtomic(join(out, 'table.md'), table);
writeJsonAtomic(join(out, 'results.json'), { worlds, models, em: Object.fromEntries(Object.entries(results).map(([m, r]) => [m, Object.fromEntries(MODES.map((k) => [k, r[k].map((x) => ({ id: x.id, hops: x.hops, em: x.em }))]))])) });
process.stdout.write(`\n${table}`);
