// GGUF writer/reader round trips and the HF → GGUF export mapping (no llama.cpp here; see
// reference-llamacpp.test.ts for loading the exports).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import yargs from 'yargs';
import { loadNodeLlamaCpp, llamaCppUnavailableReason } from '../src/llama-cpp/binding.js';
import { gv, readGguf, readGgufTensor, writeGguf, ggufMeta, type GgufValue } from '../src/formats/gguf.js';
import { exportGguf, llama3RopeFactors, permuteQkForNormRope, unpermuteQkForNormRope } from '../src/checkpoint/export-gguf.js';
import { f16ToF32, f32ToF16, SafetensorsCheckpoint } from '../src/formats/safetensors.js';
import { loadModelConfig } from '../src/model/config.js';
import { command as exportCommand } from '../src/cli/export.js';
import { writeTinyHf } from './helpers/tiny-hf.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-gguf-'));
const llamaCppMissing = await llamaCppUnavailableReason();
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('GGUF writer and reader', () => {
  it('round-trips metadata of every value type and F32/F16 tensors', () => {
    const path = join(root, 'roundtrip.gguf');
    const meta: Array<[string, GgufValue]> = [
      ['general.architecture', gv.string('qwen3')],
      ['t.u8', gv.u8(255)],
      ['t.i8', gv.i8(-128)],
      ['t.u16', gv.u16(65535)],
      ['t.i16', gv.i16(-32768)],
      ['t.u32', gv.u32(4_000_000_000)],
      ['t.i32', gv.i32(-2_000_000_000)],
      ['t.f32', gv.f32(1e-6)],
      ['t.f64', gv.f64(Math.PI)],
      ['t.u64', gv.u64(2n ** 60n)],
      ['t.i64', gv.i64(-(2n ** 60n))],
      ['t.bool', gv.bool(true)],
      ['t.unicode', gv.string('héllo 🦙 Ġ▁')],
      ['t.strings', gv.strings(['a', '', 'Ġthe', '<|im_end|>', '日本'])],
      ['t.i32s', gv.i32s([1, -2, 3])],
      ['t.f32s', gv.f32s(new Float32Array([0.5, -1.25]))],
      ['t.bools', gv.bools([true, false])],
      ['t.empty', gv.strings([])],
    ];
    const a = Float32Array.from({ length: 6 }, (_, i) => i - 2.5); // torch [2, 3]
    const b = Float32Array.from({ length: 5 }, (_, i) => 0.1 * i + 1 / 3);
    const c = new Float32Array([7]);
    const size = writeGguf(path, meta, [
      { name: 'a', type: 'F32', dims: [3, 2], data: a },
      { name: 'b', type: 'F16', dims: [5], data: () => b },
      { name: 'c', type: 'F32', dims: [1], data: c },
    ]);
    expect(readdirSync(root).filter((f) => f.endsWith('.tmp'))).toEqual([]);

    const f = readGguf(path);
    expect(f.version).toBe(3);
    expect(f.alignment).toBe(32);
    expect(ggufMeta(f, 'general.alignment')).toBe(32);
    for (const [key, v] of meta) {
      const got = f.metadata.get(key);
      expect(got?.type, key).toBe(v.type);
      if (v.type === 'f32') expect(got?.value).toBeCloseTo(v.value, 12);
      else if (v.type === 'array') {
        expect(got?.type === 'array' && got.itemType).toBe(v.itemType);
        expect(Array.from(got?.value as ArrayLike<unknown>)).toEqual(Array.from(v.value as ArrayLike<unknown>));
      } else expect(got?.value, key).toEqual(v.value);
    }
    const ta = f.tensors.get('a');
    expect(ta?.dims).toEqual([3, 2]);
    expect(ta?.type).toBe('F32');
    for (const t of f.tensors.values()) expect((t.offset - f.dataStart) % 32).toBe(0);
    expect(f.tensors.get('c')!.offset + 4).toBeLessThanOrEqual(size);
    expect(Array.from(readGgufTensor(f, 'a'))).toEqual(Array.from(a));
    expect(Array.from(readGgufTensor(f, 'b'))).toEqual(Array.from(f16ToF32(f32ToF16(b))));
    expect(Array.from(readGgufTensor(f, 'c'))).toEqual([7]);
  });

  it.skipIf(llamaCppMissing !== undefined)(`agrees with node-llama-cpp's own GGUF parser (an independent reader)${llamaCppMissing ? ` [skipped: ${llamaCppMissing}]` : ''}`, async () => {
    const path = join(root, 'roundtrip.gguf');
    const mine = readGguf(path);
    const theirs = await (await loadNodeLlamaCpp()).readGgufFileInfo(path, { readTensorInfo: true });
    expect(theirs.version).toBe(3);
    const md = theirs.metadata as unknown as Record<string, Record<string, unknown>>;
    expect(md.general?.architecture).toBe('qwen3');
    expect(md.t?.strings).toEqual(['a', '', 'Ġthe', '<|im_end|>', '日本']);
    expect(md.t?.unicode).toBe('héllo 🦙 Ġ▁');
    expect(md.t?.i32s).toEqual([1, -2, 3]);
    expect(md.t?.u32).toBe(4_000_000_000);
    expect(md.t?.bool).toBe(true);
    const infos = theirs.fullTensorInfo ?? [];
    expect(infos.map((t) => t.name)).toEqual([...mine.tensors.keys()]);
    for (const t of infos) {
      const m = mine.tensors.get(t.name)!;
      expect(t.dimensions.map(Number), t.name).toEqual(m.dims);
      expect(Number(t.fileOffset), t.name).toBe(m.offset);
    }
  });

  it('stores f16 values bit-exactly, rounding to nearest even', () => {
    const path = join(root, 'f16.gguf');
    const vals = new Float32Array([0, -0, 1, -2, 65504, 1e-7, 6.103515625e-5, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 0.1, 1e6]);
    writeGguf(path, [['general.architecture', gv.string('llama')]], [{ name: 'h', type: 'F16', dims: [vals.length], data: vals }]);
    const f = readGguf(path);
    expect(f.tensors.get('h')?.type).toBe('F16');
    const back = readGgufTensor(f, 'h');
    expect(back[2]).toBe(1);
    expect(back[3]).toBe(-2);
    expect(back[4]).toBe(65504);
    expect(back[6]).toBe(6.103515625e-5);
    expect(back[7]).toBe(1); // tie → even
    expect(back[8]).toBe(1 + 2 * 2 ** -10); // tie → even (up)
    expect(Math.abs((back[9] as number) - 0.1)).toBeLessThan(1e-4);
    expect(back[10]).toBe(Infinity);
    expect(Math.abs(back[5] as number)).toBeLessThan(2e-7);
  });

  it('rejects a bad alignment and duplicate keys with clear errors', () => {
    const path = join(root, 'bad.gguf');
    expect(() => writeGguf(path, [['k', gv.u32(1)], ['k', gv.u32(2)]], [])).toThrow(/'k' is given twice/);
    expect(() => writeGguf(path, [], [], { alignment: 24 })).toThrow(/power of two/);
    expect(() => writeGguf(path, [], [{ name: 'x', type: 'F32', dims: [4], data: new Float32Array(3) }])).toThrow(/'x': 3 values/);
  });
});

describe('llama q/k permutation', () => {
  it('is undone by its inverse, and pairs (i, i+hd/2) become adjacent', () => {
    const hd = 8;
    const rows = 3 * hd;
    const cols = 5;
    const w = Float32Array.from({ length: rows * cols }, (_, i) => i);
    const p = permuteQkForNormRope(w, rows, cols, hd);
    expect(Array.from(unpermuteQkForNormRope(p, rows, cols, hd))).toEqual(Array.from(w));
    // head 1, i = 2: HF rows 8+2 and 8+2+4 land on rows 8+4 and 8+5.
    expect(p[(8 + 4) * cols]).toBe(w[(8 + 2) * cols]);
    expect(p[(8 + 5) * cols]).toBe(w[(8 + 6) * cols]);
    // Biases (cols = 1) too.
    const bias = Float32Array.from({ length: rows }, (_, i) => i * 0.5);
    expect(Array.from(unpermuteQkForNormRope(permuteQkForNormRope(bias, rows, 1, hd), rows, 1, hd))).toEqual(Array.from(bias));
  });
});

describe('HF → GGUF export', () => {
  it('exports a tiny Llama with permuted q/k, rope_freqs, untied output and an SPM vocab', async () => {
    const dir = join(root, 'llama');
    const ropeScaling = { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 };
    const tiny = writeTinyHf(dir, { arch: 'llama', hidden: 48, heads: 4, kvHeads: 2, layers: 1, ff: 96, vocab: 300, tie: false, seed: 3, ropeScaling, tokenizer: 'spm', attentionBias: true });
    const out = join(root, 'llama.gguf');
    const res = await exportGguf(dir, out, { dtype: 'f32' });
    expect(res.tokenizer).toBe('llama');
    expect(res.paddedTokens).toBe(300 - tiny.definedTokens);
    const f = readGguf(out);
    expect(ggufMeta(f, 'general.architecture')).toBe('llama');
    expect(ggufMeta(f, 'llama.rope.dimension_count')).toBe(12);
    expect(ggufMeta(f, 'llama.attention.key_length')).toBe(12);
    expect(ggufMeta(f, 'llama.vocab_size')).toBe(300);
    expect(ggufMeta(f, 'tokenizer.ggml.model')).toBe('llama');
    expect(ggufMeta(f, 'tokenizer.ggml.add_bos_token')).toBe(true);
    expect(ggufMeta(f, 'tokenizer.ggml.bos_token_id')).toBe(1);
    expect(ggufMeta(f, 'tokenizer.ggml.eos_token_id')).toBe(2);
    const types = ggufMeta(f, 'tokenizer.ggml.token_type') as number[];
    const tokens = ggufMeta(f, 'tokenizer.ggml.tokens') as string[];
    expect(tokens.length).toBe(300);
    expect(types.slice(0, 4)).toEqual([2, 3, 3, 6]);
    expect(types[259]).toBe(1);
    expect(tokens[299]).toBe('[PAD299]');
    expect(types[299]).toBe(5);
    expect((ggufMeta(f, 'tokenizer.ggml.scores') as number[]).length).toBe(300);

    const ck = new SafetensorsCheckpoint(dir);
    const q = ck.readFloat32('model.layers.0.self_attn.q_proj.weight');
    const k = ck.readFloat32('model.layers.0.self_attn.k_proj.weight');
    const kb = ck.readFloat32('model.layers.0.self_attn.k_proj.bias');
    expect(f.tensors.get('blk.0.attn_q.weight')?.dims).toEqual([48, 48]);
    expect(f.tensors.get('blk.0.attn_k.weight')?.dims).toEqual([48, 24]);
    expect(Array.from(unpermuteQkForNormRope(readGgufTensor(f, 'blk.0.attn_q.weight'), 48, 48, 12))).toEqual(Array.from(q));
    expect(Array.from(unpermuteQkForNormRope(readGgufTensor(f, 'blk.0.attn_k.weight'), 24, 48, 12))).toEqual(Array.from(k));
    expect(Array.from(unpermuteQkForNormRope(readGgufTensor(f, 'blk.0.attn_k.bias'), 24, 1, 12))).toEqual(Array.from(kb));
    expect(Array.from(readGgufTensor(f, 'blk.0.attn_v.weight'))).toEqual(Array.from(ck.readFloat32('model.layers.0.self_attn.v_proj.weight')));
    expect(f.tensors.has('output.weight')).toBe(true);
    expect(f.tensors.has('blk.0.attn_output.bias')).toBe(true);
    const rf = readGgufTensor(f, 'rope_freqs.weight');
    expect(Array.from(rf)).toEqual(Array.from(llama3RopeFactors(loadModelConfig(dir))));
    expect(rf[0]).toBe(1);
    expect(rf[5]).toBe(8);
  });

  it('exports a tied Qwen3 in f16 with F32 norms, no output.weight, padded byte-level vocab', async () => {
    const dir = join(root, 'qwen3');
    const tiny = writeTinyHf(dir, { arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, layers: 1, ff: 96, vocab: 320, tie: true, seed: 5, tokenizer: 'bytebpe' });
    const out = join(root, 'qwen3-f16.gguf');
    const res = await exportGguf(dir, out, { dtype: 'f16' });
    expect(res.paddedTokens).toBe(320 - tiny.definedTokens);
    const f = readGguf(out);
    expect(ggufMeta(f, 'general.file_type')).toBe(1);
    expect(ggufMeta(f, 'qwen3.attention.key_length')).toBe(32);
    expect(ggufMeta(f, 'qwen3.rope.freq_base')).toBe(1_000_000);
    expect(ggufMeta(f, 'tokenizer.ggml.model')).toBe('gpt2');
    expect(ggufMeta(f, 'tokenizer.ggml.pre')).toBe('qwen2');
    expect(ggufMeta(f, 'tokenizer.ggml.add_bos_token')).toBe(false);
    const base = tiny.definedTokens - 4;
    expect(ggufMeta(f, 'tokenizer.ggml.eos_token_id')).toBe(base + 2);
    expect(ggufMeta(f, 'tokenizer.ggml.padding_token_id')).toBe(base);
    expect(ggufMeta(f, 'tokenizer.ggml.bos_token_id')).toBe(base);
    const types = ggufMeta(f, 'tokenizer.ggml.token_type') as number[];
    expect(types.slice(base, base + 5)).toEqual([3, 3, 3, 4, 5]);
    expect((ggufMeta(f, 'tokenizer.ggml.merges') as string[])[0]).toBe('Ġ t');
    expect(typeof ggufMeta(f, 'tokenizer.chat_template')).toBe('string');
    expect(f.tensors.has('output.weight')).toBe(false);
    expect(f.tensors.get('token_embd.weight')?.type).toBe('F16');
    expect(f.tensors.get('blk.0.attn_q.weight')?.type).toBe('F16');
    expect(f.tensors.get('blk.0.attn_q.weight')?.dims).toEqual([64, 128]);
    expect(f.tensors.get('blk.0.attn_q_norm.weight')?.type).toBe('F32');
    expect(f.tensors.get('blk.0.attn_norm.weight')?.type).toBe('F32');
    expect(f.tensors.get('output_norm.weight')?.type).toBe('F32');
    const ck = new SafetensorsCheckpoint(dir);
    const qn = ck.readFloat32('model.layers.0.self_attn.q_norm.weight');
    expect(Array.from(readGgufTensor(f, 'blk.0.attn_q_norm.weight'))).toEqual(Array.from(qn));
    const q = ck.readFloat32('model.layers.0.self_attn.q_proj.weight');
    expect(Array.from(readGgufTensor(f, 'blk.0.attn_q.weight'))).toEqual(Array.from(f16ToF32(f32ToF16(q))));
  });

  it('exports Q8_0 matrices as ggml quantizes them: an f16 scale max|block|/127 per 32 values, each value within half a step', async () => {
    const dir = join(root, 'qwen3-q8');
    writeTinyHf(dir, { arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, layers: 1, ff: 96, vocab: 320, tie: true, seed: 6, tokenizer: 'bytebpe' });
    const out = join(root, 'qwen3-q8_0.gguf');
    const res = await exportGguf(dir, out, { dtype: 'q8_0' });
    expect(res.dtype).toBe('q8_0');
    const f = readGguf(out);
    expect(ggufMeta(f, 'general.file_type')).toBe(7); // MOSTLY_Q8_0
    const info = f.tensors.get('blk.0.attn_q.weight');
    expect(info?.type).toBe('Q8_0');
    expect(info?.byteSize).toBe((64 * 128 * 34) / 32);
    expect(f.tensors.get('blk.0.attn_norm.weight')?.type).toBe('F32');
    const q = new SafetensorsCheckpoint(dir).readFloat32('model.layers.0.self_attn.q_proj.weight');
    const back = readGgufTensor(f, 'blk.0.attn_q.weight');
    expect(back.length).toBe(q.length);
    for (let b = 0; b < q.length / 32; b++) {
      const block = Array.from(q.subarray(b * 32, b * 32 + 32));
      const max = Math.max(...block.map(Math.abs));
      const d = f16ToF32(f32ToF16(Float32Array.of(max / 127)))[0] as number;
      block.forEach((v, j) => {
        // q is rounded with the f32 scale, then stored against its f16 rounding (ggml's reference does the same).
        expect(Math.abs((back[b * 32 + j] as number) - v)).toBeLessThanOrEqual(d / 2 + 127 * Math.abs(d - max / 127) + 1e-9);
        // The value read back is d times a whole step count in [-127, 127].
        const steps = (back[b * 32 + j] as number) / d;
        expect(Math.abs(steps - Math.round(steps))).toBeLessThan(1e-4);
        expect(Math.abs(steps)).toBeLessThanOrEqual(127 + 1e-4);
      });
    }
    // ggml's arithmetic on a bf16 tie (float32 reciprocal and product, roundf): ±0.04541015625 in a block of
    // max 0.0908203125 is stored as ±64 (float64 arithmetic would give ±63).
    const tiePath = join(root, 'tie-q8.gguf');
    const tie = new Float32Array(32);
    tie[0] = 0.0908203125;
    tie[1] = 0.04541015625;
    tie[2] = -0.04541015625;
    writeGguf(tiePath, [], [{ name: 't', type: 'Q8_0', dims: [32], data: tie }]);
    const tf8 = readGguf(tiePath);
    const raw = readFileSync(tiePath).subarray(tf8.dataStart, tf8.dataStart + 34);
    expect([raw.readInt8(2), raw.readInt8(3), raw.readInt8(4)]).toEqual([127, 64, -64]);
    // Q8_0 needs whole blocks along the innermost dim.
    expect(() => writeGguf(join(root, 'bad-q8.gguf'), [], [{ name: 't', type: 'Q8_0', dims: [48, 2], data: new Float32Array(96) }])).toThrow(/Q8_0 needs the innermost dim to be a multiple of 32, got dims \[48,2\]/);
  });

  it('names the file and tensor when the checkpoint does not match config.json', async () => {
    const dir = join(root, 'broken');
    writeTinyHf(dir, { arch: 'qwen2', hidden: 32, heads: 4, kvHeads: 2, layers: 1, ff: 64, vocab: 300, tie: true, seed: 1, tokenizer: 'bytebpe' });
    const { writeFileSync, readFileSync } = await import('node:fs');
    const cfgPath = join(dir, 'config.json');
    const raw = JSON.parse(readFileSync(cfgPath, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfgPath, JSON.stringify({ ...raw, intermediate_size: 65 }));
    await expect(exportGguf(dir, join(root, 'broken.gguf'))).rejects.toThrow(/model\.safetensors: tensor 'model\.layers\.0\.mlp\.gate_proj\.weight' has shape \[64,32\], expected \[65,32\]/);
  });

  it('`sesa-train export --format gguf --json` writes the file and prints a summary', async () => {
    const dir = join(root, 'cli-model');
    writeTinyHf(dir, { arch: 'qwen3', hidden: 32, heads: 2, kvHeads: 1, headDim: 16, layers: 1, ff: 64, vocab: 300, tie: true, seed: 2, tokenizer: 'bytebpe' });
    const out = join(root, 'cli.gguf');
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      await yargs(['export', '--model', dir, '--format', 'gguf', '--out', out, '--dtype', 'f16', '--json']).command(exportCommand).strict().parseAsync();
    } finally {
      spy.mockRestore();
    }
    const summary = JSON.parse(lines.join('')) as Record<string, unknown>;
    expect(summary).toMatchObject({ format: 'gguf', architecture: 'qwen3', dtype: 'f16', path: out, vocabSize: 300, tokenizer: 'gpt2' });
    expect(readGguf(out).tensors.get('token_embd.weight')?.type).toBe('F16');
  });
});
