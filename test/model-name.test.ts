// One resolver of --model names for every command (src/model/model-name.ts): 'demo' (the shipped warm start),
// 'tiny' (made on first use), folders and registry names. `export`, `eval` and `--recipe skill-sp` used to
// answer "unknown model 'demo'" for the name `train` takes by default. An adapter names its base by the Hub id
// (the trainer wrote the registry short name, which PEFT cannot find), else by its absolute folder.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { demoModelPath, peftBaseModel, resolveModelName } from '../src/checkpoint/model-name.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let root: string;

function cli(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/sesa-train.mjs', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, COLUMNS: '200', ...env }, timeout: 300_000 });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'model-name-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('resolveModelName', () => {
  it("'demo' is the shipped warm start, 'tiny' is made on first use, anything else goes to the folder/cache resolver", async () => {
    expect(await resolveModelName('demo')).toEqual({ dir: demoModelPath(), source: 'demo' });
    const home = join(root, 'sesa-home');
    const saved = process.env.SESA_HOME;
    process.env.SESA_HOME = home;
    try {
      const lines: string[] = [];
      const tiny = await resolveModelName('tiny', { log: (l) => lines.push(l) });
      expect(tiny).toEqual({ dir: join(home, 'models', 'tiny-qwen3'), source: 'tiny' });
      expect(existsSync(join(tiny.dir, 'model.safetensors'))).toBe(true);
      expect(lines.join('\n')).toContain('making the tiny default model');
    } finally {
      if (saved === undefined) delete process.env.SESA_HOME;
      else process.env.SESA_HOME = saved;
    }
    expect(await resolveModelName(demoModelPath())).toEqual({ dir: demoModelPath(), source: 'folder' });
    await expect(resolveModelName('no-such-model')).rejects.toThrow("unknown model 'no-such-model'");
  });
});

describe("--model demo in every command that takes a model", () => {
  it('export --model demo writes a GGUF', () => {
    const out = join(root, 'demo.gguf');
    const r = cli(['export', '--model', 'demo', '--format', 'gguf', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('unknown model');
    expect(readFileSync(out).subarray(0, 4).toString('latin1')).toBe('GGUF');
  });

  it('eval --model demo evaluates the warm start', () => {
    const out = join(root, 'eval');
    const r = cli(['eval', '--model', 'demo', '--data', 'encyclopedia', '--limit', '1', '--max-turns', '1', '--max-new-tokens', '4', '--max-response-tokens', '64', '--backend', 'wasm', '--threads', '1', '--out', out, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop() as string)).toMatchObject({ complete: true });
  });

  it('--recipe skill-sp --model demo trains on the warm start', () => {
    const out = join(root, 'skill-sp');
    const r = cli([
      '--recipe', 'skill-sp', '--model', 'demo', '--backend', 'wasm', '--out', out, '--iterations', '1', '--prompts-per-iteration', '1',
      '--proposals-per-prompt', '2', '--solver-rollouts', '2', '--proposer-tokens', '8', '--solver-tokens', '8', '--lora-r', '2', '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop() as string)).toMatchObject({ out });
  });
});

describe("an adapter's base_model_name_or_path", () => {
  /** A tiny checkpoint stored where the Hugging Face cache keeps Qwen/Qwen3-0.6B. */
  function fakeCache(): { cache: string; snapshot: string } {
    const cache = join(root, 'hub');
    const repo = join(cache, 'models--Qwen--Qwen3-0.6B');
    const snapshot = join(repo, 'snapshots', 'c1899de289a04d12100db370d81485cdf75e47ca');
    if (!existsSync(snapshot)) {
      makeTinyCheckpoint({ out: snapshot, arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 });
      mkdirSync(join(repo, 'refs'), { recursive: true });
      writeFileSync(join(repo, 'refs', 'main'), 'c1899de289a04d12100db370d81485cdf75e47ca');
    }
    return { cache, snapshot };
  }

  it('is the Hub repo id for a model that has one, else the absolute folder', async () => {
    const { cache, snapshot } = fakeCache();
    const saved = process.env.HF_HUB_CACHE;
    process.env.HF_HUB_CACHE = cache;
    try {
      expect(peftBaseModel(await resolveModelName('qwen3-0.6b'))).toBe('Qwen/Qwen3-0.6B');
      expect(peftBaseModel(await resolveModelName('Qwen/Qwen3-0.6B'))).toBe('Qwen/Qwen3-0.6B');
      // A snapshot folder given as a path knows its repo too.
      expect(peftBaseModel(await resolveModelName(snapshot))).toBe('Qwen/Qwen3-0.6B');
    } finally {
      if (saved === undefined) delete process.env.HF_HUB_CACHE;
      else process.env.HF_HUB_CACHE = saved;
    }
    expect(peftBaseModel(await resolveModelName('demo'))).toBe(demoModelPath());
    const plain = makeTinyCheckpoint({ out: join(root, 'plain-model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
    expect(peftBaseModel(await resolveModelName(plain))).toBe(plain);
  });

  it('train --model qwen3-0.6b writes Qwen/Qwen3-0.6B into its checkpoints, not the short name', () => {
    const { cache } = fakeCache();
    const out = join(root, 'run-06b');
    const r = cli(
      [
        'train', '--model', 'qwen3-0.6b', '--corpus', 'encyclopedia', '--steps', '1', '--seeds-per-step', '1', '--proposals-per-seed', '2', '--group-size', '2', '--max-turns', '2',
        '--max-new-tokens', '12', '--max-response-tokens', '48', '--embedder', 'lexical', '--micro-batch-size', '8', '--backend', 'wasm', '--threads', '1', '--out', out, '--json',
      ],
      { HF_HUB_CACHE: cache },
    );
    expect(r.status, r.stderr).toBe(0);
    for (const role of ['proposer', 'solver']) {
      const cfg = JSON.parse(readFileSync(join(out, 'checkpoints', 'step-1', role, 'adapter_config.json'), 'utf8')) as { base_model_name_or_path: string };
      expect(cfg.base_model_name_or_path, role).toBe('Qwen/Qwen3-0.6B');
    }
  }, 300_000);
});
