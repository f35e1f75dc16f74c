// Building what an evaluation searches with and retrieves skills from, each checked before any question runs
// (docs/evaluation.md): the search tool answers a probe query, and a skill bank opens only with the embedder
// it was recorded with.
import { generateSyntheticCorpus } from '../corpus/synthetic/index.js';
import { Bm25Index } from '../search/bm25-index.js';
import { parseContents } from '../search/corpus.js';
import { SearchR1Client } from '../search/searchr1-client.js';
import type { Searcher } from '../search/types.js';
import { BankFileError, readBankFile } from '../skills/bank-file.js';
import { SkillBank } from '../skills/bank.js';
import { E5Embedder } from '../skills/e5.js';
import type { Embedder } from '../skills/embedder.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { ENCYCLOPEDIA, RENAMED_DATA, RENAMED_DATA_WHY } from '../settings/train/search.js';
import { renamedValueProblem } from '../settings/table.js';
import { ENCYCLOPEDIA_SEED } from './dataset.js';

export interface SearchSpec {
  /** A JSONL corpus for a local BM25 index, or `encyclopedia` for the embedded encyclopedia. */
  corpus?: string;
  /** A Search-R1-compatible retrieval server (replaces the local index). */
  retrieverUrl?: string;
}

/** The search tool, after one probe query has come back (an unreachable server fails here, naming its URL). */
export async function buildEvalSearcher(spec: SearchSpec, log: (line: string) => void = () => {}): Promise<Searcher> {
  let searcher: Searcher;
  const renamed = renamedValueProblem('corpus', spec.corpus, RENAMED_DATA, RENAMED_DATA_WHY);
  if (renamed !== undefined) throw new Error(`--corpus ${renamed}`);
  if (spec.retrieverUrl !== undefined) {
    searcher = new SearchR1Client({ url: spec.retrieverUrl, attempts: 2, backoffMs: 200, timeoutMs: 30_000 });
  } else if (spec.corpus === ENCYCLOPEDIA) {
    const world = generateSyntheticCorpus({ seed: ENCYCLOPEDIA_SEED });
    searcher = await Bm25Index.fromPassages(
      world.corpus.map((row) => ({ id: row.id, ...parseContents(row.contents) })),
      { warn: log },
      'the embedded encyclopedia',
    );
  } else if (spec.corpus !== undefined) {
    searcher = await Bm25Index.open(spec.corpus, { warn: log });
  } else {
    throw new Error('eval needs a search tool: --corpus FILE.jsonl (or encyclopedia) or --retriever-url URL');
  }
  try {
    await searcher.search(['probe'], 1);
  } catch (err) {
    throw new Error(`search tool not usable (${searcher.describe()}): ${(err as Error).message}`);
  }
  log(`search: ${searcher.describe()}`);
  return searcher;
}

export interface BankSpec {
  /** The bank file (JSON, as a run writes skills.json). */
  path: string;
  /** Which embedder to retrieve with; default the one the bank records. */
  embedder?: 'e5' | 'lexical';
  /** E5 model folder or name; default the one the bank records. */
  e5Model?: string;
  /** Tokens of rendered cards in the solver's prompt (the run's --render-token-budget); default the bank's default. */
  renderTokenBudget?: number;
  /** Cards per question and their score floor (the run's --skills-top-k, --skills-min-score); default the bank's. */
  topK?: number;
  minScore?: number;
}

/**
 * Opens a skill bank read-only for retrieval. It must exist, and an embedder other than the recorded one is
 * refused (the bank's vectors and threshold belong to its embedder).
 */
export async function openEvalBank(spec: BankSpec): Promise<SkillBank> {
  const recorded = readBankFile(spec.path).embedder;
  if (spec.embedder !== undefined && spec.embedder !== recorded.name) {
    throw new BankFileError(spec.path, 'embedder', `recorded with ${recorded.name} (${recorded.model}, dim ${recorded.dim}), but --embedder ${spec.embedder} was asked for; its vectors would not be comparable`);
  }
  const embedder: Embedder = recorded.name === 'lexical' ? new LexicalEmbedder({ dim: recorded.dim }) : await E5Embedder.load({ model: spec.e5Model ?? recorded.model });
  const config = { renderTokenBudget: spec.renderTokenBudget, topK: spec.topK, minScore: spec.minScore };
  return SkillBank.open(spec.path, { embedder, create: false, config });
}
