// A local Search-R1-compatible retrieval server for tests: POST /retrieve {"queries","topk"} answered from any
// Searcher (e.g. a BM25 index over a real corpus), in the server's response format.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Searcher } from '../../src/search/types.js';
import { quoteTitle } from '../../src/search/types.js';

export interface LocalRetriever {
  url: string;
  /** Queries received so far, in order. */
  queries: string[];
  close(): Promise<void>;
}

export async function startSearchR1Server(searcher: Searcher): Promise<LocalRetriever> {
  const queries: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        try {
          if (req.method !== 'POST' || req.url !== '/retrieve') {
            res.writeHead(404).end();
            return;
          }
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { queries: string[]; topk: number };
          queries.push(...body.queries);
          const results = await searcher.search(body.queries, body.topk);
          const result = results.map((list) => list.map((p) => ({ document: { id: p.id, contents: `${quoteTitle(p.title)}\n${p.text}` }, score: p.score ?? 0 })));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ result }));
        } catch (err) {
          res.writeHead(500).end(String(err));
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/retrieve`,
    queries,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
