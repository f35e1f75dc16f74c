// A data-parallel worker process: holds the base model and the adapters, computes GRPO gradients on its shard
// with the normalizer summed over all workers, and applies the summed gradients with its own (identical)
// optimizer. Started by ./coordinator.ts; the protocol is in ./protocol.ts and docs/scale-out.md.
import { LoraAdapter } from '../model/lora.js';
import { CausalLM } from '../model/qwen3.js';
import { disposeGrads } from '../rl/accumulate.js';
import { grpoGradients, type TrainingSequence, wholeBatchNormalizer } from '../rl/grpo-update.js';
import { AdamW } from '../rl/optimizer.js';
import { initBackend, tf } from '../tensor/backend.js';
import { hashVariables } from './adapter-hash.js';
import type { CreateWorkerTasks, FromWorker, ToWorker, WorkerInit, WorkerTasks } from './protocol.js';

interface RoleState {
  adapter: LoraAdapter;
  params: Record<string, tf.Variable>;
  optimizer: AdamW;
  keys: string[];
}

function send(msg: FromWorker): void {
  if (!process.send) throw new Error('the data-parallel worker must be started by the coordinator (no IPC channel)');
  process.send(msg);
}

let init: WorkerInit | undefined;
let model: CausalLM | undefined;
const roles = new Map<string, RoleState>();
/** The task module's handler (WorkerInit.tasks), when one was given. */
let tasks: WorkerTasks | undefined;
/** The update in progress: its role and shard, between the 'update' and 'gradients' messages. */
let pending: { role: RoleState; seqs: TrainingSequence[] } | undefined;

function role(name: string): RoleState {
  const r = roles.get(name);
  if (!r) throw new Error(`worker: unknown role '${name}' (known: ${[...roles.keys()].join(', ')})`);
  return r;
}

async function handle(msg: ToWorker): Promise<void> {
  switch (msg.type) {
    case 'init': {
      init = msg.init;
      // One compute thread per worker on the CPU backends (wasm, native): N workers share the machine's cores
      // (docs/scale-out.md).
      await initBackend(init.backend, init.backend === 'wasm' || init.backend === 'native' || init.backend === 'native-int8' ? { threads: 1 } : {});
      model = await CausalLM.load(init.modelDir);
      const gradientKeys: Record<string, string[]> = {};
      for (const [name, r] of Object.entries(init.roles)) {
        const adapter = LoraAdapter.create(name, model.config, r.lora, { seed: r.loraSeed });
        const params = Object.fromEntries(adapter.variables());
        const keys = Object.keys(params).sort();
        roles.set(name, { adapter, params, optimizer: new AdamW(params, r.optimizer), keys });
        gradientKeys[name] = keys;
      }
      if (init.tasks) {
        const mod = (await import(init.tasks.module)) as { createWorkerTasks?: CreateWorkerTasks };
        if (typeof mod.createWorkerTasks !== 'function') throw new Error(`worker: ${init.tasks.module} exports no createWorkerTasks function`);
        const loaded = model;
        tasks = await mod.createWorkerTasks({ rank: init.rank, worldSize: init.worldSize, modelDir: init.modelDir, model: loaded, adapter: (name) => role(name).adapter }, init.tasks.init);
      }
      send({ type: 'ready', rank: init.rank, gradientKeys });
      return;
    }
    case 'update': {
      const r = role(msg.role);
      pending = { role: r, seqs: msg.seqs };
      const local = wholeBatchNormalizer(msg.seqs);
      send({ type: 'counts', tokens: local.tokens, sequences: local.sequences, maxLen: Math.max(1, ...msg.seqs.map((s) => s.responseIds.length)) });
      return;
    }
    case 'normalizer': {
      if (!pending || !model || !init) throw new Error("worker: 'normalizer' without an update in progress");
      const { role: r, seqs } = pending;
      const normalizer = { tokens: msg.tokens, sequences: msg.sequences };
      if (seqs.length === 0) {
        // An empty shard contributes zero gradients (and zero loss) to the sum.
        const flat = new Float32Array(r.keys.reduce((n, k) => n + (r.params[k] as tf.Variable).size, 0));
        send({ type: 'gradients', flat, loss: 0, pgLoss: 0, kl: 0, clipFrac: 0, entropy: 0 });
        return;
      }
      const g = await grpoGradients(model, r.adapter, r.params, seqs, { ...init.grpo, normalizer, maxLen: msg.maxLen });
      const parts = await Promise.all(r.keys.map((k) => (g.grads[k] as tf.Tensor).data() as Promise<Float32Array>));
      disposeGrads(g.grads);
      const flat = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
      let off = 0;
      for (const p of parts) {
        flat.set(p, off);
        off += p.length;
      }
      send({ type: 'gradients', flat, loss: g.loss, pgLoss: g.pgLoss, kl: g.kl, clipFrac: g.clipFrac, entropy: g.entropy, ...(g.refLogprobs ? { refLogprobs: g.refLogprobs } : {}) });
      return;
    }
    case 'gradients': {
      if (!pending) throw new Error("worker: 'gradients' without an update in progress");
      const r = pending.role;
      pending = undefined;
      const grads: Record<string, tf.Tensor> = {};
      let off = 0;
      for (const k of r.keys) {
        const p = r.params[k] as tf.Variable;
        grads[k] = tf.tensor(msg.sum.subarray(off, off + p.size), p.shape);
        off += p.size;
      }
      if (off !== msg.sum.length) throw new Error(`worker: summed gradients have ${msg.sum.length} values, the adapter ${off}`);
      const info = r.optimizer.step(grads);
      disposeGrads(grads);
      send({ type: 'stepped', hash: hashVariables(r.params), gradNorm: info.gradNorm, lr: info.lr });
      return;
    }
    case 'weights': {
      const r = role(msg.role);
      const weights: Record<string, Float32Array> = {};
      for (const k of r.keys) weights[k] = (await (r.params[k] as tf.Variable).data()) as Float32Array;
      send({ type: 'weights', weights });
      return;
    }
    case 'state': {
      send({ type: 'state', state: role(msg.role).optimizer.exportState() });
      return;
    }
    case 'load': {
      const r = role(msg.role);
      for (const k of r.keys) {
        const p = r.params[k] as tf.Variable;
        const w = msg.weights[k];
        if (!w || w.length !== p.size) throw new Error(`worker: load of ${msg.role}: '${k}' has ${w?.length ?? 0} values, the adapter ${p.size}`);
        tf.tidy(() => p.assign(tf.tensor(w, p.shape)));
      }
      r.optimizer.importState(msg.state);
      send({ type: 'loaded', hash: hashVariables(r.params) });
      return;
    }
    case 'task': {
      if (!tasks) throw new Error('worker: a task, but no task module was given at init (WorkerInit.tasks)');
      send({ type: 'task', result: await tasks.run(msg.task) });
      return;
    }
    case 'shutdown': {
      for (const r of roles.values()) {
        r.optimizer.dispose();
        r.adapter.dispose();
      }
      model?.dispose();
      process.disconnect?.();
      return;
    }
  }
}

// Messages are handled strictly one after another.
let chain: Promise<void> = Promise.resolve();
process.on('message', (msg: ToWorker) => {
  chain = chain.then(() => handle(msg)).catch((err: unknown) => {
    send({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  });
});
// The coordinator went away (killed, or stopped): nothing is left to do.
process.on('disconnect', () => process.exit(0));
// Ctrl-C in a terminal reaches the whole process group: the coordinator decides when to stop (at the next step
// boundary, after a checkpoint) and then closes the pool, so a worker does not die under it mid-step.
process.on('SIGINT', () => {});
