// Packs what the device check (docs/scale-out.md, "The device check") needs on a machine that has no Node, no
// npm and no network into one folder, `.gpu-check/` (ignored by git; the device call carries it), and checks
// that it travels: the working tree and the pack together under the device's 64 MiB.
//
//   node.gz             this Node binary (gzip; the device has none)
//   dawn.node.gz        Dawn's Node binding for linux-x64 (gzip)
//   check.mjs           bench/gpu-check.ts and everything it imports, tfjs' WebGPU backend included, as one
//                       minified ES module (esbuild, which tsx brings); the wasm backend's .wasm files beside it
//   peft/               the PEFT fixture: a tiny random Qwen3, our LoRA adapter, our log-probs (wasm, here)
//   libvulkan1_*.deb    the Vulkan loader, for a device image without one (unpacked into /tmp there, not /)
//   manifest.json       every file with its size and SHA-256, the versions, and the travel total
//
// `bash scripts/gpu-check.sh pack` runs this; `bash scripts/gpu-check.sh run` is what the device runs.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { initBackend } from '../src/tensor/backend.js';
import { DAWN_PACKAGE, locateWebgpu, TFJS_WEBGPU_PACKAGE, WEBGPU_SIDE_DIR } from '../src/tensor/webgpu.js';
import { writePeftFixture } from '../bench/gpu-check.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The folder the pack is written to, under the repository root. */
export const PACK_DIR = '.gpu-check';
/** What the device call carries at most: the working tree and the carried pack together. */
export const TRAVEL_LIMIT_BYTES = 64 * 2 ** 20;
/** The wasm builds the single-threaded wasm backend loads (from the bundle's folder). */
const WASM_FILES = ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm'];

export interface PackManifest {
  written: string;
  node: string;
  versions: Record<string, string>;
  files: Record<string, { bytes: number; sha256: string }>;
  /** Bytes of the pack, of the working tree that travels with it, and their sum against the limit. */
  packBytes: number;
  treeBytes: number;
  travelBytes: number;
  limitBytes: number;
  /** Why the Vulkan loader is not in the pack, when it is not. */
  vulkanLoader?: string;
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/**
 * Bytes of the working tree that travels with every device call: tracked files and untracked files git does not
 * ignore (what `git ls-files -co --exclude-standard` lists), plus a `shared/` folder in the checkout.
 */
export function treeBytes(root: string): number {
  const r = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`git ls-files in ${root} failed: ${r.stderr || r.error?.message}`);
  let total = 0;
  for (const f of r.stdout.split('\0').filter((x) => x !== '')) {
    const p = join(root, f);
    if (existsSync(p) && statSync(p).isFile()) total += statSync(p).size;
  }
  const shared = join(root, 'shared');
  if (existsSync(shared) && statSync(shared).isDirectory()) for (const f of filesUnder(shared)) total += statSync(f).size;
  return total;
}

interface EsbuildLike {
  build(options: Record<string, unknown>): Promise<{ errors: unknown[]; warnings: Array<{ text: string }> }>;
}

/** Bundles bench/gpu-check.ts, tfjs' WebGPU backend and the project's JS into one ES module. */
async function bundle(outfile: string): Promise<void> {
  let esbuild: EsbuildLike;
  try {
    const name: string = 'esbuild';
    esbuild = (await import(name)) as EsbuildLike;
  } catch (err) {
    throw new Error(`esbuild (installed with tsx) does not load: ${(err as Error).message.split('\n')[0]}; run npm ci`);
  }
  const entry = `
import * as tfjsWebgpu from '${TFJS_WEBGPU_PACKAGE.name}';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { provideWebgpuRuntime } from './src/tensor/webgpu.ts';
import { main } from './bench/gpu-check.ts';
const argv = process.argv.slice(2);
const i = argv.indexOf('--dawn-node');
const dawnNode = i >= 0 ? resolve(argv.splice(i, 2)[1]) : join(dirname(fileURLToPath(import.meta.url)), 'dawn.node');
provideWebgpuRuntime({ dawnNode, tfjsWebgpu });
main(argv).then((code) => process.exit(code), (err) => { process.stderr.write('gpu-check: ' + (err && err.message ? err.message : String(err)) + '\\n'); process.exit(1); });
`;
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: ROOT, sourcefile: 'gpu-check-entry.mjs', loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    legalComments: 'none',
    outfile,
    nodePaths: [join(ROOT, WEBGPU_SIDE_DIR, 'node_modules')],
    // CommonJS inside an ES module: tfjs and the wasm loader use require, __dirname and __filename.
    banner: {
      js: "import{createRequire as __sesaCreateRequire}from'node:module';import{fileURLToPath as __sesaFileUrl}from'node:url';import{dirname as __sesaDirname}from'node:path';const require=__sesaCreateRequire(import.meta.url);const __filename=__sesaFileUrl(import.meta.url);const __dirname=__sesaDirname(__filename);",
    },
    // Loaded only by code paths the check never takes (tokenizers, llama.cpp, the native TensorFlow bindings).
    external: ['@huggingface/transformers', 'onnxruntime-node', 'node-llama-cpp', '@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu', 'esbuild'],
    logLevel: 'silent',
  });
  if (result.errors.length > 0) throw new Error(`esbuild: ${JSON.stringify(result.errors)}`);
}

/** `apt-get download libvulkan1` (amd64) into `dir`; the reason when it cannot. */
function downloadVulkanLoader(dir: string): string | undefined {
  const r = spawnSync('apt-get', ['-oAPT::Architecture=amd64', '-oAPT::Architectures=amd64', 'download', 'libvulkan1'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  if (r.error) return `apt-get cannot run (${r.error.message})`;
  if (r.status !== 0) return `apt-get download libvulkan1 failed: ${(r.stderr || r.stdout).trim().split('\n').pop()}`;
  if (!readdirSync(dir).some((f) => /^libvulkan1_.*\.deb$/.test(f))) return 'apt-get download libvulkan1 wrote no .deb';
  return undefined;
}

function packageVersion(pkg: string, base: string): string {
  return (JSON.parse(readFileSync(createRequire(base).resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version;
}

export interface PackOptions {
  /** The pack folder (default `.gpu-check` under the repository root); replaced whole. */
  out?: string;
  /** The checkout whose working tree travels with the pack (default: this repository). */
  root?: string;
  /** Skip `apt-get download libvulkan1` (tests). */
  noVulkanLoader?: boolean;
  log?: (line: string) => void;
}

/** Writes the pack (see the file header) and its manifest; throws when it would not travel. */
export async function packGpuCheck(opts: PackOptions = {}): Promise<PackManifest> {
  const log = opts.log ?? ((l: string) => process.stdout.write(`${l}\n`));
  const root = opts.root ?? ROOT;
  const out = resolve(opts.out ?? join(root, PACK_DIR));
  const located = locateWebgpu();
  if (!located.ok) throw new Error(`gpu-check pack: ${located.reason}`);
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`gpu-check pack: the device is linux-x64; this is ${process.platform}-${process.arch}, whose Node and dawn.node would not run there`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  log(`gpu-check pack → ${out}`);
  writeFileAtomic(join(out, 'node.gz'), gzipSync(readFileSync(process.execPath), { level: 6 }));
  writeFileAtomic(join(out, 'dawn.node.gz'), gzipSync(readFileSync(located.runtime.dawnNode), { level: 6 }));
  await bundle(join(out, 'check.mjs'));
  const wasmDist = dirname(createRequire(join(ROOT, 'package.json')).resolve('@tensorflow/tfjs-backend-wasm'));
  for (const f of WASM_FILES) copyFileSync(join(wasmDist, f), join(out, f));
  await initBackend('wasm', { threads: 1 });
  await writePeftFixture(join(out, 'peft'));
  const vulkanLoader = opts.noVulkanLoader ? 'not asked for' : downloadVulkanLoader(out);
  if (vulkanLoader) log(`  no Vulkan loader in the pack: ${vulkanLoader} (the device must have libvulkan.so.1)`);

  const files: PackManifest['files'] = {};
  let packBytes = 0;
  for (const f of filesUnder(out).sort()) {
    const bytes = statSync(f).size;
    files[relative(out, f)] = { bytes, sha256: sha256(f) };
    packBytes += bytes;
  }
  const tree = treeBytes(root);
  const base = join(ROOT, WEBGPU_SIDE_DIR, 'node_modules', '');
  const manifest: PackManifest = {
    written: new Date().toISOString(),
    node: process.version,
    versions: {
      [DAWN_PACKAGE.name]: packageVersion(DAWN_PACKAGE.name, base),
      [TFJS_WEBGPU_PACKAGE.name]: packageVersion(TFJS_WEBGPU_PACKAGE.name, base),
      '@tensorflow/tfjs': packageVersion('@tensorflow/tfjs', join(ROOT, 'package.json')),
    },
    files,
    packBytes,
    treeBytes: tree,
    travelBytes: packBytes + tree,
    limitBytes: TRAVEL_LIMIT_BYTES,
    ...(vulkanLoader ? { vulkanLoader } : {}),
  };
  writeJsonAtomic(join(out, 'manifest.json'), manifest);
  const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;
  for (const [f, { bytes }] of Object.entries(files)) if (bytes > 2 ** 20) log(`  ${f}: ${mib(bytes)}`);
  log(`  pack ${mib(packBytes)} + working tree ${mib(tree)} = ${mib(manifest.travelBytes)} of the ${mib(TRAVEL_LIMIT_BYTES)} a device call carries`);
  if (manifest.travelBytes > TRAVEL_LIMIT_BYTES) throw new Error(`gpu-check pack: ${mib(manifest.travelBytes)} would travel, over the ${mib(TRAVEL_LIMIT_BYTES)} limit (pack ${mib(packBytes)}, working tree ${mib(tree)})`);
  return manifest;
}

const invokedDirectly = process.argv[1] !== undefined && /[\\/]scripts[\\/]gpu-check-pack\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  const argv = process.argv.slice(2);
  const outAt = argv.indexOf('--out');
  packGpuCheck({ ...(outAt >= 0 && argv[outAt + 1] ? { out: argv[outAt + 1] } : {}), noVulkanLoader: argv.includes('--no-vulkan-loader') }).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
