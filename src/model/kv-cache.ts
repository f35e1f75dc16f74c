// The KV cache of a batch: per layer, keys and values [B, kvHeads, S, headDim] of every token seen so far,
// plus, per row, which cached positions are real tokens (left padding is not) and the next position id.
import { tf } from '../tensor/backend.js';

export class KVCache {
  private keys: Array<tf.Tensor4D | undefined>;
  private values: Array<tf.Tensor4D | undefined>;
  /** [B][S]: 1 where the cached token is real. */
  keyMask: number[][];
  /** Per row: the position id the next real token gets. */
  nextPosition: number[];

  constructor(numLayers: number, batchSize: number) {
    this.keys = new Array<tf.Tensor4D | undefined>(numLayers).fill(undefined);
    this.values = new Array<tf.Tensor4D | undefined>(numLayers).fill(undefined);
    this.keyMask = Array.from({ length: batchSize }, () => []);
    this.nextPosition = new Array<number>(batchSize).fill(0);
  }

  /** Sequences held. */
  get batchSize(): number {
    return this.keyMask.length;
  }

  /** Keeps only the given rows (indices into the current batch, in the new order); the rest are released. */
  keepRows(rows: readonly number[]): void {
    const index = tf.tensor1d(Int32Array.from(rows), 'int32');
    const pick = (t: tf.Tensor4D | undefined): tf.Tensor4D | undefined => {
      if (!t) return undefined;
      const kept = tf.keep(tf.gather(t, index) as tf.Tensor4D);
      t.dispose();
      return kept;
    };
    this.keys = this.keys.map(pick);
    this.values = this.values.map(pick);
    index.dispose();
    this.keyMask = rows.map((r) => this.keyMask[r] as number[]);
    this.nextPosition = rows.map((r) => this.nextPosition[r] as number);
  }

  /** Number of cached positions (the same for every row). */
  get length(): number {
    return (this.keyMask[0] ?? []).length;
  }

  /**
   * Appends one chunk's keys/values of `layer` and returns the full cached keys/values. The returned tensors
   * are owned by the cache (kept across tf.tidy); the previous ones are released.
   */
  append(layer: number, k: tf.Tensor4D, v: tf.Tensor4D): [tf.Tensor4D, tf.Tensor4D] {
    const oldK = this.keys[layer];
    const oldV = this.values[layer];
    const newK = tf.keep(oldK ? (tf.concat([oldK, k], 2) as tf.Tensor4D) : k.clone());
    const newV = tf.keep(oldV ? (tf.concat([oldV, v], 2) as tf.Tensor4D) : v.clone());
    oldK?.dispose();
    oldV?.dispose();
    this.keys[layer] = newK;
    this.values[layer] = newV;
    return [newK, newV];
  }

  /** Live tensors held (for memory accounting in tests). */
  tensorCount(): number {
    return this.keys.filter(Boolean).length + this.values.filter(Boolean).length;
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t?.dispose();
    this.keys = this.keys.map(() => undefined);
    this.values = this.values.map(() => undefined);
  }
}
