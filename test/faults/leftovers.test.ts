// Files a failed write or start leaves behind, and paths that cannot be written: a write aimed at a folder,
// or whose final rename fails, leaves no temp file and names the target; an impossible --out (under /proc)
// is an error, not a hang; a start that fails leaves nothing behind; a response budget
// the model cannot hold and a damaged tokenizer.json are named.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDir, writeFileAtomic, writeStreamAtomic } from '../../src/util/atomic.js';
import { CLI, faultRoot, run, tinyModel, trainArgs } from './cli.js';

let root: string;
let model: string;

beforeAll(() => {
  root = faultRoot('leftovers');
  model = tinyModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const temps = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('atomic writes that fail', () => {
  it('a write aimed at a folder is refused up front, naming it, with no temp file', () => {
    const dir = join(root, 'target-folder');
    mkdirSync(dir);
    expect(() => writeFileAtomic(dir, 'x')).toThrow(`${dir} is a folder; give a file name to write`);
    expect(temps(root)).toEqual([]);
  });

  it('a rename that fails removes the temp file and names the target', () => {
    const dir = join(root, 'rename-fails');
    mkdirSync(dir);
    const target = join(dir, 'out.bin');
    // The target turns into a non-empty folder while the content is written, so the rename cannot replace it.
    expect(() =>
      writeStreamAtomic(target, (put) => {
        mkdirSync(join(target, 'inside'), { recursive: true });
        put(new Uint8Array(1024));
      }),
    ).toThrow(new RegExp(`^${target}: cannot be written \\(`));
    expect(temps(dir)).toEqual([]);
  });

  it('a folder that cannot be created is an error naming it, not a hang', () => {
    expect(() => ensureDir('/proc/sesa-no-such/dir')).toThrow('cannot create /proc/sesa-no-such/dir: mkdir /proc/sesa-no-such failed (ENOENT)');
  });
});

describe('the CLI', () => {
  it('skills export --out FOLDER fails naming it and leaves no temp file', async () => {
    const bank = join(root, 'bank.json');
    expect((await run(root, [CLI, 'skills', 'init', '--bank', bank])).code).toBe(0);
    const outDir = join(root, 'export-here');
    mkdirSync(outDir);
    const r = await run(root, [CLI, 'skills', 'export', '--bank', bank, '--out', outDir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${outDir} is a folder; give a file name to write`);
    expect(temps(root)).toEqual([]);
  });

  it('train --out under /proc fails at once with the path', async () => {
    const r = await run(root, trainArgs(model, '/proc/sesa-x/run', 1));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('cannot create /proc/sesa-x/run: mkdir /proc/sesa-x failed (ENOENT)');
  }, 60_000);

  it('a start that fails leaves nothing behind (the error is on the console): the same command fails the same way again', async () => {
    const out = join(root, 'failed-start');
    const args = trainArgs(model, out, 1).map((a) => (a === 'encyclopedia' ? join(root, 'no-such-corpus.jsonl') : a));
    const first = await run(root, args);
    expect(first.code).not.toBe(0);
    expect(first.stderr).toMatch(/no-such-corpus\.jsonl/);
    // Not the run folder it made, not train.log, not the lock.
    expect(existsSync(out), `${out} is left`).toBe(false);
    const second = await run(root, args);
    expect(second.stderr).not.toMatch(/already holds a run/);
    expect(second.stderr).toMatch(/no-such-corpus\.jsonl/);
  }, 400_000);

  it('a response budget beyond the model\'s max_position_embeddings is refused, naming the flag', async () => {
    const args = trainArgs(model, join(root, 'too-long'), 1).map((a, i, all) => (all[i - 1] === '--max-response-tokens' ? '4096' : a));
    const r = await run(root, args);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`--max-response-tokens 4096 does not fit the model: ${model} has max_position_embeddings 2048`);
  });

  it('a truncated tokenizer.json is named by score and train', async () => {
    const broken = join(root, 'broken-model');
    cpSync(model, broken, { recursive: true });
    const tok = join(broken, 'tokenizer.json');
    truncateSync(tok, Math.floor(readFileSync(tok).length / 2));
    const score = await run(root, [CLI, 'score', '--model', broken, '--text', 'hello there', '--backend', 'wasm']);
    expect(score.code).not.toBe(0);
    expect(score.stderr).toContain(`${tok}: not valid JSON`);
    const train = await run(root, trainArgs(broken, join(root, 'tok-run'), 1));
    expect(train.code).not.toBe(0);
    expect(train.stderr).toContain(`${tok}: not valid JSON`);
  }, 400_000);
});
