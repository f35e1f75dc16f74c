// The induction init: the first stage of the world's warm start (docs/world.md, "The warm-start model"), in
// place of learning to copy from scratch.
//
// A search agent copies names (question → query, passage → next query or answer). A transformer copies with
// an induction circuit: a previous-token head in one layer writes each token's predecessor into the residual
// stream, and an induction head in the next layer attends from the current token to the position whose
// predecessor equals it and copies the token found there. Trained from random init on the world's
// transcripts, or on a copy drill of real tokens, the 1M-parameter demo spec did not form one within the
// compute of this machine (docs/world.md, "Measured"), so this init writes the circuit into the weights and
// SFT starts from a model that already copies, which it then learns to use.
//
// Residual stream of width H (H ≥ 128), with head size d, heads h, kv heads h_kv (two q heads per kv head):
//
//   dims [0, c)        content C: the token's embedding, N(0, 1) per dim          c = H/2 − 1
//   dim  c             bias B: the same value β in every token's embedding, so a head can form a
//                      query or key that does not depend on the token
//   dims [H/2, H/2+c)  previous token P: written by layer 0
//
// layer 0 (previous-token heads): for q head 2j (kv head j), q and k read only B, so after QK-norm they are
//   fixed vectors; in the rotary pairs f ∈ PREV_PAIRS, q_f at angle 0 and k_f at angle +ω_f, so that
//   q·R((n−m)ω)k = Σ_f a_f cos(ω_f (n − m + 1)) peaks at n = m − 1. v reads C's j-th half (d dims) and o
//   writes it into P's j-th half. The other q heads and the MLP are zero.
// layer 1 (induction heads): q head 2j reads C's j-th half, k (kv head j) reads P's j-th half, both in the
//   rotary pairs f ∈ MATCH_PAIRS only, whose frequencies are small enough (RoPE base 10^6) that R ≈ 1 over a
//   transcript: the score is the cosine of the current token and each position's predecessor. v reads C's
//   j-th half of the attended position (the token that followed the earlier occurrence) and o adds it, times
//   COPY_GAIN, to C: with tied embeddings that raises that token's logit. Other q heads and the MLP are zero.
// layers ≥ 2: q, k, v, gate and up random as usual; o and down zero (residual branches that start silent).
//
// The embedding is tied, so the output reads C and B only: logit(t) = E_t · norm(h).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SafetensorsCheckpoint, type TensorToWrite, writeSafetensors } from '../formats/safetensors.js';
import { Rng } from '../util/rng.js';

/** Rotary pairs of the previous-token heads (the highest frequencies) and their amplitudes. */
const PREV_PAIRS = [0, 1, 2, 3, 4, 5];
/** Distance over which the induction heads' match must stay position-independent (a transcript's length). */
const MATCH_SPAN = 1024;
/** Largest angle a match pair may turn over MATCH_SPAN tokens. */
const MATCH_MAX_TURN = 0.5;

/**
 * The first rotary pair the induction heads match in: the pairs from it on turn by at most MATCH_MAX_TURN
 * over MATCH_SPAN tokens (pair f turns by span / base^(2f/d)). Head size 32 at base 10^6 gives pair 9 of 16;
 * 64 gives pair 18 of 32.
 */
function matchFirstPair(headDim: number, ropeTheta: number): number {
  return Math.ceil((headDim / 2) * (Math.log(MATCH_SPAN / MATCH_MAX_TURN) / Math.log(ropeTheta)));
}
/** QK-norm weight of both circuits' heads: sets how sharply they select. */
export const INDUCTION_QK_GAIN = { prev: 3, match: 3.5 };
/** How strongly the induction heads' copy is added to the content dims. */
export const COPY_GAIN = 2;
/** Value of the bias dim in every embedding. */
const BIAS_VALUE = 3;
/**
 * The final norm's weight: with N(0, 1) content dims a token's logit for itself would be ~36 nats at weight
 * 1, so SFT would start from a loss of tens of nats; at 0.15 the copied token leads by ~5 nats and the rest
 * lie within a few nats of each other.
 */
const FINAL_NORM_WEIGHT = 0.15;

interface ModelShape {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  vocab: number;
  ropeTheta: number;
}

function readShape(dir: string): ModelShape {
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number | boolean>;
  const shape = {
    hidden: cfg.hidden_size as number,
    layers: cfg.num_hidden_layers as number,
    heads: cfg.num_attention_heads as number,
    kvHeads: cfg.num_key_value_heads as number,
    headDim: (cfg.head_dim as number | undefined) ?? (cfg.hidden_size as number) / (cfg.num_attention_heads as number),
    intermediate: cfg.intermediate_size as number,
    vocab: cfg.vocab_size as number,
    ropeTheta: cfg.rope_theta as number,
  };
  const where = join(dir, 'config.json');
  if (cfg.tie_word_embeddings !== true) throw new Error(`${where}: the induction init needs tied embeddings (tie_word_embeddings true)`);
  if (shape.layers < 2) throw new Error(`${where}: the induction init needs at least 2 layers, got ${shape.layers}`);
  if (shape.heads !== 2 * shape.kvHeads || shape.kvHeads !== 2) throw new Error(`${where}: the induction init is written for 4 heads over 2 kv heads, got ${shape.heads} over ${shape.kvHeads}`);
  if (shape.headDim * 2 > shape.hidden / 2 + 1 || shape.headDim < 16) throw new Error(`${where}: head_dim ${shape.headDim} does not fit two halves of the content dims of hidden ${shape.hidden}`);
  const first = matchFirstPair(shape.headDim, shape.ropeTheta);
  // At least a quarter of the pairs must be slow enough to match in (4 of 16 at head size 32).
  if (shape.headDim / 2 - first < shape.headDim / 8) throw new Error(`${where}: rope_theta ${shape.ropeTheta} leaves ${Math.max(0, shape.headDim / 2 - first)} of ${shape.headDim / 2} rotary pairs turning under ${MATCH_MAX_TURN} rad over ${MATCH_SPAN} tokens (the induction heads need ${shape.headDim / 8}): use a larger base (Qwen3's 1,000,000)`);
  return shape;
}

/**
 * Rewrites `dir`'s model.safetensors (a random-init Qwen3 of make-tiny, tied embeddings, 4 heads over 2 kv
 * heads) with the induction circuit above; the random weights of layers ≥ 2 and of every MLP's gate and up
 * are kept. `seed` draws the embedding.
 */
export function writeInductionInit(dir: string, seed: number): void {
  const s = readShape(dir);
  const ckpt = new SafetensorsCheckpoint(dir);
  const H = s.hidden;
  const d = s.headDim;
  const half = d / 2;
  const c = H / 2 - 1;
  const bias = c;
  const prevBase = H / 2;
  const tensors = new Map<string, TensorToWrite>();
  const put = (name: string, shape: number[], data: Float32Array): void => {
    tensors.set(name, { dtype: 'F32', shape, data });
  };
  const keep = (name: string): void => {
    const e = ckpt.entry(name);
    put(name, e.shape, ckpt.readFloat32(name));
  };
  const zeros = (n: number): Float32Array => new Float32Array(n);
  const ones = (n: number): Float32Array => new Float32Array(n).fill(1);

  // Embedding: content N(0, 1) in [0, c), β in the bias dim, 0 in the previous-token dims.
  const rng = new Rng(seed);
  const embed = zeros(s.vocab * H);
  for (let t = 0; t < s.vocab; t++) {
    for (let i = 0; i < c; i++) embed[t * H + i] = rng.normal();
    embed[t * H + bias] = BIAS_VALUE;
  }
  put('model.embed_tokens.weight', [s.vocab, H], embed);
  put('model.norm.weight', [H], new Float32Array(H).fill(FINAL_NORM_WEIGHT));

  const inv = (f: number): number => 1 / s.ropeTheta ** ((2 * f) / d);
  // Rotary pair f is (f, f + half) within a head (rotate-half layout).
  const first = matchFirstPair(d, s.ropeTheta);
  const matchPairs = Array.from({ length: half - first }, (_, i) => first + i);
  const matchDims = [...matchPairs, ...matchPairs.map((f) => f + half)];
  // Content dims of kv head j's half: [j·d, j·d + d) ∩ [0, c).
  const contentDim = (j: number, i: number): number => j * d + i;
  const prevDim = (j: number, i: number): number => prevBase + j * d + i;
  const inHalf = (j: number, i: number): boolean => contentDim(j, i) < c;

  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    const q = zeros(s.heads * d * H);
    const k = zeros(s.kvHeads * d * H);
    const v = zeros(s.kvHeads * d * H);
    const o = zeros(H * s.heads * d);
    if (l >= 2) {
      for (const n of ['self_attn.q_proj.weight', 'self_attn.k_proj.weight', 'self_attn.v_proj.weight', 'self_attn.q_norm.weight', 'self_attn.k_norm.weight', 'input_layernorm.weight', 'post_attention_layernorm.weight']) keep(p + n);
      put(`${p}self_attn.o_proj.weight`, [H, s.heads * d], o);
    } else {
      for (let j = 0; j < s.kvHeads; j++) {
        const qh = 2 * j;
        if (l === 0) {
          for (const f of PREV_PAIRS) {
            const w = inv(f);
            q[(qh * d + f) * H + bias] = 1;
            k[(j * d + f) * H + bias] = Math.cos(w);
            k[(j * d + f + half) * H + bias] = Math.sin(w);
          }
          for (let i = 0; i < d; i++) {
            if (!inHalf(j, i)) continue;
            v[(j * d + i) * H + contentDim(j, i)] = 1;
            o[prevDim(j, i) * (s.heads * d) + qh * d + i] = 1;
          }
        } else {
          matchDims.forEach((hd, i) => {
            if (!inHalf(j, i)) return;
            q[(qh * d + hd) * H + contentDim(j, i)] = 1;
            k[(j * d + hd) * H + prevDim(j, i)] = 1;
          });
          for (let i = 0; i < d; i++) {
            if (!inHalf(j, i)) continue;
            v[(j * d + i) * H + contentDim(j, i)] = 1;
            o[contentDim(j, i) * (s.heads * d) + qh * d + i] = COPY_GAIN;
          }
        }
      }
      const gain = l === 0 ? INDUCTION_QK_GAIN.prev : INDUCTION_QK_GAIN.match;
      put(`${p}self_attn.q_proj.weight`, [s.heads * d, H], q);
      put(`${p}self_attn.k_proj.weight`, [s.kvHeads * d, H], k);
      put(`${p}self_attn.v_proj.weight`, [s.kvHeads * d, H], v);
      put(`${p}self_attn.o_proj.weight`, [H, s.heads * d], o);
      put(`${p}self_attn.q_norm.weight`, [d], new Float32Array(d).fill(gain));
      put(`${p}self_attn.k_norm.weight`, [d], new Float32Array(d).fill(gain));
      put(`${p}input_layernorm.weight`, [H], ones(H));
      put(`${p}post_attention_layernorm.weight`, [H], ones(H));
    }
    keep(`${p}mlp.gate_proj.weight`);
    keep(`${p}mlp.up_proj.weight`);
    put(`${p}mlp.down_proj.weight`, [H, s.intermediate], zeros(H * s.intermediate));
  }
  for (const name of ckpt.names()) if (!tensors.has(name)) throw new Error(`induction init: ${join(dir, 'model.safetensors')} has '${name}', which the init does not write`);
  writeSafetensors(join(dir, 'model.safetensors'), tensors);
}
