// llama.cpp (via node-llama-cpp) as an independent reference for our forward pass.
// Settings that make it exact enough to compare at 1e-4 in log-prob:
// F32 KV cache (the default F16 cache alone costs ~5e-3) and flash attention off; temperature 0 so that the
// probability map covers the full vocabulary, unnormalized by any sampler truncation.
import { availableParallelism } from 'node:os';
// node-llama-cpp is optional: tests that use this helper skip with `llamaCppUnavailableReason()` when it is absent.
import { type Llama, type LlamaContext, type LlamaControlledInputItem, type LlamaModel, llamaCppUnavailableReason, openLlama } from '../../src/llama-cpp/binding.js';

/** One CPU llama.cpp instance per process (loading the native addon takes ~0.5 s). */
export function sharedLlama(): Promise<Llama> {
  return openLlama({ gpu: false, maxThreads: availableParallelism() });
}

export interface GreedyStep {
  token: number;
  /** log p(top1) − log p(top2) at this step: how far from a tie the reference's choice was. */
  margin: number;
}

export interface LlamaCppReference {
  /** log p(ids[i+1] | ids[..=i]) for every i (length ids.length − 1), on an empty sequence. */
  logprobsOf(ids: number[]): Promise<number[]>;
  /** `n` greedy tokens after the prompt (ties go to the lowest id), on an empty sequence. */
  greedy(promptIds: number[], n: number): Promise<number[]>;
  /** Like `greedy`, with each step's top-1/top-2 log-prob margin. */
  greedySteps(promptIds: number[], n: number): Promise<GreedyStep[]>;
  /** Full next-token distribution (probabilities by token id) after each prefix ids[..=i]. */
  distributions(ids: number[]): Promise<Array<Map<number, number>>>;
  readonly model: LlamaModel;
  dispose(): Promise<void>;
}

export interface OpenReferenceOptions {
  contextSize: number;
  /** A GGUF LoRA adapter applied with scale 1 (llama.cpp then uses alpha / r from the adapter file). */
  loraAdapter?: string;
}

function argmaxWithMargin(probs: Map<number, number>): GreedyStep {
  let best = -1;
  let p1 = -1;
  let p2 = -1;
  for (const [tok, p] of probs) {
    if (p > p1 || (p === p1 && tok < best)) {
      p2 = Math.max(p2, p1);
      p1 = p;
      best = tok;
    } else if (p > p2) {
      p2 = p;
    }
  }
  return { token: best, margin: Math.log(p1) - Math.log(Math.max(p2, Number.MIN_VALUE)) };
}

export async function openReference(ggufPath: string, options: OpenReferenceOptions): Promise<LlamaCppReference> {
  const llama = await sharedLlama();
  const model = await llama.loadModel({ modelPath: ggufPath, gpuLayers: 0 });
  let context: LlamaContext;
  try {
    context = await model.createContext({
      contextSize: options.contextSize,
      sequences: 1,
      batchSize: Math.min(512, options.contextSize),
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      threads: availableParallelism(),
      ...(options.loraAdapter ? { lora: { adapters: [{ filePath: options.loraAdapter, scale: 1 }] } } : {}),
    });
  } catch (err) {
    await model.dispose();
    throw err;
  }
  const probe = { probabilities: true, options: { temperature: 0 } };
  // One sequence, emptied before every call: a disposed sequence returns to the pool only later, so
  // getSequence() right after dispose() can fail with "No sequences left".
  const seq = context.getSequence();
  let queue: Promise<unknown> = Promise.resolve();
  /** Runs calls one at a time on the emptied sequence (they share it). */
  function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = queue.then(async () => {
      await seq.clearHistory();
      return fn();
    });
    queue = run.catch(() => undefined);
    return run;
  }

  async function distributions(ids: number[]): Promise<Array<Map<number, number>>> {
    if (ids.length === 0) return [];
    return exclusive(async () => {
      const items: LlamaControlledInputItem[] = ids.map((t) => [t, { generateNext: probe }]);
      const out = await seq.controlledEvaluate(items);
      return ids.map((_, i) => {
        const probs = out[i]?.next.probabilities;
        if (!probs) throw new Error(`llama.cpp returned no probabilities at position ${i}`);
        return probs;
      });
    });
  }

  async function greedySteps(promptIds: number[], n: number): Promise<GreedyStep[]> {
    if (promptIds.length === 0) throw new Error('greedy: empty prompt');
    return exclusive(async () => {
      const steps: GreedyStep[] = [];
      let input: number[] = promptIds;
      for (let k = 0; k < n; k++) {
        const items: LlamaControlledInputItem[] = input.map((t, i) => (i === input.length - 1 ? [t, { generateNext: probe }] : t));
        const out = await seq.controlledEvaluate(items);
        const probs = out[input.length - 1]?.next.probabilities;
        if (!probs) throw new Error(`llama.cpp returned no probabilities at greedy step ${k}`);
        const step = argmaxWithMargin(probs);
        steps.push(step);
        input = [step.token];
      }
      return steps;
    });
  }

  return {
    model,
    distributions,
    async logprobsOf(ids: number[]): Promise<number[]> {
      const dists = await distributions(ids.slice(0, -1));
      return dists.map((probs, i) => Math.log(probs.get(ids[i + 1] as number) ?? 0));
    },
    greedySteps,
    async greedy(promptIds: number[], n: number): Promise<number[]> {
      return (await greedySteps(promptIds, n)).map((s) => s.token);
    },
    async dispose(): Promise<void> {
      await queue;
      seq.dispose();
      await context.dispose();
      await model.dispose();
    },
  };
}

/** Why the llama.cpp tests cannot run here (node-llama-cpp absent, with its install command), or undefined. */
export const llamaCppMissing: string | undefined = await llamaCppUnavailableReason();

/** A suite title that carries the skip reason when node-llama-cpp is absent. */
export function llamaCppTitle(title: string): string {
  return llamaCppMissing ? `${title} [skipped: ${llamaCppMissing}]` : title;
}
