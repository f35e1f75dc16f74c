// TensorBoard's event files, written by hand with no dependency (docs/usage.md, "TensorBoard"):
//   a TFRecord file: per record a u64-LE length, the masked CRC32C of those 8 bytes, the data, and the masked
//   CRC32C of the data (masked: the CRC rotated right by 15 bits plus 0xa282ead8);
//   each record one Event protobuf: wall_time (1, double), step (2, int64), file_version (3, string, the first
//   event of a file: "brain.Event:2") or summary (5): Summary { repeated Value value = 1 }, Value { tag = 1,
//   simple_value = 2 (float) }.
// Only what a scalar log needs is encoded: no images, histograms or tensors.

/** The first event of every event file names the format version TensorBoard reads. */
export const EVENT_FILE_VERSION = 'brain.Event:2';

/** CRC32C (Castagnoli), reflected polynomial. */
const CASTAGNOLI = 0x82f63b78;
/** The constant TFRecord adds to a rotated CRC ("masked"), so that a CRC of CRCs is not trivially zero. */
const CRC_MASK_DELTA = 0xa282ead8;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CASTAGNOLI : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return (((c >>> 15) | (c << 17)) + CRC_MASK_DELTA) >>> 0;
}

/** One TFRecord: length, its masked CRC, the data, the data's masked CRC. */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

// Protobuf wire format: a key is (field << 3) | wire type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

function varint(n: bigint): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

function key(field: number, wire: number): number[] {
  return varint(BigInt((field << 3) | wire));
}

function bytesField(field: number, bytes: Uint8Array): number[] {
  return [...key(field, LENGTH_DELIMITED), ...varint(BigInt(bytes.length)), ...bytes];
}

function doubleField(field: number, v: number): number[] {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, v, true);
  return [...key(field, FIXED64), ...b];
}

function floatField(field: number, v: number): number[] {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, v, true);
  return [...key(field, FIXED32), ...b];
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

export interface TensorBoardEvent {
  /** Seconds since the epoch. */
  wallTime: number;
  step: number;
  /** Only in a file's first event. */
  fileVersion?: string;
  /** Scalars, tag → value. */
  scalars?: Readonly<Record<string, number>>;
}

/** The Event protobuf of one event. */
export function encodeEvent(e: TensorBoardEvent): Uint8Array {
  const out: number[] = [...doubleField(1, e.wallTime), ...key(2, VARINT), ...varint(BigInt(e.step))];
  if (e.fileVersion !== undefined) out.push(...bytesField(3, utf8(e.fileVersion)));
  if (e.scalars !== undefined) {
    const values = Object.entries(e.scalars).flatMap(([tag, v]) => bytesField(1, Uint8Array.from([...bytesField(1, utf8(tag)), ...floatField(2, v)])));
    out.push(...bytesField(5, Uint8Array.from(values)));
  }
  return Uint8Array.from(out);
}

/** A whole event file: the file_version event, then one event per entry, each a TFRecord. */
export function eventFile(events: readonly TensorBoardEvent[], wallTime: number): Uint8Array {
  const records = [tfRecord(encodeEvent({ wallTime, step: 0, fileVersion: EVENT_FILE_VERSION })), ...events.map((e) => tfRecord(encodeEvent(e)))];
  const out = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of records) {
    out.set(r, at);
    at += r.length;
  }
  return out;
}
