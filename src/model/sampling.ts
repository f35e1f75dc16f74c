// Choosing the next token from one row of logits: greedy, temperature, top-k and top-p, with a seeded RNG.
// Runs on the JS side over the row's logits (one row of V floats per sequence per step).
import type { Rng } from '../util/rng.js';

export interface SamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** Keep only the k most likely tokens (0 = off). */
  topK: number;
  /** Keep the smallest set of tokens whose probability reaches p (1 = off). */
  topP: number;
}

export interface SampledToken {
  id: number;
  /**
   * log p(id) under the full tempered distribution softmax(logits / T) (T = 1 when greedy), before top-k/top-p
   * truncation: the policy's own log-prob, which is what GRPO's importance ratio compares against.
   */
  logprob: number;
}

function argmax(row: Float32Array): number {
  let best = 0;
  let bestVal = row[0] as number;
  for (let i = 1; i < row.length; i++) {
    const v = row[i] as number;
    if (v > bestVal) {
      bestVal = v;
      best = i;
    }
  }
  return best;
}

/** log softmax(row / T) evaluated at `id` (float64 accumulation). */
function logProbAt(row: Float32Array, id: number, temperature: number): number {
  const invT = 1 / temperature;
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) max = Math.max(max, (row[i] as number) * invT);
  let z = 0;
  for (let i = 0; i < row.length; i++) z += Math.exp((row[i] as number) * invT - max);
  return (row[id] as number) * invT - max - Math.log(z);
}

/**
 * Sampling from the whole tempered distribution (the rollout default): two passes over the row, no
 * allocation, and the log-prob from the same normalizer.
 */
function sampleFull(row: Float32Array, invT: number, rng: Rng): SampledToken {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) max = Math.max(max, (row[i] as number) * invT);
  let z = 0;
  for (let i = 0; i < row.length; i++) z += Math.exp((row[i] as number) * invT - max);
  let u = rng.next() * z;
  let id = row.length - 1;
  for (let i = 0; i < row.length; i++) {
    u -= Math.exp((row[i] as number) * invT - max);
    if (u < 0) {
      id = i;
      break;
    }
  }
  return { id, logprob: (row[id] as number) * invT - max - Math.log(z) };
}

export function sampleToken(row: Float32Array, params: SamplingParams, rng: Rng): SampledToken {
  if (params.temperature <= 0) {
    const id = argmax(row);
    return { id, logprob: logProbAt(row, id, 1) };
  }
  const invT = 1 / params.temperature;
  if (params.topK <= 0 && params.topP >= 1) return sampleFull(row, invT, rng);
  // Truncation needs an order: candidates sorted by logit, descending (ties by id).
  const all = Array.from({ length: row.length }, (_, i) => i);
  all.sort((a, b) => (row[b] as number) - (row[a] as number) || a - b);
  let candidates = params.topK > 0 && params.topK < row.length ? all.slice(0, params.topK) : all;
  let max = -Infinity;
  for (const i of candidates) max = Math.max(max, (row[i] as number) * invT);
  const weights = candidates.map((i) => Math.exp((row[i] as number) * invT - max));
  if (params.topP < 1) {
    const total = weights.reduce((a, b) => a + b, 0);
    let cumulative = 0;
    let keep = weights.length;
    for (let j = 0; j < weights.length; j++) {
      cumulative += (weights[j] as number) / total;
      if (cumulative >= params.topP) {
        keep = j + 1;
        break;
      }
    }
    candidates = candidates.slice(0, keep);
    weights.length = keep;
  }
  const total = weights.reduce((a, b) => a + b, 0);
  let u = rng.next() * total;
  let id = candidates[candidates.length - 1] as number;
  for (let j = 0; j < candidates.length; j++) {
    u -= weights[j] as number;
    if (u < 0) {
      id = candidates[j] as number;
      break;
    }
  }
  return { id, logprob: logProbAt(row, id, params.temperature) };
}

export function validateSampling(p: SamplingParams): void {
  if (!(p.temperature >= 0) || !Number.isFinite(p.temperature)) throw new Error(`temperature must be ≥ 0, got ${p.temperature}`);
  if (!Number.isInteger(p.topK) || p.topK < 0) throw new Error(`top-k must be a non-negative integer, got ${p.topK}`);
  if (!(p.topP > 0 && p.topP <= 1)) throw new Error(`top-p must be in (0, 1], got ${p.topP}`);
}
