// A chat endpoint (judge, distiller) whose reply body is hostile, against a real HTTP server on 127.0.0.1: a
// body past the client's cap is cut off as it streams in and refused without a retry (it was read whole); a
// connection closed mid-body is reported as exactly that (it read "request failed (terminated)") and retried.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmEndpointError, OpenAIChatClient } from '../../src/llm/openai.js';

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
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

async function failure(p: Promise<unknown>): Promise<LlmEndpointError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LlmEndpointError);
  return err as LlmEndpointError;
}

const MB = 2 ** 20;
const ask = [{ role: 'user' as const, content: 'Reply with OK.' }];

describe('a chat endpoint reply', () => {
  it('larger than the cap: read only up to it, refused without a retry', async () => {
    let sent = 0;
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
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
      pump();
    });
    const client = new OpenAIChatClient({ url, model: 'm', maxRetries: 2, backoffMs: 1, maxResponseBytes: MB });
    const err = await failure(client.complete(ask));
    expect(err.message).toBe(`openai:${url}/chat/completions m: the response is larger than 1 MiB`);
    expect(requests).toBe(1);
    expect(sent).toBeLessThan(8 * MB);
  });

  it('cut off mid-body: reported as such, and retried', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.write('{"choices": [{"message": {"content": "');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const client = new OpenAIChatClient({ url, model: 'm', maxRetries: 2, backoffMs: 1 });
    const err = await failure(client.complete(ask));
    expect(err.message).toMatch(/^openai:http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions m: the connection closed mid-response after 38 bytes \(.+\) \(gave up after 3 attempts\)$/);
    expect(requests).toBe(3);
  });
});
