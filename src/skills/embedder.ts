// The Embedder interface (notes/architecture.md): texts in, unit vectors out, so cosine = dot product.
// Two implementations: e5 (a transformer through onnxruntime) and lexical (hashed n-grams, no model).

export type EmbedKind = 'query' | 'passage';

/** What a bank records about the embedder its vectors and thresholds belong to. */
export interface EmbedderInfo {
  name: 'e5' | 'lexical';
  /** Identifies the model: the e5 folder or Hugging Face name, or the lexical scheme and its size. */
  model: string;
  dim: number;
  /** Admission cosine threshold (SPEC §2 step 9) for this embedder. */
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
