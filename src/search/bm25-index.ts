// The local lexical retriever: BM25 over a JSONL corpus, through MiniSearch (pure JS, no dependencies,
// serializable index). It is meant to behave like the BM25 retriever Search-R1 ships (Pyserini/Lucene):
// one field holding title and text, Lucene's English stopwords, the Porter stemmer, k1 = 0.9, b = 0.4.
//
// MiniSearch scores BM25+ and then multiplies each document's score by the number of distinct query terms
// it matched (a coordination factor). We set BM25+'s `d` to 0 and divide that factor out again, which leaves
// the classic sum over query terms of idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), with Lucene's
// idf = ln(1 + (N − n + 0.5)/(n + 0.5)). Ties are broken by id so a ranking never depends on insertion order.
//
// The index is built once per corpus content and cached on disk (a cache, not user data: a file that does
// not load is rebuilt with a warning).
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import MiniSearch, { type AsPlainObject, type Options as MiniSearchOptions } from 'minisearch';
import { stemmer } from 'stemmer';
import { writeFileAtomic } from '../util/atomic.js';
import { CorpusError, hashPassages, loadCorpus } from './corpus.js';
import type { Passage, Searcher } from './types.js';

export interface Bm25Progress {
  /** `read`: bytes of the corpus file; `index`: passages added; `save`: the cache file written (0 → 1). */
  phase: 'read' | 'index' | 'save';
  done: number;
  total: number;
}

export interface Bm25Options {
  /** BM25 term-frequency saturation (Pyserini's default). Search-time only: not part of the cache key. */
  k1: number;
  /** BM25 length normalization (Pyserini's default). Search-time only: not part of the cache key. */
  b: number;
  /** Porter-stem terms (as Lucene's EnglishAnalyzer does). */
  stem: boolean;
  /** Drop Lucene's 33 English stopwords. */
  stopwords: boolean;
  /** Where built indexes are cached; `null` disables the cache. */
  cacheDir: string | null;
  onProgress?: (p: Bm25Progress) => void;
  /** Where cache problems are reported (they never fail a run). */
  warn: (message: string) => void;
}

/** The cache folder: `$XDG_CACHE_HOME/sesa-train/bm25`, else `~/.cache/sesa-train/bm25`. */
export function defaultBm25CacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const base = xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache');
  return join(base, 'sesa-train', 'bm25');
}

export const DEFAULT_BM25_OPTIONS: Readonly<Omit<Bm25Options, 'cacheDir'>> = {
  k1: 0.9,
  b: 0.4,
  stem: true,
  stopwords: true,
  warn: (m) => console.warn(m),
};

function resolveOptions(o: Partial<Bm25Options>): Bm25Options {
  const opts: Bm25Options = { ...DEFAULT_BM25_OPTIONS, cacheDir: defaultBm25CacheDir(), ...o };
  if (!(opts.k1 >= 0) || !Number.isFinite(opts.k1)) throw new Error(`bm25: k1 must be a finite number ≥ 0, got ${opts.k1}`);
  if (!(opts.b >= 0 && opts.b <= 1)) throw new Error(`bm25: b must be in [0, 1], got ${opts.b}`);
  return opts;
}

// Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (the analyzer Pyserini's default BM25 index uses).
const STOPWORDS = new Set(
  'a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with'.split(
    ' ',
  ),
);

/** Bump when the analysis below changes, so that old caches are not reused. */
const ANALYZER_VERSION = 2;
const CACHE_FORMAT = 1;
const FIELD = 'contents';

// Split on whitespace, punctuation, symbols and control characters (Lucene's StandardTokenizer keeps none).
const SPLIT = /[\n\r\p{Z}\p{P}\p{S}\p{C}]+/u;

// Stemming is most of the analysis time and a corpus repeats its words endlessly, so stems are memoized
// (bounded: cleared when full, which only costs recomputation).
const STEMS = new Map<string, string>();
const STEM_MEMO_MAX = 500_000;
function stem(t: string): string {
  let s = STEMS.get(t);
  if (s === undefined) {
    if (STEMS.size >= STEM_MEMO_MAX) STEMS.clear();
    s = stemmer(t);
    STEMS.set(t, s);
  }
  return s;
}

/** The terms a text is indexed (or a query is searched) under, repeats kept, in order. */
export function analyze(text: string, opts: Pick<Bm25Options, 'stem' | 'stopwords'> = DEFAULT_BM25_OPTIONS): string[] {
  const out: string[] = [];
  for (const tok of text.split(SPLIT)) {
    const t = tok.toLowerCase();
    if (t === '' || (opts.stopwords && STOPWORDS.has(t))) continue;
    out.push(opts.stem ? stem(t) : t);
  }
  return out;
}

// MiniSearch takes a field's length to be its number of *distinct* tokens, while BM25 (and Lucene) use the
// number of analyzed tokens. So analysis happens in `tokenize`, each repeat of a term is made distinct with
// a \0-suffix (\0 never survives SPLIT), and `processTerm` strips the suffix before the term is indexed:
// the length MiniSearch records is then the analyzed token count, and tf is counted on the bare term.
const MARK = '\u0000';
function makeTokenize(opts: Pick<Bm25Options, 'stem' | 'stopwords'>): (text: string) => string[] {
  return (text) => {
    const seen = new Map<string, number>();
    return analyze(text, opts).map((t) => {
      const n = seen.get(t) ?? 0;
      seen.set(t, n + 1);
      return n === 0 ? t : `${t}${MARK}${n}`;
    });
  };
}
function stripMark(term: string): string {
  const i = term.indexOf(MARK);
  return i < 0 ? term : term.slice(0, i);
}

let cachedLibraryVersion: string | undefined;
/** `minisearch@x.y.z`, read from its package.json (not exported by the package, so found by walking up). */
function libraryVersion(): string {
  if (cachedLibraryVersion !== undefined) return cachedLibraryVersion;
  let dir = dirname(createRequire(import.meta.url).resolve('minisearch'));
  for (let i = 0; i < 6; i += 1) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'minisearch' && typeof pkg.version === 'string') {
        cachedLibraryVersion = `minisearch@${pkg.version}`;
        return cachedLibraryVersion;
      }
    } catch {
      // not this folder; keep walking up
    }
    dir = dirname(dir);
  }
  cachedLibraryVersion = 'minisearch@unknown';
  return cachedLibraryVersion;
}

interface CacheFile {
  format: number;
  key: string;
  library: string;
  documentCount: number;
  index: AsPlainObject;
}

type Doc = { id: string; contents: string };

/** Yield to the event loop between indexing batches, so progress can be drawn and signals handled. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
const INDEX_BATCH = 2000;

export class Bm25Index implements Searcher {
  /** Whether this index was `built` from the passages or loaded from the on-disk `cache`. */
  readonly source: 'built' | 'cache';
  /** The cache file used or written; null when caching is off. */
  readonly cachePath: string | null;
  readonly size: number;
  /** The index's cache key (analyzer, library, corpus content) and the search-time k1 and b, hashed. */
  readonly contentDigest: string;
  private readonly byId: Map<string, Passage>;

  private constructor(
    private readonly ms: MiniSearch<Doc>,
    passages: readonly Passage[],
    private readonly opts: Bm25Options,
    private readonly label: string,
    source: 'built' | 'cache',
    cachePath: string | null,
    key: string,
  ) {
    this.contentDigest = createHash('sha256').update(JSON.stringify({ index: key, k1: opts.k1, b: opts.b })).digest('hex');
    this.byId = new Map(passages.map((p) => [p.id, p]));
    this.size = passages.length;
    this.source = source;
    this.cachePath = cachePath;
  }

  /** Opens (building or loading from cache) the index of a JSONL corpus file. */
  static async open(corpusFile: string, options: Partial<Bm25Options> = {}): Promise<Bm25Index> {
    const opts = resolveOptions(options);
    const corpus = await loadCorpus(corpusFile, {
      onProgress: opts.onProgress && ((p) => opts.onProgress?.({ phase: 'read', done: p.bytesRead, total: p.totalBytes })),
    });
    return Bm25Index.create(corpus.passages, corpus.contentHash, opts, corpusFile);
  }

  /** Indexes passages already in memory (e.g. a generated corpus); cached the same way, by content. */
  static async fromPassages(
    passages: readonly Passage[],
    options: Partial<Bm25Options> = {},
    label = 'in-memory corpus',
  ): Promise<Bm25Index> {
    const opts = resolveOptions(options);
    if (passages.length === 0) throw new CorpusError('corpus has no passages', label);
    const seen = new Set<string>();
    for (const p of passages) {
      if (seen.has(p.id)) throw new CorpusError(`duplicate id ${JSON.stringify(p.id)}`, label);
      seen.add(p.id);
    }
    return Bm25Index.create(passages, hashPassages(passages), opts, label);
  }

  private static miniSearchOptions(opts: Bm25Options): MiniSearchOptions<Doc> {
    return {
      idField: 'id',
      fields: [FIELD],
      storeFields: [],
      tokenize: makeTokenize(opts),
      processTerm: stripMark,
      // Index-time settings only; search options are passed per query in searchOne.
    };
  }

  private static async create(
    passages: readonly Passage[],
    contentHash: string,
    opts: Bm25Options,
    label: string,
  ): Promise<Bm25Index> {
    const msOptions = Bm25Index.miniSearchOptions(opts);
    // k1 and b are applied at search time, so they are left out: changing them needs no rebuild.
    const key = JSON.stringify({
      format: CACHE_FORMAT,
      analyzer: ANALYZER_VERSION,
      library: libraryVersion(),
      stem: opts.stem,
      stopwords: opts.stopwords,
      corpus: contentHash,
    });
    const cachePath =
      opts.cacheDir === null
        ? null
        : join(opts.cacheDir, `bm25-${createHash('sha256').update(key).digest('hex').slice(0, 16)}.json`);

    if (cachePath !== null) {
      const loaded = Bm25Index.tryLoad(cachePath, key, passages, msOptions, opts.warn);
      if (loaded) return new Bm25Index(loaded, passages, opts, label, 'cache', cachePath, key);
    }

    const ms = new MiniSearch<Doc>(msOptions);
    const total = passages.length;
    for (let i = 0; i < total; i += INDEX_BATCH) {
      const end = Math.min(total, i + INDEX_BATCH);
      for (let j = i; j < end; j += 1) {
        const p = passages[j] as Passage;
        // Title and text in one field, as Pyserini indexes wiki-18's `contents`.
        ms.add({ id: p.id, contents: `${p.title}\n${p.text}` });
      }
      opts.onProgress?.({ phase: 'index', done: end, total });
      if (end < total) await tick();
    }

    if (cachePath !== null) {
      opts.onProgress?.({ phase: 'save', done: 0, total: 1 });
      try {
        const file: CacheFile = {
          format: CACHE_FORMAT,
          key,
          library: libraryVersion(),
          documentCount: ms.documentCount,
          index: ms.toJSON(),
        };
        writeFileAtomic(cachePath, JSON.stringify(file));
      } catch (err) {
        // Very large indexes can exceed V8's string limit; searching works without the cache.
        opts.warn(`bm25: could not write the index cache ${cachePath} (${(err as Error).message}); continuing without it`);
      }
      opts.onProgress?.({ phase: 'save', done: 1, total: 1 });
    }
    return new Bm25Index(ms, passages, opts, label, 'built', cachePath, key);
  }

  private static tryLoad(
    cachePath: string,
    key: string,
    passages: readonly Passage[],
    msOptions: MiniSearchOptions<Doc>,
    warn: (m: string) => void,
  ): MiniSearch<Doc> | undefined {
    let raw: string;
    try {
      raw = readFileSync(cachePath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        warn(`bm25: cannot read index cache ${cachePath} (${(err as Error).message}); rebuilding`);
      }
      return undefined;
    }
    try {
      const file = JSON.parse(raw) as Partial<CacheFile>;
      if (file.format !== CACHE_FORMAT || file.key !== key || file.index === undefined) {
        throw new Error('header does not match this corpus and these settings');
      }
      const ms = MiniSearch.loadJS<Doc>(file.index, msOptions);
      if (ms.documentCount !== passages.length || file.documentCount !== passages.length) {
        throw new Error(`it holds ${ms.documentCount} documents, the corpus ${passages.length}`);
      }
      for (const p of passages) if (!ms.has(p.id)) throw new Error(`it lacks passage ${JSON.stringify(p.id)}`);
      return ms;
    } catch (err) {
      warn(`bm25: index cache ${cachePath} is unusable (${(err as Error).message}); rebuilding it`);
      return undefined;
    }
  }

  /** Top-k passages for one query, best first (score desc, then id asc). */
  searchOne(query: string, k: number): Passage[] {
    if (!Number.isInteger(k) || k < 0) throw new Error(`bm25: k must be a non-negative integer, got ${k}`);
    if (k === 0) return [];
    const hits = this.ms.search(query, {
      combineWith: 'OR',
      prefix: false,
      fuzzy: false,
      bm25: { k: this.opts.k1, b: this.opts.b, d: 0 },
    });
    const scored = hits.map((h) => ({ id: String(h.id), score: h.score / Math.max(1, h.queryTerms.length) }));
    scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const out: Passage[] = [];
    for (const s of scored.slice(0, k)) {
      const p = this.byId.get(s.id);
      if (p === undefined) throw new Error(`bm25: index returned unknown id ${JSON.stringify(s.id)}`);
      out.push({ id: p.id, title: p.title, text: p.text, score: s.score });
    }
    return out;
  }

  async search(queries: string[], k: number): Promise<Passage[][]> {
    return queries.map((q) => this.searchOne(q, k));
  }

  describe(): string {
    return `bm25 (${libraryVersion()}, k1=${this.opts.k1}, b=${this.opts.b}${this.opts.stem ? ', porter' : ''}${
      this.opts.stopwords ? ', stopwords' : ''
    }) over ${this.size} passages of ${this.label}`;
  }
}
