// GGUF v3, the file format of llama.cpp, written and read by hand (the layout is small and fixed).
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count, the metadata key/values, the tensor
// infos (name, dims innermost-first, ggml type, offset), padding to `general.alignment`, then the tensor
// data, each tensor starting at a multiple of the alignment. All little-endian.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { writeStreamAtomic } from '../util/atomic.js';
import { f16ToF32, f32ToF16 } from './safetensors.js';

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

// ---------------------------------------------------------------------------------------------------------
// Value types.

/** Metadata value type codes of the GGUF spec. */
const VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

export type GgufScalarType = Exclude<keyof typeof VALUE_TYPE, 'array'>;
type NumberType = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64';
type BigType = 'u64' | 'i64';

export type GgufValue =
  | { type: NumberType; value: number }
  | { type: BigType; value: bigint }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; itemType: NumberType; value: number[] | ArrayLike<number> }
  | { type: 'array'; itemType: BigType; value: bigint[] }
  | { type: 'array'; itemType: 'bool'; value: boolean[] }
  | { type: 'array'; itemType: 'string'; value: string[] };

/** Constructors for metadata values, so call sites read `gv.u32(8)` rather than object literals. */
export const gv = {
  u8: (value: number): GgufValue => ({ type: 'u8', value }),
  i8: (value: number): GgufValue => ({ type: 'i8', value }),
  u16: (value: number): GgufValue => ({ type: 'u16', value }),
  i16: (value: number): GgufValue => ({ type: 'i16', value }),
  u32: (value: number): GgufValue => ({ type: 'u32', value }),
  i32: (value: number): GgufValue => ({ type: 'i32', value }),
  f32: (value: number): GgufValue => ({ type: 'f32', value }),
  f64: (value: number): GgufValue => ({ type: 'f64', value }),
  u64: (value: bigint | number): GgufValue => ({ type: 'u64', value: BigInt(value) }),
  i64: (value: bigint | number): GgufValue => ({ type: 'i64', value: BigInt(value) }),
  bool: (value: boolean): GgufValue => ({ type: 'bool', value }),
  string: (value: string): GgufValue => ({ type: 'string', value }),
  strings: (value: string[]): GgufValue => ({ type: 'array', itemType: 'string', value }),
  i32s: (value: number[] | Int32Array): GgufValue => ({ type: 'array', itemType: 'i32', value }),
  u32s: (value: number[] | Uint32Array): GgufValue => ({ type: 'array', itemType: 'u32', value }),
  f32s: (value: number[] | Float32Array): GgufValue => ({ type: 'array', itemType: 'f32', value }),
  bools: (value: boolean[]): GgufValue => ({ type: 'array', itemType: 'bool', value }),
};

// ---------------------------------------------------------------------------------------------------------
// Tensor types (ggml_type codes): the float types, and Q8_0 (blocks of 32 values along the innermost dim: an f16
// scale d = max|block| / 127, then 32 int8 q = round(x / d); x ≈ d · q), the 8-bit format the native-int8
// backend's blocks follow (src/tensor/block-int8.ts, whose scale is float32).

export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q8_0';
const GGML_TYPE: Record<GgmlTypeName, number> = { F32: 0, F16: 1, BF16: 30, Q8_0: 8 };
/** Bytes per element (Q8_0: 34 bytes per block of 32). */
const GGML_TYPE_SIZE: Record<GgmlTypeName, number> = { F32: 4, F16: 2, BF16: 2, Q8_0: 34 / 32 };
const Q8_0_BLOCK = 32;
const GGML_TYPE_NAME = new Map<number, GgmlTypeName>(Object.entries(GGML_TYPE).map(([k, v]) => [v, k as GgmlTypeName]));

export class GgufError extends Error {
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'GgufError';
  }
}

export interface GgufTensorToWrite {
  name: string;
  /** Q8_0 needs the innermost dim to be a multiple of 32. */
  type: 'F32' | 'F16' | 'Q8_0';
  /** ggml `ne`: dims innermost-first, i.e. a torch [out, in] row-major matrix has dims [in, out]. */
  dims: number[];
  /** f32 values in row-major order of the torch shape; a function defers loading until the tensor is written. */
  data: Float32Array | (() => Float32Array);
}

export interface GgufWriteOptions {
  /** Data alignment in bytes (a power of two); written as `general.alignment` when not 32. Default 32. */
  alignment?: number;
}

// ---------------------------------------------------------------------------------------------------------
// Encoding.

/** Growable little-endian byte sink for the header (metadata can be megabytes: 150k tokens and merges). */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void { this.ensure(1); this.buf.writeUInt8(v, this.length); this.length += 1; }
  i8(v: number): void { this.ensure(1); this.buf.writeInt8(v, this.length); this.length += 1; }
  u16(v: number): void { this.ensure(2); this.buf.writeUInt16LE(v, this.length); this.length += 2; }
  i16(v: number): void { this.ensure(2); this.buf.writeInt16LE(v, this.length); this.length += 2; }
  u32(v: number): void { this.ensure(4); this.buf.writeUInt32LE(v, this.length); this.length += 4; }
  i32(v: number): void { this.ensure(4); this.buf.writeInt32LE(v, this.length); this.length += 4; }
  f32(v: number): void { this.ensure(4); this.buf.writeFloatLE(v, this.length); this.length += 4; }
  f64(v: number): void { this.ensure(8); this.buf.writeDoubleLE(v, this.length); this.length += 8; }
  u64(v: bigint | number): void { this.ensure(8); this.buf.writeBigUInt64LE(BigInt(v), this.length); this.length += 8; }
  i64(v: bigint): void { this.ensure(8); this.buf.writeBigInt64LE(v, this.length); this.length += 8; }
  str(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.u64(n);
    this.ensure(n);
    this.buf.write(s, this.length, 'utf8');
    this.length += n;
  }
  pad(alignment: number): void {
    const n = (alignment - (this.length % alignment)) % alignment;
    this.ensure(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function checkInt(key: string, type: string, v: number, lo: number, hi: number): void {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`GGUF metadata '${key}': ${v} is not a valid ${type}`);
}

function writeScalar(sink: ByteSink, key: string, type: GgufScalarType, v: number | bigint | boolean | string): void {
  switch (type) {
    case 'u8': checkInt(key, type, v as number, 0, 0xff); sink.u8(v as number); break;
    case 'i8': checkInt(key, type, v as number, -0x80, 0x7f); sink.i8(v as number); break;
    case 'u16': checkInt(key, type, v as number, 0, 0xffff); sink.u16(v as number); break;
    case 'i16': checkInt(key, type, v as number, -0x8000, 0x7fff); sink.i16(v as number); break;
    case 'u32': checkInt(key, type, v as number, 0, 0xffffffff); sink.u32(v as number); break;
    case 'i32': checkInt(key, type, v as number, -0x80000000, 0x7fffffff); sink.i32(v as number); break;
    case 'f32': sink.f32(v as number); break;
    case 'f64': sink.f64(v as number); break;
    case 'u64': sink.u64(v as bigint); break;
    case 'i64': sink.i64(v as bigint); break;
    case 'bool': sink.u8(v ? 1 : 0); break;
    case 'string': sink.str(v as string); break;
  }
}

function writeValue(sink: ByteSink, key: string, value: GgufValue): void {
  sink.u32(VALUE_TYPE[value.type]);
  if (value.type !== 'array') {
    writeScalar(sink, key, value.type, value.value);
    return;
  }
  sink.u32(VALUE_TYPE[value.itemType]);
  const items = value.value as ArrayLike<number | bigint | boolean | string>;
  sink.u64(items.length);
  for (let i = 0; i < items.length; i++) writeScalar(sink, key, value.itemType, items[i] as number | bigint | boolean | string);
}

function tensorByteSize(type: GgmlTypeName, dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1) * GGML_TYPE_SIZE[type];
}

function encodeTensorData(t: GgufTensorToWrite, values: Float32Array): Uint8Array {
  const count = t.dims.reduce((a, b) => a * b, 1);
  if (values.length !== count) {
    throw new Error(`GGUF tensor '${t.name}': ${values.length} values for dims ${JSON.stringify(t.dims)} (${count} elements)`);
  }
  if (t.type === 'F32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  if (t.type === 'Q8_0') return encodeQ8_0(values);
  const half = f32ToF16(values);
  return new Uint8Array(half.buffer, half.byteOffset, half.byteLength);
}

/** Q8_0 blocks of `values` (a multiple of 32), as ggml's reference quantizer forms them: q from the f32 scale, d stored as f16. */
function encodeQ8_0(values: Float32Array): Uint8Array {
  const blocks = values.length / Q8_0_BLOCK;
  const out = new Uint8Array(blocks * 34);
  const view = new DataView(out.buffer);
  const d16 = new Float32Array(1);
  for (let b = 0; b < blocks; b++) {
    let max = 0;
    for (let j = 0; j < Q8_0_BLOCK; j++) max = Math.max(max, Math.abs(values[b * Q8_0_BLOCK + j] as number));
    // As ggml's reference, in float32: d = amax / 127, id = 1 / d, q = roundf(x · id) (half away from zero).
    const d = Math.fround(max / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    d16[0] = d;
    view.setUint16(b * 34, f32ToF16(d16)[0] as number, true);
    for (let j = 0; j < Q8_0_BLOCK; j++) view.setInt8(b * 34 + 2 + j, roundHalfAway(Math.fround((values[b * Q8_0_BLOCK + j] as number) * id)));
  }
  return out;
}

/** C's roundf: to the nearest integer, halves away from zero. */
export function roundHalfAway(x: number): number {
  return Math.sign(x) * Math.round(Math.abs(x));
}

function decodeQ8_0(bytes: Uint8Array): Float32Array {
  const blocks = bytes.length / 34;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(blocks * Q8_0_BLOCK);
  for (let b = 0; b < blocks; b++) {
    const d = f16ToF32(new Uint16Array([view.getUint16(b * 34, true)]))[0] as number;
    for (let j = 0; j < Q8_0_BLOCK; j++) out[b * Q8_0_BLOCK + j] = d * view.getInt8(b * 34 + 2 + j);
  }
  return out;
}

/**
 * Header bytes (everything before the tensor data, padded to the alignment) and each tensor's data offset.
 * `general.alignment` is added to the metadata unless present; an explicit one must match `alignment`.
 */
function encodeHeader(metadata: ReadonlyArray<readonly [string, GgufValue]>, tensors: readonly GgufTensorToWrite[], alignment: number): { header: Buffer; offsets: number[]; dataSize: number } {
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new Error(`GGUF alignment must be a power of two, got ${alignment}`);
  }
  const kv = [...metadata];
  const seen = new Set<string>();
  for (const [key, value] of kv) {
    if (seen.has(key)) throw new Error(`GGUF metadata key '${key}' is given twice`);
    seen.add(key);
    if (key === 'general.alignment' && (value.type !== 'u32' || value.value !== alignment)) {
      throw new Error(`GGUF metadata 'general.alignment' must be a u32 equal to the write alignment ${alignment}`);
    }
  }
  if (!seen.has('general.alignment')) kv.push(['general.alignment', gv.u32(alignment)]);

  const sink = new ByteSink();
  sink.u32(GGUF_MAGIC);
  sink.u32(GGUF_VERSION);
  sink.u64(tensors.length);
  sink.u64(kv.length);
  for (const [key, value] of kv) {
    sink.str(key);
    writeValue(sink, key, value);
  }
  const names = new Set<string>();
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    if (names.has(t.name)) throw new Error(`GGUF tensor '${t.name}' is given twice`);
    names.add(t.name);
    if (t.dims.length < 1 || t.dims.length > 4 || t.dims.some((d) => !Number.isInteger(d) || d <= 0)) {
      throw new Error(`GGUF tensor '${t.name}': bad dims ${JSON.stringify(t.dims)} (1 to 4 positive integers)`);
    }
    if (t.type === 'Q8_0' && (t.dims[0] as number) % Q8_0_BLOCK !== 0) {
      throw new Error(`GGUF tensor '${t.name}': Q8_0 needs the innermost dim to be a multiple of ${Q8_0_BLOCK}, got dims ${JSON.stringify(t.dims)}`);
    }
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(GGML_TYPE[t.type]);
    sink.u64(offset);
    offsets.push(offset);
    offset += tensorByteSize(t.type, t.dims);
    offset += (alignment - (offset % alignment)) % alignment;
  }
  sink.pad(alignment);
  return { header: sink.bytes(), offsets, dataSize: offset };
}

/**
 * Writes a GGUF file atomically: streams into a temp file in the same folder (tensor data is produced one
 * tensor at a time, so a multi-GB model never sits in memory whole), fsyncs, then renames over `path`.
 * Metadata is written in the given order. Returns the file size in bytes.
 */
export function writeGguf(path: string, metadata: ReadonlyArray<readonly [string, GgufValue]>, tensors: readonly GgufTensorToWrite[], options: GgufWriteOptions = {}): number {
  const alignment = options.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  const { header, offsets, dataSize } = encodeHeader(metadata, tensors, alignment);
  return writeStreamAtomic(path, (put) => {
    put(header);
    const dataStart = header.length;
    let pos = dataStart;
    const zeros = new Uint8Array(alignment);
    const write = (bytes: Uint8Array): void => {
      put(bytes);
      pos += bytes.length;
    };
    tensors.forEach((t, i) => {
      const want = dataStart + (offsets[i] as number);
      if (pos < want) write(zeros.subarray(0, want - pos));
      const values = typeof t.data === 'function' ? t.data() : t.data;
      write(encodeTensorData(t, values));
    });
    const end = dataStart + dataSize;
    if (pos < end) write(zeros.subarray(0, end - pos));
  });
}

// ---------------------------------------------------------------------------------------------------------
// Reading (header, metadata, tensor infos; tensor data on demand).

export interface GgufTensorInfo {
  name: string;
  /** ggml `ne`, innermost first. */
  dims: number[];
  type: GgmlTypeName;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  byteSize: number;
}

export interface GgufFile {
  path: string;
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: Map<string, GgufTensorInfo>;
  alignment: number;
  dataStart: number;
}

/** Buffered sequential reader over a file descriptor (the header of a big vocab is a few MB). */
class FileCursor {
  private buf = Buffer.alloc(1 << 20);
  private bufStart = 0;
  private bufLen = 0;
  pos = 0;

  constructor(private readonly fd: number, private readonly size: number, private readonly path: string) {}

  private need(n: number): number {
    if (this.pos + n > this.size) throw new GgufError(this.path, `truncated: needs ${n} bytes at offset ${this.pos}, file has ${this.size}`);
    if (this.pos < this.bufStart || this.pos + n > this.bufStart + this.bufLen) {
      if (n > this.buf.length) this.buf = Buffer.alloc(n);
      this.bufStart = this.pos;
      this.bufLen = readSync(this.fd, this.buf, 0, Math.min(this.buf.length, this.size - this.pos), this.pos);
    }
    const at = this.pos - this.bufStart;
    this.pos += n;
    return at;
  }
  u8(): number { return this.buf.readUInt8(this.need(1)); }
  i8(): number { return this.buf.readInt8(this.need(1)); }
  u16(): number { return this.buf.readUInt16LE(this.need(2)); }
  i16(): number { return this.buf.readInt16LE(this.need(2)); }
  u32(): number { return this.buf.readUInt32LE(this.need(4)); }
  i32(): number { return this.buf.readInt32LE(this.need(4)); }
  f32(): number { return this.buf.readFloatLE(this.need(4)); }
  f64(): number { return this.buf.readDoubleLE(this.need(8)); }
  u64(): bigint { return this.buf.readBigUInt64LE(this.need(8)); }
  i64(): bigint { return this.buf.readBigInt64LE(this.need(8)); }
  /** u64 that must fit a JS number (lengths, counts, offsets). */
  size64(what: string): number {
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(this.path, `${what} ${v} is implausibly large`);
    return Number(v);
  }
  str(): string {
    const n = this.size64('string length');
    if (n > this.size) throw new GgufError(this.path, `string length ${n} at offset ${this.pos - 8} exceeds the file`);
    const at = this.need(n);
    return this.buf.toString('utf8', at, at + n);
  }
}

const TYPE_BY_CODE = new Map<number, keyof typeof VALUE_TYPE>(Object.entries(VALUE_TYPE).map(([k, v]) => [v, k as keyof typeof VALUE_TYPE]));

function readScalar(c: FileCursor, type: GgufScalarType): number | bigint | boolean | string {
  switch (type) {
    case 'u8': return c.u8();
    case 'i8': return c.i8();
    case 'u16': return c.u16();
    case 'i16': return c.i16();
    case 'u32': return c.u32();
    case 'i32': return c.i32();
    case 'f32': return c.f32();
    case 'f64': return c.f64();
    case 'u64': return c.u64();
    case 'i64': return c.i64();
    case 'bool': return c.u8() !== 0;
    case 'string': return c.str();
  }
}

function readValue(c: FileCursor, path: string, key: string): GgufValue {
  const code = c.u32();
  const type = TYPE_BY_CODE.get(code);
  if (!type) throw new GgufError(path, `metadata '${key}': unknown value type ${code}`);
  if (type !== 'array') return { type, value: readScalar(c, type) } as GgufValue;
  const itemCode = c.u32();
  const itemType = TYPE_BY_CODE.get(itemCode);
  if (!itemType || itemType === 'array') throw new GgufError(path, `metadata '${key}': unsupported array item type ${itemCode}`);
  const n = c.size64(`metadata '${key}' array length`);
  const items: Array<number | bigint | boolean | string> = new Array(n);
  for (let i = 0; i < n; i++) items[i] = readScalar(c, itemType);
  return { type: 'array', itemType, value: items } as GgufValue;
}

/** Reads the header, metadata and tensor infos of a GGUF file (no tensor data). */
export function readGguf(path: string): GgufFile {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const c = new FileCursor(fd, size, path);
    const magic = c.u32();
    if (magic !== GGUF_MAGIC) throw new GgufError(path, `not a GGUF file (magic 0x${magic.toString(16)})`);
    const version = c.u32();
    if (version !== 2 && version !== 3) throw new GgufError(path, `GGUF version ${version} is not supported (2 or 3)`);
    const nTensors = c.size64('tensor count');
    const nKv = c.size64('metadata count');
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < nKv; i++) {
      const key = c.str();
      metadata.set(key, readValue(c, path, key));
    }
    const al = metadata.get('general.alignment');
    const alignment = al && al.type === 'u32' ? al.value : GGUF_DEFAULT_ALIGNMENT;
    const raw: Array<{ name: string; dims: number[]; type: GgmlTypeName; rel: number }> = [];
    for (let i = 0; i < nTensors; i++) {
      const name = c.str();
      const nDims = c.u32();
      if (nDims < 1 || nDims > 4) throw new GgufError(path, `tensor '${name}': ${nDims} dims`);
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(c.size64(`tensor '${name}' dim`));
      const code = c.u32();
      const type = GGML_TYPE_NAME.get(code);
      if (!type) throw new GgufError(path, `tensor '${name}': ggml type ${code} is not supported by this reader (F32, F16, BF16)`);
      raw.push({ name, dims, type, rel: c.size64(`tensor '${name}' offset`) });
    }
    const dataStart = c.pos + ((alignment - (c.pos % alignment)) % alignment);
    const tensors = new Map<string, GgufTensorInfo>();
    for (const t of raw) {
      const byteSize = tensorByteSize(t.type, t.dims);
      if (t.rel % alignment !== 0) throw new GgufError(path, `tensor '${t.name}': offset ${t.rel} is not a multiple of the alignment ${alignment}`);
      if (dataStart + t.rel + byteSize > size) throw new GgufError(path, `truncated: tensor '${t.name}' ends past the end of the file`);
      tensors.set(t.name, { name: t.name, dims: t.dims, type: t.type, offset: dataStart + t.rel, byteSize });
    }
    return { path, version, metadata, tensors, alignment, dataStart };
  } finally {
    closeSync(fd);
  }
}

/** One tensor of a GGUF file as f32 (row-major in the torch order, i.e. dims reversed). */
export function readGgufTensor(file: GgufFile, name: string): Float32Array {
  const t = file.tensors.get(name);
  if (!t) throw new GgufError(file.path, `tensor '${name}' is missing`);
  const bytes = new Uint8Array(t.byteSize);
  const fd = openSync(file.path, 'r');
  try {
    const n = readSync(fd, bytes, 0, t.byteSize, t.offset);
    if (n !== t.byteSize) throw new GgufError(file.path, `truncated: tensor '${name}' could not be read in full`);
  } finally {
    closeSync(fd);
  }
  if (t.type === 'F32') return new Float32Array(bytes.buffer);
  if (t.type === 'Q8_0') return decodeQ8_0(bytes);
  const half = new Uint16Array(bytes.buffer);
  if (t.type === 'F16') return f16ToF32(half);
  const out = new Uint32Array(half.length);
  for (let i = 0; i < half.length; i++) out[i] = (half[i] as number) << 16;
  return new Float32Array(out.buffer);
}

/** A metadata value as a plain JS value (number, bigint, boolean, string or array), or undefined. */
export function ggufMeta(file: GgufFile, key: string): GgufValue['value'] | undefined {
  return file.metadata.get(key)?.value;
}
