// What `sesa-train eval` evaluates, resolved from its flags, a run folder and the settings table
// (docs/evaluation.md, "Evaluating a run"): the model, the solver adapter, the skill bank, the questions with
// the search tool each is asked against, and the rollout settings.
//
// Precedence of every rollout setting: the settings table's defaults (TRAIN_DEFAULTS) ← the model's (the demo
// world's WORLD_DEFAULTS with --model demo, TINY_DEFAULTS with --model tiny) ← the run's config.json with
// --run ← flags. So `eval --run RUN_DIR` asks every question exactly as the run's own held-out eval does.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultDataDir, type EvalQuestion, resolveDatasets, sampleQuestions } from '../eval/dataset.js';
import type { EvalSet, EvalSettings } from '../eval/runner.js';
import { buildEvalSearcher } from '../eval/setup.js';
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { ENCYCLOPEDIA, parseSavedConfig, TINY_DEFAULTS, TRAIN_DEFAULTS, type TrainConfig } from '../settings/train.js';
import { WORLD_DEFAULTS } from '../world/defaults.js';
import { type CheckpointRef, RunFolder } from '../selfplay/run-folder.js';
import { DEMO_MODEL_NAME, isWorldEvalData, worldEvalSets } from '../world/setup.js';

/** The eval flags that the plan reads (undefined = not given on the command line). */
export interface EvalPlanArgs {
  model?: string;
  adapter?: string;
  skills?: string;
  run?: string;
  step?: number;
  data?: string[];
  dataDir?: string;
  worldSeed?: number;
  corpus?: string;
  retrieverUrl?: string;
  limit?: number;
  sampleSeed: number;
  maxTurns?: number;
  maxNewTokens?: number;
  maxResponseTokens?: number;
  passagesPerQuery?: number;
  batchSize?: number;
  enableThinking?: boolean;
  out?: string;
}

export interface EvalPlan {
  /** The model as the run or the flag names it (a folder, a registry name, demo or tiny). */
  model: string;
  /** The solver adapter folder; undefined = the base model. */
  adapter?: string;
  /** The bank file for skills on; undefined = skills off. */
  bankPath?: string;
  /** Tokens of rendered cards in the solver's prompt (the run's --render-token-budget). */
  renderTokenBudget: number;
  /** Cards retrieved per question and their score floor (the run's --skills-top-k and --skills-min-score). */
  skillsTopK: number;
  skillsMinScore: number;
  data: string[];
  worldSeed: number;
  /** The training worlds of `training-worlds` (the run's --training-worlds, else the model's default). */
  trainingWorlds: number;
  /** Questions per dataset (per world for worlds); undefined = all. With --run, the run's --eval-limit. */
  limit?: number;
  settings: EvalSettings;
  enableThinking: boolean;
  out: string;
  /** With --run: the run folder and the checkpoint step evaluated. */
  run?: { dir: string; step: number };
}

/**
 * The checkpoint `eval --run` evaluates: `--step N` when the run has it whole, else the newest one. Never another
 * one in its place: a step that does not exist is refused listing those that do, and a damaged newest
 * checkpoint is refused naming what is wrong and the newest whole one to give with --step (docs/evaluation.md,
 * "Evaluating a run").
 */
export function checkpointToEvaluate(folder: RunFolder, runArg: string, step: number | undefined): CheckpointRef {
  const steps = folder.checkpointSteps();
  if (steps.length === 0) throw new Error(`--run ${runArg}: the run has no checkpoint to evaluate (${folder.checkpointsDir} holds no step-N folder)`);
  if (step !== undefined && !steps.includes(step)) {
    throw new Error(`--run ${runArg} --step ${step}: the run has no checkpoint step ${step}; its checkpoints are steps ${[...steps].reverse().join(', ')}`);
  }
  const wanted = step ?? (steps[0] as number);
  const c = folder.inspectCheckpoint(wanted);
  if ('dir' in c) return c;
  const older = steps.filter((s) => s < wanted).find((s) => 'dir' in folder.inspectCheckpoint(s));
  const alternative = older !== undefined ? `; the newest whole checkpoint before it is step ${older}: evaluate it with --step ${older}` : '; no older checkpoint is whole';
  throw new Error(`--run ${runArg}${step !== undefined ? ` --step ${step}` : ''}: checkpoint step ${wanted}${step === undefined ? ', the newest,' : ''} is damaged or incomplete (${c.reason})${alternative}`);
}

/** The settings a run of this model would have had, with --run the run's own. */
function baseSettings(model: string | undefined, runConfig: TrainConfig | undefined): TrainConfig {
  if (runConfig) return runConfig;
  const byModel = model === DEMO_MODEL_NAME ? WORLD_DEFAULTS : model === TINY_DEFAULT_NAME ? TINY_DEFAULTS : {};
  return { ...TRAIN_DEFAULTS, ...byModel };
}

export function planEval(args: EvalPlanArgs): EvalPlan {
  let runConfig: TrainConfig | undefined;
  let run: EvalPlan['run'];
  let checkpointDir: string | undefined;
  if (args.run !== undefined) {
    const folder = new RunFolder(resolve(args.run));
    if (!existsSync(folder.configPath)) throw new Error(`--run ${args.run}: not a run folder (${folder.configPath} does not exist)`);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(folder.configPath, 'utf8'));
    } catch (err) {
      throw new Error(`${folder.configPath}: not valid JSON (${(err as Error).message})`);
    }
    runConfig = parseSavedConfig(raw, folder.configPath);
    if (args.model !== undefined && args.model !== runConfig.model) throw new Error(`--model ${args.model}: the run ${args.run} trained ${runConfig.model} (drop --model, or evaluate without --run)`);
    const c = checkpointToEvaluate(folder, args.run, args.step);
    checkpointDir = c.dir;
    run = { dir: folder.dir, step: c.step };
  } else if (args.step !== undefined) {
    throw new Error('--step names a checkpoint of --run RUN_DIR, which is not given');
  }
  const model = args.model ?? runConfig?.model;
  if (model === undefined) throw new Error('--model is required (or --run RUN_DIR, or --score FILE.jsonl to score predictions made elsewhere)');
  const base = baseSettings(model, runConfig);
  const adapter = args.adapter !== undefined ? resolve(args.adapter) : checkpointDir !== undefined ? join(checkpointDir, 'solver') : undefined;
  // Skills: the flag (a bank file or off); with --run and no flag, the checkpoint's bank when the run had one.
  const skills = args.skills ?? (checkpointDir !== undefined && base.skills ? join(checkpointDir, 'skills.json') : 'off');
  const bankPath = skills === 'off' ? undefined : resolve(skills);
  const data = args.data ?? (runConfig?.evalData !== undefined ? [runConfig.evalData] : undefined);
  if (data === undefined || data.length === 0) throw new Error(`--data is required${runConfig ? ` (the run ${args.run} has no --eval-data to take it from)` : ''}: FlashRAG JSONL files, benchmark names, encyclopedia, world, training-worlds or eval-worlds`);
  const settings: EvalSettings = {
    maxTurns: args.maxTurns ?? base.maxTurns,
    maxTokensPerTurn: args.maxNewTokens ?? base.maxNewTokens,
    maxResponseTokens: args.maxResponseTokens ?? base.maxResponseTokens,
    passagesPerQuery: args.passagesPerQuery ?? base.passagesPerQuery,
    batchSize: args.batchSize ?? base.evalBatchSize,
  };
  const out = args.out ?? (run ? join(run.dir, 'eval', `cli-step-${run.step}-skills-${bankPath ? 'on' : 'off'}`) : 'runs/eval');
  return {
    model,
    ...(adapter !== undefined ? { adapter } : {}),
    ...(bankPath !== undefined ? { bankPath } : {}),
    renderTokenBudget: base.renderTokenBudget,
    skillsTopK: base.skillsTopK,
    skillsMinScore: base.skillsMinScore,
    data,
    worldSeed: args.worldSeed ?? base.worldSeed,
    trainingWorlds: base.trainingWorlds,
    ...((args.limit ?? runConfig?.evalLimit) !== undefined ? { limit: args.limit ?? runConfig?.evalLimit } : {}),
    settings,
    enableThinking: args.enableThinking ?? base.enableThinking,
    out,
    ...(run ? { run } : {}),
  };
}

/**
 * The question sets of a plan: each world data name (`world`, `eval-worlds`) gives sets searched in their own
 * worlds' corpora; every other name (files, benchmark names, encyclopedia) shares one search tool (--corpus or
 * --retriever-url), built only when one is needed. `limit` samples each dataset (per world for worlds, the
 * first `limit`, as the trainer's eval takes them).
 */
export async function evalSetsOf(plan: EvalPlan, args: Pick<EvalPlanArgs, 'dataDir' | 'corpus' | 'retrieverUrl' | 'sampleSeed'>, log: (line: string) => void): Promise<{ sets: EvalSet[]; sources: string[]; sourceOf: (dataset: string) => string }> {
  const sourceByDataset = new Map<string, string>();
  const worldSpecs = plan.data.filter(isWorldEvalData);
  const fileSpecs = plan.data.filter((d) => !isWorldEvalData(d));
  const sets: EvalSet[] = [];
  const sources: string[] = [];
  // Files are read (and every line checked) before any world or index is built.
  const datasets = fileSpecs.length > 0 ? resolveDatasets(fileSpecs, defaultDataDir(args.dataDir)) : [];
  if (datasets.length > 0) {
    const corpus = args.corpus ?? (args.retrieverUrl === undefined && datasets.every((d) => d.name === ENCYCLOPEDIA) ? ENCYCLOPEDIA : undefined);
    const searcher = await buildEvalSearcher({ ...(corpus !== undefined ? { corpus } : {}), ...(args.retrieverUrl !== undefined ? { retrieverUrl: args.retrieverUrl } : {}) }, log);
    for (const d of datasets) {
      const questions: EvalQuestion[] = sampleQuestions(d.questions, plan.limit, args.sampleSeed);
      sets.push({ dataset: d.name, questions, searcher });
      sources.push(d.source);
      sourceByDataset.set(d.name, d.source);
    }
  }
  for (const spec of worldSpecs) {
    const worldSets = await worldEvalSets(spec, plan.worldSeed, plan.limit, plan.trainingWorlds);
    if (sets.some((s) => worldSets.some((w) => w.dataset === s.dataset))) throw new Error(`--data: ${spec} repeats a dataset already given`);
    sets.push(...worldSets);
    sources.push(spec === 'world' ? `world ${plan.worldSeed}` : spec === 'training-worlds' ? `training-worlds (${plan.trainingWorlds} from world ${plan.worldSeed})` : spec);
    for (const w of worldSets) sourceByDataset.set(w.dataset, `--data ${spec} (${w.dataset})`);
    log(`search: ${worldSets.map((s) => `${s.dataset} (${s.questions.length} questions)`).join(', ')}, each in its own world's corpus`);
  }
  return { sets, sources, sourceOf: (dataset) => sourceByDataset.get(dataset) ?? dataset };
}
