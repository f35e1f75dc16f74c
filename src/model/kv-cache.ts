// The KV cache of a batch: per layer, keys and values [B, kvHeads, capacity, headDim] of every token seen so
// far, plus, per row, which slots hold real tokens (left padding and slots not yet written do not) and the
// next position id.
//
// The buffers are allocated in blocks of slots and written in place (src/tensor/host-memory.ts): appending a
// token copies only that token's keys and values, never the cache. When the slots run out the buffers are
// reallocated one block larger (amortised: a copy per block, not per token). Attention runs over the whole
// capacity; the slots past `length` are masked like padding, so they contribute exact zeros.
//
// On a backend whose memory JS cannot write (native TensorFlow) the cache grows by concatenation instead,
// with the capacity always equal to the length.
//
// Rows can be dropped or repeated (`keepRows`), split off into caches of their own (`takeRows`) and merged
// back from several caches (`KVCache.merge`, left-padding the shorter ones), which is what keeps a rollout's
// cache across tool turns.
import { tf } from '../tensor/backend.js';
import { activeBackendHasHostMemory, hostFloat32 } from '../tensor/host-memory.js';

/** Slots added per reallocation. */
export const CACHE_BLOCK = 64;

export interface CacheShape {
  numLayers: number;
  kvHeads: number;
  headDim: number;
}

function roundUp(n: number, block: number): number {
  return Math.max(block, Math.ceil(n / block) * block);
}

export class KVCache {
  private keys: Array<tf.Tensor4D | undefined>;
  private values: Array<tf.Tensor4D | undefined>;
  /** [B][length]: 1 where the slot holds a real token. */
  keyMask: number[][];
  /** Per row: the position id the next real token gets. */
  nextPosition: number[];
  /** Slots allocated per row (≥ length). */
  private cap = 0;
  private readonly inPlace: boolean;

  constructor(
    readonly shape: CacheShape,
    batchSize: number,
  ) {
    this.keys = new Array<tf.Tensor4D | undefined>(shape.numLayers).fill(undefined);
    this.values = new Array<tf.Tensor4D | undefined>(shape.numLayers).fill(undefined);
    this.keyMask = Array.from({ length: batchSize }, () => []);
    this.nextPosition = new Array<number>(batchSize).fill(0);
    this.inPlace = activeBackendHasHostMemory();
  }

  /** Sequences held. */
  get batchSize(): number {
    return this.keyMask.length;
  }

  /** Number of cached slots (the same for every row; padding included). */
  get length(): number {
    return (this.keyMask[0] ?? []).length;
  }

  /** Slots allocated per row (in place; else the length). */
  get capacity(): number {
    return this.cap;
  }

  /** Keys the next attention runs over once the current chunk is recorded: the capacity, or the length. */
  get attentionWidth(): number {
    return this.inPlace ? this.cap : this.length;
  }

  /**
   * Records a chunk of T slots per row before the layers run (mask: [B][T], 1 for real tokens) and makes room
   * for it; returns the position id of every slot of the chunk ([B][T], padding repeats its neighbour's).
   * The layers then call `append` with the chunk's keys and values, which land at [length − T, length).
   */
  beginChunk(mask: number[][]): { positions: Int32Array; pastLength: number } {
    const B = this.batchSize;
    const T = (mask[0] ?? []).length;
    if (mask.length !== B) throw new Error(`KV cache: chunk has ${mask.length} rows, cache holds ${B}`);
    const pastLength = this.length;
    const positions = new Int32Array(B * T);
    for (let b = 0; b < B; b++) {
      let next = this.nextPosition[b] as number;
      const row = mask[b] as number[];
      for (let t = 0; t < T; t++) {
        positions[b * T + t] = next;
        if (row[t] === 1) next++;
      }
      this.nextPosition[b] = next;
      (this.keyMask[b] as number[]).push(...row);
    }
    if (this.inPlace) this.ensureCapacity(pastLength + T);
    return { positions, pastLength };
  }

  /** Reallocates every layer's buffers to hold at least `slots` slots (copying what is cached). */
  private ensureCapacity(slots: number): void {
    if (slots <= this.cap) return;
    const newCap = roundUp(slots, CACHE_BLOCK);
    const { kvHeads: KV, headDim: hd } = this.shape;
    const B = this.batchSize;
    const grow = (old: tf.Tensor4D | undefined): tf.Tensor4D | undefined => {
      if (!old) return undefined;
      const fresh = tf.keep(tf.zeros([B, KV, newCap, hd]) as tf.Tensor4D);
      const src = hostFloat32(old);
      const dst = hostFloat32(fresh);
      for (let r = 0; r < B * KV; r++) dst.set(src.subarray(r * this.cap * hd, (r + 1) * this.cap * hd), r * newCap * hd);
      old.dispose();
      return fresh;
    };
    this.keys = this.keys.map(grow);
    this.values = this.values.map(grow);
    this.cap = newCap;
  }

  /**
   * Writes one chunk's keys/values of `layer` ([B, KV, T, hd], the last T slots recorded by `beginChunk`) and
   * returns the layer's full buffers [B, KV, capacity, hd], owned by the cache (do not dispose them).
   */
  append(layer: number, k: tf.Tensor4D, v: tf.Tensor4D): [tf.Tensor4D, tf.Tensor4D] {
    const T = k.shape[2];
    const start = this.length - T;
    if (!this.inPlace) {
      const concat = (old: tf.Tensor4D | undefined, x: tf.Tensor4D): tf.Tensor4D => {
        const next = tf.keep(old ? (tf.concat([old, x], 2) as tf.Tensor4D) : x.clone());
        old?.dispose();
        return next;
      };
      this.keys[layer] = concat(this.keys[layer], k);
      this.values[layer] = concat(this.values[layer], v);
      this.cap = this.length;
      return [this.keys[layer] as tf.Tensor4D, this.values[layer] as tf.Tensor4D];
    }
    const { kvHeads: KV, headDim: hd } = this.shape;
    const B = this.batchSize;
    const write = (buffer: tf.Tensor4D | undefined, x: tf.Tensor4D): tf.Tensor4D => {
      const target = buffer ?? (tf.keep(tf.zeros([B, KV, this.cap, hd])) as tf.Tensor4D);
      const src = hostFloat32(x);
      const dst = hostFloat32(target);
      for (let r = 0; r < B * KV; r++) dst.set(src.subarray(r * T * hd, (r + 1) * T * hd), (r * this.cap + start) * hd);
      return target;
    };
    this.keys[layer] = write(this.keys[layer], k);
    this.values[layer] = write(this.values[layer], v);
    return [this.keys[layer] as tf.Tensor4D, this.values[layer] as tf.Tensor4D];
  }

  /** Keeps only the given rows (indices into the current batch, in the new order; repeats allowed). */
  keepRows(rows: readonly number[]): void {
    const pick = (t: tf.Tensor4D | undefined): tf.Tensor4D | undefined => {
      if (!t) return undefined;
      const kept = this.gatherRows(t, rows);
      t.dispose();
      return kept;
    };
    this.keys = this.keys.map(pick);
    this.values = this.values.map(pick);
    this.keyMask = rows.map((r) => [...(this.keyMask[r] as number[])]);
    this.nextPosition = rows.map((r) => this.nextPosition[r] as number);
  }

  /** A new cache holding copies of the given rows (this one is unchanged). */
  copyRows(rows: readonly number[]): KVCache {
    const out = new KVCache(this.shape, rows.length);
    out.keys = this.keys.map((t) => (t ? this.gatherRows(t, rows) : undefined));
    out.values = this.values.map((t) => (t ? this.gatherRows(t, rows) : undefined));
    out.keyMask = rows.map((r) => [...(this.keyMask[r] as number[])]);
    out.nextPosition = rows.map((r) => this.nextPosition[r] as number);
    out.cap = this.cap;
    return out;
  }

  /**
   * A kept buffer [rows.length, KV, capacity, hd] with the given rows of `t`. In place, each row is one
   * contiguous block of KV·capacity·hd floats, copied with one typed-array copy (the bytes tf.gather would
   * write, without its per-element indexing: gathers were ~45% of the rollout time of a world step). `t` is
   * not disposed.
   */
  private gatherRows(t: tf.Tensor4D, rows: readonly number[]): tf.Tensor4D {
    if (!this.inPlace) return tf.tidy(() => tf.keep(tf.gather(t, tf.tensor1d(Int32Array.from(rows), 'int32')) as tf.Tensor4D));
    const [, KV, cap, hd] = t.shape;
    const block = KV * cap * hd;
    const out = tf.keep(tf.zeros([rows.length, KV, cap, hd]) as tf.Tensor4D);
    // Views are taken after the allocation: a growing wasm heap detaches earlier ones.
    const dst = hostFloat32(out);
    const src = hostFloat32(t);
    rows.forEach((r, j) => dst.set(src.subarray(r * block, (r + 1) * block), j * block));
    return out;
  }

  /**
   * One cache with the rows of `parts`, in order. Shorter rows are left-padded (masked slots) to the longest
   * length. The parts are disposed.
   */
  static merge(parts: readonly KVCache[]): KVCache {
    const first = parts[0];
    if (!first) throw new Error('KV cache merge: nothing to merge');
    if (parts.length === 1) return first;
    const shape = first.shape;
    const length = Math.max(...parts.map((p) => p.length));
    const B = parts.reduce((a, p) => a + p.batchSize, 0);
    const out = new KVCache(shape, B);
    out.keyMask = parts.flatMap((p) => p.keyMask.map((m) => [...new Array<number>(length - p.length).fill(0), ...m]));
    out.nextPosition = parts.flatMap((p) => p.nextPosition);
    const { kvHeads: KV, headDim: hd } = shape;
    if (out.inPlace) {
      out.cap = roundUp(length, CACHE_BLOCK);
      const join = (pick: (p: KVCache) => tf.Tensor4D | undefined): tf.Tensor4D | undefined => {
        if (parts.some((p) => !pick(p))) return undefined;
        const merged = tf.keep(tf.zeros([B, KV, out.cap, hd]) as tf.Tensor4D);
        const dst = hostFloat32(merged);
        let row = 0;
        for (const p of parts) {
          const src = hostFloat32(pick(p) as tf.Tensor4D);
          const shift = length - p.length;
          for (let r = 0; r < p.batchSize * KV; r++) {
            dst.set(src.subarray(r * p.cap * hd, (r * p.cap + p.length) * hd), ((row + r) * out.cap + shift) * hd);
          }
          row += p.batchSize * KV;
        }
        return merged;
      };
      for (let l = 0; l < shape.numLayers; l++) {
        out.keys[l] = join((p) => p.keys[l]);
        out.values[l] = join((p) => p.values[l]);
      }
    } else {
      out.cap = length;
      for (let l = 0; l < shape.numLayers; l++) {
        const join = (pick: (p: KVCache) => tf.Tensor4D | undefined): tf.Tensor4D | undefined => {
          if (parts.some((p) => !pick(p))) return undefined;
          return tf.keep(
            tf.tidy(() => tf.concat(parts.map((p) => tf.pad(pick(p) as tf.Tensor4D, [[0, 0], [0, 0], [length - p.length, 0], [0, 0]])), 0)) as tf.Tensor4D,
          );
        };
        out.keys[l] = join((p) => p.keys[l]);
        out.values[l] = join((p) => p.values[l]);
      }
    }
    for (const p of parts) p.dispose();
    return out;
  }

  /** Live tensors held (for memory accounting in tests). */
  tensorCount(): number {
    return this.keys.filter(Boolean).length + this.values.filter(Boolean).length;
  }

  /** Bytes held by the buffers. */
  bytes(): number {
    return [...this.keys, ...this.values].reduce((a, t) => a + (t ? t.size * 4 : 0), 0);
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t?.dispose();
    this.keys = this.keys.map(() => undefined);
    this.values = this.values.map(() => undefined);
  }
}
