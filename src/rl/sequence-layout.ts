// How a GRPO update lays its sequences out for the forward/backward passes (docs/method.md, "GRPO", the
// update's passes):
//   1. identical sequences (same prompt, response, mask and sampling temperature: a group's rollouts often
//      agree) share one forward: each copy keeps its own advantage and old log-probs in the loss, which reads
//      the shared row's log-probs once per copy, so the loss and its gradient are those of the copies run
//      apart (the gradient's sum only comes in another float order). Not with adapter dropout, where each copy
//      would draw its own mask;
//   2. the distinct sequences go into passes shortest first, so that each pass pads its rows to a similar
//      length (a pass of a 225- and a 513-token rollout is half padding);
//   3. each pass is left-padded to its longest row, with, per response slot that carries loss (mask 1), the row
//      of the hidden state that predicts it: the LM head forms only those slots' log-probs (a tool output's
//      tokens and the padding past a response get none; the loss reads 0 there and multiplies it by the mask).
/** One sampled sequence, as GRPO trains on it. */
export interface TrainingSequence {
  promptIds: number[];
  /** Generated and tool-output tokens after the prompt. */
  responseIds: number[];
  /** 1 where the token is trained (generated), 0 where it is context only (tool output). */
  responseMask: number[];
  /** log π_old of each response token at sampling time (ignored where the mask is 0). */
  oldLogprobs: number[];
  /** The sequence's advantage (broadcast to its tokens). */
  advantage: number;
  /**
   * The temperature T whose softmax(logits / T) gave `oldLogprobs` (1 for greedy or untempered sampling).
   * The update divides the logits by the same T, so the first on-policy ratio is exactly 1.
   */
  samplingTemperature: number;
  /**
   * log π_ref of each response token (adapters off, at the sampling temperature), when an earlier update over
   * the same sequence computed it (`GrpoGradients.refLogprobs`): the base weights do not change, so the KL term
   * needs no second reference forward. A pass skips its reference forward when all its sequences carry it.
   */
  refLogprobs?: number[];
}

/** Sequences whose forward is computed once: `members` index the update's sequences, in their order. */
export interface ForwardRow {
  seq: TrainingSequence;
  members: number[];
}

/** Prompt and response tokens of a sequence (its length in a pass). */
export function tokensOf(s: TrainingSequence): number {
  return s.promptIds.length + s.responseIds.length;
}

/**
 * The distinct forwards of `seqs` (step 1 above; every sequence its own row when `shareIdentical` is false),
 * shortest first (step 2; rows of equal length keep their order).
 */
export function forwardRows(seqs: readonly TrainingSequence[], shareIdentical: boolean): ForwardRow[] {
  const rows: ForwardRow[] = [];
  const byKey = new Map<string, ForwardRow>();
  seqs.forEach((s, i) => {
    if (!shareIdentical) {
      rows.push({ seq: s, members: [i] });
      return;
    }
    const key = `${s.samplingTemperature}|${s.promptIds.join(',')}|${s.responseIds.join(',')}|${s.responseMask.join(',')}`;
    const row = byKey.get(key);
    if (row) row.members.push(i);
    else {
      const fresh = { seq: s, members: [i] };
      byKey.set(key, fresh);
      rows.push(fresh);
    }
  });
  return rows.sort((a, b) => tokensOf(a.seq) - tokensOf(b.seq)); // a stable sort: equal lengths keep their order
}

/**
 * Cuts the items, in order, into passes of at most `maxSize` whose estimated bytes (`bytesOf(items, longest)`)
 * stay within `budget` (an item that alone exceeds it runs alone).
 */
export function microBatches<T>(items: readonly T[], maxSize: number, budget: number | undefined, bytesOf: (batch: number, tokens: number) => number, lengthOf: (item: T) => number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let longest = 0;
  for (const item of items) {
    const len = lengthOf(item);
    const wouldBe = Math.max(longest, len);
    const fits = current.length < maxSize && (budget === undefined || bytesOf(current.length + 1, wouldBe) <= budget);
    if (current.length > 0 && !fits) {
      out.push(current);
      current = [];
      longest = 0;
    }
    current.push(item);
    longest = Math.max(longest, len);
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * One pass: its forward rows (U of them, left-padded to T), the S response slots of those rows whose log-probs
 * are formed, and the copies the loss reads (B ≥ U), each over R response slots.
 */
export interface MicroBatchLayout {
  ids: number[][];
  attention: number[][];
  /** [S] flat row indices into the [U·T, d] hidden states (the position before each formed slot's token). */
  hiddenRows: Int32Array;
  /** [S] the token each formed slot predicts. */
  targets: Int32Array;
  /** [S] 1 / T of each formed slot's sequence (the logits are divided by its sampling temperature). */
  invTemperature: Float32Array;
  S: number;
  U: number;
  R: number;
  /** [B × R] the formed slot each copy's cell reads; S (a zero) where none is formed. */
  copySlots: Int32Array;
  /** [B] the index of each copy in the update's sequences. */
  members: number[];
  /** [B × R], per copy. */
  mask: Float32Array;
  oldLogprobs: Float32Array;
  /** log π_ref per slot (0 where the mask is 0) when every copy carried it, else undefined. */
  refLogprobs: Float32Array | undefined;
  advantages: Float32Array;
  B: number;
}

/**
 * The layout of one pass over `rows` (step 3 above); `seqs` are the update's sequences the rows' members index.
 * `everySlot` forms the log-prob of every response token, masked or not (for checks and diagnostics).
 */
export function layoutMicroBatch(rows: readonly ForwardRow[], seqs: readonly TrainingSequence[], padId: number, everySlot = false): MicroBatchLayout {
  const U = rows.length;
  const T = Math.max(...rows.map((r) => tokensOf(r.seq)));
  const R = Math.max(1, ...rows.map((r) => r.seq.responseIds.length));
  const ids: number[][] = [];
  const attention: number[][] = [];
  const hiddenRows: number[] = [];
  const targets: number[] = [];
  const invTemperature: number[] = [];
  /** [U × R] the formed slot of each row's cell, or -1. */
  const rowSlots = new Int32Array(U * R).fill(-1);
  rows.forEach(({ seq: s, members }, u) => {
    const b = members[0] as number;
    if (s.promptIds.length === 0) throw new Error('GRPO: a sequence has an empty prompt');
    if (!(s.samplingTemperature > 0) || !Number.isFinite(s.samplingTemperature)) {
      throw new Error(`GRPO: sequence ${b} has sampling temperature ${String(s.samplingTemperature)}; it must be a positive number (1 for greedy sampling)`);
    }
    const row = [...s.promptIds, ...s.responseIds];
    const pad = T - row.length;
    ids.push([...new Array<number>(pad).fill(padId), ...row]);
    attention.push([...new Array<number>(pad).fill(0), ...row.map(() => 1)]);
    for (let j = 0; j < s.responseIds.length; j++) {
      if (!everySlot && !((s.responseMask[j] as number) > 0)) continue;
      rowSlots[u * R + j] = hiddenRows.length;
      // Response token j sits at pad + P + j and is predicted by the hidden state one position earlier.
      hiddenRows.push(u * T + pad + s.promptIds.length + j - 1);
      targets.push(s.responseIds[j] as number);
      invTemperature.push(1 / s.samplingTemperature);
    }
  });
  const S = hiddenRows.length;

  const members = rows.flatMap((r) => r.members);
  const copyRowList = rows.flatMap((r, u) => r.members.map(() => u));
  const B = members.length;
  const copySlots = new Int32Array(B * R);
  copyRowList.forEach((u, c) => {
    for (let j = 0; j < R; j++) {
      const slot = rowSlots[u * R + j] as number;
      copySlots[c * R + j] = slot < 0 ? S : slot;
    }
  });
  const mask = new Float32Array(B * R);
  const oldLogprobs = new Float32Array(B * R);
  const copies = members.map((i) => seqs[i] as TrainingSequence);
  const refLogprobs = copies.every((s) => s.refLogprobs !== undefined) ? new Float32Array(B * R) : undefined;
  const advantages = new Float32Array(B);
  copies.forEach((s, c) => {
    const i = members[c] as number;
    if (s.responseMask.length !== s.responseIds.length || s.oldLogprobs.length !== s.responseIds.length) {
      throw new Error(`GRPO: sequence ${i} has ${s.responseIds.length} response tokens but ${s.responseMask.length} mask values and ${s.oldLogprobs.length} log-probs`);
    }
    if (s.refLogprobs !== undefined && s.refLogprobs.length !== s.responseIds.length) {
      throw new Error(`GRPO: sequence ${i} has ${s.responseIds.length} response tokens but ${s.refLogprobs.length} reference log-probs`);
    }
    advantages[c] = s.advantage;
    for (let j = 0; j < s.responseIds.length; j++) {
      const cell = c * R + j;
      const m = s.responseMask[j] as number;
      mask[cell] = m;
      oldLogprobs[cell] = m > 0 ? (s.oldLogprobs[j] as number) : 0;
      if (refLogprobs) refLogprobs[cell] = m > 0 ? ((s.refLogprobs as number[])[j] as number) : 0;
    }
  });
  return {
    ids,
    attention,
    hiddenRows: Int32Array.from(hiddenRows),
    targets: Int32Array.from(targets),
    invTemperature: Float32Array.from(invTemperature),
    S,
    U,
    R,
    copySlots,
    members,
    mask,
    oldLogprobs,
    refLogprobs,
    advantages,
    B,
  };
}

/** Per-slot values [S] → per-copy values [B × R] (each cell reads its formed slot), 0 where none is formed. */
export function copyValues(layout: MicroBatchLayout, slotValues: Float32Array): Float32Array {
  return Float32Array.from(layout.copySlots, (slot) => (slot < layout.S ? (slotValues[slot] as number) : 0));
}
