// An independent reader of TensorBoard event files, for the tests (not a test itself): TFRecord framing with
// a bitwise CRC32C (Castagnoli, reflected 0x82f63b78), written from the TFRecord specification and not from
// the writer (src/formats/tensorboard.ts), and protobufjs with a .proto schema of the Event message from
// TensorBoard's event.proto / summary.proto (the fields a scalar log uses).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';

const EVENT_PROTO = `
syntax = "proto3";
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    Summary summary = 5;
  }
}
message Summary {
  message Value {
    string tag = 1;
    oneof value {
      float simple_value = 2;
    }
  }
  repeated Value value = 1;
}
`;
const Event = protobuf.parse(EVENT_PROTO).root.lookupType('Event');

export function crcBitwise(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function masked(bytes: Uint8Array): number {
  const c = crcBitwise(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) % 2 ** 32;
}

export interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars: Record<string, number>;
}

/** The events of one file; a record whose length or data CRC does not match throws, saying which. */
export function readEventFile(bytes: Uint8Array): DecodedEvent[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: DecodedEvent[] = [];
  let at = 0;
  while (at < bytes.length) {
    const length = Number(view.getBigUint64(at, true));
    if (view.getUint32(at + 8, true) !== masked(bytes.subarray(at, at + 8))) throw new Error(`length CRC of the record at byte ${at} does not match`);
    const data = bytes.subarray(at + 12, at + 12 + length);
    if (view.getUint32(at + 12 + length, true) !== masked(data)) throw new Error(`data CRC of the record at byte ${at} does not match`);
    at += 12 + length + 4;
    const e = Event.toObject(Event.decode(data), { longs: Number }) as { wallTime: number; step?: number; fileVersion?: string; summary?: { value?: Array<{ tag: string; simpleValue: number }> } };
    out.push({ wallTime: e.wallTime, step: e.step ?? 0, ...(e.fileVersion !== undefined ? { fileVersion: e.fileVersion } : {}), scalars: Object.fromEntries((e.summary?.value ?? []).map((v) => [v.tag, v.simpleValue])) });
  }
  return out;
}

/** Every event file of a folder (names with `tfevents`), in name order (TensorBoard's), with its events. */
export function readEventFolder(dir: string): Array<{ name: string; events: DecodedEvent[] }> {
  return readdirSync(dir)
    .filter((n) => n.includes('tfevents'))
    .sort()
    .map((name) => ({ name, events: readEventFile(readFileSync(join(dir, name))) }));
}
