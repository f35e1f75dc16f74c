// Batch-1 decode of the inference bench's ~100M checkpoint, alternated between two source trees (this one and,
// say, a worktree of the commit before the native path), so that two backends of two commits share the machine's
// noise (docs/usage.md, "The 8-bit frozen base": the A/B of f32 decode). The loop is the bench's: a greedy
// 128-token prefill, then 32 greedy decode steps, tokens/s of the decode; `--runs` timed runs per block after one
// untimed run, `--blocks` blocks per tree, taking turns (A B, then B A, …: neither always goes first). Prints every
// run and the median per tree. The checkpoint (~385 MB) is made once in a temporary folder and removed at the end.
//
//   npx tsx scripts/decode-ab.ts --a . --backend-a native --b ../base-9217 --backend-b wasm --threads 1
//
// Each tree's children start with the environment its `bin/sesa-train.mjs` gives Node (the `KEY=VALUE` words of
// its `#!/usr/bin/env -S` shebang: this tree's glibc malloc settings, none before them), so each side runs as
// `npx sesa-train` would run it; `--env-a` / `--env-b` add more (`KEY=VALUE`, comma-separated).
//
// Each tree is loaded in a child process of its own (its own tfjs and backend), from its own src/.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    a: { type: 'string', default: '.' },
    b: { type: 'string' },
    'backend-a': { type: 'string', default: 'native' },
    'backend-b': { type: 'string', default: 'wasm' },
    'env-a': { type: 'string', default: '' },
    'env-b': { type: 'string', default: '' },
    threads: { type: 'string', default: '1' },
    runs: { type: 'string', default: '4' },
    blocks: { type: 'string', default: '3' },
    child: { type: 'string' },
    backend: { type: 'string' },
    checkpoint: { type: 'string' },
  },
});

/** The bench's ~100M shape (bench/inference.bench.ts). */
const SHAPE = { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, tie: true, seed: 12, dtype: 'f32' };

async function child(tree: string, backend: string, threads: number, runs: number, dir: string): Promise<void> {
  const src = (p: string): string => pathToFileURL(join(resolve(tree), 'src', p)).href;
  const { makeTinyCheckpoint } = await import(src('checkpoint/make-tiny.ts'));
  const { CausalLM } = await import(src('model/qwen3.ts'));
  const { initBackend, tf } = await import(src('tensor/backend.ts'));
  if (!existsSync(join(dir, 'config.json'))) await makeTinyCheckpoint({ out: dir, ...SHAPE });
  await initBackend(backend, { threads });
  const model = await CausalLM.load(dir);
  const V = SHAPE.vocab;
  const step = async (ids: number[][], cache: unknown): Promise<number> => {
    const h = model.forward(ids, { cache });
    const [B, T, d] = h.shape;
    const logits = tf.tidy(() => model.logits(tf.reshape(tf.slice(h, [0, T - 1, 0], [B, 1, d]), [B, d])));
    const v = (await logits.data()) as Float32Array;
    logits.dispose();
    h.dispose();
    let best = 0;
    for (let i = 1; i < V; i++) if ((v[i] as number) > (v[best] as number)) best = i;
    return best;
  };
  const rates: number[] = [];
  for (let r = 0; r <= runs; r++) {
    const cache = model.newCache(1);
    let next = await step([Array.from({ length: 128 }, (_, i) => (i * 7919) % (V - 3))], cache);
    const t0 = performance.now();
    for (let i = 0; i < 32; i++) next = await step([[next]], cache);
    const rate = 32 / ((performance.now() - t0) / 1000);
    cache.dispose();
    if (r > 0) rates.push(rate); // the first run is the warm-up
  }
  console.log(JSON.stringify(rates));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

/** `KEY=VALUE` as [KEY, VALUE] (the value may hold `=`), or undefined for any other word. */
function assignment(word: string): [string, string] | undefined {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(word);
  return m ? [m[1] as string, m[2] as string] : undefined;
}

/** `KEY=VALUE,KEY=VALUE` → an environment; a pair that is not KEY=VALUE is an error naming the option. */
function parseEnv(list: string, option: string): Record<string, string> {
  return Object.fromEntries(
    list
      .split(',')
      .filter((p) => p !== '')
      .map((pair) => assignment(pair) ?? fail(`${option}: "${pair}" is not KEY=VALUE`)),
  );
}

function fail(message: string): never {
  throw new Error(message);
}

/**
 * The environment TREE/bin/sesa-train.mjs's `#!/usr/bin/env -S KEY=VALUE … node` line gives Node: its words up to
 * the first that is not an assignment, as `env -S` reads them (none for another first line).
 */
function binEnv(tree: string): Record<string, string> {
  const bin = join(resolve(tree), 'bin', 'sesa-train.mjs');
  if (!existsSync(bin)) throw new Error(`${bin}: not found (--a / --b must be source trees of this project)`);
  const first = (readFileSync(bin, 'utf8').split('\n', 1)[0] as string).replace(/\r$/, '');
  const env: Record<string, string> = {};
  if (!first.startsWith('#!/usr/bin/env -S ')) return env;
  for (const word of first.slice('#!/usr/bin/env -S '.length).split(/\s+/)) {
    const kv = assignment(word);
    if (!kv) break;
    env[kv[0]] = kv[1];
  }
  return env;
}

if (values.child) {
  await child(values.child, values.backend as string, Number(values.threads), Number(values.runs), values.checkpoint as string);
} else {
  if (!values.b) throw new Error('--b TREE is required (a source tree to compare with, e.g. a worktree of an earlier commit)');
  const dir = mkdtempSync(join(tmpdir(), 'sesa-decode-ab-'));
  const trees = [
    { label: `${values.a} (${values['backend-a']})`, tree: values.a as string, backend: values['backend-a'] as string, env: { ...binEnv(values.a as string), ...parseEnv(values['env-a'] as string, '--env-a') } },
    { label: `${values.b} (${values['backend-b']})`, tree: values.b, backend: values['backend-b'] as string, env: { ...binEnv(values.b), ...parseEnv(values['env-b'] as string, '--env-b') } },
  ];
  for (const t of trees) console.log(`${t.label}: environment ${Object.entries(t.env).map(([k, v]) => `${k}=${v}`).join(' ') || '(as this process)'}`);
  const all = trees.map(() => [] as number[]);
  try {
    for (let block = 0; block < Number(values.blocks); block++) {
      for (const k of block % 2 === 0 ? [0, 1] : [1, 0]) {
        const t = trees[k] as (typeof trees)[number];
        const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', t.tree, '--backend', t.backend, '--threads', values.threads as string, '--runs', values.runs as string, '--checkpoint', dir], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
          env: { ...process.env, ...t.env },
        });
        const rates = JSON.parse(out.trim().split('\n').at(-1) as string) as number[];
        all[k]?.push(...rates);
        console.log(`block ${block + 1} ${t.label}: ${rates.map((r) => r.toFixed(1)).join(', ')} tok/s`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const [ma, mb] = all.map(median) as [number, number];
  console.log(`median decode b1, ${values.threads} thread(s): ${trees[0]?.label} ${ma.toFixed(1)} tok/s, ${trees[1]?.label} ${mb.toFixed(1)} tok/s, ratio ${(ma / mb).toFixed(3)}`);
}
