// The copy drill: the first stage of the world's warm start (docs/world.md), before the transcripts.
//
// A search agent copies names: from the question into its query, from a passage into the next query or the
// answer. A transformer copies with induction heads (attend to the token after an earlier occurrence of the
// current token), and a small model trained from random init on the transcripts alone forms them late: the
// copy-bearing tokens are a few percent of the text. The drill trains copying on purpose (how far it got on
// the demo spec is in docs/world.md, "Measured"; it has not yet been shown to form induction heads):
//
//   sequence = s ‖ g ‖ s,   s = `spanTokens` random ids, g = a random gap of `minGap`–`maxGap` random ids
//              (the gap varies: at a fixed gap, a head attending to a fixed offset solves the task without
//              matching content, which does not copy names)
//   loss     = mean NLL of the second s (every token but its first, which cannot be predicted)
//
// with AdamW over the model's weights, until the loss averaged over `window` steps falls below `targetLoss`
// or `maxSteps` pass. Ids are drawn from the ordinary vocabulary (the specials at the end are never used).
import type { CausalLM } from '../model/qwen3.js';
import { accumulateGradients, disposeGrads } from '../rl/accumulate.js';
import { AdamW } from '../rl/optimizer.js';
import { countTargets, type MaskedSequence, maskedNll } from '../sft/nll.js';
import type { tf } from '../tensor/backend.js';
import { Rng } from '../util/rng.js';

export interface CopyDrillOptions {
  maxSteps: number;
  /** Sequences per optimizer step. */
  batchSize: number;
  spanTokens: number;
  minGap: number;
  maxGap: number;
  lr: number;
  /** Stop once the mean loss of the last `window` steps is below this (nats per token). */
  targetLoss: number;
  window: number;
  /** Ids drawn are in [firstId, lastId). */
  firstId: number;
  lastId: number;
  seed: number;
}

/**
 * The drill that formed induction heads on the demo spec (docs/world.md, "Measured"): 64 ids, spans of 8,
 * gaps of 4–16, 32 sequences a step. The loss left ln 64 slowly and crossed 0.5 at step 975; on the whole
 * vocabulary with gaps of 20–100 it stayed near chance for 900 steps.
 */
export const COPY_DRILL_DEFAULTS: CopyDrillOptions = {
  maxSteps: 1500,
  batchSize: 32,
  spanTokens: 8,
  minGap: 4,
  maxGap: 16,
  lr: 3e-3,
  targetLoss: 0.5,
  window: 25,
  firstId: 10,
  lastId: 74,
  seed: 0,
};

export interface CopyDrillResult {
  steps: number;
  /** Mean loss of each window of steps, in order. */
  windows: number[];
  reachedTarget: boolean;
}

/** One drill sequence and its mask (1 on the repeat's predictable tokens). */
export function drillSequence(o: Pick<CopyDrillOptions, 'spanTokens' | 'minGap' | 'maxGap' | 'firstId' | 'lastId'>, rng: Rng): MaskedSequence {
  const id = (): number => o.firstId + rng.int(o.lastId - o.firstId);
  const span = Array.from({ length: o.spanTokens }, id);
  const gap = Array.from({ length: o.minGap + rng.int(o.maxGap - o.minGap + 1) }, id);
  const ids = [...span, ...gap, ...span];
  const repeatStart = ids.length - o.spanTokens;
  return { ids, mask: ids.map((_, i) => (i > repeatStart ? 1 : 0)) };
}

/** Trains `model` (loaded trainable) in place; `onWindow` reports progress. */
export function copyDrill(model: CausalLM, o: CopyDrillOptions, onWindow?: (step: number, loss: number) => void): CopyDrillResult {
  if (!(o.lastId > o.firstId + o.spanTokens)) throw new Error(`copy drill: the id range [${o.firstId}, ${o.lastId}) is too small for spans of ${o.spanTokens}`);
  if (!(o.maxGap >= o.minGap && o.minGap >= 0)) throw new Error(`copy drill: gap range ${o.minGap}–${o.maxGap} is not valid`);
  const params = Object.fromEntries(model.variables()) as Record<string, tf.Variable>;
  const optimizer = new AdamW(params, { lr: o.lr, warmupSteps: Math.min(20, o.maxSteps), schedule: 'constant', totalSteps: o.maxSteps, minLrRatio: 1, weightDecay: 0.01, maxGradNorm: 1 });
  const rng = new Rng(o.seed);
  const windows: number[] = [];
  let sum = 0;
  let step = 0;
  let reached = false;
  while (step < o.maxSteps && !reached) {
    step++;
    const batch = Array.from({ length: o.batchSize }, () => drillSequence(o, rng));
    const n = countTargets(batch);
    const acc = accumulateGradients(params, 1, () => ({ loss: maskedNll(model, batch, n, { padTokenId: 0 }) }));
    optimizer.step(acc.grads);
    disposeGrads(acc.grads);
    sum += acc.loss;
    if (step % o.window === 0) {
      const mean = sum / o.window;
      windows.push(mean);
      onWindow?.(step, mean);
      sum = 0;
      reached = mean < o.targetLoss;
    }
  }
  optimizer.dispose();
  return { steps: step, windows, reachedTarget: reached };
}
