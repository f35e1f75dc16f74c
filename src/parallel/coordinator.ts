// The coordinator of data-parallel GRPO updates (docs/scale-out.md): N worker processes (./worker.ts), each
// with the base model and the adapters; per update, each trains on its shard of the sequences with the loss
// normalizer summed over all shards, the gradients are summed in rank order and sent back, every worker takes
// the same optimizer step, and their adapter hashes must agree. A worker that fails or dies stops the whole
// pool with its error; closing the pool (or the coordinator exiting) ends every worker.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TrainingSequence } from '../rl/grpo-update.js';
import type { AdamWState } from '../rl/optimizer.js';
import type { FromWorker, ToWorker, WorkerInit } from './protocol.js';

export interface PoolOptions {
  workers: number;
  /** The same for every rank, or per rank (several machines may keep the model in different folders). */
  init: Omit<WorkerInit, 'rank' | 'worldSize'> | ((rank: number) => Omit<WorkerInit, 'rank' | 'worldSize'>);
  /** Extra environment per rank (e.g. CUDA_VISIBLE_DEVICES=rank for the tensorflow backend on GPU i). */
  env?: (rank: number) => Record<string, string>;
}

export interface DataParallelUpdate {
  loss: number;
  pgLoss: number;
  kl: number;
  clipFrac: number;
  entropy: number;
  gradNorm: number;
  lr: number;
  /** The adapters' hash, equal on every worker. */
  hash: string;
  trainedTokens: number;
  /**
   * Every sequence's reference log-probs (0 at masked slots), in the order of the shards concatenated; absent
   * when a shard sent none (no KL term).
   */
  refLogprobs?: number[][];
}

type Reply<T extends FromWorker['type']> = Extract<FromWorker, { type: T }>;

class WorkerHandle {
  private waiting: { type: FromWorker['type']; resolve: (m: FromWorker) => void; reject: (e: Error) => void } | undefined;
  /** Set once the worker has failed or exited; every later request rejects with it. */
  failure: Error | undefined;

  constructor(
    readonly rank: number,
    readonly child: ChildProcess,
    private readonly onFailure: (err: Error) => void,
  ) {
    child.on('message', (msg: FromWorker) => {
      const w = this.waiting;
      if (msg.type === 'error') return this.fail(new Error(`worker ${rank}: ${msg.message}`));
      if (!w) return this.fail(new Error(`worker ${rank}: unexpected '${msg.type}' message`));
      if (msg.type !== w.type) return this.fail(new Error(`worker ${rank}: expected '${w.type}', got '${msg.type}'`));
      this.waiting = undefined;
      w.resolve(msg);
    });
    child.on('exit', (code, signal) => this.fail(new Error(`worker ${rank} exited (${signal ? `signal ${signal}` : `code ${code}`})`)));
    child.on('error', (err) => this.fail(new Error(`worker ${rank}: ${err.message}`)));
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    const w = this.waiting;
    this.waiting = undefined;
    w?.reject(err);
    this.onFailure(err);
  }

  request<T extends FromWorker['type']>(msg: ToWorker, reply: T): Promise<Reply<T>> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<Reply<T>>((resolve, reject) => {
      this.waiting = { type: reply, resolve: resolve as (m: FromWorker) => void, reject };
      this.child.send(msg);
    });
  }
}

/** Contiguous shards of nearly equal size (the first ones one longer), in order. */
export function shard<T>(items: readonly T[], n: number): T[][] {
  const out: T[][] = [];
  let start = 0;
  for (let r = 0; r < n; r++) {
    const size = Math.floor(items.length / n) + (r < items.length % n ? 1 : 0);
    out.push(items.slice(start, start + size));
    start += size;
  }
  return out;
}

export class DataParallelPool {
  private closed = false;
  private failure: Error | undefined;

  private constructor(
    private readonly workers: WorkerHandle[],
    readonly gradientKeys: Record<string, string[]>,
  ) {}

  static async start(options: PoolOptions): Promise<DataParallelPool> {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new Error(`--workers must be a positive integer, got ${options.workers}`);
    const entry = fileURLToPath(new URL('./worker.ts', import.meta.url));
    // The workers run the TypeScript sources through tsx, as bin/sesa-train.mjs does.
    const tsx = import.meta.resolve('tsx');
    let pool: DataParallelPool | undefined;
    const handles: WorkerHandle[] = [];
    const onFailure = (err: Error): void => {
      if (pool) pool.stop(err);
      else for (const h of handles) h.child.kill('SIGTERM');
    };
    for (let rank = 0; rank < options.workers; rank++) {
      const child = fork(entry, [], { execArgv: ['--import', tsx], serialization: 'advanced', env: { ...process.env, ...(options.env?.(rank) ?? {}) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      handles.push(new WorkerHandle(rank, child, onFailure));
    }
    const killAll = (): void => {
      for (const h of handles) h.child.kill('SIGTERM');
    };
    process.once('exit', killAll);
    try {
      const ready = await Promise.all(handles.map((h) => h.request({ type: 'init', init: { ...(typeof options.init === 'function' ? options.init(h.rank) : options.init), rank: h.rank, worldSize: options.workers } }, 'ready')));
      const keys = ready[0]?.gradientKeys ?? {};
      pool = new DataParallelPool(handles, keys);
      return pool;
    } catch (err) {
      killAll();
      throw err;
    }
  }

  get size(): number {
    return this.workers.length;
  }

  /** Ends every worker; later calls fail with `reason`. */
  private stop(reason: Error): void {
    this.failure ??= reason;
    for (const h of this.workers) if (h.child.exitCode === null && h.child.signalCode === null) h.child.kill('SIGTERM');
  }

  private async all<T extends FromWorker['type']>(msgs: (rank: number) => ToWorker, reply: T): Promise<Array<Reply<T>>> {
    if (this.failure) throw this.failure;
    if (this.closed) throw new Error('the data-parallel pool is closed');
    try {
      return await Promise.all(this.workers.map((h) => h.request(msgs(h.rank), reply)));
    } catch (err) {
      // The first failure is the one to report (the others are the pool stopping because of it).
      const first = this.failure ?? (err as Error);
      this.stop(first);
      throw first;
    }
  }

  /** One data-parallel GRPO update of `role`: shards[r] goes to worker r. */
  async update(role: string, shards: readonly TrainingSequence[][]): Promise<DataParallelUpdate> {
    if (shards.length !== this.workers.length) throw new Error(`update: ${shards.length} shards for ${this.workers.length} workers`);
    const counts = await this.all((r) => ({ type: 'update', role, seqs: shards[r] as TrainingSequence[] }), 'counts');
    const tokens = counts.reduce((a, c) => a + c.tokens, 0);
    const sequences = counts.reduce((a, c) => a + c.sequences, 0);
    const maxLen = Math.max(...counts.map((c) => c.maxLen));
    if (tokens === 0) throw new Error(`update of ${role}: no trained tokens in any shard`);
    const grads = await this.all(() => ({ type: 'normalizer', tokens, sequences, maxLen }), 'gradients');
    // The all-reduce: a sum in rank order, so every run with the same shards sums identically.
    const sum = new Float32Array((grads[0] as Reply<'gradients'>).flat.length);
    for (const g of grads) {
      if (g.flat.length !== sum.length) throw new Error(`update of ${role}: workers sent gradients of different sizes (${g.flat.length} vs ${sum.length})`);
      for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) + (g.flat[i] as number);
    }
    const stepped = await this.all(() => ({ type: 'gradients', sum }), 'stepped');
    const hashes = stepped.map((s) => s.hash);
    if (hashes.some((h) => h !== hashes[0])) {
      const err = new Error(`update of ${role}: the workers' adapters differ after the step (hashes ${hashes.map((h, r) => `${r}:${h}`).join(', ')}); the run stops`);
      this.stop(err);
      throw err;
    }
    const add = (k: 'loss' | 'pgLoss' | 'kl' | 'clipFrac' | 'entropy'): number => grads.reduce((a, g) => a + g[k], 0);
    const s0 = stepped[0] as Reply<'stepped'>;
    // An empty shard sends no reference log-probs and has none to send.
    const refs = grads.every((g, r) => g.refLogprobs !== undefined || (shards[r] as TrainingSequence[]).length === 0) ? grads.flatMap((g) => g.refLogprobs ?? []) : undefined;
    return {
      loss: add('loss'),
      pgLoss: add('pgLoss'),
      kl: add('kl'),
      clipFrac: add('clipFrac'),
      entropy: add('entropy'),
      gradNorm: s0.gradNorm,
      lr: s0.lr,
      hash: s0.hash,
      trainedTokens: tokens,
      ...(refs ? { refLogprobs: refs } : {}),
    };
  }

  /** Runs a task on every worker (`task(r)` goes to worker r, for the task module of WorkerInit.tasks); results in rank order. */
  async tasks(task: (rank: number) => unknown): Promise<unknown[]> {
    return (await this.all((r) => ({ type: 'task', task: task(r) }), 'task')).map((m) => m.result);
  }

  /** The adapter weights of `role` on one worker (rank 0 writes checkpoints). */
  async weights(role: string, rank = 0): Promise<Record<string, Float32Array>> {
    const h = this.workers[rank];
    if (!h) throw new Error(`no worker ${rank}`);
    if (this.failure) throw this.failure;
    return (await h.request({ type: 'weights', role }, 'weights')).weights;
  }

  /** Rank 0's optimizer state of `role`. */
  async optimizerState(role: string): Promise<AdamWState> {
    const h = this.workers[0] as WorkerHandle;
    if (this.failure) throw this.failure;
    return (await h.request({ type: 'state', role }, 'state')).state;
  }

  /** Gives every worker these adapter weights and optimizer state for `role`; returns the common hash. */
  async load(role: string, weights: Record<string, Float32Array>, state: AdamWState): Promise<string> {
    const loaded = await this.all(() => ({ type: 'load', role, weights, state }), 'loaded');
    const hashes = loaded.map((l) => l.hash);
    if (hashes.some((h) => h !== hashes[0])) throw new Error(`load of ${role}: the workers' adapters differ after loading (${hashes.join(', ')})`);
    return hashes[0] as string;
  }

  /** The worker processes (tests kill one to check that the pool stops cleanly). */
  get processes(): readonly ChildProcess[] {
    return this.workers.map((h) => h.child);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.workers.map(
        (h) =>
          new Promise<void>((done) => {
            if (h.child.exitCode !== null || h.child.signalCode !== null) return done();
            h.child.once('exit', () => done());
            if (h.failure || !h.child.connected) h.child.kill('SIGTERM');
            else h.child.send({ type: 'shutdown' } satisfies ToWorker);
          }),
      ),
    );
  }
}
