// The Search-R1 retrieval-server client against a real HTTP server on 127.0.0.1 playing POST /retrieve
// batching, parsing, retries with backoff on 5xx, no retry on 4xx, timeouts of a
// hanging or stalling server, refused connections, malformed bodies. Timeouts and backoffs are a few hundred
// milliseconds at most to keep the file fast; nothing here asserts a duration.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SearchR1Client, SearchR1Error, parseRetrieveResponse, retrieveEndpoint } from '../src/search/searchr1-client.js';
import type { Searcher } from '../src/search/types.js';

interface Seen {
  method: string;
  path: string;
  contentType: string | undefined;
  body: unknown;
}
type Handler = (req: Seen, res: ServerResponse, n: number) => void;

let server: Server | undefined;
afterEach(async () => {
  if (server === undefined) return;
  server.closeAllConnections(); // hanging requests would keep close() waiting
  await new Promise<void>((r) => server?.close(() => r()));
  server = undefined;
});

/** Starts a server; returns its base URL and the requests it has seen. */
async function serve(handler: Handler): Promise<{ base: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // keep the raw text
      }
      const s: Seen = { method: req.method ?? '', path: req.url ?? '', contentType: req.headers['content-type'], body };
      seen.push(s);
      handler(s, res, seen.length);
    });
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, seen };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

/** A well-behaved retriever: for query q, k documents "q#i" with contents `"Title q"\ntext i`, scores descending. */
function answer(req: Seen, res: ServerResponse): void {
  const { queries, topk } = req.body as { queries: string[]; topk: number };
  send(res, 200, {
    result: queries.map((q) =>
      Array.from({ length: topk }, (_, i) => ({
        document: { id: `${q}#${i}`, contents: `"Title ${q}"\ntext ${i} for ${q}` },
        score: 10 - i,
      })),
    ),
  });
}

const FAST = { timeoutMs: 300, backoffMs: 5, maxBackoffMs: 20 };

async function failure(p: Promise<unknown>): Promise<SearchR1Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SearchR1Error);
  return err as SearchR1Error;
}

describe('the Search-R1 client', () => {
  it('sends all queries in one request and parses the passages, in query order', async () => {
    const { base, seen } = await serve(answer);
    const client: Searcher = new SearchR1Client({ url: `${base}/retrieve`, ...FAST });
    const queries = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const results = await client.search(queries, 3);
    expect(seen.length).toBe(1);
    expect(seen[0]).toEqual({
      method: 'POST',
      path: '/retrieve',
      contentType: 'application/json',
      body: { queries, topk: 3, return_scores: true },
    });
    expect(results.length).toBe(5);
    expect(results[1]).toEqual([
      { id: 'beta#0', title: 'Title beta', text: 'text 0 for beta', score: 10 },
      { id: 'beta#1', title: 'Title beta', text: 'text 1 for beta', score: 9 },
      { id: 'beta#2', title: 'Title beta', text: 'text 2 for beta', score: 8 },
    ]);
    expect(client.describe()).toBe(`Search-R1 retrieval server at ${base}/retrieve`);
  });

  it('splits batches above maxBatchSize into consecutive requests and keeps the order', async () => {
    const { base, seen } = await serve(answer);
    const client = new SearchR1Client({ url: base, ...FAST, maxBatchSize: 2 });
    const queries = ['q1', 'q2', 'q3', 'q4', 'q5'];
    const results = await client.search(queries, 1);
    expect(seen.map((s) => (s.body as { queries: string[] }).queries)).toEqual([['q1', 'q2'], ['q3', 'q4'], ['q5']]);
    // A bare host URL gets /retrieve.
    expect(seen.every((s) => s.path === '/retrieve')).toBe(true);
    expect(results.map((r) => r.map((p) => p.id))).toEqual([['q1#0'], ['q2#0'], ['q3#0'], ['q4#0'], ['q5#0']]);
    expect(await client.search([], 3)).toEqual([]);
    expect(seen.length).toBe(3);
  });

  it('keeps at most k passages when the server returns more, and accepts bare documents and numeric ids', async () => {
    const { base } = await serve((_req, res) =>
      send(res, 200, {
        result: [
          [
            { id: 7, contents: 'no title line' },
            { id: '8', title: 'T', text: 'x' },
            { id: '9', contents: '"A"\nb' },
          ],
        ],
      }),
    );
    const client = new SearchR1Client({ url: base, ...FAST });
    expect(await client.search(['q'], 2)).toEqual([
      [
        { id: '7', title: '', text: 'no title line' },
        { id: '8', title: 'T', text: 'x' },
      ],
    ]);
  });

  it('retries a 500 (and 503, 429) and then succeeds', async () => {
    const statuses = [500, 503, 429];
    const { base, seen } = await serve((req, res, n) => {
      const status = statuses[n - 1];
      if (status !== undefined) send(res, status, `overloaded (${status})`);
      else answer(req, res);
    });
    const retries: Array<{ attempt: number; delayMs: number; reason: string }> = [];
    const client = new SearchR1Client({ url: base, ...FAST, attempts: 4, onRetry: (r) => retries.push(r) });
    const results = await client.search(['x', 'y'], 2);
    expect(results.map((r) => r.map((p) => p.id))).toEqual([
      ['x#0', 'x#1'],
      ['y#0', 'y#1'],
    ]);
    expect(seen.length).toBe(4);
    expect(client.requestCount).toBe(4);
    // Exponential backoff, capped: 5, 10, 20 ms.
    expect(retries.map((r) => r.delayMs)).toEqual([5, 10, 20]);
    expect(retries[0]?.reason).toBe('HTTP 500 Internal Server Error: overloaded (500)');
    expect(retries[2]?.reason).toContain('HTTP 429');
    // Every try carried the same batch.
    expect(new Set(seen.map((s) => JSON.stringify(s.body))).size).toBe(1);
  });

  it('fails after N tries of a persistent 500 with the URL, status and body', async () => {
    const { base, seen } = await serve((_req, res) => send(res, 500, 'CUDA out of memory while encoding queries'));
    const client = new SearchR1Client({ url: base, ...FAST, attempts: 3 });
    const err = await failure(client.search(['q'], 3));
    expect(seen.length).toBe(3);
    expect(err.message).toBe(
      `retriever ${base}/retrieve: HTTP 500 Internal Server Error: CUDA out of memory while encoding queries after 3 attempts`,
    );
    expect(err.status).toBe(500);
    expect(err.url).toBe(`${base}/retrieve`);
  });

  it('does not retry a 4xx, and shortens a long body', async () => {
    const detail = `{"detail":"${'field required; '.repeat(40)}"}`;
    const { base, seen } = await serve((_req, res) => send(res, 422, detail));
    const client = new SearchR1Client({ url: base, ...FAST, attempts: 3 });
    const err = await failure(client.search(['q'], 3));
    expect(seen.length).toBe(1);
    expect(err.status).toBe(422);
    expect(err.message).toMatch(/^retriever http:\/\/127\.0\.0\.1:\d+\/retrieve: HTTP 422 Unprocessable Entity: \{"detail":"field required;/);
    expect(err.message.endsWith('…')).toBe(true);
    expect(err.message).not.toContain('attempts');
    expect(err.message.length).toBeLessThan(320);
  });

  it('times out a server that never answers, on every try', async () => {
    const { base, seen } = await serve(() => {
      // never respond
    });
    const client = new SearchR1Client({ url: base, timeoutMs: 200, backoffMs: 5, attempts: 2 });
    const err = await failure(client.search(['q'], 3));
    expect(err.message).toBe(`retriever ${base}/retrieve: no response within 200 ms after 2 attempts`);
    expect(seen.length).toBe(2);
  });

  it('times out a server that stalls in the middle of the body', async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"result": [[');
    });
    const client = new SearchR1Client({ url: base, timeoutMs: 200, backoffMs: 5, attempts: 1 });
    const err = await failure(client.search(['q'], 3));
    expect(err.message).toBe(`retriever ${base}/retrieve: no response within 200 ms after 1 attempt`);
  });

  it('reports a refused connection as such, after retrying', async () => {
    const { base } = await serve(answer);
    server?.closeAllConnections();
    await new Promise<void>((r) => server?.close(() => r()));
    server = undefined;
    const client = new SearchR1Client({ url: base, ...FAST, attempts: 2 });
    const err = await failure(client.search(['q'], 3));
    expect(err.message).toBe(`retriever ${base}/retrieve: cannot connect (ECONNREFUSED) after 2 attempts`);
  });

  const malformed: Array<[string, string | object, string]> = [
    ['a body that is not JSON', '<html>Bad Gateway</html>', 'malformed response: body is not JSON (HTTP 200): <html>Bad Gateway</html>'],
    ['no "result"', { results: [] }, 'malformed response: "result" should be an array (one list per query), got undefined'],
    ['too few lists', { result: [[]] }, 'malformed response: "result" has 1 lists for 2 queries'],
    ['a list that is not an array', { result: [[], { a: 1 }] }, 'malformed response: result[1] should be an array of documents, got an object'],
    [
      'a document without contents',
      { result: [[], [{ document: { id: 'x', text: 'only text' }, score: 1 }]] },
      'malformed response: result[1][0].document has no "contents" string, got undefined',
    ],
    [
      'a document without id',
      { result: [[{ document: { contents: '"T"\nx' }, score: 1 }], []] },
      'malformed response: result[0][0].document has no "id" (string or number), got undefined',
    ],
    [
      'a score that is not a number',
      { result: [[{ document: { id: 'x', contents: 'c' }, score: 'high' }], []] },
      'malformed response: result[0][0].score should be a number, got string "high"',
    ],
  ];
  it.each(malformed)('reports %s clearly and does not retry it', async (_what, body, message) => {
    const { base, seen } = await serve((_req, res) => send(res, 200, body));
    const client = new SearchR1Client({ url: base, ...FAST, attempts: 3 });
    const err = await failure(client.search(['q1', 'q2'], 3));
    expect(err.message).toBe(`retriever ${base}/retrieve: ${message}`);
    expect(seen.length).toBe(1);
  });
});

describe('configuration', () => {
  it('resolves the endpoint and rejects bad URLs and options', () => {
    expect(retrieveEndpoint('http://127.0.0.1:8000')).toBe('http://127.0.0.1:8000/retrieve');
    expect(retrieveEndpoint('http://127.0.0.1:8000/')).toBe('http://127.0.0.1:8000/retrieve');
    expect(retrieveEndpoint('http://host:8000/retrieve')).toBe('http://host:8000/retrieve');
    expect(retrieveEndpoint('https://host/api/search')).toBe('https://host/api/search');
    expect(() => retrieveEndpoint('127.0.0.1:8000')).toThrow('is not a URL');
    expect(() => retrieveEndpoint('ftp://host/retrieve')).toThrow('must be http:// or https://');
    expect(() => new SearchR1Client({ url: 'http://h', attempts: 0 })).toThrow('attempts must be an integer ≥ 1');
    expect(() => new SearchR1Client({ url: 'http://h', timeoutMs: 0 })).toThrow('timeoutMs must be > 0');
    expect(() => new SearchR1Client({ url: 'http://h', maxBatchSize: 0 })).toThrow('maxBatchSize');
  });

  it('parses a response on its own (for replays and other transports)', () => {
    expect(parseRetrieveResponse({ result: [[{ document: { id: '1', contents: '"T"\nx' }, score: 0.5 }]] }, 1, 'u')).toEqual([
      [{ id: '1', title: 'T', text: 'x', score: 0.5 }],
    ]);
    expect(() => parseRetrieveResponse([], 1, 'u')).toThrow('retriever u: malformed response: expected an object with "result", got an array of 0');
  });
});
