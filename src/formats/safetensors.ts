// The safetensors format, read and written by hand (no maintained npm library exists).
// Layout: u64-LE header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [a, b]}, __metadata__},
// then the raw little-endian data; offsets are relative to the end of the header.
// A file we write may record the SHA-256 of its data section in __metadata__ (DATA_SHA256_KEY): a reader
// then finds bytes damaged behind an intact header (docs/method.md, "Adapters"). Other readers ignore the key.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, join } from 'node:path';
import { writeStreamAtomic } from '../util/atomic.js';
import { own } from '../util/own.js';
import { cut, echo } from '../util/text-file.js';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'I32' | 'I64' | 'U8';

export interface TensorEntry {
  dtype: SafetensorsDtype;
  shape: number[];
  /** Byte range in the data section. */
  begin: number;
  end: number;
}

const BYTES_PER_ELEMENT: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2, I32: 4, I64: 8, U8: 1 };
const FLOAT_DTYPES = new Set<SafetensorsDtype>(['F32', 'F16', 'BF16']);

/** The __metadata__ key holding the hex SHA-256 of the data section (the bytes after the header). */
export const DATA_SHA256_KEY = 'sesa_data_sha256';

export class SafetensorsError extends Error {
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'SafetensorsError';
  }
}

// ---------------------------------------------------------------------------------------------------------
// Half-precision conversions.

/** bf16 bits → f32 (exact). */
export function bf16ToF32(bits: Uint16Array): Float32Array {
  const out = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = (bits[i] as number) << 16;
  return new Float32Array(out.buffer);
}

/** f32 → bf16 bits, round to nearest even; NaN stays NaN (bit-identical to torch's conversion). */
export function f32ToBf16(values: Float32Array): Uint16Array {
  const u = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < u.length; i++) {
    const x = u[i] as number;
    if ((x & 0x7f800000) === 0x7f800000 && (x & 0x007fffff) !== 0) out[i] = (x >>> 16) | 0x40;
    else out[i] = ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return out;
}

/** IEEE f16 bits → f32 (exact, including subnormals, inf and NaN). */
export function f16ToF32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i] as number;
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) out[i] = sign * frac * 2 ** -24;
    else if (exp === 31) out[i] = frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
    else out[i] = sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  return out;
}

/** f32 → IEEE f16 bits, round to nearest even. */
export function f32ToF16(values: Float32Array): Uint16Array {
  const u = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < u.length; i++) {
    const x = u[i] as number;
    const sign = (x >>> 16) & 0x8000;
    const exp = (x >>> 23) & 0xff;
    let mant = x & 0x7fffff;
    if (exp === 0xff) {
      out[i] = sign | 0x7c00 | (mant ? 0x200 : 0);
      continue;
    }
    let e = exp - 127 + 15;
    if (e >= 31) {
      out[i] = sign | 0x7c00;
      continue;
    }
    if (e <= 0) {
      if (e < -10) {
        out[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - e;
      const halfway = 1 << (shift - 1);
      const rem = mant & ((1 << shift) - 1);
      let m = mant >>> shift;
      if (rem > halfway || (rem === halfway && m & 1)) m++;
      out[i] = sign | m;
      continue;
    }
    const rem = mant & 0x1fff;
    let m = mant >>> 13;
    if (rem > 0x1000 || (rem === 0x1000 && m & 1)) {
      m++;
      if (m === 0x400) {
        m = 0;
        e++;
        if (e >= 31) {
          out[i] = sign | 0x7c00;
          continue;
        }
      }
    }
    out[i] = sign | (e << 10) | m;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Reading.

/** One opened .safetensors file: the parsed header, with tensor data read on demand. */
export class SafetensorsFile {
  readonly tensors: Map<string, TensorEntry>;
  readonly metadata: Record<string, string>;
  private readonly dataStart: number;

  constructor(readonly path: string) {
    if (!existsSync(path)) throw new SafetensorsError(path, 'file not found');
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size < 8) throw new SafetensorsError(path, `truncated: ${size} bytes, shorter than the 8-byte header length`);
      const lenBuf = Buffer.alloc(8);
      readSync(fd, lenBuf, 0, 8, 0);
      const headerLen = Number(lenBuf.readBigUInt64LE(0));
      if (headerLen <= 0 || headerLen > 100_000_000 || 8 + headerLen > size) {
        throw new SafetensorsError(path, `bad header: header length ${headerLen} does not fit in a file of ${size} bytes`);
      }
      const headerBuf = Buffer.alloc(headerLen);
      readSync(fd, headerBuf, 0, headerLen, 8);
      let header: Record<string, unknown>;
      try {
        header = JSON.parse(headerBuf.toString('utf8')) as Record<string, unknown>;
      } catch (err) {
        throw new SafetensorsError(path, `bad header: not valid JSON (${(err as Error).message})`);
      }
      if (typeof header !== 'object' || header === null || Array.isArray(header)) {
        throw new SafetensorsError(path, 'bad header: not a JSON object');
      }
      this.dataStart = 8 + headerLen;
      const dataSize = size - this.dataStart;
      this.metadata = {};
      this.tensors = new Map();
      for (const [name, raw] of Object.entries(header)) {
        const tensor = `tensor '${cut(name)}'`;
        if (name === '__metadata__') {
          // The format's metadata is a map of strings to strings.
          if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !Object.values(raw).every((v) => typeof v === 'string')) {
            throw new SafetensorsError(path, 'bad header: __metadata__ must be an object of strings');
          }
          Object.assign(this.metadata, raw as Record<string, string>);
          continue;
        }
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new SafetensorsError(path, `${tensor}: not an object {dtype, shape, data_offsets}`);
        const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
        const dtype = e.dtype as SafetensorsDtype;
        if (typeof e.dtype !== 'string' || own(BYTES_PER_ELEMENT, e.dtype) === undefined) throw new SafetensorsError(path, `${tensor}: unsupported dtype ${cut(String(e.dtype))}`);
        if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
          throw new SafetensorsError(path, `${tensor}: bad shape ${echo(e.shape)}`);
        }
        const offsets = e.data_offsets;
        if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) || offsets[0] > offsets[1]) {
          throw new SafetensorsError(path, `${tensor}: bad data_offsets ${echo(offsets)} (two byte offsets, begin ≤ end)`);
        }
        const [begin, end] = offsets as [number, number];
        const shape = e.shape as number[];
        const expected = shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[dtype];
        if (end - begin !== expected) {
          throw new SafetensorsError(path, `${tensor}: data_offsets span ${end - begin} bytes, shape ${JSON.stringify(shape)} of ${dtype} needs ${expected}`);
        }
        if (end > dataSize) {
          throw new SafetensorsError(path, `truncated: ${tensor} ends at byte ${end} of the data section, which has only ${dataSize} bytes`);
        }
        this.tensors.set(name, { dtype, shape, begin, end });
      }
      // Two tensors may not share bytes (the format forbids it; a write to one would change the other).
      const spans = [...this.tensors.entries()].filter(([, t]) => t.end > t.begin).sort(([, a], [, b]) => a.begin - b.begin);
      for (let i = 1; i < spans.length; i++) {
        const [prevName, prev] = spans[i - 1] as [string, TensorEntry];
        const [name, t] = spans[i] as [string, TensorEntry];
        if (t.begin < prev.end) throw new SafetensorsError(path, `bad header: tensors '${cut(prevName)}' and '${cut(name)}' overlap (bytes ${t.begin}–${Math.min(prev.end, t.end)})`);
      }
    } finally {
      closeSync(fd);
    }
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** Whether the header records the data section's SHA-256 (files we wrote with `dataChecksum`). */
  get recordsDataChecksum(): boolean {
    return own(this.metadata, DATA_SHA256_KEY) !== undefined;
  }

  /** Throws when the header records the data section's SHA-256 and the data no longer has it. */
  verifyDataChecksum(): void {
    const want = own(this.metadata, DATA_SHA256_KEY);
    if (want === undefined) return;
    const data = readFileSync(this.path).subarray(this.dataStart);
    const got = createHash('sha256').update(data).digest('hex');
    if (got !== want) throw new SafetensorsError(this.path, `the data's SHA-256 differs from the one its header records (${DATA_SHA256_KEY}): bytes after the header are damaged`);
  }

  entry(name: string): TensorEntry {
    const e = this.tensors.get(name);
    if (!e) throw new SafetensorsError(this.path, `tensor '${name}' is missing`);
    return e;
  }

  /** Raw bytes of one tensor. */
  readBytes(name: string): Buffer {
    const e = this.entry(name);
    const buf = Buffer.alloc(e.end - e.begin);
    this.readInto(name, e, buf);
    return buf;
  }

  /** Reads the raw bytes of `name` into `target` (exactly its length), with no copy in between. */
  private readInto(name: string, e: TensorEntry, target: Uint8Array): void {
    if (target.length !== e.end - e.begin) throw new SafetensorsError(this.path, `tensor '${name}': ${e.end - e.begin} bytes, read into ${target.length}`);
    const fd = openSync(this.path, 'r');
    try {
      this.readSpan(fd, name, target, this.dataStart + e.begin);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Fills `target` from byte `position` of the open file: in as many reads as it takes (one read returns at most
   * about 2 GiB on Linux), and an error naming the file and the tensor where the file ends first (it was
   * truncated after its header was read).
   */
  private readSpan(fd: number, name: string, target: Uint8Array, position: number): void {
    let done = 0;
    while (done < target.length) {
      const n = readSync(fd, target, done, target.length - done, position + done);
      if (n === 0) throw new SafetensorsError(this.path, `truncated: tensor '${name}' could not be read in full (the file ends ${target.length - done} bytes short of it)`);
      done += n;
    }
  }

  private floatEntry(name: string): TensorEntry {
    const e = this.entry(name);
    if (!FLOAT_DTYPES.has(e.dtype)) throw new SafetensorsError(this.path, `tensor '${name}': dtype ${e.dtype} is not a float type`);
    return e;
  }

  /** One floating-point tensor converted to f32 (tfjs has no f16/bf16 tensors). */
  readFloat32(name: string): Float32Array {
    const e = this.floatEntry(name);
    const out = new Float32Array(e.shape.reduce((a, b) => a * b, 1));
    this.readFloat32Into(name, new Uint8Array(out.buffer));
    return out;
  }

  /**
   * One floating-point tensor as f32 little-endian bytes, written into `target` (4 bytes a value, at any byte
   * offset): an f32 tensor is read from the file straight into it, a 16-bit one in pieces of `HALF_CHUNK` values,
   * each converted into its place (no copy of the whole tensor besides `target`).
   */
  readFloat32Into(name: string, target: Uint8Array): void {
    const e = this.floatEntry(name);
    const count = e.shape.reduce((a, b) => a * b, 1);
    if (target.length !== 4 * count) throw new SafetensorsError(this.path, `tensor '${name}': ${count} values, target of ${target.length} bytes`);
    if (e.dtype === 'F32') {
      this.readInto(name, e, target);
      return;
    }
    const convert = e.dtype === 'BF16' ? bf16ToF32 : f16ToF32;
    const half = new Uint16Array(Math.min(count, HALF_CHUNK));
    const halfBytes = new Uint8Array(half.buffer);
    const fd = openSync(this.path, 'r');
    try {
      for (let i = 0; i < count; i += HALF_CHUNK) {
        const n = Math.min(HALF_CHUNK, count - i);
        this.readSpan(fd, name, halfBytes.subarray(0, 2 * n), this.dataStart + e.begin + 2 * i);
        const f32 = convert(half.subarray(0, n));
        target.set(new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength), 4 * i);
      }
    } finally {
      closeSync(fd);
    }
  }
}

/** Values of a 16-bit tensor converted to f32 at a time (`readFloat32Into`): 2 MiB read, 4 MiB written. */
export const HALF_CHUNK = 2 ** 20;

/**
 * All tensors of a checkpoint folder: `model.safetensors`, or the shards listed in
 * `model.safetensors.index.json` (`{"weight_map": {name: file}}`).
 */
export class SafetensorsCheckpoint {
  private readonly files = new Map<string, SafetensorsFile>();
  private readonly location = new Map<string, SafetensorsFile>();

  constructor(readonly dir: string, filename = 'model.safetensors') {
    const single = join(dir, filename);
    const indexPath = join(dir, `${filename}.index.json`);
    if (existsSync(indexPath)) {
      let index: { weight_map?: Record<string, string> };
      try {
        index = JSON.parse(readFileSync(indexPath, 'utf8')) as typeof index;
      } catch (err) {
        throw new SafetensorsError(indexPath, `not valid JSON (${(err as Error).message})`);
      }
      if (!index.weight_map || typeof index.weight_map !== 'object') {
        throw new SafetensorsError(indexPath, "missing field 'weight_map'");
      }
      for (const [name, shard] of Object.entries(index.weight_map)) {
        let file = this.files.get(shard);
        if (!file) {
          file = new SafetensorsFile(join(dir, shard));
          this.files.set(shard, file);
        }
        if (!file.has(name)) throw new SafetensorsError(file.path, `tensor '${name}' listed in ${basename(indexPath)} is missing`);
        this.location.set(name, file);
      }
    } else if (existsSync(single)) {
      const file = new SafetensorsFile(single);
      this.files.set(filename, file);
      for (const name of file.tensors.keys()) this.location.set(name, file);
    } else {
      throw new SafetensorsError(dir, `no ${filename} or ${filename}.index.json in this folder`);
    }
  }

  names(): string[] {
    return [...this.location.keys()];
  }

  has(name: string): boolean {
    return this.location.has(name);
  }

  /** The file that holds `name` (for error messages). */
  fileOf(name: string): string {
    return this.location.get(name)?.path ?? join(this.dir, 'model.safetensors');
  }

  entry(name: string): TensorEntry {
    const file = this.location.get(name);
    if (!file) throw new SafetensorsError(this.dir, `tensor '${name}' is missing from the checkpoint`);
    return file.entry(name);
  }

  /** The file holding `name`, its shape checked when `expectedShape` is given. */
  private fileWith(name: string, expectedShape?: readonly number[]): SafetensorsFile {
    const file = this.location.get(name);
    if (!file) throw new SafetensorsError(this.dir, `tensor '${name}' is missing from the checkpoint`);
    const e = file.entry(name);
    if (expectedShape && (e.shape.length !== expectedShape.length || e.shape.some((d, i) => d !== expectedShape[i]))) {
      throw new SafetensorsError(file.path, `tensor '${name}' has shape ${JSON.stringify(e.shape)}, expected ${JSON.stringify(expectedShape)}`);
    }
    return file;
  }

  /** Reads `name` as f32, checking its shape when `expectedShape` is given. */
  readFloat32(name: string, expectedShape?: readonly number[]): Float32Array {
    return this.fileWith(name, expectedShape).readFloat32(name);
  }

  /** `readFloat32` into `target` as little-endian bytes (SafetensorsFile.readFloat32Into), checking the shape. */
  readFloat32Into(name: string, target: Uint8Array, expectedShape?: readonly number[]): void {
    this.fileWith(name, expectedShape).readFloat32Into(name, target);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Writing.

type TensorData = Float32Array | Uint8Array | Int32Array | BigInt64Array;

export interface TensorToWrite {
  dtype: SafetensorsDtype;
  shape: number[];
  /**
   * f32 values (converted to the dtype on write) or raw bytes already in that dtype; or a function giving them,
   * called when the tensor is written (so that `writeSafetensors` holds one tensor's values at a time).
   */
  data: TensorData | (() => TensorData);
}

function encodeTensor(name: string, t: TensorToWrite): Uint8Array {
  const count = t.shape.reduce((a, b) => a * b, 1);
  const data = typeof t.data === 'function' ? t.data() : t.data;
  let bytes: Uint8Array;
  if (data instanceof Float32Array) {
    if (data.length !== count) throw new Error(`tensor '${name}': ${data.length} values for shape ${JSON.stringify(t.shape)}`);
    if (t.dtype === 'F32') bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    else if (t.dtype === 'BF16') bytes = new Uint8Array(f32ToBf16(data).buffer);
    else if (t.dtype === 'F16') bytes = new Uint8Array(f32ToF16(data).buffer);
    else throw new Error(`tensor '${name}': cannot write f32 values as ${t.dtype}`);
  } else {
    bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  if (bytes.length !== count * BYTES_PER_ELEMENT[t.dtype]) {
    throw new Error(`tensor '${name}': ${bytes.length} bytes for shape ${JSON.stringify(t.shape)} of ${t.dtype}`);
  }
  return bytes;
}

/**
 * The pieces of a safetensors file, in order: the header's length and the header (its offsets follow from the
 * shapes and dtypes alone), then a function per tensor that encodes its bytes. With `dataChecksum` the metadata
 * also records the data section's SHA-256 (DATA_SHA256_KEY): the tensors are encoded first, to hash them.
 */
function safetensorsParts(
  tensors: Map<string, TensorToWrite> | Record<string, TensorToWrite>,
  metadata: Record<string, string> | undefined,
  opts: { dataChecksum?: boolean },
): { head: Uint8Array[]; bodies: Array<() => Uint8Array> } {
  const entries = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  const header: Record<string, unknown> = {};
  if (metadata || opts.dataChecksum) header.__metadata__ = { ...metadata };
  let offset = 0;
  for (const [name, t] of entries) {
    const length = t.shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[t.dtype];
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + length] };
    offset += length;
  }
  let bodies = entries.map(([name, t]) => () => encodeTensor(name, t));
  if (opts.dataChecksum) {
    const blobs = bodies.map((b) => b());
    const hash = createHash('sha256');
    for (const b of blobs) hash.update(b);
    (header.__metadata__ as Record<string, string>)[DATA_SHA256_KEY] = hash.digest('hex');
    bodies = blobs.map((b) => () => b);
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(headerBytes.length));
  return { head: [len, headerBytes], bodies };
}

/** Serializes tensors (in the given order) to safetensors bytes (one buffer: at most 2 GiB); `dataChecksum`: see safetensorsParts. */
export function encodeSafetensors(tensors: Map<string, TensorToWrite> | Record<string, TensorToWrite>, metadata?: Record<string, string>, opts: { dataChecksum?: boolean } = {}): Buffer {
  const { head, bodies } = safetensorsParts(tensors, metadata, opts);
  return Buffer.concat([...head, ...bodies.map((b) => b())]);
}

/**
 * Writes a .safetensors file atomically, tensor by tensor (a file over Node's 2 GiB buffer limit, such as a
 * Qwen3-0.6B in f32, is written too; with `data` given as functions and no checksum, one tensor's values are
 * held at a time).
 */
export function writeSafetensors(path: string, tensors: Map<string, TensorToWrite> | Record<string, TensorToWrite>, metadata?: Record<string, string>, opts: { dataChecksum?: boolean } = {}): void {
  const { head, bodies } = safetensorsParts(tensors, metadata, opts);
  writeStreamAtomic(path, (put) => {
    for (const p of head) put(p);
    for (const body of bodies) put(body());
  });
}
