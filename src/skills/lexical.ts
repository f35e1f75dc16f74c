// The lexical embedder: hashed word unigrams, word bigrams and character 3–5-grams, sublinear TF with a
// fixed stop-word down-weighting as the IDF part, each group L2-normalized and weighted, then the sum
// L2-normalized. Deterministic, model-free and fast: for offline runs, the embedded demo and tests.
// It has its own dedup threshold (config.ts DEDUP_THRESHOLDS.lexical), since its cosines are not E5's.
import type { EmbedKind, Embedder, EmbedderInfo } from './embedder.js';
import { l2normalize } from './embedder.js';
import { DEDUP_THRESHOLDS } from './config.js';

// Function words carry little meaning but dominate raw counts; a fixed low weight stands in for their IDF,
// so the vectors do not depend on which corpus the bank happens to hold (ours).
const STOP = new Set(
  ('a an the of in on at to for from by with and or but nor is are was were be been being do does did has have had ' +
    'it its this that these those which who whom whose what when where why how as than then so such not no yes ' +
    'he she they we you i his her their our your my me him them us into over under about after before between ' +
    'also both each any all some one two can could would should will may might must there here if else while').split(' '),
);
const STOP_WEIGHT = 0.1;

// Group weights (ours): whole words matter most, bigrams add phrase order, char n-grams tolerate
// inflection and spelling variants ("born"/"birth" share little, "directed"/"director" share a lot).
const GROUPS = { word: 0.65, bigram: 0.35, char: 0.5 } as const;

export interface LexicalOptions {
  /** Hashed dimensions (a power of two keeps the modulo a mask). */
  dim?: number;
}

export class LexicalEmbedder implements Embedder {
  readonly info: EmbedderInfo;
  private readonly dim: number;

  constructor(opts: LexicalOptions = {}) {
    this.dim = opts.dim ?? 4096;
    if (!Number.isInteger(this.dim) || this.dim < 64) throw new Error(`lexical embedder: dim must be an integer ≥ 64, got ${this.dim}`);
    this.info = { name: 'lexical', model: `lexical-v1-d${this.dim}`, dim: this.dim, dedupThreshold: DEDUP_THRESHOLDS.lexical };
  }

  // The kind is ignored: the lexical space is symmetric, and a constant prefix would only add a shared
  // feature that inflates every cosine.
  async embed(texts: string[], _kind: EmbedKind): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  embedOne(text: string): Float32Array {
    const words = tokenize(text);
    const out = new Float32Array(this.dim);
    const groups: Array<[number, Map<string, number>]> = [
      [GROUPS.word, new Map()],
      [GROUPS.bigram, new Map()],
      [GROUPS.char, new Map()],
    ];
    const [wordG, bigramG, charG] = groups.map((g) => g[1]) as [Map<string, number>, Map<string, number>, Map<string, number>];
    for (let i = 0; i < words.length; i++) {
      const w = words[i] as string;
      add(wordG, `w:${w}`, STOP.has(w) ? STOP_WEIGHT : 1);
      if (i + 1 < words.length) {
        const n = words[i + 1] as string;
        if (!(STOP.has(w) && STOP.has(n))) add(bigramG, `b:${w} ${n}`, 1);
      }
      if (!STOP.has(w)) {
        const padded = `<${w}>`;
        for (let n = 3; n <= 5; n++) for (let j = 0; j + n <= padded.length; j++) add(charG, `c:${padded.slice(j, j + n)}`, 1);
      }
    }
    for (const [weight, feats] of groups) {
      if (feats.size === 0) continue;
      const g = new Float32Array(this.dim);
      for (const [f, tf] of feats) {
        const h = fnv1a(f);
        // Signed hashing: collisions cancel on average instead of adding up.
        const idx = isPow2(this.dim) ? h & (this.dim - 1) : h % this.dim;
        g[idx] = (g[idx] as number) + (h & 0x80000000 ? -1 : 1) * tfWeight(tf);
      }
      l2normalize(g);
      for (let i = 0; i < this.dim; i++) out[i] = (out[i] as number) + weight * (g[i] as number);
    }
    return l2normalize(out);
  }
}

/** Lowercased letter/digit runs (Unicode-aware), accents stripped. */
export function tokenize(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

function add(m: Map<string, number>, f: string, w: number): void {
  m.set(f, (m.get(f) ?? 0) + w);
}

/** Sublinear TF: repeated words count, but with diminishing returns. Weights < 1 (stop words) pass through. */
function tfWeight(tf: number): number {
  return tf <= 1 ? tf : 1 + Math.log(tf);
}

function isPow2(n: number): boolean {
  return (n & (n - 1)) === 0;
}

/** FNV-1a 32-bit over UTF-16 code units. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
