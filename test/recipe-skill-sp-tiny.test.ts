// Skill Self-Play on a real (tiny, random) model: the proposer and solver are LoRA adapters on one frozen
// Qwen3, sampled through the model and updated by GRPO. First an iteration where the model itself proposes
// (its random text never passes the mask: reward 0, the solver is never called); then one where a scripted
// proposer supplies valid puzzles, so the real solver answers them and both adapters are updated. Live
// tensors stay flat across an iteration.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { loadPeftAdapter } from '../src/checkpoint/peft.js';
import { LoraAdapter } from '../src/model/lora.js';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';
import { SKILL_SP_DEFAULTS, type SkillSpConfig } from '../src/recipes/skill-sp/config.js';
import { skillSpIteration } from '../src/recipes/skill-sp/iteration.js';
import { SkillLibrary } from '../src/recipes/skill-sp/library.js';
import { seedPackages } from '../src/recipes/skill-sp/packages.js';
import { PolicySampler } from '../src/recipes/skill-sp/policy-sampler.js';
import { runSkillSp } from '../src/recipes/skill-sp/run.js';
import { holdTransposesIfRoom } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { GrpoPolicyUpdater, type TrainedRole } from '../src/selfplay/updater.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { metricsWithoutTimings } from './helpers/cli-process.js';
import { ScriptedProposer } from './recipe-skill-sp-doubles.js';

let root: string;
let modelDir: string;
let model: CausalLM;
let tokenizer: Tokenizer;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'ssp-tiny-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 1, hidden: 32, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, vocab: 'full', seed: 3 }).dir;
  model = await CausalLM.load(modelDir);
  tokenizer = await loadTokenizer(modelDir);
});
afterAll(() => {
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});

function role(name: 'proposer' | 'solver', seed: number): TrainedRole {
  // B random (not zero) so that the adapters change the policy and the GRPO update has a gradient to follow.
  const adapter = LoraAdapter.create(name, model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] }, { seed, randomB: true });
  const params = Object.fromEntries(adapter.variables());
  return { adapter, params, optimizer: new AdamW(params, { lr: 1e-2, warmupSteps: 0, weightDecay: 0 }) };
}

it('one iteration with the model as proposer, one with scripted puzzles for the model solver; both adapters train', async () => {
  const roles = { proposer: role('proposer', 1), solver: role('solver', 2) };
  // Only the smallest zebra skill, and no open stream: short solver prompts.
  const library = SkillLibrary.open(join(root, 'library.json'), () => seedPackages().filter((p) => p.id === 'zebra-placement-bridge'));
  const updater = new GrpoPolicyUpdater(model, roles, { microBatchSize: 4, klCoef: 0.01, padTokenId: tokenizer.padTokenId });
  const solver = new PolicySampler(new ModelPolicy('solver', model, tokenizer, roles.solver.adapter));
  const config: SkillSpConfig = { ...SKILL_SP_DEFAULTS, promptsPerIteration: 1, proposalsPerPrompt: 2, solverRollouts: 2, alpha: 0, proposerTokens: 12, solverTokens: 12, families: 'zebra' };
  const rng = new Rng(0);
  // On wasm the model holds its projections' transposes from the first update on: made before counting.
  holdTransposesIfRoom(model, {});
  const before = tf.memory().numTensors;

  const real = await skillSpIteration(1, { proposer: new PolicySampler(new ModelPolicy('proposer', model, tokenizer, roles.proposer.adapter)), solver, library, updater }, config, rng);
  expect(real.metrics.proposals).toBe(2);
  expect(real.metrics.verified).toBe(0);
  expect(real.proposals.every((p) => p.reward === 0 && p.problems.length > 0)).toBe(true);
  expect(real.metrics.proposerUpdate?.sequences).toBe(2);
  expect(real.metrics.solverUpdate).toBeUndefined();
  // The only new tensors are the proposer optimizer's first and second moments (made at its first step).
  expect(tf.memory().numTensors).toBe(before + 2 * Object.keys(roles.proposer.params).length);

  const solverBefore = Array.from(roles.solver.params[Object.keys(roles.solver.params)[0] as string]!.dataSync());
  const scripted = new ScriptedProposer(library, 5);
  const m = (await skillSpIteration(2, { proposer: scripted, solver, library, updater }, { ...config, proposalsPerPrompt: 4 }, rng)).metrics;
  // The scripted proposer's first four replies are valid puzzles (its 5th is malformed), so the real solver
  // answered each of them twice.
  expect(m.verified).toBe(4);
  expect(m.meanVSolve).not.toBeNull();
  expect(m.solverUpdate?.sequences).toBe(4 * 2);
  expect(Number.isFinite(m.solverUpdate?.loss)).toBe(true);
  const solverAfter = Array.from(roles.solver.params[Object.keys(roles.solver.params)[0] as string]!.dataSync());
  expect(solverAfter).not.toEqual(solverBefore);
  const afterTwo = tf.memory().numTensors;
  expect(afterTwo).toBe(before + 2 * Object.keys(roles.proposer.params).length + 2 * Object.keys(roles.solver.params).length);
  // A third iteration leaves the live tensor count where it was.
  await skillSpIteration(3, { proposer: scripted, solver, library, updater }, { ...config, proposalsPerPrompt: 4 }, rng);
  expect(tf.memory().numTensors).toBe(afterTwo);
  // A random model's proposals induce and prune nothing: the skill set, and so the version, is the seed one.
  expect(library.version).toBe(1);
  console.log(`tiny run: iteration 1 ${JSON.stringify({ verified: real.metrics.verified, meanReward: real.metrics.meanReward })}; iteration 2 ${JSON.stringify({ verified: m.verified, meanVSolve: m.meanVSolve, solverLoss: m.solverUpdate?.loss, seconds: m.seconds })}`);
  for (const r of Object.values(roles)) {
    r.optimizer.dispose();
    r.adapter.dispose();
  }
});

it('a whole run writes its folder (settings, metrics, versioned library, adapters) and resumes after a crash to the same result', async () => {
  const out = join(root, 'run');
  const config: SkillSpConfig = { ...SKILL_SP_DEFAULTS, model: modelDir, backend: 'wasm', out, iterations: 2, promptsPerIteration: 1, proposalsPerPrompt: 2, solverRollouts: 2, proposerTokens: 8, solverTokens: 8, loraR: 2 };
  const seen: number[] = [];
  const summary = await runSkillSp(config, { onIteration: (m) => seen.push(m.iteration) });
  expect(seen).toEqual([1, 2]);
  expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'))).toEqual(config);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  expect(lines.map((l) => l.iteration)).toEqual([1, 2]);
  for (const l of lines) {
    expect(l.proposals).toBe(2);
    expect(Object.values(l.routing as Record<string, number>).reduce((s, p) => s + p, 0)).toBeCloseTo(1, 12);
  }
  // Nothing induced or pruned in two iterations: still the seed library's version (it was 3, one per commit).
  expect(JSON.parse(readFileSync(join(out, 'library.json'), 'utf8')).version).toBe(1);
  expect(summary.library.version).toBe(1);
  expect(lines.map((l) => [l.newSkills, l.pruned.length, l.libraryVersion])).toEqual([[0, 0, 1], [0, 0, 1]]);
  for (const r of ['proposer', 'solver'] as const) {
    expect(existsSync(join(out, r, 'adapter_config.json'))).toBe(true);
    const a = loadPeftAdapter(join(out, r), r, model.config);
    expect(a.config.r).toBe(2);
    a.dispose();
  }
  await expect(runSkillSp(config)).rejects.toThrow(/already holds a run .* resume it with --resume/);

  // A run that dies after its first iteration resumes from that checkpoint to the uninterrupted result.
  const out2 = join(root, 'run-killed');
  const config2 = { ...config, out: out2 };
  await expect(
    runSkillSp(config2, {
      onIteration: (m) => {
        if (m.iteration === 1) throw new Error('simulated crash after iteration 1');
      },
    }),
  ).rejects.toThrow(/simulated crash/);
  const resumed = await runSkillSp(config2, {}, true);
  expect(resumed.resumedFrom).toBe(1);
  expect(resumed.metrics.map((m) => m.iteration)).toEqual([2]);
  // Without the fields that measure time, nested and flat (timing_s/…, perf/throughput).
  expect(metricsWithoutTimings(out2)).toEqual(metricsWithoutTimings(out));
  expect(readFileSync(join(out2, 'library.json'), 'utf8')).toBe(readFileSync(join(out, 'library.json'), 'utf8'));
  for (const r of ['proposer', 'solver']) {
    expect(readFileSync(join(out2, r, 'adapter_model.safetensors')).equals(readFileSync(join(out, r, 'adapter_model.safetensors')))).toBe(true);
  }
});
