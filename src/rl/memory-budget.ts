// How much memory one GRPO micro-batch needs for its forward and backward, estimated before it runs, so an
// update that cannot fit the wasm heap (about 4 GiB, fixed) is split into smaller micro-batches or refused
// with the numbers and the setting to change, instead of dying in an opaque WebAssembly error.
//
// The estimate has two terms: per token, the float32 activations autodiff keeps per layer (the hidden-size
// tensors, the attention projections, the MLP's intermediates, the LoRA products); per (query, key) pair,
// the attention scores and their copies (all kept for the backward even though the forward forms them in
// query blocks); plus one chunk of logits at a time. Counting tensors alone underestimates what the heap
// must hold (the backward's gradients of the same sizes, temporaries, the allocator's fragmentation: the
// wasm heap never shrinks), so each term is scaled by a factor calibrated on the wasm backend: the heap's
// growth during one update of a 4-layer, hidden-256 Qwen3 at 512 and 1,024 tokens (595 and 1,409 MiB)
// came to 6.6× the per-token count and 1.7× the per-pair count; the factors below round those up.
// Checked on the ~100M model (12 layers, hidden 768, layers recomputed, 512 tokens per sequence): each added
// sequence grew the heap by 614–789 MiB against 582 MiB estimated (5–35% more): HEAP_SAFETY_FRACTION and
// the default pass budget (1.5 GiB of the 4) leave that room.
import type { ModelConfig } from '../model/config.js';


/** Share of the free heap a micro-batch may plan to use (the rest covers what the estimate leaves out). */
export const HEAP_SAFETY_FRACTION = 0.8;

const F32 = 4;

/** Hidden-size tensors kept per token per layer. */
const HIDDEN_COPIES = 8;
/** Attention-projection-size tensors (q, k, v before and after norm and RoPE, the context) per token per layer. */
const ATTENTION_COPIES = 6;
/** Intermediate-size tensors (gate, up, sigmoid, silu, product) per token per layer. */
const MLP_COPIES = 6;
/** [B, H, T, T] tensors per layer: scores, scaled, masked, softmax. */
const SCORE_COPIES = 4;
/** Measured heap need over the counted tensors (see the top of this file). */
const PER_TOKEN_FACTOR = 7;
const PER_PAIR_FACTOR = 2;
/** Logits rows formed at once by the fused log-prob kernel, and the copies of one chunk in flight. */
const LOGITS_CHUNK = 128;
const LOGITS_COPIES = 3;

export type MemoryShape = Pick<ModelConfig, 'numLayers' | 'hiddenSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'intermediateSize' | 'vocabSize'>;

/**
 * Estimated bytes for the forward and backward of `batch` sequences padded to `tokens` positions. With
 * `recomputeLayers` (the GRPO update's default) only each layer's input is kept through the pass and one
 * layer's activations exist at a time, so the per-layer term counts once.
 */
export function microBatchBytes(m: MemoryShape, batch: number, tokens: number, loraRank = 0, recomputeLayers = false): number {
  const perToken = HIDDEN_COPIES * m.hiddenSize + ATTENTION_COPIES * (m.numHeads + 2 * m.numKvHeads) * m.headDim + MLP_COPIES * m.intermediateSize + 7 * 2 * loraRank;
  const perLayer = PER_TOKEN_FACTOR * batch * tokens * perToken + PER_PAIR_FACTOR * SCORE_COPIES * batch * m.numHeads * tokens * tokens;
  const logits = LOGITS_COPIES * LOGITS_CHUNK * m.vocabSize;
  const layers = recomputeLayers ? PER_TOKEN_FACTOR * batch * tokens * m.hiddenSize * m.numLayers + perLayer : m.numLayers * perLayer;
  return F32 * (layers + logits);
}

export interface SequenceLength {
  /** Prompt and response tokens. */
  tokens: number;
}

export interface MicroBatchPlan {
  /** The micro-batch size to use (≤ the one asked for). */
  microBatchSize: number;
  /** The largest micro-batch under that plan: padded tokens per sequence, sequences, estimated bytes. */
  largest: { tokens: number; sequences: number; bytes: number };
}

export class MemoryBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MemoryBudgetError';
  }
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/**
 * The largest micro-batch size ≤ `requested` whose every micro-batch (consecutive sequences, padded to the
 * longest, as the GRPO update lays them out) fits `freeBytes`; a MemoryBudgetError with the numbers when
 * even one sequence does not. `what` names the update in messages.
 */
export function planMicroBatches(seqs: readonly SequenceLength[], requested: number, shape: MemoryShape, freeBytes: number, opts: { loraRank?: number; recomputeLayers?: boolean; heapLimitBytes: number; what: string }): MicroBatchPlan {
  const budget = freeBytes * HEAP_SAFETY_FRACTION;
  let worst: MicroBatchPlan['largest'] = { tokens: 0, sequences: 0, bytes: 0 };
  for (let size = Math.max(1, requested); size >= 1; size--) {
    worst = { tokens: 0, sequences: 0, bytes: 0 };
    for (let i = 0; i < seqs.length; i += size) {
      const chunk = seqs.slice(i, i + size);
      const tokens = Math.max(...chunk.map((s) => s.tokens));
      const bytes = microBatchBytes(shape, chunk.length, tokens, opts.loraRank ?? 0, opts.recomputeLayers ?? false);
      if (bytes > worst.bytes) worst = { tokens, sequences: chunk.length, bytes };
    }
    if (worst.bytes <= budget) return { microBatchSize: size, largest: worst };
  }
  throw new MemoryBudgetError(
    `${opts.what}: one rollout of ${worst.tokens} tokens needs about ${gib(worst.bytes)} for its forward and backward (estimate), ` +
      `more than the ${gib(budget)} usable of the ${gib(freeBytes)} free in the wasm heap (limit ${gib(opts.heapLimitBytes)}). ` +
      'Lower --max-response-tokens (tool output counts toward it) or --max-new-tokens, or use --backend tensorflow, which has no such limit',
  );
}
