// The OpenAI-compatible client against a real HTTP server on 127.0.0.1 that plays the endpoint: success,
// 5xx with retries, 4xx without, timeouts, connection refused, malformed replies; and a consolidation
// whose distiller is that endpoint. Backoff sleeps are injected as no-ops: no timing assertions.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmEndpointError, OpenAIChatClient, chatCompletionsUrl } from '../src/llm/openai.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { endpointArgs, endpointOptions, textGeneratorFor } from '../src/llm/from-args.js';
import { TokenTextGenerator } from '../src/llm/types.js';
import { SkillBank } from '../src/skills/bank.js';
import { contentId } from '../src/skills/card.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { CARD_B, failure, json, tempDir } from './skills-helpers.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse, n: number) => void;

interface Endpoint {
  url: string;
  requests: Array<{ path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

const open: Endpoint[] = [];
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
});

async function serve(handler: Handler): Promise<Endpoint> {
  const requests: Endpoint['requests'] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(body || '{}') as Record<string, unknown> });
      handler(req, body, res, requests.length);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const ep: Endpoint = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  open.push(ep);
  return ep;
}

function reply(res: ServerResponse, content: string): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
}

const noSleep = async (): Promise<void> => {};
const MSGS = [
  { role: 'system' as const, content: 'be brief' },
  { role: 'user' as const, content: 'hello' },
];

describe('OpenAIChatClient', () => {
  it('posts a chat completion with the model, messages, options and the key from the named env var', async () => {
    const ep = await serve((_q, _b, res) => reply(res, 'hi there'));
    process.env.SESA_TEST_KEY = 'sk-test-123';
    const c = new OpenAIChatClient({ url: ep.url, model: 'tiny-judge', apiKeyEnv: 'SESA_TEST_KEY', sleep: noSleep });
    expect(await c.complete(MSGS, { maxTokens: 7, temperature: 0.5, stop: ['</answer>'] })).toBe('hi there');
    const r = ep.requests[0]!;
    expect(r.path).toBe('/v1/chat/completions');
    expect(r.headers.authorization).toBe('Bearer sk-test-123');
    expect(r.body).toEqual({ model: 'tiny-judge', messages: MSGS, max_tokens: 7, temperature: 0.5, stop: ['</answer>'], stream: false });
    delete process.env.SESA_TEST_KEY;
    expect(() => new OpenAIChatClient({ url: ep.url, model: 'm', apiKeyEnv: 'SESA_TEST_KEY' })).toThrow(/environment variable SESA_TEST_KEY .* is not set/);
    expect(chatCompletionsUrl('http://h:1/v1/')).toBe('http://h:1/v1/chat/completions');
    expect(chatCompletionsUrl('http://h:1/v1/chat/completions')).toBe('http://h:1/v1/chat/completions');
  });

  it('retries 5xx and 429 with backoff, then succeeds', async () => {
    const ep = await serve((_q, _b, res, n) => {
      if (n === 1) res.writeHead(500).end('upstream exploded');
      else if (n === 2) res.writeHead(429).end('slow down');
      else reply(res, 'third time');
    });
    const waits: number[] = [];
    const c = new OpenAIChatClient({ url: ep.url, model: 'm', maxRetries: 3, backoffMs: 100, sleep: async (ms) => void waits.push(ms) });
    expect(await c.complete(MSGS)).toBe('third time');
    expect(ep.requests.length).toBe(3);
    expect(waits).toEqual([100, 200]);
  });

  it('gives up after the bounded retries with a clear error', async () => {
    const ep = await serve((_q, _b, res) => res.writeHead(503).end('{"error":"overloaded"}'));
    const c = new OpenAIChatClient({ url: ep.url, model: 'm', maxRetries: 2, sleep: noSleep });
    const err = (await c.complete(MSGS).catch((e: unknown) => e)) as LlmEndpointError;
    expect(err).toBeInstanceOf(LlmEndpointError);
    expect(err.status).toBe(503);
    expect(err.attempts).toBe(3);
    expect(err.message).toBe(`openai:${ep.url}/chat/completions m: HTTP 503: {"error":"overloaded"} (gave up after 3 attempts)`);
    expect(ep.requests.length).toBe(3);
  });

  it('does not retry other 4xx, and points at the key on 401', async () => {
    const ep = await serve((_q, _b, res) => res.writeHead(401).end('bad key'));
    const c = new OpenAIChatClient({ url: ep.url, model: 'm', sleep: noSleep });
    await expect(c.complete(MSGS)).rejects.toThrow(/HTTP 401 \(check the API key environment variable\): bad key$/);
    expect(ep.requests.length).toBe(1);
  });

  it('times out a stalled server on every attempt', async () => {
    const ep = await serve(() => {
      /* never answers */
    });
    const c = new OpenAIChatClient({ url: ep.url, model: 'm', timeoutMs: 150, maxRetries: 1, sleep: noSleep });
    const err = (await c.complete(MSGS).catch((e: unknown) => e)) as LlmEndpointError;
    expect(err.message).toMatch(/no reply within 150 ms \(gave up after 2 attempts\)$/);
    expect(err.retryable).toBe(true);
    expect(ep.requests.length).toBe(2);
  });

  it('reports a refused connection and a malformed reply', async () => {
    const ep = await serve((_q, _b, res, n) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(n === 1 ? 'not json at all' : JSON.stringify({ choices: [{ message: { content: null } }] }));
    });
    const c = new OpenAIChatClient({ url: ep.url, model: 'm', sleep: noSleep });
    await expect(c.complete(MSGS)).rejects.toThrow(/reply is not JSON: not json at all/);
    await expect(c.complete(MSGS)).rejects.toThrow(/no choices\[0\]\.message\.content string/);
    const url = ep.url;
    await ep.close();
    open.pop();
    const dead = new OpenAIChatClient({ url, model: 'm', maxRetries: 1, sleep: noSleep });
    await expect(dead.complete(MSGS)).rejects.toThrow(/request failed \(ECONNREFUSED\) \(gave up after 2 attempts\)/);
  });

  it('serves as the distiller of a consolidation', async () => {
    const ep = await serve((_q, body, res) => {
      const user = (JSON.parse(body) as { messages: Array<{ role: string; content: string }> }).messages[1]!.content;
      if (user.includes('Question: river')) reply(res, `\`\`\`json\n${json(CARD_B)}\n\`\`\``);
      else if (user.includes('Question: broken')) res.writeHead(500).end('boom');
      else reply(res, 'no idea');
    });
    const bank = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: new LexicalEmbedder(), config: { minPending: 3, consolidateEvery: 5 } });
    for (const q of ['river', 'broken', 'other']) bank.enqueueFailure(failure(q), 1);
    const client = new OpenAIChatClient({ url: ep.url, model: 'distiller', maxRetries: 1, sleep: noSleep });
    expect(bank.startConsolidation(5, client)).not.toBeNull();
    await bank.waitForConsolidation();
    const r = bank.commit(5, bank.readyChange());
    expect(r.admitted).toEqual([contentId('d', CARD_B)]);
    expect(r.failed).toBe(1);
    expect(r.invalid).toBe(1);
    expect(bank.pendingFailures().map((f) => f.key)).toEqual(['broken']);
    expect(ep.requests.every((q) => q.body.model === 'distiller' && q.body.temperature === 0)).toBe(true);
  });
});

describe('ScriptedTextGenerator (a fake LLM)', () => {
  it('replies in order, records calls, throws scripted errors and when exhausted', async () => {
    const g = new ScriptedTextGenerator(['a', new Error('scripted failure'), (m) => `echo ${m[1]!.content}`]);
    expect(await g.complete(MSGS)).toBe('a');
    await expect(g.complete(MSGS)).rejects.toThrow('scripted failure');
    expect(await g.complete(MSGS)).toBe('echo hello');
    await expect(g.complete(MSGS)).rejects.toThrow(/script exhausted after 3 replies/);
    expect(g.calls.length).toBe(4);
  });
});

describe('choosing a text generator from command-line options', () => {
  it('uses the endpoint when a URL is given, else the in-process generator, with clear errors', async () => {
    expect(Object.keys(endpointOptions('distiller'))).toEqual(['distiller-url', 'distiller-model', 'distiller-key-env', 'distiller-timeout', 'distiller-retries']);
    const local = new ScriptedTextGenerator(['x']);
    expect(textGeneratorFor('distiller', endpointArgs('distiller', {}), local)).toBe(local);
    const c = textGeneratorFor('distiller', endpointArgs('distiller', { distillerUrl: 'http://127.0.0.1:9/v1', distillerModel: 'm', distillerTimeout: 5, distillerRetries: 0 }));
    expect(c.name).toBe('openai:http://127.0.0.1:9/v1/chat/completions m');
    expect(() => textGeneratorFor('judge', { url: 'http://x/v1' })).toThrow('--judge-url needs --judge-model');
    expect(() => textGeneratorFor('judge', { model: 'm' }, local)).toThrow('--judge-model needs --judge-url');
    expect(() => textGeneratorFor('judge', {})).toThrow(/no judge: give --judge-url/);
  });

  it('adapts a token-level generator (the in-process model) to the text interface', async () => {
    const seen: number[][] = [];
    const codec = {
      renderChat: (m: Array<{ content: string }>) => m.map((x) => x.content.length),
      decode: (ids: number[]) => ids.map((i) => String.fromCharCode(97 + i)).join(''),
    };
    const g = new TokenTextGenerator('base (adapters off)', codec, async (prompts, opts) => {
      seen.push(...prompts, [opts.maxTokens, opts.temperature]);
      return [[0, 1, 2, 3]];
    });
    expect(await g.complete(MSGS, { maxTokens: 9, stop: ['c'] })).toBe('ab');
    expect(seen).toEqual([[8, 5], [9, 0]]);
  });
});
