// Writes that the file system refuses, through the CLI in a child process whose file-size limit is lowered
// (`ulimit -f`: every write past it fails with EFBIG, as a full disk fails with ENOSPC, on the same code
// paths): the error names the file it was writing, and no temp file is left; a lock file that cannot be
// created names the lock; temp files that a dead writer left next to a bank or its lock are swept by the
// next writer (never those of a process that still runs).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, faultRoot, type Finished, run, tinyModel, trainArgs } from './cli.js';

let root: string;
let model: string;

beforeAll(() => {
  root = faultRoot('disk-full');
  model = tinyModel(root);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The CLI with a file-size limit of `blocks` × 512 bytes (bash's ulimit -f). */
function runLimited(blocks: number, args: string[]): Promise<Finished> {
  const child = spawn('bash', ['-c', `ulimit -f ${blocks} && exec "$0" "$@"`, process.execPath, ...args], {
    cwd: root,
    env: { ...process.env, XDG_CACHE_HOME: join(root, 'cache'), SESA_HOME: join(root, 'home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((res) => child.on('exit', (code, signal) => res({ code, signal, stdout, stderr })));
}

const temps = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('a write the file system refuses', () => {
  it('names the file it was writing, and leaves no temp file', async () => {
    const dir = join(root, 'bank-write');
    mkdirSync(dir);
    const bank = join(dir, 'skills.json');
    // 512 bytes: the lock file (about 150 bytes) fits, the bank does not.
    const r = await runLimited(1, [CLI, 'skills', 'init', '--bank', bank]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`error: ${bank}: cannot be written (EFBIG: file too large, write)`);
    expect(temps(dir)).toEqual([]);
    expect(existsSync(`${bank}.lock`)).toBe(false);
  });

  it('while creating a lock file: names the lock, leaves no temp file', async () => {
    const dir = join(root, 'lock-write');
    mkdirSync(dir);
    const bank = join(dir, 'skills.json');
    const r = await runLimited(0, [CLI, 'skills', 'init', '--bank', bank]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`error: skill bank ${bank}: cannot create the lock file ${bank}\\.lock \\(${bank}\\.lock\\.\\d+\\.\\d+\\.tmp: cannot be written \\(EFBIG: file too large, write\\)\\)`));
    expect(temps(dir)).toEqual([]);
  });

  it('in a training run: the run folder\'s file is named', async () => {
    const out = join(root, 'train-write');
    const r = await runLimited(1, [...trainArgs(model, out, 1), '--threads', '1']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`error: ${join(out, 'config.json')}: cannot be written (EFBIG: file too large, write)`);
    expect(existsSync(out) ? temps(out) : []).toEqual([]);
  }, 120_000);
});

describe('temp files a dead writer left', () => {
  it('next to a bank and its lock are swept by the next writer, with a warning; a live writer\'s stay', async () => {
    const dir = join(root, 'sweep');
    mkdirSync(dir);
    const bank = join(dir, 'skills.json');
    const dead = 2 ** 22 + 12_345; // above the largest pid Linux hands out
    const stale = [`skills.json.lock.${dead}.1796411581046.tmp`, `.skills.json.${dead}.1796411581046.tmp`];
    const live = `skills.json.lock.${process.pid}.1796411581046.tmp`;
    const other = `.other.json.${dead}.1.tmp`;
    for (const f of [...stale, live, other]) writeFileSync(join(dir, f), '');
    const r = await run(root, [CLI, 'skills', 'init', '--bank', bank]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`warning: skill bank ${bank}: removed 1 temp file(s) of lock ${bank}.lock left by a process that no longer runs: ${join(dir, stale[0] as string)}`);
    expect(r.stderr).toContain(`warning: skill bank ${bank}: removed 1 temp file(s) left by an interrupted writer: ${join(dir, stale[1] as string)}`);
    expect(temps(dir).sort()).toEqual([other, live].sort());
  });
});
