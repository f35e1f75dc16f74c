// safetensors reading/writing and the half-precision conversions, against values worked out by hand.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  bf16ToF32,
  encodeSafetensors,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  HALF_CHUNK,
  SafetensorsCheckpoint,
  SafetensorsFile,
  writeSafetensors,
} from '../src/formats/safetensors.js';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';

const dir = mkdtempSync(join(tmpdir(), 'sesa-safetensors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** f32 values from raw bit patterns, so edge cases are exact. */
function fromBits(bits: number[]): Float32Array {
  return new Float32Array(new Uint32Array(bits).buffer);
}
const hex = (xs: Iterable<number>): string[] => [...xs].map((x) => `0x${x.toString(16).padStart(4, '0')}`);

describe('f32 → bf16 (round to nearest even)', () => {
  // [f32 bits, expected bf16 bits, why]
  const cases: Array<[number, number, string]> = [
    [0x3f800000, 0x3f80, '1.0 exact'],
    [0xbfc00000, 0xbfc0, '-1.5 exact'],
    [0x3f808000, 0x3f80, '1 + 2^-8: tie, 0x3f80 is even → down'],
    [0x3f818000, 0x3f82, '1 + 3·2^-8: tie, 0x3f81 is odd → up'],
    [0x3f808001, 0x3f81, 'just above the tie → up'],
    [0x3f807fff, 0x3f80, 'just below the tie → down'],
    [0x00000001, 0x0000, 'smallest f32 subnormal → +0'],
    [0x00008000, 0x0000, 'subnormal tie to even (0)'],
    [0x00018000, 0x0002, 'subnormal tie to even (2)'],
    [0x80000000, 0x8000, '-0 keeps its sign'],
    [0x7f800000, 0x7f80, '+inf'],
    [0xff800000, 0xff80, '-inf'],
    [0x7fc00000, 0x7fc0, 'quiet NaN'],
    [0x7f800001, 0x7fc0, 'signalling NaN with only low bits stays NaN (not inf)'],
    [0x7f7fffff, 0x7f80, 'max f32 overflows to +inf'],
    [0x7f7f7fff, 0x7f7f, 'just below the overflow tie stays finite'],
    [0x7f7f8000, 0x7f80, 'tie at the top, 0x7f7f odd → up to inf'],
  ];
  it.each(cases)('%s → %s (%s)', (input, expected) => {
    expect(hex(f32ToBf16(fromBits([input])))).toEqual(hex([expected]));
  });

  it('bf16 → f32 is exact (bits << 16)', () => {
    const back = bf16ToF32(new Uint16Array([0x3f80, 0xbfc0, 0x0001, 0x7f80, 0xff80]));
    expect([...new Uint32Array(back.buffer)]).toEqual([0x3f800000, 0xbfc00000, 0x00010000, 0x7f800000, 0xff800000]);
    expect(Number.isNaN(bf16ToF32(new Uint16Array([0x7fc0]))[0])).toBe(true);
  });
});

describe('f32 → f16 (round to nearest even)', () => {
  // [f32 value (exactly representable), expected f16 bits, why]
  const cases: Array<[number, number, string]> = [
    [1, 0x3c00, '1.0 exact'],
    [-2, 0xc000, '-2 exact'],
    [1 + 2 ** -11, 0x3c00, 'tie, 0x3c00 even → down'],
    [1 + 3 * 2 ** -11, 0x3c02, 'tie, 0x3c01 odd → up'],
    [1 + 2 ** -11 + 2 ** -20, 0x3c01, 'just above the tie → up'],
    [2 - 2 ** -11, 0x4000, 'tie with mantissa carry into the exponent → 2.0'],
    [65504, 0x7bff, 'max f16'],
    [65519, 0x7bff, 'below the overflow tie stays finite'],
    [65520, 0x7c00, 'overflow tie rounds (to even) to +inf'],
    [1e6, 0x7c00, 'overflow → +inf'],
    [-1e6, 0xfc00, 'overflow → -inf'],
    [2 ** -14, 0x0400, 'smallest normal'],
    [2 ** -24, 0x0001, 'smallest subnormal'],
    [2 ** -25, 0x0000, 'half the smallest subnormal: tie to even → 0'],
    [3 * 2 ** -25, 0x0002, '1.5 × smallest subnormal: tie to even → 2'],
    [2 ** -25 + 2 ** -35, 0x0001, 'just above the subnormal tie → up'],
    [2 ** -26, 0x0000, 'underflow → 0'],
    [1023.5 * 2 ** -24, 0x0400, 'subnormal tie that carries into the smallest normal'],
    [-(2 ** -30), 0x8000, 'negative underflow → -0'],
    [Number.POSITIVE_INFINITY, 0x7c00, '+inf'],
    [Number.NEGATIVE_INFINITY, 0xfc00, '-inf'],
    [Number.NaN, 0x7e00, 'NaN → quiet NaN'],
  ];
  it.each(cases)('%s → %s (%s)', (input, expected) => {
    expect(hex(f32ToF16(new Float32Array([input])))).toEqual(hex([expected]));
  });

  it('f16 → f32 is exact, including subnormals', () => {
    expect([...f16ToF32(new Uint16Array([0x3c00, 0x0001, 0x03ff, 0x7bff, 0xfc00, 0x8000]))]).toEqual([1, 2 ** -24, 1023 * 2 ** -24, 65504, Number.NEGATIVE_INFINITY, -0]);
    expect(Number.isNaN(f16ToF32(new Uint16Array([0x7e00]))[0])).toBe(true);
  });
});

describe('write → read round trip', () => {
  const path = join(dir, 'rt.safetensors');
  const f32 = new Float32Array([1.5, -2.25, 3.1415927, 0, -0, 1e-40, 65504, 7]);
  const halves = new Float32Array([1, -0.5, 0.333251953125, 2 ** -24, 1024, -65504]);
  const ints = new Int32Array([0, -1, 2147483647, -2147483648, 42, 7]);
  writeSafetensors(
    path,
    {
      a_f32: { dtype: 'F32', shape: [2, 4], data: f32 },
      b_bf16: { dtype: 'BF16', shape: [3, 2], data: halves },
      c_f16: { dtype: 'F16', shape: [6], data: halves },
      d_i32: { dtype: 'I32', shape: [2, 3], data: ints },
      e_empty: { dtype: 'F32', shape: [0, 3], data: new Float32Array(0) },
    },
    { format: 'pt', note: 'hello' },
  );

  it('keeps dtypes, shapes, values and metadata', () => {
    const f = new SafetensorsFile(path);
    expect(f.metadata).toEqual({ format: 'pt', note: 'hello' });
    expect(f.entry('a_f32')).toMatchObject({ dtype: 'F32', shape: [2, 4] });
    expect(f.entry('b_bf16')).toMatchObject({ dtype: 'BF16', shape: [3, 2] });
    expect(f.entry('c_f16')).toMatchObject({ dtype: 'F16', shape: [6] });
    expect(f.entry('d_i32')).toMatchObject({ dtype: 'I32', shape: [2, 3] });
    expect([...f.readFloat32('a_f32')]).toEqual([...f32]);
    // These values are exact in f16; in bf16 only some are (0.3332… and -65504 round).
    expect([...f.readFloat32('c_f16')]).toEqual([...halves]);
    expect([...f.readFloat32('b_bf16')]).toEqual([...bf16ToF32(f32ToBf16(halves))]);
    expect([...f.readFloat32('b_bf16')].slice(0, 2)).toEqual([1, -0.5]);
    const raw = f.readBytes('d_i32');
    expect([...new Int32Array(new Uint8Array(raw).buffer)]).toEqual([...ints]);
    expect(f.readFloat32('e_empty').length).toBe(0);
    expect(() => f.readFloat32('d_i32')).toThrow(/d_i32.*not a float/);
  });

  it('reads a float tensor into given bytes at any offset, as readFloat32 gives it, and refuses a target of another size', () => {
    const f = new SafetensorsFile(path);
    for (const name of ['a_f32', 'b_bf16', 'c_f16']) {
      const want = f.readFloat32(name);
      // Three bytes in: an offset no f32 view could take.
      const buffer = new Uint8Array(3 + want.byteLength + 2).fill(0xab);
      f.readFloat32Into(name, buffer.subarray(3, 3 + want.byteLength));
      expect([...buffer.subarray(0, 3), ...buffer.subarray(3 + want.byteLength)]).toEqual([0xab, 0xab, 0xab, 0xab, 0xab]);
      const back = new Float32Array(buffer.slice(3, 3 + want.byteLength).buffer);
      expect([...back], name).toEqual([...want]);
    }
    expect(() => f.readFloat32Into('a_f32', new Uint8Array(31))).toThrow(/a_f32.*8 values, target of 31 bytes/);
    expect(() => f.readFloat32Into('d_i32', new Uint8Array(24))).toThrow(/d_i32.*not a float/);
  });

  it('pads the header to 8 bytes and is byte-stable', () => {
    const bytes = readFileSync(path);
    const headerLen = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLen) % 8).toBe(0);
    const again = encodeSafetensors(
      { x: { dtype: 'F32', shape: [2], data: new Float32Array([1, 2]) } },
      { format: 'pt' },
    );
    expect(encodeSafetensors({ x: { dtype: 'F32', shape: [2], data: new Float32Array([1, 2]) } }, { format: 'pt' }).equals(again)).toBe(true);
  });
});

describe('tensors given as functions', () => {
  it('are drawn once each, as they are written, and give the same file as arrays', () => {
    const order: string[] = [];
    const lazy = (name: string, values: Float32Array) => () => {
      order.push(name);
      return values;
    };
    const a = new Float32Array([1, 2, 3, 4]);
    const b = new Float32Array([0.5, -0.25]);
    const path = join(dir, 'lazy.safetensors');
    writeSafetensors(path, { a: { dtype: 'F32', shape: [2, 2], data: lazy('a', a) }, b: { dtype: 'BF16', shape: [2], data: lazy('b', b) } }, { format: 'pt' });
    expect(order).toEqual(['a', 'b']);
    const eager = encodeSafetensors({ a: { dtype: 'F32', shape: [2, 2], data: a }, b: { dtype: 'BF16', shape: [2], data: b } }, { format: 'pt' });
    expect(readFileSync(path).equals(eager)).toBe(true);
    // A function that gives the wrong count fails the write, naming the tensor, and leaves no file.
    const bad = join(dir, 'bad-lazy.safetensors');
    expect(() => writeSafetensors(bad, { a: { dtype: 'F32', shape: [3], data: () => a } })).toThrow(/tensor 'a': 4 values for shape \[3\]/);
    expect(() => readFileSync(bad)).toThrow(/ENOENT/);
  });
});

describe('sharded checkpoint', () => {
  const sdir = join(dir, 'sharded');
  writeSafetensors(join(sdir, 'model-00001-of-00002.safetensors'), {
    'model.embed_tokens.weight': { dtype: 'F32', shape: [3, 2], data: new Float32Array([1, 2, 3, 4, 5, 6]) },
  });
  writeSafetensors(join(sdir, 'model-00002-of-00002.safetensors'), {
    'model.norm.weight': { dtype: 'BF16', shape: [2], data: new Float32Array([0.5, 2]) },
    'lm_head.weight': { dtype: 'F16', shape: [3, 2], data: new Float32Array([-1, -2, -3, -4, -5, -6]) },
  });
  const index = {
    metadata: { total_size: 24 + 4 + 12 },
    weight_map: {
      'model.embed_tokens.weight': 'model-00001-of-00002.safetensors',
      'model.norm.weight': 'model-00002-of-00002.safetensors',
      'lm_head.weight': 'model-00002-of-00002.safetensors',
    },
  };
  writeFileSync(join(sdir, 'model.safetensors.index.json'), JSON.stringify(index));

  it('reads every tensor from its shard', () => {
    const ck = new SafetensorsCheckpoint(sdir);
    expect(ck.names().sort()).toEqual(['lm_head.weight', 'model.embed_tokens.weight', 'model.norm.weight']);
    expect([...ck.readFloat32('model.embed_tokens.weight', [3, 2])]).toEqual([1, 2, 3, 4, 5, 6]);
    expect([...ck.readFloat32('model.norm.weight', [2])]).toEqual([0.5, 2]);
    expect([...ck.readFloat32('lm_head.weight', [3, 2])]).toEqual([-1, -2, -3, -4, -5, -6]);
    expect(ck.fileOf('lm_head.weight')).toMatch(/model-00002-of-00002\.safetensors$/);
  });

  it('names the shard when the index lists a tensor the shard lacks', () => {
    const bad = join(dir, 'sharded-bad');
    writeSafetensors(join(bad, 'a.safetensors'), { x: { dtype: 'F32', shape: [1], data: new Float32Array([1]) } });
    writeFileSync(join(bad, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { x: 'a.safetensors', y: 'a.safetensors' } }));
    expect(() => new SafetensorsCheckpoint(bad)).toThrow(/a\.safetensors.*'y'.*missing/);
  });
});

describe('bad input errors name the file and the tensor', () => {
  const good = encodeSafetensors({
    'w.one': { dtype: 'F32', shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) },
    'w.two': { dtype: 'F32', shape: [4], data: new Float32Array([5, 6, 7, 8]) },
  });
  function write(name: string, bytes: Uint8Array): string {
    const p = join(dir, name);
    writeFileSync(p, bytes);
    return p;
  }

  it('truncated data section', () => {
    const p = write('truncated.safetensors', good.subarray(0, good.length - 5));
    expect(() => new SafetensorsFile(p)).toThrow(/truncated\.safetensors: truncated: tensor 'w\.two'/);
  });

  it('shorter than the length prefix', () => {
    const p = write('tiny.safetensors', good.subarray(0, 5));
    expect(() => new SafetensorsFile(p)).toThrow(/tiny\.safetensors: truncated/);
  });

  it('header that is not JSON', () => {
    const body = Buffer.from('{"w.one": {"dtype": "F32", ', 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(body.length));
    const p = write('badjson.safetensors', Buffer.concat([len, body]));
    expect(() => new SafetensorsFile(p)).toThrow(/badjson\.safetensors: bad header: not valid JSON/);
  });

  it('header length larger than the file', () => {
    const copy = Buffer.from(good);
    copy.writeBigUInt64LE(BigInt(good.length * 10), 0);
    const p = write('biglen.safetensors', copy);
    expect(() => new SafetensorsFile(p)).toThrow(/biglen\.safetensors: bad header: header length \d+ does not fit/);
  });

  it('data_offsets that disagree with the shape', () => {
    const header = JSON.stringify({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }).padEnd(48, ' ');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    const p = write('offsets.safetensors', Buffer.concat([len, Buffer.from(header), Buffer.alloc(12)]));
    expect(() => new SafetensorsFile(p)).toThrow(/offsets\.safetensors: tensor 'w'/);
  });

  it('missing tensor and mis-shaped tensor', () => {
    const cdir = join(dir, 'ck');
    writeSafetensors(join(cdir, 'model.safetensors'), { 'w.one': { dtype: 'F32', shape: [2, 2], data: new Float32Array(4) } });
    const ck = new SafetensorsCheckpoint(cdir);
    expect(() => ck.readFloat32('w.three')).toThrow(/ck: tensor 'w\.three' is missing/);
    expect(() => ck.readFloat32('w.one', [4, 1])).toThrow(/ck[/\\]model\.safetensors: tensor 'w\.one' has shape \[2,2\], expected \[4,1\]/);
    expect(() => new SafetensorsFile(join(cdir, 'model.safetensors')).entry('nope')).toThrow(/model\.safetensors: tensor 'nope' is missing/);
  });

  it('folder without weights', () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(() => new SafetensorsCheckpoint(empty)).toThrow(/empty: no model\.safetensors/);
  });
});

describe('streamed reads (issue 63: each tensor read into the buffer that keeps it)', () => {
  const sdir = mkdtempSync(join(tmpdir(), 'sesa-safetensors-stream-'));
  afterAll(() => rmSync(sdir, { recursive: true, force: true }));

  it('converts a 16-bit tensor longer than one piece into its target, bit for bit as converting it whole', () => {
    const n = 2 * HALF_CHUNK + 5;
    // Every 16-bit pattern, NaNs, infinities and subnormals included, then a run of pseudo-random ones.
    const bits = new Uint16Array(n);
    let x = 12345;
    for (let i = 0; i < n; i++) bits[i] = i < 65536 ? i : (x = (x * 1103515245 + 12345) >>> 0) >>> 16;
    const p = join(sdir, 'long.safetensors');
    writeSafetensors(p, { b: { dtype: 'BF16', shape: [n], data: new Uint8Array(bits.buffer) }, h: { dtype: 'F16', shape: [n], data: new Uint8Array(bits.buffer) } });
    const f = new SafetensorsFile(p);
    for (const [name, whole] of [['b', bf16ToF32], ['h', f16ToF32]] as const) {
      const want = new Uint32Array(whole(new Uint16Array(new Uint8Array(f.readBytes(name)).buffer)).buffer);
      const target = new Uint8Array(4 * n + 1);
      f.readFloat32Into(name, target.subarray(1));
      const got = new Uint32Array(target.slice(1).buffer);
      expect(got.length).toBe(want.length);
      expect(got.every((v, i) => v === want[i]), name).toBe(true);
      expect(new Uint32Array(f.readFloat32(name).buffer).every((v, i) => v === want[i]), name).toBe(true);
    }
  });

  it('a tiny random checkpoint reads the same weights, bit for bit, through readFloat32Into as from its raw bytes', () => {
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      const out = join(sdir, `tiny-${dtype}`);
      makeTinyCheckpoint({ out, layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 48, vocab: 300, dtype });
      const ck = new SafetensorsCheckpoint(out);
      const file = new SafetensorsFile(join(out, 'model.safetensors'));
      for (const name of ck.names()) {
        const raw = new Uint8Array(file.readBytes(name));
        const old = dtype === 'f32' ? new Float32Array(raw.buffer) : (dtype === 'bf16' ? bf16ToF32 : f16ToF32)(new Uint16Array(raw.buffer));
        const target = new Uint8Array(old.byteLength);
        ck.readFloat32Into(name, target, file.entry(name).shape);
        expect(Buffer.from(target).equals(Buffer.from(old.buffer, old.byteOffset, old.byteLength)), `${dtype} ${name}`).toBe(true);
      }
    }
  });

  it('names the file and the tensor when the file is cut short after its header was read', () => {
    for (const dtype of ['F32', 'BF16'] as const) {
      const p = join(sdir, `cut-${dtype}.safetensors`);
      writeSafetensors(p, { first: { dtype, shape: [4], data: new Float32Array(4) }, 'w.last': { dtype, shape: [64], data: new Float32Array(64) } });
      const f = new SafetensorsFile(p);
      truncateSync(p, statSync(p).size - 10);
      expect(f.readFloat32('first').length).toBe(4);
      expect(() => f.readFloat32('w.last')).toThrow(new RegExp(`cut-${dtype}\\.safetensors: truncated: tensor 'w\\.last' could not be read in full \\(the file ends 10 bytes short of it\\)`));
      expect(() => f.readFloat32Into('w.last', new Uint8Array(256))).toThrow(/cut-.*\.safetensors: truncated: tensor 'w\.last'/);
    }
  });

  it('names the file and the tensor for offsets past the data, and for a dtype it cannot read as floats', () => {
    const p = join(sdir, 'past.safetensors');
    const header = Buffer.from(JSON.stringify({ 'w.far': { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    writeFileSync(p, Buffer.concat([len, header, Buffer.alloc(12)]));
    expect(() => new SafetensorsFile(p)).toThrow(/past\.safetensors: truncated: tensor 'w\.far' ends at byte 16 of the data section, which has only 12 bytes/);
    const q = join(sdir, 'ints.safetensors');
    writeSafetensors(q, { 'w.ids': { dtype: 'I64', shape: [2], data: new BigInt64Array(2) } });
    const ck = new SafetensorsCheckpoint(sdir, 'ints.safetensors');
    expect(() => ck.readFloat32Into('w.ids', new Uint8Array(8), [2])).toThrow(/ints\.safetensors: tensor 'w\.ids': dtype I64 is not a float type/);
  });
});
