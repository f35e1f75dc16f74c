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

/** Whether token a ranks before token b: higher logit first, ties by lower id (the order sorting would give). */
function before(row: Float32Array, a: number, b: number): boolean {
  const va = row[a] as number;
  const vb = row[b] as number;
  return va > vb || (va === vb && a < b);
}

/**
 * Every id of the row, best first (ties by id), by one native sort of numeric keys: the logit's float32 bits
 * mapped to an unsigned order (higher logit → smaller key) times a power of two above V, plus the id. The keys
 * stay below 2^53, so float64 holds them exactly.
 */
function sortedIds(row: Float32Array): Int32Array {
  const V = row.length;
  const scale = 2 ** Math.ceil(Math.log2(Math.max(2, V)));
  const bits = new Uint32Array(new Float32Array(row).buffer);
  const keys = new Float64Array(V);
  for (let i = 0; i < V; i++) {
    const u = bits[i] as number;
    // Order-preserving float → uint32 (negative: flip all bits; positive: flip the sign bit), then descending.
    const ordered = u & 0x80000000 ? ~u >>> 0 : (u | 0x80000000) >>> 0;
    keys[i] = (0xffffffff - ordered) * scale + i;
  }
  keys.sort();
  // Plain loops: TypedArray.from with a map function is several times slower in V8.
  const ids = new Int32Array(V);
  for (let i = 0; i < V; i++) ids[i] = (keys[i] as number) % scale;
  return ids;
}

/**
 * The `k` highest-ranked ids of the row, best first, by one pass with a size-k heap (its root is the worst
 * kept id): O(V log k) instead of sorting all V ids.
 */
export function topKIds(row: Float32Array, k: number): Int32Array {
  const n = Math.min(k, row.length);
  const order = (a: number, b: number): number => (before(row, a, b) ? -1 : before(row, b, a) ? 1 : 0);
  // Most of the row: one native numeric sort is cheaper than a heap that large.
  if (n * 4 >= row.length) return sortedIds(row).slice(0, n);
  const heap = new Int32Array(n);
  let size = 0;
  const siftDown = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < size && before(row, heap[worst] as number, heap[l] as number)) worst = l;
      if (r < size && before(row, heap[worst] as number, heap[r] as number)) worst = r;
      if (worst === i) return;
      const t = heap[i] as number;
      heap[i] = heap[worst] as number;
      heap[worst] = t;
      i = worst;
    }
  };
  for (let id = 0; id < row.length; id++) {
    if (size < n) {
      // Sift up: the worst kept id stays at the root.
      let i = size++;
      heap[i] = id;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!before(row, heap[p] as number, heap[i] as number)) break;
        const t = heap[i] as number;
        heap[i] = heap[p] as number;
        heap[p] = t;
        i = p;
      }
    } else if (before(row, id, heap[0] as number)) {
      heap[0] = id;
      siftDown(0);
    }
  }
  return heap.sort(order);
}

/**
 * The candidates top-k and top-p keep, best first, with their unnormalised weights exp(logit/T − max): top-k
 * by partial selection; top-p over those candidates only, or, without top-k, over the best m ids for growing m
 * (the nucleus is usually a small head of the vocabulary), so the vocabulary is never sorted whole unless the
 * nucleus needs most of it.
 */
export function truncatedCandidates(row: Float32Array, params: SamplingParams): { ids: Int32Array; weights: Float64Array } {
  const invT = 1 / params.temperature;
  const V = row.length;
  const useTopK = params.topK > 0 && params.topK < V;
  // One pass for the max and the normaliser of the whole tempered row (top-p without top-k needs its total).
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, (row[i] as number) * invT);
  let z = 0;
  if (!useTopK && params.topP < 1) for (let i = 0; i < V; i++) z += Math.exp((row[i] as number) * invT - max);
  let m = useTopK ? params.topK : params.topP >= 1 ? V : Math.min(V, 64);
  for (;;) {
    const ids = topKIds(row, m);
    const weights = new Float64Array(ids.length);
    for (let j = 0; j < ids.length; j++) weights[j] = Math.exp((row[ids[j] as number] as number) * invT - max);
    if (params.topP >= 1) return { ids, weights };
    const total = useTopK ? weights.reduce((a, b) => a + b, 0) : z;
    let cumulative = 0;
    for (let j = 0; j < weights.length; j++) {
      cumulative += (weights[j] as number) / total;
      if (cumulative >= params.topP) return { ids: ids.slice(0, j + 1), weights: weights.slice(0, j + 1) };
    }
    if (useTopK || m >= V) return { ids, weights };
    // Grow the head; once it would be a sizeable part of the row, take the whole row at once.
    m = m * 8 * 4 >= V ? V : m * 8;
  }
}

export function sampleToken(row: Float32Array, params: SamplingParams, rng: Rng): SampledToken {
  if (params.temperature <= 0) {
    const id = argmax(row);
    return { id, logprob: logProbAt(row, id, 1) };
  }
  const invT = 1 / params.temperature;
  if (params.topK <= 0 && params.topP >= 1) return sampleFull(row, invT, rng);
  const { ids, weights } = truncatedCandidates(row, params);
  let total = 0;
  for (const w of weights) total += w;
  let u = rng.next() * total;
  let id = ids[ids.length - 1] as number;
  for (let j = 0; j < ids.length; j++) {
    u -= weights[j] as number;
    if (u < 0) {
      id = ids[j] as number;
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
