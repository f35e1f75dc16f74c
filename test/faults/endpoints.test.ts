// Endpoints under faults, through the CLI on a tiny random model and a local fault-injecting server: every
// configured endpoint is probed before step 1, so a dead, failing, hanging or nonsense-answering server is a
// clear error at the start (with its retries shown), an empty retriever is a warning, a keyless local judge
// works without an API key, and a key never appears in an error.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { faultRoot, run, tinyModel, trainArgs } from './cli.js';
import { FaultServer } from './fault-server.js';

let root: string;
let model: string;
let seeds: string;
const server = new FaultServer();
let n = 0;

beforeAll(async () => {
  root = faultRoot('endpoints');
  model = tinyModel(root);
  seeds = join(root, 'seeds.jsonl');
  writeFileSync(seeds, '{"answer": "Probe Title", "hops": 1}\n');
  await server.start();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});
beforeEach(() => {
  server.retrieve = 'ok';
  server.chat = 'ok';
  server.status = 500;
  server.statusBody = '{"error": "internal server error"}';
  server.requests.length = 0;
});

/** A one-step run with the given extra flags; `out` is returned for checks on the run folder. */
async function train(extra: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stderr: string; out: string }> {
  const out = join(root, `run-${++n}`);
  const r = await run(root, [...trainArgs(model, out, 1), ...extra], env);
  return { code: r.code, stderr: r.stderr, out };
}

const retriever = (): string[] => ['--retriever-url', `${server.url}/retrieve`, '--seeds', seeds, '--retriever-timeout', '1', '--retriever-retries', '1'];
const judge = (): string[] => ['--judge-url', `${server.url}/v1`, '--judge-model', 'm', '--judge-timeout', '1', '--judge-retries', '1'];

describe('endpoint probes before step 1', () => {
  it('a dead retriever stops the run at the start, with the retry shown and no run folder left in the way', async () => {
    const dead = await new FaultServer().start();
    await dead.close(); // its port now refuses connections
    const r = await train(['--retriever-url', `${dead.url}/retrieve`, '--seeds', seeds, '--retriever-timeout', '1', '--retriever-retries', '1']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/retriever retry 1 in \d+ ms: cannot connect \(ECONNREFUSED\)/);
    expect(r.stderr).toMatch(/--retriever-url http:\/\/127\.0\.0\.1:\d+\/retrieve: the retrieval server failed a probe query before step 1: .*cannot connect \(ECONNREFUSED\) after 2 attempts/);
    expect(existsSync(join(r.out, 'config.json'))).toBe(false);
  });

  it('a retriever answering 500 is named at the start', async () => {
    server.retrieve = 'status';
    const r = await train(retriever());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/failed a probe query before step 1: .*HTTP 500.*internal server error.* after 2 attempts/);
  });

  it('a hanging retriever times out at the start, its retry shown', async () => {
    server.retrieve = 'hang';
    const r = await train(retriever());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/retriever retry 1 in \d+ ms: no response within 1000 ms/);
    expect(r.stderr).toMatch(/failed a probe query before step 1: .*no response within 1000 ms after 2 attempts/);
  });

  it('a retriever answering nonsense is named at the start', async () => {
    server.retrieve = 'nonsense';
    const r = await train(retriever());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/failed a probe query before step 1: .*malformed response: body is not JSON/);
  });

  it('a retriever answering empty lists trains with a warning', async () => {
    server.retrieve = 'empty';
    const r = await train(retriever());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: --retriever-url .*: the retrieval server answered a probe query with no passages/);
  });

  it('bad endpoint URLs are refused before anything runs', async () => {
    const r = await train(['--judge-url', 'notaurl', '--judge-model', 'm', '--distiller-url', 'ftp://x', '--distiller-model', 'm']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--judge-url must be a URL such as http:\/\/host:port\/\.\.\., got "notaurl"/);
    expect(r.stderr).toMatch(/--distiller-url must be an http:\/\/ or https:\/\/ URL, got ftp:\/\/x/);
    expect(existsSync(r.out)).toBe(false);
  });

  it('a judge answering 500 is an error at the start, its retries shown', async () => {
    server.chat = 'status';
    const r = await train(judge());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/judge retry 1 in \d+ ms: .*HTTP 500/);
    expect(r.stderr).toMatch(/--judge-url http:\/\/127\.0\.0\.1:\d+\/v1: the endpoint failed a one-token probe before step 1: .*HTTP 500.*gave up after 2 attempts/);
  });

  it('a judge that never answers times out at the start, its retries shown', async () => {
    server.chat = 'hang';
    const r = await train(judge());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/judge retry 1 in \d+ ms: .*no reply within 1000 ms/);
    expect(r.stderr).toMatch(/failed a one-token probe before step 1: .*no reply within 1000 ms \(gave up after 2 attempts\)/);
  });

  it('a keyless local judge works without OPENAI_API_KEY', async () => {
    const r = await train(judge(), { OPENAI_API_KEY: undefined });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/judge: http:\/\/127\.0\.0\.1:\d+\/v1 is on this machine and OPENAI_API_KEY is not set; calling it without an API key/);
    const chat = server.requests.filter((q) => q.path.includes('chat/completions'));
    expect(chat.length).toBeGreaterThan(0);
    expect(chat.every((q) => q.authorization === undefined)).toBe(true);
  });

  it('a key in an error body is redacted on the console and in train.log', async () => {
    server.chat = 'status';
    server.status = 401;
    server.statusBody = '{"error": "bad key sk-test-abcdef123456", "authorization": "Bearer sk-test-abcdef123456"}';
    const bad = await train(judge(), { OPENAI_API_KEY: 'sk-test-abcdef123456' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/HTTP 401 \(check the API key environment variable\)/);
    expect(bad.stderr).toContain('[REDACTED]');
    expect(bad.stderr).not.toContain('abcdef123456');
    expect(readLog(bad.out)).not.toContain('abcdef123456');
    // The probe fails before step 1, and a failed start leaves no train.log (test/faults/gpus-without-gpu.test.ts).
    expect(existsSync(join(bad.out, 'train.log'))).toBe(false);
  });
});

function readLog(out: string): string {
  return existsSync(join(out, 'train.log')) ? readFileSync(join(out, 'train.log'), 'utf8') : '';
}
