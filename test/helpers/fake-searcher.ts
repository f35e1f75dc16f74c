// FakeSearcher: a deterministic in-memory Searcher for tests (a fake, not a retriever). A passage matches a
// query when it contains one of the query's words (lowercased letter/digit runs) in its title or text; the
// score is the number of distinct query words it contains; ties keep the passages' order. Every batch of
// queries is recorded, so tests can check what was sent together.
import type { Passage, Searcher } from '../../src/search/types.js';

export function words(text: string): string[] {
  return text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
}

export class FakeSearcher implements Searcher {
  /** Every search() call, in order. */
  readonly batches: Array<{ queries: string[]; k: number }> = [];

  constructor(readonly passages: readonly Passage[]) {}

  async search(queries: string[], k: number): Promise<Passage[][]> {
    this.batches.push({ queries: [...queries], k });
    return queries.map((q) => this.match(q, k));
  }

  /** The result of one query, without recording it (for computing expected values). */
  match(query: string, k: number): Passage[] {
    const qw = new Set(words(query));
    return this.passages
      .map((p, i) => {
        const pw = new Set(words(`${p.title} ${p.text}`));
        return { p, i, score: [...qw].filter((w) => pw.has(w)).length };
      })
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, k)
      .map((x) => ({ ...x.p, score: x.score }));
  }

  describe(): string {
    return `fake searcher (test double) over ${this.passages.length} passages`;
  }
}
