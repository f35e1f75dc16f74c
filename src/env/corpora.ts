// The task environments that are a search tool and nothing more (src/agent/environment.ts): a Search-R1
// retrieval server, the embedded synthetic encyclopedia (`--corpus encyclopedia`) and a local corpus file. None defines
// a held-out set of its own (`--eval-data` names a file or a benchmark for them) or plays a role without an LLM.
import type { TaskEnvironment } from '../agent/environment.js';
import { generateSyntheticCorpus, goldenAnswers } from '../corpus/synthetic/index.js';
import { Bm25Index } from '../search/bm25-index.js';
import { loadCorpus, parseContents } from '../search/corpus.js';
import { SearchR1Client } from '../search/searchr1-client.js';
import type { TrainConfig } from '../settings/train.js';
import { redactUrl } from '../util/redact.js';
import { seedsFromPassages } from '../agent/seeds.js';
import { ENCYCLOPEDIA_SEED } from '../eval/dataset.js';

function noHeldOut(what: string): Pick<TaskEnvironment, 'heldOutNames' | 'heldOut'> {
  return {
    heldOutNames: [],
    heldOut: (name) => Promise.reject(new Error(`--eval-data ${name}: ${what} defines no held-out set of that name`)),
  };
}

/** `--retriever-url URL`: the server is the search tool; answer seeds come from --seeds. */
export function retrieverEnvironment(config: TrainConfig, log: (line: string) => void): TaskEnvironment {
  const url = config.retrieverUrl as string;
  return {
    description: `Search-R1 retrieval server at ${redactUrl(url)}`,
    searcher: new SearchR1Client({
      url,
      timeoutMs: config.retrieverTimeout * 1000,
      attempts: config.retrieverRetries + 1,
      maxResponseBytes: config.retrieverMaxResponseMb * 2 ** 20,
      maxResponseSetting: '--retriever-max-response-mb',
      onRetry: (i) => log(`retriever retry ${i.attempt} in ${i.delayMs} ms: ${i.reason}`),
    }),
    ...noHeldOut('a retrieval server'),
  };
}

/** `--corpus encyclopedia`: BM25 over the embedded synthetic encyclopedia (2,400 passages), with its answer seeds. */
export async function encyclopediaEnvironment(log: (line: string) => void): Promise<TaskEnvironment> {
  const synth = generateSyntheticCorpus({ seed: ENCYCLOPEDIA_SEED });
  const passages = synth.corpus.map((row) => ({ id: row.id, ...parseContents(row.contents) }));
  const byId = new Map(synth.entities.map((e) => [e.id, e]));
  const seeds = synth.seeds.map((s) => {
    const entity = byId.get(s.entityId);
    const aliases = entity ? goldenAnswers(entity).filter((a) => a !== s.answer) : [];
    return { answer: s.answer, hops: s.hops, ...(aliases.length > 0 ? { aliases } : {}) };
  });
  return {
    description: `BM25 over the embedded synthetic encyclopedia (${passages.length} passages, ${seeds.length} answer seeds)`,
    searcher: await Bm25Index.fromPassages(passages, { warn: log }, 'the embedded encyclopedia'),
    seeds,
    ...noHeldOut('the embedded encyclopedia'),
  };
}

/** `--corpus FILE.jsonl`: BM25 over the file; without --seeds, its passage titles are the answer seeds. */
export async function corpusEnvironment(config: TrainConfig, log: (line: string) => void): Promise<TaskEnvironment> {
  const corpus = await loadCorpus(config.corpus);
  const withText = corpus.passages.filter((p) => p.text.trim().length > 0).length;
  if (withText === 0) log(`warning: ${config.corpus}: every passage has empty text; searches will find titles at most`);
  else if (withText < corpus.passages.length / 2) log(`warning: ${config.corpus}: ${corpus.passages.length - withText} of ${corpus.passages.length} passages have empty text`);
  const index = await Bm25Index.fromPassages(corpus.passages, { warn: log }, config.corpus);
  return {
    description: index.describe(),
    searcher: index,
    ...(config.seeds ? {} : { seeds: seedsFromPassages(corpus.passages) }),
    ...noHeldOut(`the corpus ${config.corpus}`),
  };
}
