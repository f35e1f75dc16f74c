// A retrieval server whose response body is hostile, against a real HTTP server on 127.0.0.1: a body larger
// than --retriever-max-response-mb is cut off as it streams in (by its Content-Length when it sends one) and
// refused without a retry; a connection closed mid-body is reported as exactly that, not as "cannot connect",
// and retried; the cap is a setting of the config table that reaches the client.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEARCHR1_OPTIONS, SearchR1Client, SearchR1Error } from '../../src/search/searchr1-client.js';
import { TRAIN_DEFAULTS } from '../../src/settings/train.js';
import { openEnvironment } from '../../src/env/open.js';

let server: Server | undefined;
let requests = 0;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  requests = 0;
});

async function serve(handler: (res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      handler(res);
    });
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/retrieve`;
}

const MB = 2 ** 20;
const FAST = { timeoutMs: 5_000, backoffMs: 1, maxBackoffMs: 2, attempts: 3 };

async function failure(p: Promise<unknown>): Promise<SearchR1Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SearchR1Error);
  return err as SearchR1Error;
}

describe('a retriever response larger than the cap', () => {
  it('streamed without a length: read only up to the cap, refused without a retry', async () => {
    let sent = 0;
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // 8 MiB in 64 KiB chunks, written as the client reads; the client stops reading after 1 MiB.
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (sent < 8 * MB) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => undefined);
      pump();
    });
    const client = new SearchR1Client({ url, ...FAST, maxResponseBytes: MB });
    const err = await failure(client.search(['q'], 1));
    expect(err.message).toBe(`retriever ${url}: the response is larger than 1 MiB; the server sent more than asked for, or is not a retriever`);
    expect(requests).toBe(1);
    expect(sent).toBeLessThan(8 * MB);
  });

  it('announced by its Content-Length: refused before the body is read', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(100 * MB) });
      res.write('{"result": [');
    });
    const client = new SearchR1Client({ url, ...FAST, maxResponseBytes: MB });
    const err = await failure(client.search(['q'], 1));
    expect(err.message).toMatch(/the response is larger than 1 MiB;/);
    expect(requests).toBe(1);
  });

  it('the cap is the config table\'s --retriever-max-response-mb, and reaches the run\'s client', async () => {
    expect(TRAIN_DEFAULTS.retrieverMaxResponseMb * MB).toBe(DEFAULT_SEARCHR1_OPTIONS.maxResponseBytes);
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ result: [[{ document: { id: '1', contents: `"T"\n${'x'.repeat(3 * MB)}` }, score: 1 }]] }));
    });
    const { searcher } = await openEnvironment({ ...TRAIN_DEFAULTS, retrieverUrl: url, seeds: 's.jsonl', retrieverMaxResponseMb: 2 }, () => undefined);
    const err = await failure(searcher.search(['q'], 1));
    expect(err.message).toMatch(/larger than 2 MiB \(--retriever-max-response-mb 2\)/);
    const big = await openEnvironment({ ...TRAIN_DEFAULTS, retrieverUrl: url, seeds: 's.jsonl', retrieverMaxResponseMb: 4 }, () => undefined);
    expect((await big.searcher.search(['q'], 1))[0]?.[0]?.text.length).toBe(3 * MB);
  });
});

describe('a retriever that closes the connection mid-body', () => {
  it('is reported as a response cut off after N bytes (not "cannot connect"), and retried', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.write('{"result": [[{"document": {"id": "1", "contents": "');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const retries: string[] = [];
    const client = new SearchR1Client({ url, ...FAST, onRetry: (i) => retries.push(i.reason) });
    const err = await failure(client.search(['q'], 1));
    expect(err.message).toMatch(new RegExp(`^retriever ${url}: the connection closed mid-response after 51 bytes \\(.+\\) after 3 attempts$`));
    expect(err.message).not.toMatch(/cannot connect/);
    expect(retries).toHaveLength(2);
    expect(requests).toBe(3);
  });
});
