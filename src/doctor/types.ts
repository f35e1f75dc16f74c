// `sesa-train doctor` reports one line per check. A check either passes, warns (the run starts, but something
// is worth knowing), fails (the run as given would not start) or does not apply to the run as given.
// The outside world (imports, files, commands, the network) reaches the checks through `Probes`, so tests
// hand them broken fixtures.
import type { BackendChoice } from '../tensor/backend.js';
import type { WebgpuProbe } from '../tensor/webgpu.js';
import type { HugePageProbe } from './system.js';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'info';

export interface CheckResult {
  /** Short name of what was checked ("node", "tensorflow-gpu", "model", ...). */
  check: string;
  status: CheckStatus;
  /** What was found. */
  detail: string;
  /** What to do about it, when something is wrong or missing. */
  fix?: string;
}

/** The run the doctor asks about: the settings that decide which checks must pass. */
export interface DoctorOptions {
  /** `--model`: a folder, a registry name, 'demo' (models/demo, the CLI's default) or 'tiny' (the tiny random model: no folder to check; also when undefined). */
  model?: string;
  backend: BackendChoice;
  retrieverUrl?: string;
  embedder: 'e5' | 'lexical';
  e5Model?: string;
  rolloutEngine: 'native' | 'llama.cpp';
  /** The run folder whose disk gets the checkpoints. */
  out: string;
  /** LoRA rank, for the checkpoint size estimate. */
  loraR: number;
  /** Checkpoints the run writes (its --steps over --save-every, and the last); absent: 1. */
  checkpoints?: number;
  /** `--threads N`: the wasm compute threads of the run (absent: all cores, as training starts it). */
  threads?: number;
  /** `--gpus N`: worker processes, one per GPU (1 or absent: no GPU is required). */
  gpus?: number;
}

export interface CommandOutput {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the command could not be started at all (e.g. ENOENT). */
  error?: string;
}

export interface Probes {
  nodeVersion: string;
  /** Imports a package by name; rejects like `import()` does. */
  importPackage(name: string): Promise<unknown>;
  /** Runs a command with arguments (no shell) and returns its output. */
  run(command: string, args: string[], timeoutMs: number): Promise<CommandOutput>;
  /** Folders searched for shared libraries (LD_LIBRARY_PATH, the CUDA install, the system folders). */
  libraryDirs: string[];
  /** Free bytes on the file system that holds `path` (the nearest existing ancestor of it). */
  freeBytes(path: string): number;
  /** Bytes the tensor backend can hold: the wasm heap cap, system RAM, or GPU memory. */
  totalMemoryBytes: number;
  /** The WebGPU adapter Dawn finds, or why there is none (src/tensor/webgpu.ts). */
  webgpu(): WebgpuProbe;
  /** The kernel's huge-page mode and what this process asked of malloc (./system.ts). */
  hugePages(): HugePageProbe;
}

export const GIB = 2 ** 30;

export function formatBytes(n: number): string {
  if (n >= GIB) return `${(n / GIB).toFixed(1)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(0)} MiB`;
  return `${n} B`;
}

/** The first line of an error's message (native loaders print pages). */
export function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0] ?? msg;
}
