// An eval --out folder under faults, through the CLI on a tiny random model: a second eval into a folder that
// another one is writing is refused (its lock names the owner) and leaves the first one's settings.json
// alone; a folder's identity includes the search backend, so a rerun with another corpus or retrieval server
// is refused instead of reporting the old results.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, faultRoot, run, start, tinyModel } from './cli.js';
import { FaultServer } from './fault-server.js';

let root: string;
let model: string;
const server = new FaultServer();

beforeAll(async () => {
  root = faultRoot('eval-folder');
  model = tinyModel(root);
  await server.start();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const evalArgs = (out: string, extra: string[] = []): string[] => [
  CLI, 'eval', '--model', model, '--data', 'encyclopedia', '--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--backend', 'wasm', '--threads', '1', '--out', out, ...extra,
];

describe('two evals into one --out', () => {
  it('the second is refused while the first runs, and settings.json stays the first one\'s', async () => {
    const out = join(root, 'shared');
    const first = start(root, evalArgs(out, ['--batch-size', '1', '--limit', '1000']));
    await first.waitFor(/eval: 1\/\d+/);
    const second = await run(root, evalArgs(out, ['--limit', '3']));
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain(`eval folder ${out} is in use by process ${first.child.pid}`);
    first.child.kill('SIGINT');
    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'settings.json'), 'utf8')).limit).toBe(1000);
    // Once the first has ended, the folder is free: the same command continues it.
    const again = start(root, evalArgs(out, ['--batch-size', '1', '--limit', '1000']));
    await again.waitFor(/already scored in .*shared, \d+ to go/);
    again.child.kill('SIGINT');
    expect((await again.done).code).toBe(0);
  }, 400_000);
});

describe('the search backend is part of a folder\'s identity', () => {
  it('a rerun with another corpus or a retrieval server is refused, naming the setting', async () => {
    const out = join(root, 'by-corpus');
    const firstRun = await run(root, evalArgs(out, ['--limit', '2']));
    expect(firstRun.code, firstRun.stderr).toBe(0);
    const settings = JSON.parse(readFileSync(join(out, 'settings.json'), 'utf8'));
    expect(settings).toMatchObject({ corpus: 'encyclopedia', retrieverUrl: null });

    const corpus = join(root, 'other-corpus.jsonl');
    writeFileSync(corpus, '{"id": "1", "contents": "\\"Other\\"\\nAnother passage about something else."}\n');
    const other = await run(root, evalArgs(out, ['--limit', '2', '--corpus', corpus]));
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain(`${out} holds an evaluation with other settings (corpus: "encyclopedia" there, ${JSON.stringify(corpus)} now)`);
    expect(other.stderr).not.toMatch(/already scored/);

    const remote = await run(root, evalArgs(out, ['--limit', '2', '--retriever-url', `${server.url}/retrieve?token=tk-secret-31337`]));
    expect(remote.code).not.toBe(0);
    expect(remote.stderr).toMatch(/holds an evaluation with other settings \((corpus: "encyclopedia" there, null now|retrieverUrl: null there, ".*token=REDACTED" now)\)/);
    expect(remote.stderr).not.toContain('tk-secret-31337');
  }, 300_000);
});
