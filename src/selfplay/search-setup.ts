// The search tool of a run, built from its configuration: the generated world, a Search-R1 retrieval server,
// the embedded demo encyclopedia or a local corpus file, with the answer seeds a local corpus supplies. The
// trainer and its step workers (./step-worker.ts) build it the same way, so every process searches alike.
import { generateSyntheticCorpus, goldenAnswers } from '../corpus/synthetic/index.js';
import { Bm25Index } from '../search/bm25-index.js';
import { loadCorpus, parseContents } from '../search/corpus.js';
import { SearchR1Client } from '../search/searchr1-client.js';
import type { Searcher } from '../search/types.js';
import type { World } from '../world/world.js';
import { worldSeeds } from '../world/setup.js';
import type { TrainConfig } from '../settings/train.js';
import type { AnswerSeed } from '../agent/roles.js';
import { seedsFromPassages } from './seeds.js';
import { redactUrl } from '../util/redact.js';

/** The demo corpus is fixed (seed 0) whatever the run seed, so every demo run searches the same encyclopedia. */
const DEMO_CORPUS_SEED = 0;

export interface Searchable {
  searcher: Searcher;
  seeds?: AnswerSeed[];
}

export async function buildSearch(config: TrainConfig, log: (l: string) => void, world: World | undefined): Promise<Searchable> {
  if (world) {
    const seeds = worldSeeds(world);
    log(`search: BM25 over the generated world of seed ${world.options.seed} (${world.passages.length} passages, ${seeds.length} answer seeds)`);
    return { searcher: await world.searcher(), seeds };
  }
  if (config.retrieverUrl) {
    log(`search: Search-R1 retrieval server at ${redactUrl(config.retrieverUrl)}`);
    return {
      searcher: new SearchR1Client({
        url: config.retrieverUrl,
        timeoutMs: config.retrieverTimeout * 1000,
        attempts: config.retrieverRetries + 1,
        maxResponseBytes: config.retrieverMaxResponseMb * 2 ** 20,
        maxResponseSetting: '--retriever-max-response-mb',
        onRetry: (i) => log(`retriever retry ${i.attempt} in ${i.delayMs} ms: ${i.reason}`),
      }),
    };
  }
  if (config.corpus === 'demo') {
    const synth = generateSyntheticCorpus({ seed: DEMO_CORPUS_SEED });
    const passages = synth.corpus.map((row) => ({ id: row.id, ...parseContents(row.contents) }));
    const byId = new Map(synth.entities.map((e) => [e.id, e]));
    const seeds = synth.seeds.map((s) => {
      const entity = byId.get(s.entityId);
      const aliases = entity ? goldenAnswers(entity).filter((a) => a !== s.answer) : [];
      return { answer: s.answer, hops: s.hops, ...(aliases.length > 0 ? { aliases } : {}) };
    });
    log(`search: BM25 over the embedded synthetic encyclopedia (${passages.length} passages, ${seeds.length} answer seeds)`);
    return { searcher: await Bm25Index.fromPassages(passages, { warn: log }, 'demo corpus'), seeds };
  }
  const corpus = await loadCorpus(config.corpus);
  const withText = corpus.passages.filter((p) => p.text.trim().length > 0).length;
  if (withText === 0) log(`warning: ${config.corpus}: every passage has empty text; searches will find titles at most`);
  else if (withText < corpus.passages.length / 2) log(`warning: ${config.corpus}: ${corpus.passages.length - withText} of ${corpus.passages.length} passages have empty text`);
  const index = await Bm25Index.fromPassages(corpus.passages, { warn: log }, config.corpus);
  log(`search: ${index.describe()}`);
  // Without --seeds, the corpus's own entities (passage titles) are the answers to build questions for.
  return { searcher: index, seeds: config.seeds ? undefined : seedsFromPassages(corpus.passages) };
}
