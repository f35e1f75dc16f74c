// SFT run folders (issue 48, findings 4 and 6): a run folder that cannot be made is an error naming it at once
// (a path under /proc used to spin forever in a recursive mkdir; a read-only mount said ENOENT); a finished run
// resumed says it is finished instead of "steps 3–2 of 2"; --epochs (and --max-steps) may grow a run on
// --resume, written to sft.json, but not shorten it below its checkpoint; other settings stay refused.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { sftSummaryText } from '../src/cli/sft.js';
import { SFT_DEFAULTS, type SftConfig } from '../src/sft/config.js';
import { runSft } from '../src/sft/trainer.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
let config: SftConfig;
const quiet = { log: () => undefined };

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-sft-grow-'));
  const model = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 1, hidden: 16, heads: 2, kvHeads: 1, headDim: 8, intermediate: 24, vocab: 300, seed: 2 }).dir;
  const data = join(root, 'data.jsonl');
  const lines = Array.from({ length: 4 }, (_, i) => JSON.stringify({ messages: [{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `<answer>${i}</answer>` }] }));
  writeFileSync(data, `${lines.join('\n')}\n`);
  config = { ...SFT_DEFAULTS, model, data, out: join(root, 'run'), mode: 'full', batchSize: 2, microBatchSize: 2, epochs: 1, saveEvery: 1, lrSchedule: 'constant', backend: 'wasm' };
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('an SFT run folder that cannot be made', () => {
  it('under /proc: an error naming the folder, at once (no endless recursive mkdir)', async () => {
    const started = Date.now();
    await expect(runSft({ ...config, out: '/proc/sesa-no-such/run' }, quiet, undefined, 1)).rejects.toThrow('cannot create /proc/sesa-no-such/run/checkpoints: mkdir /proc/sesa-no-such failed');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('under a file: an error naming the file that is not a folder', async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(runSft({ ...config, out: join(file, 'run') }, quiet, undefined, 1)).rejects.toThrow(`cannot create ${join(file, 'run', 'checkpoints')}: ${file} is not a folder`);
  });
});

describe('resuming an SFT run', () => {
  it('a finished run says so; more --epochs extend it; fewer than its checkpoint are refused', async () => {
    const first = await runSft(config, quiet, undefined, 1);
    expect(first).toMatchObject({ firstStep: 1, lastStep: 2, totalSteps: 2 });
    expect(existsSync(join(config.out, 'final'))).toBe(true);

    const again = await runSft(undefined, quiet, config.out, 1);
    expect(again).toMatchObject({ finished: true, lastStep: 2, totalSteps: 2, resumedFrom: 2 });
    const text = sftSummaryText(again);
    expect(text).toContain('the run is finished: all 2 steps are done, nothing was trained');
    expect(text).toContain(`to train further: --resume ${config.out} with more --epochs or --max-steps`);
    expect(text).not.toMatch(/steps 3–2/);

    const grown = await runSft(undefined, quiet, config.out, 1, { epochs: 2 });
    expect(grown).toMatchObject({ firstStep: 3, lastStep: 4, totalSteps: 4, resumedFrom: 2, changed: [{ key: 'epochs', from: 1, to: 2 }] });
    expect((JSON.parse(readFileSync(join(config.out, 'sft.json'), 'utf8')) as SftConfig).epochs).toBe(2);
    expect(readFileSync(join(config.out, 'train.log'), 'utf8')).toContain('config change on resume: --epochs 1 → 2');

    await expect(runSft(undefined, quiet, config.out, 1, { epochs: 1 })).rejects.toThrow('--epochs 1 gives 2 steps, below the checkpoint step 4 the run resumes from');
    expect((JSON.parse(readFileSync(join(config.out, 'sft.json'), 'utf8')) as SftConfig).epochs).toBe(2);
  });

  it('sft --print-config prints the resolved settings and makes no run folder', async () => {
    const out = join(root, 'never');
    const child = spawn(process.execPath, [CLI, 'sft', '--print-config', '--model', config.model, '--data', config.data, '--out', out, '--lora', '--epochs', '2'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    expect(await new Promise<number | null>((res) => child.on('exit', res))).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ ...SFT_DEFAULTS, model: config.model, data: config.data, out, mode: 'lora', epochs: 2 });
    expect(existsSync(out)).toBe(false);
  }, 60_000);

  it('through the CLI, a setting other than --epochs and --max-steps is still refused on --resume', async () => {
    const child = spawn(process.execPath, [CLI, 'sft', '--resume', config.out, '--epochs', '3', '--lr', '1'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((res) => child.on('exit', res));
    expect(code).toBe(1);
    expect(stderr).toContain('of which only --epochs and --max-steps may change; drop --lr');
  }, 60_000);
});
