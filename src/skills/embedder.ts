// The Embedder interface: texts in, unit vectors out, so cosine = dot product.
// Two implementations: e5 (a transformer through onnxruntime) and lexical (hashed n-grams, no model).

export type EmbedKind = 'query' | 'passage';

/** What a bank records about the embedder its vectors and thresholds belong to. */
export interface EmbedderInfo {
  name: 'e5' | 'lexical';
  /** Identifies the model: the e5 folder or Hugging Face name, or the lexical scheme and its size. */
  model: string;
  dim: number;
  /** Admission cosine threshold (docs/method.md, "The skill bank") for this embedder. */
  dedupThreshold: number;
}

export interface Embedder {
  readonly info: EmbedderInfo;
  /** Unit vectors, one per text, in order. */
  embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]>;
  dispose?(): Promise<void>;
}

export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`vector length mismatch: ${a.length} vs ${b.length}`);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

/** In place; a zero vector stays zero (its cosine with anything is 0). */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += (v[i] as number) ** 2;
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / n;
  return v;
}

/**
 * Caches vectors by (kind, text), so a card is embedded again only when its embedding text changes.
 * `retain` drops entries no longer needed (called after a commit with the bank's current texts).
 */
export class EmbeddingCache {
  private readonly map = new Map<string, Float32Array>();
  constructor(private readonly embedder: Embedder) {}

  get size(): number {
    return this.map.size;
  }

  peek(text: string, kind: EmbedKind): Float32Array | undefined {
    return this.map.get(key(text, kind));
  }

  async get(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.map.has(key(t, kind))))];
    if (missing.length > 0) {
      const vecs = await this.embedder.embed(missing, kind);
      if (vecs.length !== missing.length) throw new Error(`embedder ${this.embedder.info.name} returned ${vecs.length} vectors for ${missing.length} texts`);
      missing.forEach((t, i) => this.map.set(key(t, kind), vecs[i] as Float32Array));
    }
    return texts.map((t) => this.map.get(key(t, kind)) as Float32Array);
  }

  retain(keep: Array<{ text: string; kind: EmbedKind }>): void {
    const wanted = new Set(keep.map((k) => key(k.text, k.kind)));
    for (const k of [...this.map.keys()]) if (!wanted.has(k)) this.map.delete(k);
  }
}

function key(text: string, kind: EmbedKind): string {
  return `${kind}\u0000${text}`;
}

/**
 * Cosines of one query against many unit vectors, laid out for speed: one contiguous matrix for dense
 * vectors (e5), or index/value lists when most entries are zero (lexical hashing fills ~5% of its dims).
 */
export class VectorIndex {
  readonly size: number;
  private readonly dim: number;
  private readonly dense: Float32Array | null;
  private readonly offsets: Uint32Array | null;
  private readonly idx: Uint32Array | null;
  private readonly val: Float32Array | null;

  constructor(vectors: readonly Float32Array[], dim?: number) {
    this.size = vectors.length;
    this.dim = dim ?? vectors[0]?.length ?? 0;
    let nnz = 0;
    for (const v of vectors) {
      if (v.length !== this.dim) throw new Error(`vector length mismatch: ${v.length} vs ${this.dim}`);
      for (let i = 0; i < v.length; i++) if (v[i] !== 0) nnz++;
    }
    if (nnz * 3 < this.size * this.dim) {
      this.dense = null;
      this.offsets = new Uint32Array(this.size + 1);
      this.idx = new Uint32Array(nnz);
      this.val = new Float32Array(nnz);
      let k = 0;
      vectors.forEach((v, r) => {
        for (let i = 0; i < v.length; i++) {
          const x = v[i] as number;
          if (x !== 0) {
            this.idx![k] = i;
            this.val![k++] = x;
          }
        }
        this.offsets![r + 1] = k;
      });
    } else {
      this.offsets = this.idx = this.val = null;
      this.dense = new Float32Array(this.size * this.dim);
      vectors.forEach((v, r) => this.dense!.set(v, r * this.dim));
    }
  }

  /** scores[r] = vectors[r] · q */
  scores(q: Float32Array): Float32Array {
    if (q.length !== this.dim && this.size > 0) throw new Error(`vector length mismatch: ${q.length} vs ${this.dim}`);
    const out = new Float32Array(this.size);
    const d = this.dim;
    if (this.dense) {
      const m = this.dense;
      for (let r = 0; r < this.size; r++) {
        const base = r * d;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        let i = 0;
        for (; i + 3 < d; i += 4) {
          s0 += (m[base + i] as number) * (q[i] as number);
          s1 += (m[base + i + 1] as number) * (q[i + 1] as number);
          s2 += (m[base + i + 2] as number) * (q[i + 2] as number);
          s3 += (m[base + i + 3] as number) * (q[i + 3] as number);
        }
        for (; i < d; i++) s0 += (m[base + i] as number) * (q[i] as number);
        out[r] = s0 + s1 + s2 + s3;
      }
    } else {
      const off = this.offsets as Uint32Array;
      const idx = this.idx as Uint32Array;
      const val = this.val as Float32Array;
      for (let r = 0; r < this.size; r++) {
        let s = 0;
        for (let k = off[r] as number, e = off[r + 1] as number; k < e; k++) s += (val[k] as number) * (q[idx[k] as number] as number);
        out[r] = s;
      }
    }
    return out;
  }
}
