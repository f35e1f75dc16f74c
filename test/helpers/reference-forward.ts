// An independent, deliberately naive float64 forward of the Qwen3 family, written straight from the
// Hugging Face modeling code's math (no tensors, no cache, no batching): a test oracle for our tfjs forward.
// It re-derives everything it needs (RoPE, GQA head mapping, biases, QK norm) on its own.
import { SafetensorsCheckpoint } from '../../src/formats/safetensors.js';
import { loadModelConfig, type ModelConfig } from '../../src/model/config.js';

type Mat = { rows: number; cols: number; data: Float64Array }; // row-major [rows, cols] = HF [out, in]

export class ReferenceModel {
  readonly cfg: ModelConfig;
  private readonly w = new Map<string, Mat>();

  constructor(dir: string) {
    this.cfg = loadModelConfig(dir);
    const ck = new SafetensorsCheckpoint(dir);
    for (const name of ck.names()) {
      const e = ck.entry(name);
      const d = Float64Array.from(ck.readFloat32(name));
      this.w.set(name, { rows: e.shape[0] ?? 1, cols: e.shape.length > 1 ? (e.shape[1] as number) : 1, data: d });
    }
  }

  private get(name: string): Mat {
    const m = this.w.get(name);
    if (!m) throw new Error(`reference: missing ${name}`);
    return m;
  }

  private has(name: string): boolean {
    return this.w.has(name);
  }

  /** y = W x (+ b) for W [out, in]. */
  private linear(name: string, x: Float64Array): Float64Array {
    const W = this.get(`${name}.weight`);
    const y = new Float64Array(W.rows);
    for (let o = 0; o < W.rows; o++) {
      let s = 0;
      for (let i = 0; i < W.cols; i++) s += (W.data[o * W.cols + i] as number) * (x[i] as number);
      y[o] = s;
    }
    if (this.has(`${name}.bias`)) {
      const b = this.get(`${name}.bias`).data;
      for (let o = 0; o < y.length; o++) y[o] = (y[o] as number) + (b[o] as number);
    }
    return y;
  }

  private rms(x: Float64Array, weight: Float64Array, off = 0, len = x.length): void {
    let ss = 0;
    for (let i = 0; i < len; i++) ss += (x[off + i] as number) ** 2;
    const r = 1 / Math.sqrt(ss / len + this.cfg.rmsNormEps);
    for (let i = 0; i < len; i++) x[off + i] = (x[off + i] as number) * r * (weight[i] as number);
  }

  private invFreq(): Float64Array {
    const c = this.cfg;
    const half = c.headDim / 2;
    const f = new Float64Array(half);
    for (let i = 0; i < half; i++) {
      let v = c.ropeTheta ** (-(2 * i) / c.headDim);
      const s = c.ropeScaling;
      if (s) {
        const wl = (2 * Math.PI) / v;
        const lowWl = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
        const highWl = s.originalMaxPositionEmbeddings / s.highFreqFactor;
        if (wl > lowWl) v = v / s.factor;
        else if (wl >= highWl) {
          const sm = (s.originalMaxPositionEmbeddings / wl - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
          v = (1 - sm) * (v / s.factor) + sm * v;
        }
      }
      f[i] = v;
    }
    return f;
  }

  private rotate(x: Float64Array, off: number, pos: number, inv: Float64Array): void {
    const half = inv.length;
    for (let i = 0; i < half; i++) {
      const a = x[off + i] as number;
      const b = x[off + half + i] as number;
      const c = Math.cos(pos * (inv[i] as number));
      const s = Math.sin(pos * (inv[i] as number));
      x[off + i] = a * c - b * s;
      x[off + half + i] = b * c + a * s;
    }
  }

  /** Log-probabilities [T][V] of the next token after each prefix of `ids` (one unpadded sequence). */
  logProbs(ids: number[]): Float64Array[] {
    const c = this.cfg;
    const d = c.hiddenSize;
    const hd = c.headDim;
    const groups = c.numHeads / c.numKvHeads;
    const inv = this.invFreq();
    const emb = this.get('model.embed_tokens.weight');
    let hs = ids.map((id) => emb.data.slice(id * d, (id + 1) * d));
    for (let l = 0; l < c.numLayers; l++) {
      const p = `model.layers.${l}.`;
      const qs: Float64Array[] = [];
      const ks: Float64Array[] = [];
      const vs: Float64Array[] = [];
      hs.forEach((h, pos) => {
        const x = h.slice();
        this.rms(x, this.get(`${p}input_layernorm.weight`).data);
        const q = this.linear(`${p}self_attn.q_proj`, x);
        const k = this.linear(`${p}self_attn.k_proj`, x);
        const v = this.linear(`${p}self_attn.v_proj`, x);
        for (let h2 = 0; h2 < c.numHeads; h2++) {
          if (c.qkNorm) this.rms(q, this.get(`${p}self_attn.q_norm.weight`).data, h2 * hd, hd);
          this.rotate(q, h2 * hd, pos, inv);
        }
        for (let h2 = 0; h2 < c.numKvHeads; h2++) {
          if (c.qkNorm) this.rms(k, this.get(`${p}self_attn.k_norm.weight`).data, h2 * hd, hd);
          this.rotate(k, h2 * hd, pos, inv);
        }
        qs.push(q);
        ks.push(k);
        vs.push(v);
      });
      hs = hs.map((h, t) => {
        const ctx = new Float64Array(c.numHeads * hd);
        for (let head = 0; head < c.numHeads; head++) {
          const kvh = Math.floor(head / groups);
          const scores = new Float64Array(t + 1);
          let max = -Infinity;
          for (let s = 0; s <= t; s++) {
            let dot = 0;
            for (let i = 0; i < hd; i++) dot += ((qs[t] as Float64Array)[head * hd + i] as number) * ((ks[s] as Float64Array)[kvh * hd + i] as number);
            scores[s] = dot / Math.sqrt(hd);
            max = Math.max(max, scores[s] as number);
          }
          let z = 0;
          for (let s = 0; s <= t; s++) z += Math.exp((scores[s] as number) - max);
          for (let s = 0; s <= t; s++) {
            const pr = Math.exp((scores[s] as number) - max) / z;
            for (let i = 0; i < hd; i++) ctx[head * hd + i] = (ctx[head * hd + i] as number) + pr * ((vs[s] as Float64Array)[kvh * hd + i] as number);
          }
        }
        const o = this.linear(`${p}self_attn.o_proj`, ctx);
        const h1 = h.map((v, i) => v + (o[i] as number));
        const m = h1.slice();
        this.rms(m, this.get(`${p}post_attention_layernorm.weight`).data);
        const g = this.linear(`${p}mlp.gate_proj`, m);
        const u = this.linear(`${p}mlp.up_proj`, m);
        const a = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * (u[i] as number));
        const dn = this.linear(`${p}mlp.down_proj`, a);
        return h1.map((v, i) => v + (dn[i] as number));
      });
    }
    const head = c.tieWordEmbeddings ? 'model.embed_tokens' : 'lm_head';
    return hs.map((h) => {
      const x = h.slice();
      this.rms(x, this.get('model.norm.weight').data);
      const W = this.get(`${head}.weight`);
      const logits = new Float64Array(W.rows);
      for (let v = 0; v < W.rows; v++) {
        let s = 0;
        for (let i = 0; i < d; i++) s += (W.data[v * d + i] as number) * (x[i] as number);
        logits[v] = s;
      }
      const max = Math.max(...logits);
      let z = 0;
      for (const v of logits) z += Math.exp(v - max);
      const lz = max + Math.log(z);
      return logits.map((v) => v - lz);
    });
  }
}
