// bin/sesa-train.mjs starts Node with glibc malloc settings that keep freed memory on the heap (its header says
// why: onnxruntime-node's fresh copy of every matMul output). A model whose frozen weights only fit this machine
// once, unpacked (layout `once`, ../model/memory-need.ts), cannot afford them: the load's freed copies stay
// resident, and the Qwen3-4B shape in f32 on 24 GiB was killed for memory with them while it loads at 1.04× its
// weights without them (docs/models.md, "The 4B shape in f32"). glibc reads the settings only when a process
// starts, so the bin starts itself again without them, once, before any command runs, and says so.
//
// What is read here is what a command would read first: `--model` and `--backend` as typed (a model named only
// in a file, or fetched by --download, is not seen, and its load warns as before: CausalLM.load).
import { spawn } from 'node:child_process';

/** The settings the bin's first line sets that keep freed memory resident; glibc.malloc.hugetlb stays. */
export const RETAINING_MALLOC_SETTINGS = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_'] as const;

/** Set in the restarted process, so that it never restarts again and its log can say why it runs without them. */
export const RELAUNCHED_ENV = 'SESA_MALLOC_RELAUNCHED';

/** The value of `--name V` or `--name=V` in argv (the last one wins, as yargs takes it); undefined when absent. */
export function flagValue(argv: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') break;
    if (a === `--${name}` && i + 1 < argv.length) value = argv[++i];
    else if (a.startsWith(`--${name}=`)) value = a.slice(name.length + 3);
  }
  return value;
}

/** Commands that never hold a model's weights in onnxruntime (they read files, or report): no restart for them. */
const NO_NATIVE_LOAD_COMMANDS = new Set(['report', 'make-tiny', 'convert', 'export', 'skills', 'download', 'bench', 'doctor']);

export interface RelaunchPlan {
  /** The one line the bin prints before it restarts. */
  reason: string;
  /** The environment of the restarted process. */
  env: NodeJS.ProcessEnv;
}

export interface RelaunchOptions {
  /** The machine's memory (default: os.totalmem(), what the load decides its layout with). */
  systemBytes?: number;
}

/**
 * Whether this process should start again without the retaining malloc settings: it runs with them, it was not
 * restarted already, the backend asked for may be native (`auto` picks it where onnxruntime loads), and the model
 * of `--model` is a folder here (a path or the Hugging Face cache, never fetched) whose f32 weights the native
 * backend would hold once. Undefined otherwise, or when the model cannot be read: the command then reports it.
 */
export async function mallocRelaunchPlan(argv: readonly string[], env: NodeJS.ProcessEnv, opts: RelaunchOptions = {}): Promise<RelaunchPlan | undefined> {
  if (env[RELAUNCHED_ENV] !== undefined || !RETAINING_MALLOC_SETTINGS.some((k) => env[k] !== undefined)) return undefined;
  const command = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : 'train';
  if (NO_NATIVE_LOAD_COMMANDS.has(command)) return undefined;
  const model = flagValue(argv, 'model');
  const backend = flagValue(argv, 'backend') ?? 'auto';
  if (model === undefined || model === 'demo' || model === 'tiny' || (backend !== 'auto' && backend !== 'native')) return undefined;
  // Imported only here: a command without --model pays nothing for the check.
  const [{ resolveModel }, { loadModelConfig }, { memoryNeedOfConfig, nativeLayout }] = await Promise.all([
    import('../model/resolve.js'),
    import('../model/config.js'),
    import('../model/memory-need.js'),
  ]);
  let dir: string;
  try {
    dir = (await resolveModel(model, { download: false })).dir;
  } catch {
    return undefined;
  }
  let layout: 'packed' | 'once' | undefined;
  try {
    layout = nativeLayout(memoryNeedOfConfig(loadModelConfig(dir)), ...(opts.systemBytes !== undefined ? [opts.systemBytes] : []));
  } catch {
    return undefined;
  }
  if (layout !== 'once') return undefined;
  const next: NodeJS.ProcessEnv = { ...env, [RELAUNCHED_ENV]: '1' };
  for (const k of RETAINING_MALLOC_SETTINGS) delete next[k];
  return {
    reason:
      `${dir}: the frozen weights fit this machine only once, unpacked, and the bin's malloc settings (${RETAINING_MALLOC_SETTINGS.join(', ')}) ` +
      'would keep the load\'s freed copies resident; starting again without them (docs/models.md, "The 4B shape in f32")',
    env: next,
  };
}

/** The signals a restarted child is sent when this process gets them (a terminal's Ctrl-C reaches both anyway). */
const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Runs `command args` with `env` and the same stdio, forwards SIGINT/SIGTERM/SIGHUP to it, and resolves with how
 * it ended: its exit code, or the signal that ended it. The bin then ends the same way.
 */
export function runForwarding(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: 'inherit' });
    const handlers = FORWARDED_SIGNALS.map((s) => {
      const h = (): void => {
        child.kill(s);
      };
      process.on(s, h);
      return [s, h] as const;
    });
    const off = (): void => {
      for (const [s, h] of handlers) process.off(s, h);
    };
    child.once('error', (err) => {
      off();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      off();
      resolve({ code, signal });
    });
  });
}

/** Runs `command args` as `runForwarding` does, then ends this process as the child ended (its code, or its signal). */
export async function forwardAndEnd(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { code, signal } = await runForwarding(command, args, env);
  if (signal !== null) {
    // End as the child did, so the shell reports the same signal: no handler of ours is left for it.
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
}

/**
 * The bin's first step: when `mallocRelaunchPlan` says so, prints its reason, runs this same command again without
 * the settings and ends as it did (true); false when this process should run the command itself.
 */
export async function relaunchWithoutRetainingMalloc(argv: readonly string[] = process.argv): Promise<boolean> {
  const plan = await mallocRelaunchPlan(argv.slice(2), process.env);
  if (plan === undefined) return false;
  process.stderr.write(`${plan.reason}\n`);
  await forwardAndEnd(process.execPath, [...process.execArgv, ...argv.slice(1)], plan.env);
  return true;
}
