// The search tool's one interface: `search(queries, k) → passages`, with two
// implementations, the local BM25 index (bm25-index.ts) and the Search-R1 retrieval-server client
// (searchr1-client.ts). The rollout engine only sees this file.

/** One retrieved passage. `title` is the bare title (no wiki-18 quotes); `score` is the retriever's own. */
export interface Passage {
  id: string;
  title: string;
  text: string;
  score?: number;
}

export interface Searcher {
  /**
   * Top-`k` passages for each query, best first, one list per query in query order. A list may be shorter
   * than `k` (a lexical index returns nothing for a query with no known term).
   */
  search(queries: string[], k: number): Promise<Passage[][]>;
  /** One line for logs and run configs: which retriever, over what. */
  describe(): string;
  /**
   * A digest of everything its results depend on (the passages, the index and search settings), where the tool
   * is local and fixed; undefined where it is not (a retrieval server, whose index this process cannot see).
   * A result computed against one digest may be reused against the same (src/eval/held-out-cache.ts).
   */
  readonly contentDigest?: string;
}

/** Passages shown to the policy per `<search>` call (docs/method.md, "Search"). */
export const SEARCH_TOP_K = 3;

/**
 * Quotes a title the way the wiki-18 corpus stores it on the first line of `contents`: in double quotes,
 * with inner quotes doubled (the corpus comes from DPR's TSV, which is CSV-quoted).
 */
export function quoteTitle(title: string): string {
  return `"${title.replaceAll('"', '""')}"`;
}

/**
 * The tool observation for one query, byte for byte as Search-R1's `_passages2string` writes it: per passage
 * `Doc {i}(Title: {first line of contents}) {rest of contents}\n`, i from 1. Search-R1 puts no space
 * before `(Title:` and shows the first contents line as is, i.e. with the wiki-18 quotes; a policy
 * trained with Search-R1 has seen exactly this, so we keep it. Passages with an empty title (contents
 * without a title line) render the title part empty rather than inventing one.
 *
 * Renders every passage given; the caller picks the top `SEARCH_TOP_K`.
 */
export function renderResults(passages: readonly Passage[]): string {
  let out = '';
  passages.forEach((p, i) => {
    const title = p.title === '' ? '' : quoteTitle(p.title);
    out += `Doc ${i + 1}(Title: ${title}) ${p.text}\n`;
  });
  return out;
}
