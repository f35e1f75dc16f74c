// `sesa-train eval`: the paper's evaluation protocol (docs/evaluation.md) — greedy, one rollout per question,
// the solver's training prompt and tool protocol, skills from a bank or off — into an output folder that a
// killed run continues; and `eval --score FILE.jsonl` for predictions made elsewhere.
import { resolve } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { loadPeftAdapter } from '../checkpoint/peft.js';
import type { EvalQuestion } from '../eval/dataset.js';
import { EvalFolder, questionKey } from '../eval/eval-folder.js';
import { aggregateResults, type EvalResults, resultsMarkdown } from '../eval/results.js';
import { evaluateSets } from '../eval/runner.js';
import { questionsOverContext } from '../eval/context.js';
import { scorePredictionsFile } from '../eval/score-file.js';
import { openEvalBank } from '../eval/setup.js';
import { endpointArgs, endpointOptions, textGeneratorFor } from '../llm/from-args.js';
import type { TextGenerator } from '../llm/types.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModelName } from '../checkpoint/model-name.js';
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { readBankFile } from '../skills/bank-file.js';
import { type SkillBank } from '../skills/bank.js';
import { ENCYCLOPEDIA, TRAIN_DEFAULTS } from '../settings/train.js';
import { WORLD_DEFAULTS } from '../world/defaults.js';
import { redactUrl } from '../util/redact.js';
import { DEMO_MODEL_NAME, isWorldEvalData } from '../world/setup.js';
import { type CommonArgs, emit, startBackend, withCommonOptions } from './common.js';
import { type EvalPlanArgs, evalSetsOf, planEval } from './eval-plan.js';
import { etaText, formatSeconds } from './progress.js';
import { listenForStop } from './stop-signals.js';

interface EvalArgs extends CommonArgs, EvalPlanArgs {
  [key: string]: unknown;
  download: boolean;
  embedder?: 'e5' | 'lexical';
  e5Model?: string;
  score?: string;
}

const pct = (x: number | null): string => (x === null ? '–' : `${(100 * x).toFixed(1)}`);

function resultsLine(r: EvalResults): string {
  const a = r.average;
  return `average over ${a.datasets} dataset(s), ${a.questions} questions: EM ${pct(a.em)}  F1 ${pct(a.f1)}${a.judged !== null ? `  judged ${pct(a.judged)}` : ''}`;
}

async function scoreOnly(args: EvalArgs): Promise<void> {
  const { lines, results } = scorePredictionsFile(args.score as string);
  emit(args, { file: args.score, lines: lines.length, ...results }, `${resultsMarkdown(results, `scores of ${args.score}`)}\n${resultsLine(results)}`);
}

async function runEval(args: EvalArgs): Promise<void> {
  const setupStarted = Date.now();
  const human = !args.json;
  const log = (line: string): void => {
    if (human) process.stderr.write(`${line}\n`);
  };
  // 1. Everything that can be checked without a model: the run folder, datasets, the bank file, the output
  //    folder, search.
  const plan = planEval(args);
  if (plan.run) log(`eval of ${plan.run.dir} at checkpoint step ${plan.run.step}: its model, solver, ${plan.bankPath ? 'bank' : 'no bank'} and settings`);
  // The demo model knows only its generated worlds: on real questions it scores about 0, which is no finding.
  const realData = plan.data.filter((d) => !isWorldEvalData(d));
  if (plan.model === DEMO_MODEL_NAME && realData.length > 0) {
    log(
      `warning: --model ${DEMO_MODEL_NAME} is the demo world's small warm start: it knows only the words and facts of its generated worlds (docs/world.md), ` +
        `so on ${realData.join(', ')} it scores about 0. Evaluate a real model (--model qwen3-0.6b, a folder, ...) on real questions, or the demo model on --data world or eval-worlds`,
    );
  }
  if (plan.bankPath !== undefined) readBankFile(plan.bankPath);
  const { sets, sources, sourceOf } = await evalSetsOf(plan, args, log);
  const questions: EvalQuestion[] = sets.flatMap((s) => s.questions);
  const judgeArgs = endpointArgs('judge', args);
  // What the solver searched besides the worlds' own corpora: predictions over another corpus or server are other predictions.
  const fileData = plan.data.filter((d) => !isWorldEvalData(d));
  const corpus = args.corpus ?? (args.retrieverUrl === undefined && fileData.length > 0 && fileData.every((d) => d === ENCYCLOPEDIA) ? ENCYCLOPEDIA : undefined);
  const identity = {
    model: plan.model,
    adapter: plan.adapter ?? null,
    skills: plan.bankPath ?? 'off',
    data: sources,
    limit: plan.limit ?? null,
    sampleSeed: args.sampleSeed,
    maxTurns: plan.settings.maxTurns,
    maxNewTokens: plan.settings.maxTokensPerTurn,
    maxResponseTokens: plan.settings.maxResponseTokens,
    passagesPerQuery: plan.settings.passagesPerQuery,
    renderTokenBudget: plan.renderTokenBudget,
    skillsTopK: plan.skillsTopK,
    skillsMinScore: plan.skillsMinScore,
    enableThinking: plan.enableThinking,
    judge: judgeArgs.url !== undefined ? redactUrl(judgeArgs.url) : null,
    corpus: corpus === undefined || corpus === ENCYCLOPEDIA ? (corpus ?? null) : resolve(corpus),
    retrieverUrl: args.retrieverUrl !== undefined ? redactUrl(args.retrieverUrl) : null,
  };
  const folder = EvalFolder.open(plan.out, identity, (m) => log(`warning: ${m}`));

  // 2. The model, its adapter (checked tensor by tensor against the base) and the bank with its embedder.
  await startBackend(args);
  const modelDir = (await resolveModelName(plan.model, { download: args.download, log })).dir;
  const model = await CausalLM.load(modelDir);
  let bank: SkillBank | undefined;
  try {
    const tokenizer = await loadTokenizer(modelDir);
    const adapter = plan.adapter !== undefined ? loadPeftAdapter(plan.adapter, 'solver', model.config) : undefined;
    bank =
      plan.bankPath !== undefined
        ? await openEvalBank({ path: plan.bankPath, renderTokenBudget: plan.renderTokenBudget, topK: plan.skillsTopK, minScore: plan.skillsMinScore, ...(args.embedder ? { embedder: args.embedder } : {}), ...(args.e5Model ? { e5Model: args.e5Model } : {}) })
        : undefined;
    const judge: TextGenerator | undefined = judgeArgs.url !== undefined ? textGeneratorFor('judge', judgeArgs) : undefined;
    const policy = new ModelPolicy('solver', model, tokenizer, adapter, { enableThinking: plan.enableThinking });
    // Every question must fit the context with its cards and the response budget, before any runs.
    const tooLong = questionsOverContext(questions, { renderChat: (m) => policy.renderChat(m), cardTokens: bank ? plan.renderTokenBudget : 0, responseTokens: plan.settings.maxResponseTokens }, model.config, modelDir, sourceOf);
    if (tooLong !== undefined) throw new Error(tooLong);

    // 3. The questions not scored yet, each set against its own search tool.
    const pendingSets = sets.map((s) => ({ ...s, questions: folder.pending(s.questions) }));
    const pendingCount = pendingSets.reduce((a, s) => a + s.questions.length, 0);
    const already = questions.length - pendingCount;
    log(
      `eval: ${questions.length} questions from ${sets.map((s) => s.dataset).join(', ')}; skills ${plan.bankPath ?? 'off'}; ` +
        `${already > 0 ? `${already} already scored in ${plan.out}, ` : ''}${pendingCount} to go (the model, search and bank took ${formatSeconds((Date.now() - setupStarted) / 1000)} to set up)`,
    );
    const tty = human && process.stderr.isTTY === true;
    // The ETA is the time per question so far (src/cli/progress.ts), said with what it rests on, on a terminal too.
    const bar = tty ? new SingleBar({ format: 'eval [{bar}] {value}/{total} | {percentage}% | EM {em} | {left}', hideCursor: true }) : undefined;
    bar?.start(questions.length, already, { em: '–', left: `${pendingCount} to go` });
    // Ctrl-C and SIGTERM stop after the batch (its predictions are kept); the second one quits at once.
    const stopSignal = listenForStop('stopping after this batch; rerun the same command to continue', () => `the questions scored so far are in ${folder.predictionsPath}; rerun the same command to continue`);
    const started = Date.now();
    let done = 0;
    try {
      await evaluateSets({ policy, ...(bank ? { bank } : {}), ...(judge ? { judge } : {}) }, pendingSets, plan.settings, {
        onBatch: (records) => {
          folder.append(records);
          done += records.length;
          const em = folder.records.reduce((a, r) => a + r.em, 0) / Math.max(1, folder.records.length);
          const eta = etaText((Date.now() - started) / 1000, done, pendingCount - done, 'question');
          if (bar) bar.update(already + done, { em: pct(em), left: eta });
          else if (human) log(`eval: ${already + done}/${questions.length} (EM so far ${pct(em)}); ${eta}`);
        },
        shouldStop: () => stopSignal.requested(),
      });
    } finally {
      bar?.stop();
      stopSignal.dispose();
    }

    // 4. Results over every question of this evaluation (those of earlier, killed runs included).
    const wanted = new Set(questions.map(questionKey));
    const results = aggregateResults(folder.records.filter((r) => wanted.has(questionKey(r))));
    const complete = folder.records.filter((r) => wanted.has(questionKey(r))).length === questions.length;
    folder.writeResults(results, `Evaluation of ${plan.model}${plan.adapter ? ` + ${plan.adapter}` : ''} (skills ${plan.bankPath ?? 'off'})`, { complete, settings: identity });
    emit(args, { out: plan.out, complete, ...results }, `${resultsMarkdown(results, `results (${plan.out})`)}\n${resultsLine(results)}${complete ? '' : '\n(incomplete: rerun the same command to continue)'}`);
  } finally {
    await bank?.dispose();
    model.dispose();
    folder.release();
  }
}

export const command: CommandModule<object, EvalArgs> = {
  command: 'eval',
  describe: 'evaluate a solver (greedy, one rollout per question) on QA datasets, or score a predictions file (--score)',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('model', { type: 'string', describe: `model folder or name (qwen3-4b, ...; '${DEMO_MODEL_NAME}' = the demo world's warm start, '${TINY_DEFAULT_NAME}' = the embedded tiny model); with --run, the run's` })
      .option('run', { type: 'string', describe: "a training run folder: evaluate its checkpoint's solver (and its bank, unless --skills off) with the run's model, --eval-data and settings" })
      .option('step', { type: 'number', describe: 'with --run: the checkpoint step to evaluate (default: the newest complete one)' })
      .option('download', { type: 'boolean', default: false, describe: 'fetch the model into the Hugging Face cache when missing' })
      .option('adapter', { type: 'string', describe: "the solver's LoRA adapter folder (PEFT); none = the base model (with --run: the checkpoint's solver)" })
      .option('skills', { type: 'string', describe: "a skill bank file (a run's skills.json) for skills on, or off (default off; with --run, the checkpoint's bank)" })
      .option('embedder', { choices: ['e5', 'lexical'] as const, describe: 'skill embedder (default: the one the bank records)' })
      .option('e5-model', { type: 'string', describe: 'E5 model folder or name (default: the one the bank records)' })
      .option('data', {
        type: 'string',
        array: true,
        describe: "FlashRAG JSONL files, benchmark names (nq triviaqa popqa hotpotqa 2wikimultihopqa musique bamboogle), encyclopedia (the embedded encyclopedia's held-out questions), world (the held-out questions of world --world-seed), training-worlds (those of each training world of the model's default or the run) or eval-worlds (the evaluation worlds'; docs/world.md); with --run, the run's --eval-data",
      })
      .option('world-seed', { type: 'number', describe: 'with --data world: the world (default 0, the demo world; with --run, the run\'s)' })
      .option('data-dir', { type: 'string', describe: 'folder holding the benchmark files (default $SESA_DATA)' })
      .option('corpus', { type: 'string', describe: "JSONL corpus for a local BM25 index, or 'encyclopedia' (the embedded encyclopedia; default for --data encyclopedia); world data search their own worlds" })
      .option('retriever-url', { type: 'string', describe: 'Search-R1-compatible retrieval server' })
      .option('limit', { type: 'number', describe: 'questions per dataset, a seeded sample (the paper: 500); per world the first N' })
      .option('sample-seed', { type: 'number', default: 0, describe: 'seed of the --limit sample' })
      .option('max-turns', { type: 'number', describe: `turns per rollout (default ${TRAIN_DEFAULTS.maxTurns}; ${WORLD_DEFAULTS.maxTurns} with --model demo; with --run, the run's)` })
      .option('max-new-tokens', { type: 'number', describe: `new tokens per turn (default ${TRAIN_DEFAULTS.maxNewTokens}; ${WORLD_DEFAULTS.maxNewTokens} with --model demo; with --run, the run's)` })
      .option('max-response-tokens', { type: 'number', describe: `tokens per rollout incl. tool output (default ${TRAIN_DEFAULTS.maxResponseTokens}; ${WORLD_DEFAULTS.maxResponseTokens} with --model demo; with --run, the run's)` })
      .option('passages-per-query', { type: 'number', describe: `passages a search returns (default ${TRAIN_DEFAULTS.passagesPerQuery}; with --run, the run's)` })
      .option('batch-size', { type: 'number', describe: `questions generated together (default ${TRAIN_DEFAULTS.evalBatchSize}, the trainer's --eval-batch-size; with --run, the run's)` })
      .option('enable-thinking', { type: 'boolean', describe: "Qwen3 thinking in the chat template (training's default: off; with --run, the run's)" })
      .options({
        ...endpointOptions('judge'),
        'judge-url': { type: 'string', describe: 'OpenAI-compatible chat-completions base URL of a semantic judge for answers that fail EM (default: none, EM and F1 only)' },
      })
      .option('out', { type: 'string', describe: 'output folder (predictions.jsonl, results.json, results.md; default runs/eval, with --run RUN_DIR/eval/cli-step-N-skills-on|off); rerun to continue' })
      .option('score', { type: 'string', describe: 'score a JSONL of {"id","prediction","golden_answers"[,"dataset"]} and exit' })
      .check((a) => {
        const limit = a.limit as number | undefined;
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new Error(`--limit must be a positive integer, got ${limit}`);
        const sampleSeed = a.sampleSeed as number;
        if (!Number.isInteger(sampleSeed) || sampleSeed < 0) throw new Error(`--sample-seed must be a non-negative integer, got ${sampleSeed}`);
        for (const k of ['maxTurns', 'maxNewTokens', 'maxResponseTokens', 'batchSize', 'passagesPerQuery', 'step', 'worldSeed'] as const) {
          const v = a[k] as number | undefined;
          const min = k === 'step' || k === 'worldSeed' ? 0 : 1;
          if (v !== undefined && (!Number.isInteger(v) || v < min)) throw new Error(`--${k.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)} must be ${min === 0 ? 'a non-negative' : 'a positive'} integer, got ${v}`);
        }
        return true;
      }) as unknown as Argv<EvalArgs>,
  handler: async (args) => {
    if (args.score !== undefined) await scoreOnly(args);
    else await runEval(args);
  },
};
