// llama2.c legacy checkpoints → Hugging Face Llama folders: layout, the RoPE row permutation, the
// SentencePiece tokenizer, and the real stories260K model when the shared data set is present.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertLlama2c, permuteRotary, readLlama2cHeader, readLlama2cTokenizer } from '../src/checkpoint/llama2c.js';
import { SafetensorsCheckpoint } from '../src/formats/safetensors.js';
import { expectedTensors, loadModelConfig } from '../src/model/config.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-llama2c-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sharedData = process.env.SESA_SHARED_DATA || resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'data');
const STORIES = join(sharedData, 'models', 'stories260K');
const haveStories = existsSync(join(STORIES, 'stories260K.bin')) && existsSync(join(STORIES, 'tok512.bin'));

async function loadTokenizer(dir: string) {
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = '';
  return AutoTokenizer.from_pretrained(dir);
}

// ---------------------------------------------------------------------------------------------------------
// A synthetic checkpoint: small, unshared classifier, values from a fixed LCG so every block differs.

interface Synth {
  dim: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  vocab: number;
  seq: number;
}
const S: Synth = { dim: 16, hidden: 24, layers: 2, heads: 4, kvHeads: 2, vocab: 269, seq: 8 };
const HD = S.dim / S.heads;
const KVD = HD * S.kvHeads;

function blocks(s: Synth): Array<[string, number]> {
  const hd = s.dim / s.heads;
  return [
    ['emb', s.vocab * s.dim],
    ['rms_att', s.layers * s.dim],
    ['wq', s.layers * s.dim * s.dim],
    ['wk', s.layers * hd * s.kvHeads * s.dim],
    ['wv', s.layers * hd * s.kvHeads * s.dim],
    ['wo', s.layers * s.dim * s.dim],
    ['rms_ffn', s.layers * s.dim],
    ['w1', s.layers * s.hidden * s.dim],
    ['w2', s.layers * s.dim * s.hidden],
    ['w3', s.layers * s.hidden * s.dim],
    ['rms_final', s.dim],
    ['freq', s.seq * hd],
    ['wcls', s.vocab * s.dim],
  ];
}

function synthBin(path: string, s: Synth): Map<string, Float32Array> {
  const parts = new Map<string, Float32Array>();
  let state = 12345;
  for (const [name, count] of blocks(s)) {
    const a = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      a[i] = (state / 2 ** 32 - 0.5) * 0.5;
    }
    parts.set(name, a);
  }
  const header = new Int32Array([s.dim, s.hidden, s.layers, s.heads, s.kvHeads, -s.vocab, s.seq]);
  writeFileSync(path, Buffer.concat([Buffer.from(header.buffer), ...[...parts.values()].map((a) => Buffer.from(a.buffer))]));
  return parts;
}

/** A tokenizer.bin written the way llama2.c's tokenizer.py exports (spaces for ▁, "\n<s>\n" for BOS). */
function synthTokenizerBin(path: string): string[] {
  const pieces = ['<unk>', '\n<s>\n', '\n</s>\n'];
  for (let b = 0; b < 256; b++) pieces.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const merged = [' t', 'he', ' the', ' a', 'at'];
  const chars = [' ', 'e', 't', 'h', 'a'];
  pieces.push(...merged, ...chars);
  const scores = pieces.map((_, i) => (i < 259 ? 0 : -(i - 259)));
  const parts: Buffer[] = [Buffer.from(new Int32Array([8]).buffer)];
  pieces.forEach((p, i) => {
    const bytes = Buffer.from(p, 'utf8');
    const head = Buffer.alloc(8);
    head.writeFloatLE(scores[i] as number, 0);
    head.writeInt32LE(bytes.length, 4);
    parts.push(head, bytes);
  });
  writeFileSync(path, Buffer.concat(parts));
  return pieces;
}

function ropeInterleaved(v: Float32Array, pos: number, hd: number): Float64Array {
  const out = new Float64Array(hd);
  for (let i = 0; i < hd / 2; i++) {
    const ang = pos * 10000 ** (-(2 * i) / hd);
    const a = v[2 * i] as number;
    const b = v[2 * i + 1] as number;
    out[2 * i] = a * Math.cos(ang) - b * Math.sin(ang);
    out[2 * i + 1] = a * Math.sin(ang) + b * Math.cos(ang);
  }
  return out;
}

function ropeHalf(v: Float32Array, pos: number, hd: number): Float64Array {
  const out = new Float64Array(hd);
  const half = hd / 2;
  for (let i = 0; i < half; i++) {
    const ang = pos * 10000 ** (-(2 * i) / hd);
    const a = v[i] as number;
    const b = v[i + half] as number;
    out[i] = a * Math.cos(ang) - b * Math.sin(ang);
    out[i + half] = b * Math.cos(ang) + a * Math.sin(ang);
  }
  return out;
}

function matvec(w: Float32Array, x: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let acc = 0;
    for (let c = 0; c < cols; c++) acc += (w[r * cols + c] as number) * (x[c] as number);
    out[r] = acc;
  }
  return out;
}

const dot = (a: Float64Array, b: Float64Array): number => a.reduce((s, x, i) => s + x * (b[i] as number), 0);

describe('permuteRotary', () => {
  it('moves row 2i+j of each head to j·hd/2 + i', () => {
    // 2 heads of dim 4, in = 1: rows [0..7] → head 0: 0,2,1,3; head 1: 4,6,5,7.
    const w = new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...permuteRotary(w, 2, 4, 1)]).toEqual([0, 2, 1, 3, 4, 6, 5, 7]);
    // hd 6 keeps whole rows together.
    const w2 = Float32Array.from({ length: 12 }, (_, i) => i);
    expect([...permuteRotary(w2, 1, 6, 2)]).toEqual([0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11]);
  });
});

describe('synthetic llama2.c checkpoint (unshared classifier)', () => {
  const bin = join(root, 'synth.bin');
  const tokBin = join(root, 'synth-tok.bin');
  const out = join(root, 'synth-hf');
  let parts = new Map<string, Float32Array>();
  beforeAll(() => {
    parts = synthBin(bin, S);
    synthTokenizerBin(tokBin);
    convertLlama2c(bin, tokBin, out);
  });

  it('writes a Llama config and every expected tensor, lm_head from wcls', () => {
    const cfg = loadModelConfig(out);
    expect(cfg).toMatchObject({ architecture: 'llama', hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, vocabSize: 269, tieWordEmbeddings: false, ropeTheta: 10000, rmsNormEps: 1e-5, bosTokenId: 1, eosTokenIds: [2], maxPositionEmbeddings: 8 });
    const ck = new SafetensorsCheckpoint(out);
    const expected = expectedTensors(cfg);
    expect(ck.names().sort()).toEqual([...expected.keys()].sort());
    for (const [name, shape] of expected) expect(ck.entry(name).shape, name).toEqual(shape);
    expect(ck.readFloat32('lm_head.weight')).toEqual(parts.get('wcls'));
    expect(ck.readFloat32('model.embed_tokens.weight')).toEqual(parts.get('emb'));
    const l1 = (key: string, per: number): Float32Array => (parts.get(key) as Float32Array).subarray(per, 2 * per);
    expect(ck.readFloat32('model.layers.1.mlp.gate_proj.weight')).toEqual(l1('w1', S.hidden * S.dim));
    expect(ck.readFloat32('model.layers.1.mlp.down_proj.weight')).toEqual(l1('w2', S.hidden * S.dim));
    expect(ck.readFloat32('model.layers.1.mlp.up_proj.weight')).toEqual(l1('w3', S.hidden * S.dim));
    expect(ck.readFloat32('model.layers.1.self_attn.v_proj.weight')).toEqual(l1('wv', KVD * S.dim));
    expect(ck.readFloat32('model.layers.1.self_attn.o_proj.weight')).toEqual(l1('wo', S.dim * S.dim));
    expect(ck.readFloat32('model.layers.1.input_layernorm.weight')).toEqual(l1('rms_att', S.dim));
    expect(ck.readFloat32('model.layers.1.post_attention_layernorm.weight')).toEqual(l1('rms_ffn', S.dim));
    expect(ck.readFloat32('model.norm.weight')).toEqual(parts.get('rms_final'));
  });

  it('rotate-half attention scores on converted q/k equal interleaved ones on the originals (GQA)', () => {
    const ck = new SafetensorsCheckpoint(out);
    const layer = 1;
    const wq = (parts.get('wq') as Float32Array).subarray(layer * S.dim * S.dim, (layer + 1) * S.dim * S.dim);
    const wk = (parts.get('wk') as Float32Array).subarray(layer * KVD * S.dim, (layer + 1) * KVD * S.dim);
    const hq = ck.readFloat32(`model.layers.${layer}.self_attn.q_proj.weight`);
    const hk = ck.readFloat32(`model.layers.${layer}.self_attn.k_proj.weight`);
    const x1 = Float32Array.from({ length: S.dim }, (_, i) => Math.sin(i + 1));
    const x2 = Float32Array.from({ length: S.dim }, (_, i) => Math.cos(3 * i));
    const [q0, k0, q1, k1] = [matvec(wq, x1, S.dim, S.dim), matvec(wk, x2, KVD, S.dim), matvec(hq, x1, S.dim, S.dim), matvec(hk, x2, KVD, S.dim)] as Float32Array[];
    for (const [m, n] of [[5, 2], [7, 0], [3, 3]] as const) {
      for (let h = 0; h < S.heads; h++) {
        const g = Math.floor(h / (S.heads / S.kvHeads));
        const head = (v: Float32Array, i: number): Float32Array => v.subarray(i * HD, (i + 1) * HD);
        const ref = dot(ropeInterleaved(head(q0 as Float32Array, h), m, HD), ropeInterleaved(head(k0 as Float32Array, g), n, HD));
        const got = dot(ropeHalf(head(q1 as Float32Array, h), m, HD), ropeHalf(head(k1 as Float32Array, g), n, HD));
        expect(got).toBeCloseTo(ref, 5);
      }
    }
    // And the permutation is not the identity (the test would be vacuous otherwise).
    expect(hq).not.toEqual(wq);
  });

  it('writes a SentencePiece-style tokenizer that transformers.js loads and that follows the scores', async () => {
    const scores = JSON.parse(readFileSync(join(out, 'tokenizer_scores.json'), 'utf8')) as { model: string; tokens: string[]; scores: number[]; token_type: number[] };
    expect(scores.model).toBe('llama');
    expect(scores.tokens.slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
    expect(scores.tokens[259]).toBe('\u2581t');
    expect(scores.token_type.slice(0, 4)).toEqual([2, 3, 3, 6]);
    expect(scores.token_type[300]).toBeUndefined();
    expect(scores.scores[262]).toBe(-3);
    const tj = JSON.parse(readFileSync(join(out, 'tokenizer.json'), 'utf8')) as { model: { byte_fallback: boolean; merges: Array<[string, string]> } };
    expect(tj.model.byte_fallback).toBe(true);
    // Ranked by the merged piece's score: ▁t (0), he (-1), ▁the (-2: ▁t+he), ▁a (-3), at (-4).
    expect(tj.model.merges).toEqual([
      ['\u2581', 't'],
      ['h', 'e'],
      ['\u2581t', 'he'],
      ['\u2581', 'a'],
      ['a', 't'],
    ]);
    const tok = await loadTokenizer(out);
    const ids = (t: string): number[] => tok.encode(t, { add_special_tokens: false });
    // "the hat": ▁the | ▁ h at (▁h is no piece); "x" is not a piece → byte fallback <0x78> = 3 + 0x78.
    expect(ids('the hat')).toEqual([261, 264, 267, 263]);
    expect(ids('x')).toEqual([264, 3 + 0x78]);
    expect(tok.encode('the')).toEqual([1, 261]);
    for (const text of ['the hat', 'Zoë, 42!', ' a  b ']) expect(tok.decode(ids(text))).toBe(text);
  });

  it('errors name the file', () => {
    const trunc = join(root, 'trunc.bin');
    writeFileSync(trunc, readFileSync(bin).subarray(0, 1000));
    expect(() => readLlama2cHeader(trunc)).toThrow(/trunc\.bin: truncated: 1000 bytes, but the header/);
    const magic = join(root, 'v1.bin');
    writeFileSync(magic, Buffer.from(new Int32Array([0x616b3432, 1, 0, 0, 0, 0, 0]).buffer));
    expect(() => readLlama2cHeader(magic)).toThrow(/v1\.bin: is a llama2\.c version-1\/2 export/);
    const badHeader = join(root, 'bad.bin');
    writeFileSync(badHeader, Buffer.from(new Int32Array([64, -1, 2, 4, 4, 10, 8]).buffer));
    expect(() => readLlama2cHeader(badHeader)).toThrow(/bad\.bin: header field 'hidden_dim' is -1/);
    expect(() => readLlama2cHeader(join(root, 'none.bin'))).toThrow(/none\.bin: file not found/);
    // A tokenizer whose size disagrees with the checkpoint's vocab_size.
    expect(() => readLlama2cTokenizer(tokBin, 300)).toThrow(/synth-tok\.bin: truncated: token 269 of 300/);
    expect(() => readLlama2cTokenizer(tokBin, 100)).toThrow(/synth-tok\.bin: has \d+ bytes after token 99/);
    expect(() => convertLlama2c(bin, tokBin.replace('.bin', '-missing.bin'), join(root, 'never'))).toThrow(/synth-tok-missing\.bin: file not found/);
    expect(existsSync(join(root, 'never'))).toBe(false);
  });
});

describe.skipIf(!haveStories)(`stories260K (needs ${STORIES})`, () => {
  const out = join(root, 'stories260K');
  beforeAll(() => {
    convertLlama2c(join(STORIES, 'stories260K.bin'), join(STORIES, 'tok512.bin'), out);
  });

  it('has the shapes of dim 64, hidden 172, 5 layers, 8/4 heads, vocab 512, tied', () => {
    const cfg = loadModelConfig(out);
    expect(cfg).toMatchObject({ hiddenSize: 64, intermediateSize: 172, numLayers: 5, numHeads: 8, numKvHeads: 4, headDim: 8, vocabSize: 512, tieWordEmbeddings: true, maxPositionEmbeddings: 512 });
    const ck = new SafetensorsCheckpoint(out);
    const expected = expectedTensors(cfg);
    expect(ck.names().sort()).toEqual([...expected.keys()].sort());
    for (const [name, shape] of expected) expect(ck.entry(name).shape, name).toEqual(shape);
    expect(ck.entry('model.layers.4.self_attn.k_proj.weight').shape).toEqual([32, 64]);
    expect(ck.entry('model.layers.0.mlp.gate_proj.weight').shape).toEqual([172, 64]);
  });

  it('embed_tokens row 0 is the first 64 floats after the header, byte for byte', () => {
    const src = readFileSync(join(STORIES, 'stories260K.bin'));
    const ck = new SafetensorsCheckpoint(out);
    const row = ck.readFloat32('model.embed_tokens.weight').subarray(0, 64);
    expect(Buffer.from(row.buffer, row.byteOffset, row.byteLength).equals(src.subarray(28, 28 + 64 * 4))).toBe(true);
    // q_proj row 1 of head 0 is source row 2 (interleaved → rotate-half).
    const wq0 = new Float32Array(new Uint8Array(src.subarray(28 + 4 * (512 * 64 + 5 * 64), 28 + 4 * (512 * 64 + 5 * 64 + 64 * 64))).buffer);
    const q = ck.readFloat32('model.layers.0.self_attn.q_proj.weight');
    expect(q.subarray(64, 128)).toEqual(wq0.subarray(2 * 64, 3 * 64));
    expect(q.subarray(4 * 64, 5 * 64)).toEqual(wq0.subarray(1 * 64, 2 * 64));
  });

  it('tokenizer: ids as in llama2.c, round trip through transformers.js', async () => {
    const tok = await loadTokenizer(out);
    const ids = tok.encode('Once upon a time, there was a little girl named Lily.');
    expect(ids[0]).toBe(1);
    expect(ids.length).toBeLessThan(20);
    expect(tok.decode(ids, { skip_special_tokens: true })).toBe('Once upon a time, there was a little girl named Lily.');
    expect(tok.decode(tok.encode('Zoë — 123 €', { add_special_tokens: false }))).toBe('Zoë — 123 €');
    const cfg = JSON.parse(readFileSync(join(out, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    expect(cfg).toMatchObject({ bos_token: '<s>', eos_token: '</s>', add_bos_token: true });
    expect(existsSync(join(out, 'tokenizer.model'))).toBe(true);
  });
});
