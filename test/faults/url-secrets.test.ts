// Keys inside endpoint URLs, through the CLI on a tiny random model and a local fault-injecting server, and at
// the clients: a query key (`?api_key=…`) reaches the server with the path joined before the query (so
// `?api-version=` URLs work too) but never reaches the console, train.log, config.json or report.html; a
// resumed run whose config.json holds the redacted URL asks for the URL again; a URL with a user name and
// password (which fetch refuses to send) is refused before anything runs, without echoing the password and
// without retries; a request that cannot even be built is not retried.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatCompletionsUrl, OpenAIChatClient } from '../../src/llm/openai.js';
import { SearchR1Client } from '../../src/search/searchr1-client.js';
import { redactSecrets, redactUrl } from '../../src/util/redact.js';
import { CLI, faultRoot, run, tinyModel, trainArgs } from './cli.js';
import { FaultServer } from './fault-server.js';

const KEY = 'qk-secret-7f3a9c1e5b';
let root: string;
let model: string;
const server = new FaultServer();

beforeAll(async () => {
  root = faultRoot('url-secrets');
  model = tinyModel(root);
  await server.start();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});
beforeEach(() => {
  server.chat = 'ok';
  server.requests.length = 0;
});

const read = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '');

describe('a key in the query of an endpoint URL', () => {
  it('reaches the server after the joined path, and appears in no output; a resume asks for the URL again', async () => {
    const out = join(root, 'query-key');
    const url = `${server.url}/v1?api-version=2024-06-01&api_key=${KEY}`;
    const judge = ['--judge-url', url, '--judge-model', 'm', '--judge-timeout', '5', '--judge-retries', '0', '--threads', '1'];
    const r = await run(root, [...trainArgs(model, out, 1), ...judge], { OPENAI_API_KEY: undefined });
    expect(r.code, r.stderr).toBe(0);
    const chat = server.requests.filter((q) => q.path.includes('chat/completions'));
    expect(chat.length).toBeGreaterThan(0);
    expect(chat.every((q) => q.path === `/v1/chat/completions?api-version=2024-06-01&api_key=${KEY}`)).toBe(true);
    for (const [what, text] of [
      ['stderr', r.stderr],
      ['stdout', r.stdout],
      ['train.log', read(join(out, 'train.log'))],
      ['config.json', read(join(out, 'config.json'))],
      ['report.html', read(join(out, 'report.html'))],
    ] as const) {
      expect(text.length, what).toBeGreaterThan(0);
      expect(text.includes(KEY), `${what} holds the key`).toBe(false);
    }
    expect(JSON.parse(read(join(out, 'config.json'))).judgeUrl).toBe(`${server.url}/v1?api-version=2024-06-01&api_key=REDACTED`);
    expect(r.stderr).toContain(`${server.url}/v1?api-version=2024-06-01&api_key=REDACTED is on this machine`);

    const again = await run(root, [CLI, 'train', '--resume', out, '--steps', '2', '--threads', '1'], { OPENAI_API_KEY: undefined });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`--resume ${out}: ${join(out, 'config.json')} records --judge-url with its secrets removed (${server.url}/v1?api-version=2024-06-01&api_key=REDACTED); give --judge-url again`);
    server.requests.length = 0;
    const resumed = await run(root, [CLI, 'train', '--resume', out, '--steps', '2', '--threads', '1', '--judge-url', url], { OPENAI_API_KEY: undefined });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.requests.some((q) => q.path === `/v1/chat/completions?api-version=2024-06-01&api_key=${KEY}`)).toBe(true);
    expect(resumed.stderr.includes(KEY)).toBe(false);
    expect(read(join(out, 'train.log')).includes(KEY)).toBe(false);
    expect(read(join(out, 'config.json')).includes(KEY)).toBe(false);
  }, 400_000);
});

describe('a user name and password in an endpoint URL', () => {
  it('is refused before anything runs, naming the flag, without the password and without retries', async () => {
    const host = server.url.replace('http://', '');
    for (const [flag, extra] of [
      ['--judge-url', ['--judge-model', 'm']],
      ['--retriever-url', ['--seeds', join(root, 'seeds.jsonl')]],
    ] as const) {
      const out = join(root, `userinfo-${flag.slice(2)}`);
      const args = [...trainArgs(model, out, 1), flag, `http://probe:${KEY}@${host}/v1`, ...extra, '--threads', '1'];
      const r = await run(root, args);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`${flag} must not hold a user name or password (http://REDACTED@${host}/v1)`);
      expect(r.stderr.includes(KEY)).toBe(false);
      expect(r.stderr).not.toMatch(/retry/);
      expect(existsSync(out)).toBe(false);
    }
    expect(server.requests).toEqual([]);
  }, 200_000);

  it('is refused by the clients themselves, named without the password', () => {
    expect(() => new OpenAIChatClient({ url: `http://u:${KEY}@127.0.0.1:9/v1`, model: 'm' })).toThrow('OpenAI-compatible client http://REDACTED@127.0.0.1:9/v1: the URL must not hold a user name or password');
    expect(() => new SearchR1Client({ url: `http://u:${KEY}@127.0.0.1:9/retrieve` })).toThrow('retriever URL http://REDACTED@127.0.0.1:9/retrieve must not hold a user name or password');
  });
});

describe('URL joining and redaction', () => {
  it('joins /chat/completions before the query', () => {
    expect(chatCompletionsUrl('http://h:1/v1?api-version=2024-06-01')).toBe('http://h:1/v1/chat/completions?api-version=2024-06-01');
    expect(chatCompletionsUrl('http://h:1/openai/deployments/d/?api-version=1')).toBe('http://h:1/openai/deployments/d/chat/completions?api-version=1');
    expect(chatCompletionsUrl('http://h:1/v1/chat/completions?x=1')).toBe('http://h:1/v1/chat/completions?x=1');
  });

  it('redacts user info and key-like query values, in URLs and in text', () => {
    expect(redactUrl(`https://u:${KEY}@h/v1?key=${KEY}&api-version=3&sig=${KEY}&access_token=${KEY}`)).toBe('https://REDACTED@h/v1?key=REDACTED&api-version=3&sig=REDACTED&access_token=REDACTED');
    expect(redactUrl('not a url')).toBe('not a url');
    const text = redactSecrets(`failed: fetch https://u:${KEY}@h/x?token=${KEY}&key=${KEY} at once`);
    expect(text.includes(KEY)).toBe(false);
    expect(text).toContain('https://REDACTED@h/x?');
  });
});

describe('a request that cannot be built', () => {
  it('is a permanent error: the chat client does not retry it', async () => {
    let calls = 0;
    const client = new OpenAIChatClient({
      url: 'http://127.0.0.1:9/v1',
      model: 'm',
      maxRetries: 3,
      sleep: async () => undefined,
      fetchImpl: (async () => {
        calls++;
        throw new TypeError('Request cannot be constructed from a URL that includes credentials');
      }) as typeof fetch,
    });
    await expect(client.complete([{ role: 'user', content: 'x' }])).rejects.toThrow(/request cannot be sent \(Request cannot be constructed/);
    expect(calls).toBe(1);
  });

  it('is a permanent error: the retriever does not retry it', async () => {
    let calls = 0;
    const client = new SearchR1Client({
      url: 'http://127.0.0.1:9/retrieve',
      attempts: 4,
      backoffMs: 0,
      fetch: (async () => {
        calls++;
        throw new TypeError('Request cannot be constructed from a URL that includes credentials');
      }) as typeof fetch,
    });
    await expect(client.search(['q'], 1)).rejects.toThrow(/request cannot be sent \(Request cannot be constructed/);
    expect(calls).toBe(1);
  });
});
