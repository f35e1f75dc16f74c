// `sesa-train sft` through the CLI: a run prints its summary and leaves the loss curve and the trained model;
// a run killed with SIGKILL, or stopped by SIGTERM, and resumed ends with the same weights as an uninterrupted
// one; bad flags fail
// with a clear message.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');
let root: string;
let modelDir: string;
let data: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-sft-cli-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 2, hidden: 32, heads: 4, kvHeads: 2, headDim: 8, intermediate: 48, vocab: 300, seed: 2 }).dir;
  data = join(root, 'data.jsonl');
  const lines = Array.from({ length: 16 }, (_, i) =>
    JSON.stringify({
      messages: [
        { role: 'user', content: `What is ${i} plus one?` },
        { role: 'assistant', content: `<search>${i} plus one</search>` },
        { role: 'tool', content: `Doc 1(Title: "${i}") ${i} plus one is ${i + 1}.\n` },
        { role: 'assistant', content: `<answer>${i + 1}</answer>` },
      ],
    }),
  );
  writeFileSync(data, `${lines.join('\n')}\n`);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function start(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((res) => child.on('exit', (code, signal) => res({ code, signal, stdout, stderr })));
  return { child, done };
}

function sftArgs(out: string, extra: string[] = []): string[] {
  return ['sft', '--model', modelDir, '--data', data, '--out', out, '--full', '--epochs', '3', '--batch-size', '2', '--micro-batch-size', '1', '--lr', '2e-3', '--save-every', '1', '--backend', 'wasm', '--seed', '3', ...extra];
}

describe('sesa-train sft (CLI)', () => {
  it('trains, prints a JSON summary, writes loss.jsonl and a loadable model folder', async () => {
    const out = join(root, 'run-json');
    const r = await start([...sftArgs(out, ['--eval-fraction', '0.25']), '--json']).done;
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim()) as { totalSteps: number; lastStep: number; finalDir: string; firstLoss: number; lastLoss: number; lastEvalLoss: number };
    expect(summary.totalSteps).toBe(18); // 12 training transcripts / 2 per step × 3 epochs
    expect(summary.lastStep).toBe(18);
    expect(summary.lastLoss).toBeLessThan(summary.firstLoss);
    expect(summary.lastEvalLoss).toBeGreaterThan(0);
    expect(readdirSync(summary.finalDir).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    const steps = readFileSync(join(out, 'loss.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; loss?: number; tokensPerSecond?: number });
    expect(steps.filter((l) => l.loss !== undefined)).toHaveLength(18);
    expect(steps.every((l) => l.loss === undefined || (l.tokensPerSecond as number) > 0)).toBe(true);
    // Only the newest checkpoints are kept (default 2).
    expect(readdirSync(join(out, 'checkpoints')).sort()).toEqual(['step-17', 'step-18']);
  });

  it('--threads sets the wasm backend\'s compute threads (the log line names the count)', async () => {
    const out = join(root, 'run-threads');
    const r = await start(sftArgs(out, ['--max-steps', '1', '--threads', '1'])).done;
    expect(r.code, r.stderr).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/backend: wasm \(.*; 1 thread\)/);
  });

  it('a run killed with SIGKILL and resumed ends with the weights of the uninterrupted run', async () => {
    const straight = join(root, 'straight');
    const a = await start(sftArgs(straight)).done;
    expect(a.code, a.stderr).toBe(0);
    const killed = join(root, 'killed');
    const run = start(sftArgs(killed));
    // Kill as soon as a checkpoint is complete (state.json is written last), mid-run.
    await new Promise<void>((res, rej) => {
      const timer = setInterval(() => {
        const dir = join(killed, 'checkpoints');
        if (existsSync(dir) && readdirSync(dir).some((n) => /^step-\d+$/.test(n) && existsSync(join(dir, n, 'state.json')))) {
          clearInterval(timer);
          run.child.kill('SIGKILL');
          res();
        }
      }, 20);
      run.done.then(() => {
        clearInterval(timer);
        rej(new Error('the run finished before it could be killed'));
      }, rej);
    });
    const k = await run.done;
    expect(k.signal).toBe('SIGKILL');
    expect(existsSync(join(killed, 'final'))).toBe(false);
    const b = await start(['sft', '--resume', killed, '--json']).done;
    expect(b.code, b.stderr).toBe(0);
    expect((JSON.parse(b.stdout.trim()) as { resumedFrom?: number }).resumedFrom).toBeGreaterThan(0);
    expect(readFileSync(join(killed, 'final', 'model.safetensors')).equals(readFileSync(join(straight, 'final', 'model.safetensors')))).toBe(true);
    const losses = (dir: string) => readFileSync(join(dir, 'loss.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { loss?: number }).loss);
    expect(losses(killed)).toEqual(losses(straight));
  });

  it('SIGTERM mid-run: the step ends, a checkpoint is written, the process exits 0, and --resume ends with the weights of the uninterrupted run', async () => {
    const straight = join(root, 'straight-term');
    const a = await start(sftArgs(straight).map((x, i, all) => (all[i - 1] === '--save-every' ? '50' : x))).done;
    expect(a.code, a.stderr).toBe(0);
    const stopped = join(root, 'by-sigterm');
    const run = start(sftArgs(stopped).map((x, i, all) => (all[i - 1] === '--save-every' ? '50' : x)));
    let err = '';
    run.child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      if (/^step 2 \(epoch/m.test(err) && !run.child.killed) run.child.kill('SIGTERM');
    });
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('SIGTERM: stopping after this step (a checkpoint is written)');
    const m = /stopped at step (\d+) on request; resume with --resume /.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    const at = Number((m as RegExpExecArray)[1]);
    // Stopped before the end (24 steps) and after the signal, with no checkpoint due before it (--save-every 50).
    expect(at).toBeGreaterThanOrEqual(2);
    expect(at).toBeLessThan(24);
    expect(existsSync(join(stopped, 'checkpoints', `step-${at}`, 'state.json'))).toBe(true);
    expect(existsSync(join(stopped, 'final'))).toBe(false);
    const b = await start(['sft', '--resume', stopped, '--json']).done;
    expect(b.code, b.stderr).toBe(0);
    expect(readFileSync(join(stopped, 'final', 'model.safetensors')).equals(readFileSync(join(straight, 'final', 'model.safetensors')))).toBe(true);
  });

  it('--config FILE (YAML) gives every setting, flags override it, and the run records the resolved settings', async () => {
    const out = join(root, 'run-config');
    const cfg = join(root, 'sft.yaml');
    writeFileSync(cfg, `model: ${modelDir}\ndata: ${data}\nout: ${out}\nmode: full\nbatch-size: 2\nmicro-batch-size: 1\nlr-schedule: constant\nenable-thinking: false\nseed: 5\nbackend: wasm\nlr: 0.5\n`);
    const r = await start(['sft', '--config', cfg, '--max-steps', '2', '--lr', '2e-3', '--json']).done;
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout.trim()) as { lastStep: number }).lastStep).toBe(2);
    const saved = JSON.parse(readFileSync(join(out, 'sft.json'), 'utf8')) as Record<string, unknown>;
    expect(saved).toMatchObject({ model: modelDir, mode: 'full', batchSize: 2, microBatchSize: 1, lrSchedule: 'constant', seed: 5, maxSteps: 2, lr: 2e-3 });
  });

  it("--help lists train's names for the settings both have, and the old names are refused naming the new one", async () => {
    const help = await start(['sft', '--help']).done;
    expect(help.code).toBe(0);
    for (const flag of ['--lr-schedule', '--enable-thinking', '--warmup-steps', '--micro-batch-size', '--lora-r', '--lora-alpha', '--lora-targets', '--seed', '--config']) expect(help.stdout).toContain(flag);
    expect(help.stdout).not.toMatch(/--schedule\b|--thinking\b/);
    const old = await start([...sftArgs(join(root, 'old-names')), '--schedule', 'constant']).done;
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('--schedule was renamed --lr-schedule');
    const thinking = await start([...sftArgs(join(root, 'old-names')), '--no-thinking']).done;
    expect(thinking.code).toBe(1);
    expect(thinking.stderr).toContain('--thinking was renamed --enable-thinking');
  });

  it('bad flags fail with a message naming them', async () => {
    const both = await start([...sftArgs(join(root, 'x')), '--lora']).done;
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('choose exactly one of --full');
    const noData = await start(['sft', '--model', modelDir, '--out', join(root, 'y'), '--full']).done;
    expect(noData.code).toBe(1);
    expect(noData.stderr).toContain('--data is required');
    const clash = await start(['sft', '--resume', join(root, 'straight'), '--model', modelDir]).done;
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain('drop --model');
    const clashLr = await start(['sft', '--resume', join(root, 'straight'), '--lr', '1']).done;
    expect(clashLr.code).toBe(1);
    expect(clashLr.stderr).toContain('drop --lr');
    const badLine = join(root, 'bad.jsonl');
    writeFileSync(badLine, `${readFileSync(data, 'utf8')}{"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "t"}]}\n`);
    const bad = await start(['sft', '--model', modelDir, '--data', badLine, '--out', join(root, 'z'), '--full', '--backend', 'wasm']).done;
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${badLine}:17: field 'messages[1].role' is 'tool'`);
  });
});
