// A Skill Self-Play run (docs/recipes.md): one frozen base model with a proposer and a solver LoRA adapter,
// the skill library, and N iterations. The run folder (the trainer's layout) holds config.json,
// metrics.jsonl (one line per iteration), library.json (versioned), checkpoints/step-N/ after every
// iteration (both adapters in PEFT format with their optimizer state, the library, the RNG state), and, at
// the end, both adapters in proposer/ and solver/; each metrics line also holds the trainer's flat names
// (./flat-metrics.ts), which go to TensorBoard too (--tensorboard). A killed run resumes from its last
// complete checkpoint; a stop on request (hooks.shouldStop, the CLI's Ctrl-C or SIGTERM) ends the run after
// the iteration under way and its checkpoint (docs/recipes.md, "Stopping and resuming").
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../../util/atomic.js';
import { loadOptimizerState, saveOptimizerState } from '../../checkpoint/optimizer-state.js';
import { loadPeftAdapter, savePeftAdapter } from '../../checkpoint/peft.js';
import { LoraAdapter } from '../../model/lora.js';
import { ModelPolicy } from '../../model/policy.js';
import { CausalLM } from '../../model/qwen3.js';
import { peftBaseModel, resolveModelName } from '../../checkpoint/model-name.js';
import { loadTokenizer } from '../../model/tokenizer.js';
import { AdamW } from '../../rl/optimizer.js';
import { RunFolder } from '../../selfplay/run-folder.js';
import { TensorBoardLog } from '../../selfplay/tensorboard-log.js';
import { GrpoPolicyUpdater, type TrainedRole } from '../../selfplay/updater.js';
import { type BackendChoice, describeBackend, initBackend } from '../../tensor/backend.js';
import { Rng, type RngState } from '../../util/rng.js';
import { type SkillSpConfig, skillSpProblems } from './config.js';
import { flatIterationMetrics } from './flat-metrics.js';
import { type IterationMetrics, skillSpIteration } from './iteration.js';
import { SkillLibrary } from './library.js';
import { PolicySampler } from './policy-sampler.js';

export interface SkillSpHooks {
  log?: (line: string) => void;
  onIteration?: (m: IterationMetrics) => void;
  /** Polled after every iteration's checkpoint: true stops the run there (the CLI's Ctrl-C and SIGTERM). */
  shouldStop?: () => boolean;
}

export interface SkillSpSummary {
  out: string;
  /** The iteration a resumed run continued after. */
  resumedFrom?: number;
  /** Stopped on request before its last iteration: resume it with --resume (no final adapters yet). */
  stoppedEarly: boolean;
  /** The newest checkpoint, where a resume starts. */
  lastCheckpoint?: string;
  metrics: IterationMetrics[];
  library: { packages: number; induced: number; version: number };
  adapters: { proposer: string; solver: string };
}

/** Reads a run folder's config.json for --resume. */
export function readRunConfig(dir: string): Record<string, unknown> {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) throw new Error(`${dir} is not a Skill Self-Play run folder: ${path} does not exist`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
  }
}

/** Runs `config.iterations` iterations in `config.out`; `resume` continues the run there from its last checkpoint. */
export async function runSkillSp(config: SkillSpConfig, hooks: SkillSpHooks = {}, resume = false): Promise<SkillSpSummary> {
  const problems = skillSpProblems(config);
  if (problems.length > 0) throw new Error(`invalid settings:\n  - ${problems.join('\n  - ')}`);
  const log = hooks.log ?? (() => {});
  const out = config.out;
  const configPath = join(out, 'config.json');
  if (resume !== existsSync(configPath)) {
    throw new Error(resume ? `${out} is not a Skill Self-Play run folder: ${configPath} does not exist` : `${out} already holds a run (${configPath} exists): resume it with --resume ${out}, or choose another --out`);
  }
  const folder = resume ? RunFolder.open(out).run : new RunFolder(out);
  const ckpt = resume ? folder.latestCheckpoint() : undefined;
  if (resume) {
    folder.truncateMetricsAfter(ckpt?.step ?? 0);
    if (ckpt) writeFileAtomic(join(out, 'library.json'), readFileSync(join(ckpt.dir, 'library.json')));
    else rmSync(join(out, 'library.json'), { force: true });
    log(ckpt ? `resuming ${out} after iteration ${ckpt.step}` : `resuming ${out}: no complete checkpoint, starting over`);
  } else writeFileAtomic(folder.metricsPath, '');
  writeJsonAtomic(configPath, config);

  const backend = await initBackend(config.backend as BackendChoice, config.threads !== undefined ? { threads: config.threads } : {});
  log(`backend: ${describeBackend(backend)}`);
  const resolvedModel = await resolveModelName(config.model, { log });
  const modelDir = resolvedModel.dir;
  const model = await CausalLM.load(modelDir);
  const tokenizer = await loadTokenizer(modelDir);
  log(`model: ${modelDir} (${(model.parameterCount() / 1e6).toFixed(1)}M parameters)`);

  const lora = { r: config.loraR, alpha: config.loraAlpha, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as LoraAdapter['config']['targets'] };
  const role = (name: 'proposer' | 'solver', seed: number): TrainedRole => {
    const adapter = ckpt ? loadPeftAdapter(join(ckpt.dir, name), name, model.config) : LoraAdapter.create(name, model.config, lora, { seed });
    const params = Object.fromEntries(adapter.variables());
    const optimizer = new AdamW(params, { lr: config.lr, warmupSteps: 0, weightDecay: config.weightDecay, maxGradNorm: config.maxGradNorm, schedule: 'constant' });
    if (ckpt) optimizer.importState(loadOptimizerState(join(ckpt.dir, name)));
    return { adapter, params, optimizer };
  };
  const roles = { proposer: role('proposer', config.seed * 2 + 1), solver: role('solver', config.seed * 2 + 2) };
  const library = SkillLibrary.open(join(out, 'library.json'));
  const deps = {
    proposer: new PolicySampler(new ModelPolicy('proposer', model, tokenizer, roles.proposer.adapter), config.generationBatch),
    solver: new PolicySampler(new ModelPolicy('solver', model, tokenizer, roles.solver.adapter), config.generationBatch),
    library,
    ...(config.update ? { updater: new GrpoPolicyUpdater(model, roles, { microBatchSize: config.microBatchSize, klCoef: config.klCoef, padTokenId: tokenizer.padTokenId }) } : {}),
  };
  const rng = ckpt ? new Rng(JSON.parse(readFileSync(join(ckpt.dir, 'rng.json'), 'utf8')) as RngState) : new Rng(config.seed);
  const baseModel = peftBaseModel(resolvedModel);
  const metrics: IterationMetrics[] = [];
  // The flat metrics also go to TensorBoard, unless --tensorboard off; a resume drops the files of the
  // iterations after its checkpoint, which it runs again (as metrics.jsonl drops their lines).
  const board = config.tensorboard ? TensorBoardLog.open(out, ckpt?.step ?? 0) : undefined;
  let stoppedEarly = false;
  let lastCheckpoint = ckpt?.dir;
  try {
    for (let it = (ckpt?.step ?? 0) + 1; it <= config.iterations; it++) {
      const result = await skillSpIteration(it, deps, config, rng);
      const m = result.metrics;
      const flat = flatIterationMetrics(result);
      metrics.push(m);
      folder.appendMetrics({ step: it, ...m, ...flat });
      board?.write(it, flat);
      lastCheckpoint = await folder.writeCheckpoint(it, { step: it, seed: config.seed, savedAt: new Date().toISOString() }, async (dir) => {
        for (const r of ['proposer', 'solver'] as const) {
          await savePeftAdapter(roles[r].adapter, join(dir, r), { baseModel });
          saveOptimizerState(join(dir, r), roles[r].optimizer.exportState());
        }
        writeFileAtomic(join(dir, 'library.json'), readFileSync(library.path));
        writeJsonAtomic(join(dir, 'rng.json'), rng.state());
      });
      hooks.onIteration?.(m);
      if (it < config.iterations && (hooks.shouldStop?.() ?? false)) {
        stoppedEarly = true;
        log(`stopped after iteration ${it} on request (checkpoint ${lastCheckpoint}); resume with --resume ${out}`);
        break;
      }
    }
    // The final adapters only once every iteration is done: a stopped run's are in its last checkpoint.
    if (!stoppedEarly) for (const r of ['proposer', 'solver'] as const) await savePeftAdapter(roles[r].adapter, join(out, r), { baseModel });
  } finally {
    folder.release();
    for (const r of Object.values(roles)) {
      r.optimizer.dispose();
      r.adapter.dispose();
    }
    model.dispose();
  }
  return {
    out,
    ...(ckpt ? { resumedFrom: ckpt.step } : {}),
    stoppedEarly,
    ...(lastCheckpoint !== undefined ? { lastCheckpoint } : {}),
    metrics,
    library: { packages: library.packages.length, induced: library.packages.filter((p) => p.source === 'induced').length, version: library.version },
    adapters: { proposer: join(out, 'proposer'), solver: join(out, 'solver') },
  };
}
