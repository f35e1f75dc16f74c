// The search group: the corpus or retrieval server, the answer seeds, and what a search returns
// (docs/method.md, "Search" and "Validating questions").
import { DEFAULT_SEARCHR1_OPTIONS } from '../../search/searchr1-client.js';
import { choice, fixedForRun, int, num, optionalStr, optionalUrl, str } from '../setting.js';
import { renamedValueProblem, type RenamedValues } from '../table.js';

/**
 * `--corpus encyclopedia`: the embedded synthetic encyclopedia (2,400 passages, generated at seed 0, with its
 * answer seeds); `--eval-data encyclopedia` and eval's `--data encyclopedia`: its held-out questions.
 */
export const ENCYCLOPEDIA = 'encyclopedia';

/**
 * The encyclopedia was called `demo`, which also named the demo world's model (`--model demo`) and nothing of
 * that world. As a --corpus, --eval-data or eval --data value the old name is refused naming the new one; a
 * run's config.json written before reads with the new one (parseSavedConfig; docs/evaluation.md).
 */
export const RENAMED_DATA: RenamedValues = { demo: ENCYCLOPEDIA };
export const RENAMED_DATA_WHY = "the embedded synthetic encyclopedia; 'demo' names only the demo world's model, --model demo";

export const SEARCH_SETTINGS = {
  corpus: str(ENCYCLOPEDIA, {
    help: "JSONL corpus ({id,contents} or {id,title,text}), 'encyclopedia' for the embedded synthetic encyclopedia (2,400 passages), or 'world' for a generated world (see --world-seed, docs/world.md)",
    check: (v) => renamedValueProblem('corpus', v, RENAMED_DATA, RENAMED_DATA_WHY),
    resume: fixedForRun('the answer seeds and questions of the run come from its corpus'),
  }),
  worldSeed: int(0, {
    min: 0,
    help: "with --corpus world: the seed of the generated world (0 = the demo world; docs/world.md)",
    resume: fixedForRun('the answer seeds and questions of the run come from its world'),
  }),
  trainingWorlds: int(1, {
    help: 'with --corpus world: the worlds self-play trains in, the world of --world-seed and the first N − 1 warm-start training worlds (1, 2, 3, …; never an evaluation world); a step proposes in one of them, each in turn (docs/world.md, "Training worlds")',
    resume: fixedForRun('the answer seeds and questions of the run come from its worlds'),
  }),
  stepCorpora: choice(['one', 'all'], 'one', {
    help: "with several training corpora (--training-worlds): one = a step draws its answer seeds from one corpus, each in turn; all = from all of them, each seed proposed and its question solved in its own corpus, the RAG check's distractors from other seeds of the same corpus (ours; docs/method.md, \"Training corpora\")",
  }),
  retrieverUrl: optionalUrl({ help: 'a Search-R1-compatible retrieval server; when set it replaces the local index' }),
  retrieverTimeout: num(60, { above: 0, help: 'seconds per retrieval-server request attempt' }),
  retrieverRetries: int(3, { min: 0, help: 'retries of a failed retrieval request (HTTP 5xx, timeouts), each printed' }),
  retrieverMaxResponseMb: int(DEFAULT_SEARCHR1_OPTIONS.maxResponseBytes / 2 ** 20, {
    help: 'MiB one retrieval-server response may hold; a larger one is cut off and refused (a runaway or wrong server)',
  }),
  seeds: optionalStr({
    help: 'answer seeds, JSONL of {"answer","hops","aliases"?}; unset: seeds derived from the corpus',
    resume: fixedForRun('a resumed run replays its seed draws from the same pool'),
  }),
  passagesPerQuery: int(3, { help: 'k, passages a search returns (each rendered as "Doc i (Title: …) text")' }),
  ragDistractorBlocks: int(4, { min: 0, help: "blocks of other seeds' passages mixed into the RAG validity check" }),
  ragMaxTokens: int(64, { help: "the RAG check's answer budget (tokens)" }),
};
