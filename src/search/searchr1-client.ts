// A client for a Search-R1-compatible retrieval server (`--retriever-url`, docs/method.md, "Search"):
//   POST /retrieve {"queries": [...], "topk": k, "return_scores": true}
//   → {"result": [[{"document": {"id", "contents": "\"Title\"\ntext"}, "score": s}, ...], ...]}
// All pending queries of a rollout batch go in one request (split only above `maxBatchSize`), since the
// server encodes a batch at once on its GPU. The server is a separate process that may be restarting or
// overloaded, so network errors, timeouts and 5xx are retried with exponential backoff; a 4xx means our
// request is wrong and is reported at once.
import { fetchFailure, readBodyCapped } from '../util/http-client.js';
import { hasUserInfo, redactSecrets, redactUrl } from '../util/redact.js';
import { parseContents } from './corpus.js';
import type { Passage, Searcher } from './types.js';

export interface SearchR1ClientOptions {
  /** `http://host:port/retrieve`; a bare `http://host:port` gets `/retrieve` appended. */
  url: string;
  /** Per attempt, covering the response body too (a server can stall mid-body). */
  timeoutMs: number;
  /** Tries per request, the first included. */
  attempts: number;
  /** Backoff before retry n (1-based) is min(maxBackoffMs, backoffMs · 2^(n−1)). */
  backoffMs: number;
  maxBackoffMs: number;
  /** Most queries per request; larger batches are sent as consecutive requests. */
  maxBatchSize: number;
  /**
   * Most bytes of one response body: a larger one is cut off as it streams in and refused without a retry
   * (a runaway or wrong server would otherwise be read into memory whole).
   */
  maxResponseBytes: number;
  /** The setting that sets `maxResponseBytes`, named in the error (e.g. --retriever-max-response-mb). */
  maxResponseSetting?: string;
  /** Told about each retry (e.g. for the run log). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
  /** Injected in tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export const DEFAULT_SEARCHR1_OPTIONS: Readonly<Omit<SearchR1ClientOptions, 'url'>> = {
  // Dense retrieval over wiki-18 on a busy GPU can take seconds per batch; minutes means the server is stuck.
  timeoutMs: 60_000,
  attempts: 4,
  backoffMs: 500,
  maxBackoffMs: 8_000,
  maxBatchSize: 512,
  // 512 queries × 10 passages of wiki-18 (~0.7 KB each) is ~4 MB of JSON: 64 MiB is far beyond any honest reply.
  maxResponseBytes: 64 * 2 ** 20,
};

export class SearchR1Error extends Error {
  constructor(
    message: string,
    readonly url: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'SearchR1Error';
  }
}

/** The endpoint for a `--retriever-url`: as given, or with `/retrieve` added to a bare host. */
export function retrieveEndpoint(url: string): string {
  let u: URL;
  const shown = redactUrl(url);
  try {
    u = new URL(url);
  } catch {
    throw new SearchR1Error(`retriever URL ${JSON.stringify(shown)} is not a URL (expected e.g. http://127.0.0.1:8000/retrieve)`, shown);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new SearchR1Error(`retriever URL ${shown} must be http:// or https://`, shown);
  }
  if (hasUserInfo(url)) {
    throw new SearchR1Error(`retriever URL ${shown} must not hold a user name or password (fetch cannot send them, and they would be shown in logs)`, shown);
  }
  if (u.pathname === '' || u.pathname === '/') u.pathname = '/retrieve';
  return u.toString();
}

const SNIPPET = 200;
function snippet(body: string): string {
  const flat = redactSecrets(body).replace(/\s+/g, ' ').trim();
  return flat.length > SNIPPET ? `${flat.slice(0, SNIPPET)}…` : flat;
}

function describeValue(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return `an array of ${v.length}`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${snippet(JSON.stringify(v))}`;
}

/**
 * Validates a /retrieve response and turns it into passages, one list per query. Items are
 * `{document, score}` (return_scores) or bare documents; a document is `{id, contents}` or, from servers that
 * keep fields apart, `{id, title, text}`.
 */
export function parseRetrieveResponse(body: unknown, queryCount: number, url: string): Passage[][] {
  const fail = (what: string): never => {
    throw new SearchR1Error(`retriever ${url}: malformed response: ${what}`, url);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) fail(`expected an object with "result", got ${describeValue(body)}`);
  const result = (body as { result?: unknown }).result;
  if (!Array.isArray(result)) fail(`"result" should be an array (one list per query), got ${describeValue(result)}`);
  const lists = result as unknown[];
  if (lists.length !== queryCount) fail(`"result" has ${lists.length} lists for ${queryCount} queries`);
  return lists.map((list, qi) => {
    if (!Array.isArray(list)) return fail(`result[${qi}] should be an array of documents, got ${describeValue(list)}`);
    return list.map((item: unknown, di): Passage => {
      const where = `result[${qi}][${di}]`;
      if (typeof item !== 'object' || item === null) return fail(`${where} should be an object, got ${describeValue(item)}`);
      const it = item as Record<string, unknown>;
      const doc = 'document' in it ? it.document : it;
      const dwhere = 'document' in it ? `${where}.document` : where;
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return fail(`${dwhere} should be an object, got ${describeValue(doc)}`);
      const d = doc as Record<string, unknown>;
      let id: string;
      if (typeof d.id === 'string') id = d.id;
      else if (typeof d.id === 'number' && Number.isFinite(d.id)) id = String(d.id);
      else return fail(`${dwhere} has no "id" (string or number), got ${describeValue(d.id)}`);
      let title: string;
      let text: string;
      if (typeof d.contents === 'string') ({ title, text } = parseContents(d.contents));
      else if (typeof d.title === 'string' && typeof d.text === 'string') ({ title, text } = { title: d.title, text: d.text });
      else return fail(`${dwhere} has no "contents" string, got ${describeValue(d.contents)}`);
      const p: Passage = { id, title, text };
      if ('score' in it && it !== doc) {
        if (typeof it.score !== 'number' || !Number.isFinite(it.score)) return fail(`${where}.score should be a number, got ${describeValue(it.score)}`);
        p.score = it.score;
      }
      return p;
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What went wrong with one attempt, and whether another might succeed. */
interface AttemptFailure {
  retry: boolean;
  reason: string;
  status?: number;
}

/** What a thrown fetch means: a connection that failed (retried) or a request that cannot be sent (not). */
function networkFailure(err: unknown): AttemptFailure {
  const f = fetchFailure(err);
  if (!f.retryable) return { retry: false, reason: f.why };
  return { retry: true, reason: f.code !== undefined ? `cannot connect (${f.code})` : f.why };
}

export class SearchR1Client implements Searcher {
  readonly endpoint: string;
  /** The endpoint as messages show it (secrets a query may hold removed). */
  private readonly shown: string;
  private readonly opts: SearchR1ClientOptions;
  /** Requests that reached a response or failed, retries included (for logs and tests). */
  requestCount = 0;

  constructor(options: Partial<SearchR1ClientOptions> & { url: string }) {
    this.opts = { ...DEFAULT_SEARCHR1_OPTIONS, ...options };
    this.endpoint = retrieveEndpoint(options.url);
    this.shown = redactUrl(this.endpoint);
    const { timeoutMs, attempts, backoffMs, maxBackoffMs, maxBatchSize } = this.opts;
    if (!(timeoutMs > 0)) throw new Error(`retriever: timeoutMs must be > 0, got ${timeoutMs}`);
    if (!Number.isInteger(attempts) || attempts < 1) throw new Error(`retriever: attempts must be an integer ≥ 1, got ${attempts}`);
    if (!(backoffMs >= 0) || !(maxBackoffMs >= 0)) throw new Error('retriever: backoffMs and maxBackoffMs must be ≥ 0');
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new Error(`retriever: maxBatchSize must be an integer ≥ 1, got ${maxBatchSize}`);
    if (!(this.opts.maxResponseBytes > 0)) throw new Error(`retriever: maxResponseBytes must be > 0, got ${this.opts.maxResponseBytes}`);
  }

  describe(): string {
    return `Search-R1 retrieval server at ${this.shown}`;
  }

  async search(queries: string[], k: number): Promise<Passage[][]> {
    if (!Number.isInteger(k) || k < 1) throw new Error(`retriever: k must be an integer ≥ 1, got ${k}`);
    const out: Passage[][] = [];
    for (let i = 0; i < queries.length; i += this.opts.maxBatchSize) {
      const chunk = queries.slice(i, i + this.opts.maxBatchSize);
      // Servers may return more than asked for (or ignore topk); the caller gets at most k.
      for (const list of await this.retrieve(chunk, k)) out.push(list.slice(0, k));
    }
    return out;
  }

  /** One /retrieve call (with retries) for a chunk of queries. */
  private async retrieve(queries: string[], k: number): Promise<Passage[][]> {
    const payload = JSON.stringify({ queries, topk: k, return_scores: true });
    let last: AttemptFailure | undefined;
    for (let attempt = 1; attempt <= this.opts.attempts; attempt += 1) {
      const r = await this.attempt(payload);
      if ('body' in r) return parseRetrieveResponse(r.body, queries.length, this.shown);
      last = r;
      if (!r.retry) break;
      if (attempt < this.opts.attempts) {
        const delayMs = Math.min(this.opts.maxBackoffMs, this.opts.backoffMs * 2 ** (attempt - 1));
        this.opts.onRetry?.({ attempt, delayMs, reason: r.reason });
        await sleep(delayMs);
      }
    }
    const failure = last as AttemptFailure;
    const tries = failure.retry ? ` after ${this.opts.attempts} attempt${this.opts.attempts === 1 ? '' : 's'}` : '';
    throw new SearchR1Error(`retriever ${this.shown}: ${failure.reason}${tries}`, this.shown, failure.status);
  }

  private async attempt(payload: string): Promise<{ body: unknown } | AttemptFailure> {
    const doFetch = this.opts.fetch ?? fetch;
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), this.opts.timeoutMs);
    this.requestCount += 1;
    let res: Response;
    try {
      res = await doFetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: payload,
        signal: ac.signal,
      });
    } catch (err) {
      clearTimeout(timer);
      if (ac.signal.aborted) return { retry: true, reason: `no response within ${this.opts.timeoutMs} ms` };
      return networkFailure(err);
    }
    // The body is read under the same timeout and the size cap; a failure here is the body's, not the connection's.
    const read = await this.readBody(res, ac);
    clearTimeout(timer);
    if ('reason' in read) return read;
    const text = read.text;
    const status = res.status;
    if (status < 200 || status >= 300) {
      const reason = `HTTP ${status}${res.statusText ? ` ${res.statusText}` : ''}: ${snippet(text) || '(empty body)'}`;
      // 408 and 429 are the server asking us to come back later; other 4xx are our mistake.
      const retry = status >= 500 || status === 408 || status === 429;
      return { retry, reason, status };
    }
    try {
      return { body: JSON.parse(text) as unknown };
    } catch {
      throw new SearchR1Error(
        `retriever ${this.shown}: malformed response: body is not JSON (HTTP ${status}): ${snippet(text) || '(empty body)'}`,
        this.shown,
        status,
      );
    }
  }

  /** The response body as text, at most `maxResponseBytes` of it (else a failure that is not retried). */
  private async readBody(res: Response, ac: AbortController): Promise<{ text: string } | AttemptFailure> {
    const read = await readBodyCapped(res, this.opts.maxResponseBytes, ac, () => `no response within ${this.opts.timeoutMs} ms`);
    if ('text' in read) return read;
    const mib = this.opts.maxResponseBytes / 2 ** 20;
    const cap = this.opts.maxResponseSetting && read.why.startsWith('the response is larger') ? ` (${this.opts.maxResponseSetting} ${Number.isInteger(mib) ? mib : mib.toFixed(3)})` : '';
    const tail = read.why.startsWith('the response is larger') ? '; the server sent more than asked for, or is not a retriever' : '';
    return { retry: read.retryable, reason: `${read.why}${cap}${tail}`, status: res.status };
  }
}
