// Model resolution against fake Hugging Face cache folders in a temp dir; nothing here touches the network
// (the one download test injects a fetch that fails like an offline machine).
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lookupModel, MODEL_REGISTRY, type RegistryEntry, registryNames } from '../models/registry.js';
import { memoryNeedOfEntry, memoryNeedStatement } from '../src/model/memory-need.js';
import {
  downloadErrorMessage,
  downloadModel,
  findCachedSnapshot,
  hubCacheDir,
  missingModelMessage,
  ModelDownloadError,
  repoCacheFolder,
  repoIdFor,
  resolveModel,
  wantedRepoFile,
} from '../src/model/resolve.js';

const HASH_A = 'a'.repeat(40);
const HASH_B = 'b'.repeat(40);

let tmp: string;
const savedEnv = { HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_TOKEN: process.env.HF_TOKEN };

/** Writes a snapshot folder; `config` false leaves config.json out (a partial download). */
function snapshot(cache: string, repoId: string, hash: string, config = true, mtimeSec?: number): string {
  const dir = join(repoCacheFolder(repoId, cache), 'snapshots', hash);
  mkdirSync(dir, { recursive: true });
  if (config) writeFileSync(join(dir, 'config.json'), '{}');
  else writeFileSync(join(dir, 'tokenizer.json'), '{}');
  if (mtimeSec !== undefined) utimesSync(dir, mtimeSec, mtimeSec);
  return dir;
}

function ref(cache: string, repoId: string, hash: string, name = 'main'): void {
  const dir = join(repoCacheFolder(repoId, cache), 'refs');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), `${hash}\n`);
}

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'sesa-resolve-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('registry', () => {
  it('maps every short name to its Hub repo with thinking and gating facts', () => {
    expect(registryNames()).toEqual([
      'qwen3-0.6b', 'qwen3-1.7b', 'qwen3-4b', 'qwen3-8b', 'qwen3-14b',
      'qwen2.5-0.5b-instruct', 'qwen2.5-1.5b-instruct', 'qwen2.5-3b-instruct', 'qwen2.5-7b-instruct',
      'llama-3.2-1b-instruct', 'llama-3.2-3b-instruct', 'llama-3.1-8b-instruct',
    ]);
    expect(lookupModel('qwen3-4b')).toMatchObject({ repoId: 'Qwen/Qwen3-4B', thinking: true, gated: false });
    expect(lookupModel('Qwen2.5-7B-Instruct')).toMatchObject({ repoId: 'Qwen/Qwen2.5-7B-Instruct', thinking: false });
    expect(lookupModel('meta-llama/llama-3.1-8b-instruct')).toMatchObject({
      name: 'llama-3.1-8b-instruct',
      repoId: 'meta-llama/Llama-3.1-8B-Instruct',
      gated: true,
      thinking: false,
    });
    for (const e of MODEL_REGISTRY) expect(e.repoId).toMatch(/^(Qwen|meta-llama)\/[\w.-]+$/);
    expect(lookupModel('gpt-2')).toBeUndefined();
  });

  it('turns names into repo ids: registry names, raw Org/Name, nothing else', () => {
    expect(repoIdFor('qwen3-0.6b')).toBe('Qwen/Qwen3-0.6B');
    expect(repoIdFor('someone/tiny-model')).toBe('someone/tiny-model');
    expect(repoIdFor('qwen9')).toBeUndefined();
    expect(repoIdFor('a/b/c')).toBeUndefined();
  });
});

describe('hubCacheDir', () => {
  it('follows huggingface_hub: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG, ~/.cache', () => {
    expect(hubCacheDir({ HF_HUB_CACHE: '/x/hub', HF_HOME: '/h' })).toBe('/x/hub');
    expect(hubCacheDir({ HUGGINGFACE_HUB_CACHE: '/legacy', HF_HOME: '/h' })).toBe('/legacy');
    expect(hubCacheDir({ HF_HOME: '/h' })).toBe('/h/hub');
    expect(hubCacheDir({ XDG_CACHE_HOME: '/xdg' })).toBe('/xdg/huggingface/hub');
    expect(hubCacheDir({})).toBe(join(homedir(), '.cache', 'huggingface', 'hub'));
    expect(hubCacheDir({ HF_HUB_CACHE: '' , HF_HOME: '/h' })).toBe('/h/hub');
  });
});

describe('findCachedSnapshot', () => {
  it('uses refs/main when its snapshot has config.json', () => {
    const cache = join(tmp, 'c1');
    snapshot(cache, 'Qwen/Qwen3-4B', HASH_A, true, 1000);
    const b = snapshot(cache, 'Qwen/Qwen3-4B', HASH_B, true, 2000);
    const a = join(repoCacheFolder('Qwen/Qwen3-4B', cache), 'snapshots', HASH_A);
    expect(repoCacheFolder('Qwen/Qwen3-4B', cache)).toBe(join(cache, 'models--Qwen--Qwen3-4B'));
    ref(cache, 'Qwen/Qwen3-4B', HASH_A);
    expect(findCachedSnapshot('Qwen/Qwen3-4B', cache)).toBe(a);
    // Without a ref, the newest snapshot with config.json.
    rmSync(join(repoCacheFolder('Qwen/Qwen3-4B', cache), 'refs'), { recursive: true });
    expect(findCachedSnapshot('Qwen/Qwen3-4B', cache)).toBe(b);
    // A commit hash as revision picks that snapshot.
    expect(findCachedSnapshot('Qwen/Qwen3-4B', cache, HASH_A)).toBe(a);
  });

  it('falls back when refs/main names a snapshot without config.json', () => {
    const cache = join(tmp, 'c2');
    const good = snapshot(cache, 'Org/M', HASH_A, true, 1000);
    snapshot(cache, 'Org/M', HASH_B, false, 3000);
    ref(cache, 'Org/M', HASH_B);
    expect(findCachedSnapshot('Org/M', cache)).toBe(good);
  });

  it('returns undefined for an absent repo or one with no usable snapshot', () => {
    const cache = join(tmp, 'c3');
    expect(findCachedSnapshot('Org/None', cache)).toBeUndefined();
    snapshot(cache, 'Org/Partial', HASH_A, false);
    expect(findCachedSnapshot('Org/Partial', cache)).toBeUndefined();
  });
});

describe('resolveModel', () => {
  it('takes a folder with config.json as itself', async () => {
    const dir = join(tmp, 'local-model');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), '{}');
    await expect(resolveModel(dir)).resolves.toEqual({ dir, source: 'folder' });
  });

  it('rejects a folder without config.json, and a missing path, naming it', async () => {
    const dir = join(tmp, 'empty-folder');
    mkdirSync(dir, { recursive: true });
    await expect(resolveModel(dir)).rejects.toThrow(`model folder ${dir} has no config.json`);
    await expect(resolveModel(join(tmp, 'no', 'such', 'dir'))).rejects.toThrow(`model folder not found: ${join(tmp, 'no', 'such', 'dir')}`);
    await expect(resolveModel('qwen9')).rejects.toThrow(/unknown model 'qwen9'.*qwen3-4b/);
  });

  it('finds registry names and raw repo ids in the cache named by HF_HUB_CACHE', async () => {
    const cache = join(tmp, 'c4');
    const snap = snapshot(cache, 'Qwen/Qwen3-0.6B', HASH_A);
    ref(cache, 'Qwen/Qwen3-0.6B', HASH_A);
    const other = snapshot(cache, 'someone/tiny', HASH_B);
    process.env.HF_HUB_CACHE = cache;
    await expect(resolveModel('qwen3-0.6b')).resolves.toEqual({ dir: snap, repoId: 'Qwen/Qwen3-0.6B', source: 'hf-cache' });
    await expect(resolveModel('Qwen/Qwen3-0.6B')).resolves.toEqual({ dir: snap, repoId: 'Qwen/Qwen3-0.6B', source: 'hf-cache' });
    await expect(resolveModel('someone/tiny')).resolves.toEqual({ dir: other, repoId: 'someone/tiny', source: 'hf-cache' });
    // The cache's repo folder itself also resolves to its snapshot.
    await expect(resolveModel(repoCacheFolder('Qwen/Qwen3-0.6B', cache))).resolves.toEqual({
      dir: snap,
      repoId: 'Qwen/Qwen3-0.6B',
      source: 'hf-cache',
    });
  });

  it('says where it looked and how to fetch a missing model', async () => {
    const cache = join(tmp, 'c5');
    process.env.HF_HUB_CACHE = cache;
    const expected = [
      `model 'qwen3-4b' (Qwen/Qwen3-4B) is not in the Hugging Face cache: looked in ${join(cache, 'models--Qwen--Qwen3-4B')}`,
      '(the cache is HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub). Fetch it with either of:',
      '  npx sesa-train download qwen3-4b',
      '  huggingface-cli download Qwen/Qwen3-4B',
      'or pass a local folder that holds config.json.',
      // With no tensor backend started (or one that holds it), what it needs per backend (docs/models.md).
      `What qwen3-4b needs: ${memoryNeedStatement(memoryNeedOfEntry(lookupModel('qwen3-4b') as RegistryEntry))}.`,
    ].join('\n');
    expect(missingModelMessage('qwen3-4b', 'Qwen/Qwen3-4B', cache)).toBe(expected);
    await expect(resolveModel('qwen3-4b')).rejects.toThrow(expected);
    // A repo id of a registered model suggests the short name; gated repos add the licence step.
    const llama = missingModelMessage('meta-llama/Llama-3.2-1B-Instruct', 'meta-llama/Llama-3.2-1B-Instruct', cache);
    expect(llama).toContain('npx sesa-train download llama-3.2-1b-instruct');
    expect(llama).toContain('huggingface-cli download meta-llama/Llama-3.2-1B-Instruct');
    expect(llama).toContain('accept its licence at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct and set HF_TOKEN');
    expect(missingModelMessage('x/y', 'x/y', cache)).toContain('npx sesa-train download x/y');
  });
});

describe('download (offline)', () => {
  it('keeps only top-level configs, tokenizer files and safetensors', () => {
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors',
      'model-00001-of-00003.safetensors', 'model.safetensors.index.json', 'chat_template.jinja', 'LICENSE', 'merges.txt']) {
      expect(wantedRepoFile(f), f).toBe(true);
    }
    for (const f of ['original/consolidated.00.pth', 'pytorch_model.bin', 'onnx/model.onnx', 'model.gguf', '.gitattributes']) {
      expect(wantedRepoFile(f), f).toBe(false);
    }
  });

  it('turns a failed connection into a clear error', async () => {
    const cache = join(tmp, 'c6');
    delete process.env.HF_TOKEN;
    const offline: typeof fetch = () =>
      Promise.reject(new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND huggingface.co'), { code: 'ENOTFOUND' }) }));
    const lines: string[] = [];
    // Guard: the global fetch must never be reached.
    const realFetch = globalThis.fetch;
    let globalCalls = 0;
    globalThis.fetch = (() => {
      globalCalls++;
      return Promise.reject(new Error('network used in a test'));
    }) as typeof fetch;
    const err = await downloadModel('meta-llama/Llama-3.2-1B-Instruct', { cacheDir: cache, fetch: offline, log: (l) => lines.push(l) })
      .catch((e: unknown) => e)
      .finally(() => {
        globalThis.fetch = realFetch;
      });
    expect(globalCalls).toBe(0);
    expect(err).toBeInstanceOf(ModelDownloadError);
    const msg = (err as Error).message;
    expect(msg).toContain('could not download meta-llama/Llama-3.2-1B-Instruct: network failure reaching huggingface.co [ENOTFOUND]');
    expect(msg).toContain('huggingface-cli download meta-llama/Llama-3.2-1B-Instruct');
    expect(msg).toContain('is gated');
  });

  it('explains access and missing-repo failures', () => {
    const httpErr = (statusCode: number): Error => Object.assign(new Error('denied'), { statusCode });
    expect(downloadErrorMessage('meta-llama/Llama-3.1-8B-Instruct', httpErr(401), true, false)).toBe(
      'could not download meta-llama/Llama-3.1-8B-Instruct (HTTP 401: denied). The repo is gated: accept its licence at ' +
        'https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct, then set HF_TOKEN to a Hugging Face access token.',
    );
    expect(downloadErrorMessage('a/b', httpErr(403), false, true)).toContain('HF_TOKEN is set but has no access');
    expect(downloadErrorMessage('a/b', httpErr(404), false, false)).toContain('the Hub has no such model or revision');
    expect(downloadErrorMessage('a/b', new Error('ENOSPC: no space left'), false, false)).toBe('could not download a/b: ENOSPC: no space left');
  });
});
