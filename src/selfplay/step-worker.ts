// The step's side of a data-parallel worker (docs/scale-out.md, "The step over N workers"): the task module a
// worker of src/parallel/ imports when the trainer shards its step. It builds the run's search tool and judge
// as the trainer does, runs the rollouts of the requests it is sent with the worker's own copy of a role's
// adapter (kept equal to the trainer's by the data-parallel updates), and runs the RAG checks and judges the
// answers of its seeds. Prompts, skills, the bank, metrics and checkpoints stay with the trainer (rank 0).
import { ModelPolicy } from '../model/policy.js';
import { PolicyTextGenerator } from '../model/text-generator.js';
import { loadTokenizer } from '../model/tokenizer.js';
import type { CreateWorkerTasks, WorkerTasks } from '../parallel/protocol.js';
import type { TrainConfig } from '../settings/train.js';
import { endpointOf } from './endpoints.js';
import { AnswerJudge } from '../agent/judge.js';
import { CountingSearcher, CountingTextGenerator, usableJudgeReply } from './role-health.js';
import { runRollouts } from '../agent/rollout.js';
import type { RolloutTask, RolloutTaskResult } from './rollout-runner.js';
import { openEnvironment } from '../env/open.js';
import { type JudgeTask, type JudgeTaskResult, ragVerdict, readerOf } from './step-judging.js';
import type { TextGenerator } from '../llm/types.js';

/** What the trainer starts its step workers with. */
export interface StepWorkerInit {
  config: TrainConfig;
}

/** The module's URL, for WorkerInit.tasks. */
export const STEP_WORKER_MODULE = import.meta.url;

export const createWorkerTasks: CreateWorkerTasks = async (ctx, raw) => {
  const { config } = raw as StepWorkerInit;
  if (!config || typeof config !== 'object') throw new Error('step worker: no training configuration in its init');
  // The trainer has logged what this search is (and any warning about its corpus) already: the worker is quiet.
  const env = await openEnvironment(config, () => undefined);
  // One counting tool per corpus, all counted together (the trainer adds the counts to its own).
  const counting = new CountingSearcher(env.searcher);
  const searchers = env.corpora ? env.corpora.map((c, k) => (k === 0 ? counting : counting.sibling(c.searcher))) : counting;
  const tokenizer = await loadTokenizer(ctx.modelDir);
  const policies = new Map<string, ModelPolicy>();
  const policy = (role: string): ModelPolicy => {
    let p = policies.get(role);
    if (!p) {
      p = new ModelPolicy(role, ctx.model, tokenizer, ctx.adapter(role), { enableThinking: config.enableThinking });
      policies.set(role, p);
    }
    return p;
  };
  // The judge as the trainer builds it (an endpoint, or this worker's base model; in an environment with
  // scripted roles, exact match and its reader), its calls counted for the trainer's role watch. Retries are told on stderr.
  const judgeText = new CountingTextGenerator(
    endpointOf('judge', config, new PolicyTextGenerator(new ModelPolicy('base', ctx.model, tokenizer, undefined, { enableThinking: config.enableThinking })), (line) => {
      if (/ retry /.test(line)) process.stderr.write(`worker ${ctx.rank}: ${line}\n`);
    }),
    usableJudgeReply,
  );
  const scriptedJudge = env.scripted !== undefined && config.judgeUrl === undefined;
  const judge = new AnswerJudge(scriptedJudge ? undefined : judgeText, config.judgeMaxTokens);
  const reader = scriptedJudge && env.scripted ? env.scripted.ragReader : judgeText;
  // A scripted reader per corpus (the world's, one per training world); an endpoint reads every corpus.
  const readers = scriptedJudge && env.corpora?.every((c) => c.ragReader !== undefined) ? env.corpora.map((c) => c.ragReader as TextGenerator) : undefined;
  const judgeTask = async (task: JudgeTask): Promise<JudgeTaskResult> => {
    judgeText.take();
    const unparsedBefore = judge.unparsedReplies;
    const verdicts: JudgeTaskResult['verdicts'] = [];
    if (task.kind === 'judge') for (const it of task.items) (verdicts as unknown[]).push(await judge.judge(it.question, it.golds, it.prediction));
    else for (const it of task.items) (verdicts as unknown[]).push(await ragVerdict(readerOf(reader, readers, it.corpus), judge, it, task.maxTokens));
    return { verdicts, calls: judgeText.take(), unparsed: judge.unparsedReplies - unparsedBefore };
  };
  const tasks: WorkerTasks = {
    async run(raw: unknown): Promise<RolloutTaskResult | JudgeTaskResult> {
      const task = raw as RolloutTask | JudgeTask;
      if (task?.kind === 'judge' || task?.kind === 'rag') return judgeTask(task);
      if (task?.kind !== 'rollouts') throw new Error(`step worker ${ctx.rank}: unknown task ${JSON.stringify((raw as { kind?: unknown })?.kind)}`);
      counting.take();
      const rollouts = task.requests.length === 0 ? [] : await runRollouts(policy(task.role), searchers, task.requests, task.config);
      return { rollouts, searches: counting.take() };
    },
  };
  return tasks;
};
