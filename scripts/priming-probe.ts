// Which priming a bank should start from, measured on the warm start before any training (docs/world.md,
// "Mined priming"): the greedy eval of models/demo with a new bank of each priming set, on the held-out
// questions of TRAINING worlds only (the self-play world and warm-start worlds: where settings may be chosen;
// never the evaluation worlds), with the paired interval of each set against no cards.
//   npx tsx scripts/priming-probe.ts --mined runs/mining/priming-cards.jsonl [--worlds 0,1,2,3] [--threads 1] [--out runs/priming-probe]
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gainText, pairedBootstrap } from '../src/eval/bootstrap.js';
import { evaluateSets, type EvalSet } from '../src/eval/runner.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { primedBankOptions } from '../src/selfplay/priming.js';
import { evalSettingsOf } from '../src/selfplay/step-settings.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend } from '../src/tensor/backend.js';
import { writeJsonAtomic } from '../src/util/atomic.js';
import { demoModelDir, worldEvalSets } from '../src/world/setup.js';
import { EVAL_WORLD_SEEDS, FRESH_WORLD } from '../src/world/world.js';

const { values } = parseArgs({ options: { mined: { type: 'string' }, worlds: { type: 'string', default: '0,1,2,3' }, threads: { type: 'string', default: '1' }, out: { type: 'string', default: 'runs/priming-probe' } } });
const worlds = (values.worlds as string).split(',').map(Number);
for (const w of worlds) if (EVAL_WORLD_SEEDS.includes(w) || w === FRESH_WORLD.seed) throw new Error(`--worlds: ${w} is an evaluation or the fresh world: settings are chosen on training worlds only`);
const out = values.out as string;
mkdirSync(out, { recursive: true });
const config = { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS } as TrainConfig;
await initBackend('wasm', { threads: Number(values.threads) });
const modelDir = demoModelDir();
const model = await CausalLM.load(modelDir);
const policy = new ModelPolicy('solver', model, await loadTokenizer(modelDir), undefined, {});
const sets: EvalSet[] = [];
for (const w of worlds) sets.push(...(await worldEvalSets('world', w, undefined)));

const variants: Array<{ name: string; seedCards: boolean; primingCards?: string } | { name: string; none: true }> = [
  { name: 'no cards', none: true },
  { name: 'seed cards', seedCards: true },
  ...(values.mined ? [{ name: 'mined cards', seedCards: false, primingCards: values.mined }, { name: 'seed and mined cards', seedCards: true, primingCards: values.mined }] : []),
];
const scores: Record<string, number[]> = {};
for (const v of variants) {
  let bank: SkillBank | undefined;
  if (!('none' in v)) {
    const path = join(out, `${v.name.replace(/ /g, '-')}.json`);
    rmSync(path, { force: true });
    bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), ...primedBankOptions({ priming: true, seedCards: v.seedCards, primingCards: v.primingCards }, modelDir, () => undefined), config: { renderTokenBudget: config.renderTokenBudget } });
  }
  const t0 = Date.now();
  const { records } = await evaluateSets({ policy, ...(bank ? { bank } : {}) }, sets, evalSettingsOf(config));
  await bank?.dispose();
  scores[v.name] = records.map((r) => r.em);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const vsNone = v.name === 'no cards' ? '' : `, against no cards ${gainText(pairedBootstrap([{ a: scores['no cards'] as number[], b: scores[v.name] as number[] }]))}`;
  process.stdout.write(`${v.name}: ${(100 * mean(scores[v.name] as number[])).toFixed(1)}% of ${records.length}${vsNone} (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  writeJsonAtomic(join(out, 'probe.json'), { worlds, scores });
}
model.dispose();
