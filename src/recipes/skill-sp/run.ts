// A Skill Self-Play run (docs/recipes.md): one frozen base model with a proposer and a solver LoRA adapter,
// the skill library, and N iterations. The run folder holds config.json, metrics.jsonl (one line per
// iteration, rewritten atomically), library.json (versioned) and, at the end, both adapters in PEFT format.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../../checkpoint/atomic.js';
import { savePeftAdapter } from '../../checkpoint/peft.js';
import { LoraAdapter } from '../../model/lora.js';
import { ModelPolicy } from '../../model/policy.js';
import { CausalLM } from '../../model/qwen3.js';
import { resolveModel } from '../../model/resolve.js';
import { ensureTinyDefaultModel, TINY_DEFAULT_NAME } from '../../model/tiny-default.js';
import { loadTokenizer } from '../../model/tokenizer.js';
import { AdamW } from '../../rl/optimizer.js';
import { GrpoPolicyUpdater, type TrainedRole } from '../../selfplay/updater.js';
import { type BackendChoice, initBackend } from '../../tensor/backend.js';
import { Rng } from '../../util/rng.js';
import { type SkillSpConfig, skillSpProblems } from './config.js';
import { type IterationMetrics, skillSpIteration } from './iteration.js';
import { SkillLibrary } from './library.js';
import { PolicySampler } from './policy-sampler.js';

export interface SkillSpHooks {
  log?: (line: string) => void;
  onIteration?: (m: IterationMetrics) => void;
}

export interface SkillSpSummary {
  out: string;
  metrics: IterationMetrics[];
  library: { packages: number; induced: number; version: number };
  adapters: { proposer: string; solver: string };
}

export async function runSkillSp(config: SkillSpConfig, hooks: SkillSpHooks = {}): Promise<SkillSpSummary> {
  const problems = skillSpProblems(config);
  if (problems.length > 0) throw new Error(`invalid settings:\n  - ${problems.join('\n  - ')}`);
  const log = hooks.log ?? (() => {});
  const out = config.out;
  if (existsSync(join(out, 'metrics.jsonl'))) throw new Error(`${join(out, 'metrics.jsonl')} exists: choose another --out for a new Skill Self-Play run`);
  writeJsonAtomic(join(out, 'config.json'), config);

  const backend = await initBackend(config.backend as BackendChoice);
  log(`backend: ${backend.name} (${backend.provider}; ${backend.reason})`);
  const modelDir = config.model === TINY_DEFAULT_NAME ? ensureTinyDefaultModel(log) : (await resolveModel(config.model)).dir;
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  log(`model: ${modelDir} (${(model.parameterCount() / 1e6).toFixed(1)}M parameters)`);

  const lora = { r: config.loraR, alpha: config.loraAlpha, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as LoraAdapter['config']['targets'] };
  const role = (name: 'proposer' | 'solver', seed: number): TrainedRole => {
    const adapter = LoraAdapter.create(name, model.config, lora, { seed });
    const params = Object.fromEntries(adapter.variables());
    return { adapter, params, optimizer: new AdamW(params, { lr: config.lr, warmupSteps: 0, weightDecay: 0.01, maxGradNorm: 1, schedule: 'constant' }) };
  };
  const roles = { proposer: role('proposer', config.seed * 2 + 1), solver: role('solver', config.seed * 2 + 2) };
  const library = SkillLibrary.open(join(out, 'library.json'));
  const deps = {
    proposer: new PolicySampler(new ModelPolicy('proposer', model, tokenizer, roles.proposer.adapter)),
    solver: new PolicySampler(new ModelPolicy('solver', model, tokenizer, roles.solver.adapter)),
    library,
    ...(config.update ? { updater: new GrpoPolicyUpdater(model, roles, { microBatchSize: config.microBatchSize, klCoef: config.klCoef, padTokenId: tokenizer.padTokenId }) } : {}),
  };
  const rng = new Rng(config.seed);
  const metrics: IterationMetrics[] = [];
  try {
    for (let it = 1; it <= config.iterations; it++) {
      const { metrics: m } = await skillSpIteration(it, deps, config, rng);
      metrics.push(m);
      writeFileAtomic(join(out, 'metrics.jsonl'), metrics.map((x) => JSON.stringify(x)).join('\n') + '\n');
      hooks.onIteration?.(m);
    }
    const baseModel = config.model === TINY_DEFAULT_NAME ? modelDir : config.model;
    for (const r of ['proposer', 'solver'] as const) await savePeftAdapter(roles[r].adapter, join(out, r), { baseModel });
  } finally {
    for (const r of Object.values(roles)) {
      r.optimizer.dispose();
      r.adapter.dispose();
    }
    model.dispose();
  }
  return {
    out,
    metrics,
    library: { packages: library.packages.length, induced: library.packages.filter((p) => p.source === 'induced').length, version: library.version },
    adapters: { proposer: join(out, 'proposer'), solver: join(out, 'solver') },
  };
}
