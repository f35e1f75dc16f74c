// `--model` resolution: a local folder, or a registry name / Hub repo id found in the standard Hugging Face
// cache (the same layout huggingface-cli and transformers use, so models fetched by either are reused), or
// downloaded into that cache on request. Only the download path touches the network.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { writeFileAtomic } from '../util/atomic.js';
import { lookupModel, registryNames } from '../../models/registry.js';
import { activeBackendName, backendRefusal, memoryNeedOfEntry, memoryNeedStatement } from './memory-need.js';

/** 'demo' and 'tiny' are the models that ship with sesa (./model-name.ts). */
export type ModelSource = 'folder' | 'hf-cache' | 'download' | 'demo' | 'tiny';

export interface ResolvedModel {
  /** A folder with config.json (and weights, tokenizer files). */
  dir: string;
  /** The Hub repo id, when the model came from a name or repo id. */
  repoId?: string;
  source: ModelSource;
}

export interface ResolveOptions {
  /** Download into the Hugging Face cache when the model is not there. Default false. */
  download?: boolean;
  /** Git revision for downloads and for the cache's refs/<revision>. Default 'main'. */
  revision?: string;
}

const REPO_ID_RE = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p;
}

/**
 * The Hugging Face hub cache, as huggingface_hub computes it: HF_HUB_CACHE, then the legacy
 * HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub, then $XDG_CACHE_HOME/huggingface/hub, then
 * ~/.cache/huggingface/hub.
 */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const nonEmpty = (v: string | undefined): string | undefined => (v !== undefined && v !== '' ? v : undefined);
  const direct = nonEmpty(env.HF_HUB_CACHE) ?? nonEmpty(env.HUGGINGFACE_HUB_CACHE);
  if (direct !== undefined) return resolve(expandHome(direct));
  const home = nonEmpty(env.HF_HOME);
  if (home !== undefined) return resolve(expandHome(home), 'hub');
  const xdg = nonEmpty(env.XDG_CACHE_HOME);
  return resolve(xdg !== undefined ? expandHome(xdg) : join(homedir(), '.cache'), 'huggingface', 'hub');
}

/** The cache folder of a model repo: `models--Org--Name`. */
export function repoCacheFolder(repoId: string, cacheDir: string = hubCacheDir()): string {
  return join(cacheDir, `models--${repoId.split('/').join('--')}`);
}

/**
 * The snapshot of `repoId` in the cache: the one refs/<revision> names when it has config.json, else the
 * newest snapshot with config.json (a cache filled by a pinned-revision download has no refs/main).
 */
export function findCachedSnapshot(repoId: string, cacheDir: string = hubCacheDir(), revision = 'main'): string | undefined {
  const repoDir = repoCacheFolder(repoId, cacheDir);
  const snapshots = join(repoDir, 'snapshots');
  if (!isDir(snapshots)) return undefined;
  const refFile = join(repoDir, 'refs', revision);
  const hash = /^[0-9a-f]{40}$/.test(revision)
    ? revision
    : existsSync(refFile)
      ? readFileSync(refFile, 'utf8').trim()
      : undefined;
  if (hash !== undefined && hash !== '' && existsSync(join(snapshots, hash, 'config.json'))) return join(snapshots, hash);
  const candidates = readdirSync(snapshots)
    .map((name) => join(snapshots, name))
    .filter((d) => existsSync(join(d, 'config.json')))
    .map((d) => ({ d, mtime: statSync(d).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  return candidates[0]?.d;
}

/** The exact error text for a model that is neither a folder nor in the cache. */
export function missingModelMessage(name: string, repoId: string, cacheDir: string = hubCacheDir()): string {
  const entry = lookupModel(repoId);
  const shortName = lookupModel(name)?.name ?? entry?.name ?? repoId;
  const lines = [
    `model '${name}' (${repoId}) is not in the Hugging Face cache: looked in ${repoCacheFolder(repoId, cacheDir)}`,
    `(the cache is HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub). Fetch it with either of:`,
    `  npx sesa-train download ${shortName}`,
    `  huggingface-cli download ${repoId}`,
    `or pass a local folder that holds config.json.`,
  ];
  if (entry) {
    // Before anyone downloads it: whether the backend of this run can hold it at all (./memory-need.ts).
    const need = memoryNeedOfEntry(entry);
    const refusal = backendRefusal(`--model ${name}`, need, activeBackendName());
    if (refusal !== undefined) lines.unshift(refusal, '');
    else lines.push(`What ${entry.name} needs: ${memoryNeedStatement(need)}.`);
  }
  if (entry?.gated) {
    lines.push(
      `${repoId} is gated: accept its licence at https://huggingface.co/${repoId} and set HF_TOKEN before downloading.`,
    );
  }
  return lines.join('\n');
}

/** A name → Hub repo id: a registry short name, or a raw `Org/Name`. */
export function repoIdFor(name: string): string | undefined {
  const entry = lookupModel(name);
  if (entry) return entry.repoId;
  return REPO_ID_RE.test(name) ? name : undefined;
}

/** Resolves `--model`: a folder, a registry name, or a Hub repo id. */
export async function resolveModel(nameOrDir: string, opts: ResolveOptions = {}): Promise<ResolvedModel> {
  const asPath = resolve(expandHome(nameOrDir));
  // An existing folder wins, even when its relative path also looks like `Org/Name`.
  if (isDir(asPath)) {
    if (existsSync(join(asPath, 'config.json'))) {
      // A snapshot folder of the Hugging Face cache (…/models--Org--Name/snapshots/<hash>) knows its repo id.
      const snapshot = /[\\/]models--([^\\/]+)[\\/]snapshots[\\/][^\\/]+$/.exec(asPath);
      const repoId = snapshot?.[1]?.split('--').join('/');
      return { dir: asPath, ...(repoId !== undefined && REPO_ID_RE.test(repoId) ? { repoId } : {}), source: 'folder' };
    }
    // A cache repo folder (models--Org--Name) given directly.
    if (isDir(join(asPath, 'snapshots'))) {
      const m = /^models--(.+)$/.exec(asPath.split(/[\\/]/).pop() ?? '');
      const repoId = m?.[1]?.split('--').join('/');
      const snap = repoId ? findCachedSnapshot(repoId, dirname(asPath), opts.revision) : undefined;
      if (snap !== undefined) return { dir: snap, ...(repoId ? { repoId } : {}), source: 'hf-cache' };
    }
    throw new Error(`model folder ${asPath} has no config.json (a model folder needs config.json, weights and tokenizer files)`);
  }
  const repoId = repoIdFor(nameOrDir);
  if (repoId === undefined) {
    const looksLikePath = /^(\.|\/|~)/.test(nameOrDir) || nameOrDir.split(/[\\/]/).length > 2;
    throw new Error(
      looksLikePath
        ? `model folder not found: ${asPath}`
        : `unknown model '${nameOrDir}': not a folder, a known name (${registryNames().join(', ')}; 'demo' and 'tiny' ship with sesa) or a Hub repo id Org/Name`,
    );
  }
  const cacheDir = hubCacheDir();
  const cached = findCachedSnapshot(repoId, cacheDir, opts.revision);
  if (cached !== undefined) return { dir: cached, repoId, source: 'hf-cache' };
  if (!opts.download) throw new Error(missingModelMessage(nameOrDir, repoId, cacheDir));
  const dir = await downloadModel(repoId, { cacheDir, ...(opts.revision ? { revision: opts.revision } : {}) });
  return { dir, repoId, source: 'download' };
}

export interface DownloadOptions {
  cacheDir?: string;
  revision?: string;
  /** Progress lines go here; default stderr. */
  log?: (line: string) => void;
  /** Rewrites the current progress line (a terminal's carriage return); default: stderr when it is a TTY. */
  progress?: (line: string) => void;
  /** The fetch to use (tests inject a failing one); default the global fetch. */
  fetch?: typeof fetch;
}

/** Files a model folder needs: top-level configs, tokenizer files, templates and safetensors weights. */
export function wantedRepoFile(path: string): boolean {
  if (path.includes('/')) return false; // original/ (consolidated .pth), onnx/, gguf folders: not ours
  return /\.(json|jinja|txt|model|safetensors)$/.test(path) || /^(LICENSE|README|NOTICE|USE_POLICY)/i.test(path);
}

function hubToken(): string | undefined {
  const t = process.env.HF_TOKEN ?? process.env.HUGGING_FACE_HUB_TOKEN;
  return t !== undefined && t !== '' ? t : undefined;
}

/** A download failure, with a message that says what to do. */
export class ModelDownloadError extends Error {
  override name = 'ModelDownloadError';
}

function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e3).toFixed(1)} kB`;
}

/**
 * Downloads the files a model needs from the Hub into the standard cache (blobs + snapshots/<sha> symlinks +
 * refs/<revision>), so huggingface-cli and transformers see the same copy. Returns the snapshot folder.
 */
export async function downloadModel(repoId: string, opts: DownloadOptions = {}): Promise<string> {
  const cacheDir = opts.cacheDir ?? hubCacheDir();
  const revision = opts.revision ?? 'main';
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ttyProgress = opts.progress === undefined && process.stderr.isTTY === true;
  const progress = opts.progress ?? (ttyProgress ? (line: string) => process.stderr.write(`\r${line}\x1b[K`) : undefined);
  const accessToken = hubToken();
  const hub = await import('@huggingface/hub');
  const repo = { type: 'model' as const, name: repoId };
  const gated = lookupModel(repoId)?.gated ?? false;

  // Count body bytes as they stream, for the progress line; the hub library exposes no progress hook.
  let fileBytes = 0;
  const baseFetch = opts.fetch ?? globalThis.fetch;
  const countingFetch: typeof fetch = async (input, init) => {
    const res = await baseFetch(input, init);
    if (!res.body) return res;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        fileBytes += chunk.byteLength;
        ctl.enqueue(chunk);
      },
    });
    const wrapped = new Response(res.body.pipeThrough(counter), { status: res.status, statusText: res.statusText, headers: res.headers });
    Object.defineProperty(wrapped, 'url', { value: res.url });
    return wrapped;
  };

  // The hub library prints "Downloading …" with console.debug (stdout); silence it so --json output stays clean.
  const savedDebug = console.debug;
  console.debug = () => {};
  try {
    const info = await hub.modelInfo({ name: repoId, additionalFields: ['sha'], revision, accessToken, fetch: baseFetch });
    const sha = info.sha;
    if (typeof sha !== 'string' || sha === '') throw new ModelDownloadError(`the Hub returned no commit for ${repoId}@${revision}`);
    const files: Array<{ path: string; size: number }> = [];
    for await (const e of hub.listFiles({ repo, revision: sha, accessToken, fetch: baseFetch })) {
      if (e.type === 'file' && wantedRepoFile(e.path)) files.push({ path: e.path, size: e.lfs?.size ?? e.size });
    }
    if (!files.some((f) => f.path === 'config.json')) throw new ModelDownloadError(`${repoId} has no config.json: not a transformers model repo`);
    if (!files.some((f) => f.path.endsWith('.safetensors'))) {
      throw new ModelDownloadError(`${repoId} has no .safetensors weights at its top level; sesa-train reads safetensors only`);
    }
    const total = files.reduce((s, f) => s + f.size, 0);
    log(`downloading ${repoId}@${sha.slice(0, 12)}: ${files.length} files, ${formatBytes(total)} into ${repoCacheFolder(repoId, cacheDir)}`);
    let done = 0;
    for (const [i, f] of files.entries()) {
      fileBytes = 0;
      const label = `[${i + 1}/${files.length}] ${f.path} (${formatBytes(f.size)})`;
      const timer = progress
        ? setInterval(() => progress(`${label} ${formatBytes(fileBytes)}, total ${formatBytes(done + fileBytes)} / ${formatBytes(total)}`), 500)
        : undefined;
      try {
        if (!progress) log(label);
        await hub.downloadFileToCacheDir({ repo, path: f.path, revision: sha, cacheDir, accessToken, fetch: countingFetch });
      } finally {
        if (timer) clearInterval(timer);
      }
      done += f.size;
      progress?.(`${label} done, total ${formatBytes(done)} / ${formatBytes(total)}`);
    }
    if (ttyProgress) process.stderr.write('\n');
    // downloadFileToCacheDir writes blobs and snapshot links but no ref; later lookups by name need it.
    if (revision !== sha) {
      const ref = join(repoCacheFolder(repoId, cacheDir), 'refs', revision);
      writeFileAtomic(ref, sha);
    }
    const snapshot = join(repoCacheFolder(repoId, cacheDir), 'snapshots', sha);
    log(`done: ${snapshot}`);
    return snapshot;
  } catch (err) {
    if (err instanceof ModelDownloadError) throw err;
    throw new ModelDownloadError(downloadErrorMessage(repoId, err, gated, accessToken !== undefined), { cause: err });
  } finally {
    console.debug = savedDebug;
  }
}

/** The message for a failed download: network, access (gated / token), missing repo, or other. */
export function downloadErrorMessage(repoId: string, err: unknown, gated: boolean, hasToken: boolean): string {
  const e = err as { statusCode?: unknown; message?: unknown; code?: unknown; cause?: { code?: unknown } };
  const msg = typeof e.message === 'string' ? e.message : String(err);
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const page = `https://huggingface.co/${repoId}`;
  const gatedHint = gated && !hasToken ? ` ${repoId} is gated: accept its licence at ${page} and set HF_TOKEN.` : '';
  // Node's fetch rejects with TypeError('fetch failed') and the socket error (ENOTFOUND, ECONNREFUSED…) as cause.
  const causeCode = typeof e.cause?.code === 'string' ? e.cause.code : undefined;
  if (status === undefined && (err instanceof TypeError || causeCode !== undefined)) {
    return (
      `could not download ${repoId}: network failure reaching huggingface.co${causeCode ? ` [${causeCode}]` : ''}: ${msg}. ` +
      `Check the connection (or HTTPS proxy), or fetch it on a connected machine with ` +
      `\`huggingface-cli download ${repoId}\` and copy the cache folder.${gatedHint}`
    );
  }
  if (status === 401 || status === 403) {
    return (
      `could not download ${repoId} (HTTP ${status}: ${msg}). ` +
      (hasToken
        ? `HF_TOKEN is set but has no access: accept the licence at ${page} with that account.`
        : `${gated ? `The repo is gated: accept its licence at ${page}, then s` : 'S'}et HF_TOKEN to a Hugging Face access token.`)
    );
  }
  if (status === 404) return `could not download ${repoId}: the Hub has no such model or revision (${msg}).${gatedHint}`;
  if (status !== undefined) return `could not download ${repoId}: HTTP ${status}: ${msg}`;
  return `could not download ${repoId}: ${msg}`;
}
