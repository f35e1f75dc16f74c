// `sesa-train eval`: the paper's evaluation protocol (docs/evaluation.md) — greedy, one rollout per question,
// the solver's training prompt and tool protocol, skills from a bank or off — into an output folder that a
// killed run continues; and `eval --score FILE.jsonl` for predictions made elsewhere.
import { resolve } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { loadPeftAdapter } from '../checkpoint/peft.js';
import { defaultDataDir, type EvalQuestion, resolveDatasets, sampleQuestions } from '../eval/dataset.js';
import { EvalFolder, questionKey } from '../eval/eval-folder.js';
import { aggregateResults, type EvalResults, resultsMarkdown } from '../eval/results.js';
import { evaluateSolver, type EvalSettings } from '../eval/runner.js';
import { scorePredictionsFile } from '../eval/score-file.js';
import { buildEvalSearcher, openEvalBank } from '../eval/setup.js';
import { endpointArgs, endpointOptions, textGeneratorFor } from '../llm/from-args.js';
import type { TextGenerator } from '../llm/types.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModel } from '../model/resolve.js';
import { ensureTinyDefaultModel, TINY_DEFAULT_NAME } from '../model/tiny-default.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { readBankFile, type SkillBank } from '../skills/bank.js';
import { redactUrl } from '../util/redact.js';
import { type CommonArgs, emit, startBackend, withCommonOptions } from './common.js';

interface EvalArgs extends CommonArgs {
  [key: string]: unknown;
  model?: string;
  download: boolean;
  adapter?: string;
  skills: string;
  embedder?: 'e5' | 'lexical';
  e5Model?: string;
  data?: string[];
  dataDir?: string;
  corpus?: string;
  retrieverUrl?: string;
  limit?: number;
  sampleSeed: number;
  maxTurns: number;
  maxNewTokens: number;
  maxResponseTokens: number;
  batchSize: number;
  enableThinking: boolean;
  out: string;
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
  const human = !args.json;
  const log = (line: string): void => {
    if (human) process.stderr.write(`${line}\n`);
  };
  if (args.model === undefined) throw new Error('--model is required (or --score FILE.jsonl to score predictions made elsewhere)');
  // 1. Everything that can be checked without a model: datasets, the bank file, the output folder, search.
  const datasets = resolveDatasets(args.data ?? [], defaultDataDir(args.dataDir));
  const questions: EvalQuestion[] = datasets.flatMap((d) => sampleQuestions(d.questions, args.limit, args.sampleSeed));
  const bankPath = args.skills === 'off' ? undefined : resolve(args.skills);
  if (bankPath !== undefined) readBankFile(bankPath);
  const settings: EvalSettings = { maxTurns: args.maxTurns, maxTokensPerTurn: args.maxNewTokens, maxResponseTokens: args.maxResponseTokens, batchSize: args.batchSize };
  const judgeArgs = endpointArgs('judge', args);
  const corpus = args.corpus ?? (args.retrieverUrl === undefined && datasets.every((d) => d.name === 'demo') ? 'demo' : undefined);
  const identity = {
    model: args.model,
    adapter: args.adapter !== undefined ? resolve(args.adapter) : null,
    skills: bankPath ?? 'off',
    data: datasets.map((d) => d.source),
    limit: args.limit ?? null,
    sampleSeed: args.sampleSeed,
    maxTurns: args.maxTurns,
    maxNewTokens: args.maxNewTokens,
    maxResponseTokens: args.maxResponseTokens,
    enableThinking: args.enableThinking,
    judge: judgeArgs.url !== undefined ? redactUrl(judgeArgs.url) : null,
    // What the solver searched: predictions made over another corpus or server are other predictions.
    corpus: corpus === undefined || corpus === 'demo' ? (corpus ?? null) : resolve(corpus),
    retrieverUrl: args.retrieverUrl !== undefined ? redactUrl(args.retrieverUrl) : null,
  };
  const folder = EvalFolder.open(args.out, identity, (m) => log(`warning: ${m}`));
  const searcher = await buildEvalSearcher({ ...(corpus !== undefined ? { corpus } : {}), ...(args.retrieverUrl !== undefined ? { retrieverUrl: args.retrieverUrl } : {}) }, log);

  // 2. The model, its adapter (checked tensor by tensor against the base) and the bank with its embedder.
  await startBackend(args);
  const modelDir = args.model === TINY_DEFAULT_NAME ? ensureTinyDefaultModel(log) : (await resolveModel(args.model, { download: args.download })).dir;
  const model = await CausalLM.load(modelDir);
  let bank: SkillBank | undefined;
  try {
    const tokenizer = await loadTokenizer(modelDir);
    const adapter = args.adapter !== undefined ? loadPeftAdapter(args.adapter, 'solver', model.config) : undefined;
    bank = bankPath !== undefined ? await openEvalBank({ path: bankPath, ...(args.embedder ? { embedder: args.embedder } : {}), ...(args.e5Model ? { e5Model: args.e5Model } : {}) }) : undefined;
    const judge: TextGenerator | undefined = judgeArgs.url !== undefined ? textGeneratorFor('judge', judgeArgs) : undefined;
    const policy = new ModelPolicy('solver', model, tokenizer, adapter, { enableThinking: args.enableThinking });

    // 3. The questions not scored yet.
    const pending = folder.pending(questions);
    const already = questions.length - pending.length;
    log(
      `eval: ${questions.length} questions from ${datasets.map((d) => d.name).join(', ')}; skills ${bankPath ?? 'off'}; ` +
        `${already > 0 ? `${already} already scored in ${args.out}, ` : ''}${pending.length} to go`,
    );
    const tty = human && process.stderr.isTTY === true;
    const bar = tty ? new SingleBar({ format: 'eval [{bar}] {value}/{total} | {percentage}% | ETA {eta_formatted} | EM {em}', hideCursor: true, etaBuffer: 20 }) : undefined;
    bar?.start(questions.length, already, { em: '–' });
    let stop = false;
    const onSigint = (): void => {
      if (stop) process.exit(130);
      stop = true;
      process.stderr.write('\nstopping after this batch; rerun the same command to continue\n');
    };
    process.on('SIGINT', onSigint);
    const started = Date.now();
    let done = 0;
    try {
      await evaluateSolver({ policy, searcher, ...(bank ? { bank } : {}), ...(judge ? { judge } : {}) }, pending, settings, {
        onBatch: (records) => {
          folder.append(records);
          done += records.length;
          const em = folder.records.reduce((a, r) => a + r.em, 0) / Math.max(1, folder.records.length);
          if (bar) bar.update(already + done, { em: pct(em) });
          else if (human) {
            const perQ = (Date.now() - started) / 1000 / done;
            log(`eval: ${already + done}/${questions.length} (EM so far ${pct(em)}; ETA ${Math.round(perQ * (pending.length - done))} s)`);
          }
        },
        shouldStop: () => stop,
      });
    } finally {
      bar?.stop();
      process.off('SIGINT', onSigint);
    }

    // 4. Results over every question of this evaluation (those of earlier, killed runs included).
    const wanted = new Set(questions.map(questionKey));
    const results = aggregateResults(folder.records.filter((r) => wanted.has(questionKey(r))));
    const complete = folder.records.filter((r) => wanted.has(questionKey(r))).length === questions.length;
    folder.writeResults(results, `Evaluation of ${args.model}${args.adapter ? ` + ${args.adapter}` : ''} (skills ${bankPath ?? 'off'})`, { complete, settings: identity });
    emit(args, { out: args.out, complete, ...results }, `${resultsMarkdown(results, `results (${args.out})`)}\n${resultsLine(results)}${complete ? '' : '\n(incomplete: rerun the same command to continue)'}`);
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
      .option('model', { type: 'string', describe: `model folder or name (qwen3-4b, ...; '${TINY_DEFAULT_NAME}' = the embedded tiny model)` })
      .option('download', { type: 'boolean', default: false, describe: 'fetch the model into the Hugging Face cache when missing' })
      .option('adapter', { type: 'string', describe: "the solver's LoRA adapter folder (PEFT); none = the base model" })
      .option('skills', { type: 'string', default: 'off', describe: 'a skill bank file (a run\'s skills.json) for skills on, or off' })
      .option('embedder', { choices: ['e5', 'lexical'] as const, describe: 'skill embedder (default: the one the bank records)' })
      .option('e5-model', { type: 'string', describe: 'E5 model folder or name (default: the one the bank records)' })
      .option('data', { type: 'string', array: true, describe: 'FlashRAG JSONL files, benchmark names (nq triviaqa popqa hotpotqa 2wikimultihopqa musique bamboogle) or demo' })
      .option('data-dir', { type: 'string', describe: 'folder holding the benchmark files (default $SESA_DATA)' })
      .option('corpus', { type: 'string', describe: "JSONL corpus for a local BM25 index, or 'demo' (default for --data demo)" })
      .option('retriever-url', { type: 'string', describe: 'Search-R1-compatible retrieval server' })
      .option('limit', { type: 'number', describe: 'questions per dataset, a seeded sample (the paper: 500)' })
      .option('sample-seed', { type: 'number', default: 0, describe: 'seed of the --limit sample' })
      .option('max-turns', { type: 'number', default: 10, describe: 'turns per rollout' })
      .option('max-new-tokens', { type: 'number', default: 512, describe: 'new tokens per turn' })
      .option('max-response-tokens', { type: 'number', default: 4096, describe: 'tokens per rollout incl. tool output' })
      .option('batch-size', { type: 'number', default: 8, describe: 'questions generated together' })
      .option('enable-thinking', { type: 'boolean', default: false, describe: "Qwen3 thinking in the chat template (training's default: off)" })
      .options({
        ...endpointOptions('judge'),
        'judge-url': { type: 'string', describe: 'OpenAI-compatible chat-completions base URL of a semantic judge for answers that fail EM (default: none, EM and F1 only)' },
      })
      .option('out', { type: 'string', default: 'runs/eval', describe: 'output folder (predictions.jsonl, results.json, results.md); rerun to continue' })
      .option('score', { type: 'string', describe: 'score a JSONL of {"id","prediction","golden_answers"[,"dataset"]} and exit' })
      .check((a) => {
        const limit = a.limit as number | undefined;
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new Error(`--limit must be a positive integer, got ${limit}`);
        const sampleSeed = a.sampleSeed as number;
        if (!Number.isInteger(sampleSeed) || sampleSeed < 0) throw new Error(`--sample-seed must be a non-negative integer, got ${sampleSeed}`);
        for (const k of ['maxTurns', 'maxNewTokens', 'maxResponseTokens', 'batchSize'] as const) {
          const v = a[k] as number;
          if (!Number.isInteger(v) || v < 1) throw new Error(`--${k.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)} must be a positive integer, got ${v}`);
        }
        return true;
      }) as unknown as Argv<EvalArgs>,
  handler: async (args) => {
    if (args.score !== undefined) await scoreOnly(args);
    else await runEval(args);
  },
};
