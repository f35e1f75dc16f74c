// What a task environment gives the trainer, its step workers and the held-out eval (docs/method.md,
// "Environments"): the search tool, the answer seeds the proposer builds questions for, the held-out sets
// behind the --eval-data names it defines, and the roles it plays without an LLM. The generated world
// (src/world/environment.ts), a local corpus, the embedded encyclopedia and a Search-R1 retrieval server
// (src/env/) implement it; src/env/open.ts picks one from a run's settings. The trainer sees only this.
import type { TextGenerator } from '../llm/types.js';
import type { Searcher } from '../search/types.js';
import type { AnswerSeed } from './roles.js';

/** One held-out question (the FlashRAG record, as src/eval/ reads and scores it). */
export interface EvalQuestion {
  id: string;
  /** The dataset's name (a benchmark name, `encyclopedia`, a world's `world-<seed>`, or the file's base name). */
  dataset: string;
  question: string;
  goldenAnswers: string[];
  /** Search steps the question needs, where the dataset knows it (a world's held-out questions). */
  hops?: number;
}

/**
 * One set of questions with the search tool they are asked against: a dataset in the eval's corpus, or one
 * world's held-out questions in that world's own corpus (docs/evaluation.md).
 */
export interface EvalSet {
  dataset: string;
  questions: EvalQuestion[];
  searcher: Searcher;
}

export interface ScriptedRoles {
  /** How the environment judges an answer without an LLM (for the log), e.g. "exact match with aliases". */
  judge: string;
  /** Answers a question from given documents for the RAG validity check. */
  ragReader: TextGenerator;
  /** Turns a failure record into a card. */
  distiller: TextGenerator;
}

/**
 * One corpus a run trains in (docs/method.md, "Training corpora"): its search tool and, where the environment
 * plays it without an LLM, its RAG reader. Corpus k is the one an answer seed with `corpus: k` (and every
 * question proposed for it) is searched in.
 */
export interface TrainingCorpus {
  /** One log line: what it is. */
  readonly description: string;
  readonly searcher: Searcher;
  /** Answers the RAG validity check from given documents of this corpus (undefined: the judge model reads them). */
  readonly ragReader?: TextGenerator;
}

export interface TaskEnvironment {
  /** One log line: the search tool and what it holds. */
  readonly description: string;
  /** The search tool (of corpus 0 when there are several). */
  readonly searcher: Searcher;
  /** The answer seeds it supplies, each with its corpus when there are several; undefined: the run needs --seeds FILE. */
  readonly seeds?: AnswerSeed[];
  /** The corpora the run trains in, when more than one (the generated world's --training-worlds); else the one `searcher`. */
  readonly corpora?: readonly TrainingCorpus[];
  /** Names of the held-out sets it defines (`--eval-data NAME`). */
  readonly heldOutNames: readonly string[];
  /** The held-out sets of one of its names, `limit` questions per set (all when undefined). */
  heldOut(name: string, limit: number | undefined): Promise<EvalSet[]>;
  /** The roles it plays without an LLM; each is used unless the run names an endpoint for it. */
  readonly scripted?: ScriptedRoles;
}
