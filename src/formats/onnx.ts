// A minimal ONNX model writer: just enough protobuf (varints, length-delimited fields, fixed32 floats) and
// just enough of onnx.proto (ModelProto, GraphProto, NodeProto, TensorProto, ValueInfoProto,
// AttributeProto) to emit small inference graphs with float32/uint8/int64 initializers. Field numbers follow
// onnx/onnx.proto3; unknown features are simply not supported, so there is nothing to get half right.
// Used for the tiny E5 test model (src/skills/tiny-e5.ts) and for the native matMul path's one-node models,
// whose initializers are a model's frozen weights (src/tensor/native-matmul.ts): a nested message is appended
// as its parts, so an initializer's bytes are copied once, into the finished model, or, given as a `RawFill`,
// written there by their source (a checkpoint read straight into the model's bytes: no copy at all).

/** An initializer's raw bytes, written by their source into the finished model at `finish`. */
export interface RawFill {
  byteLength: number;
  /** Writes exactly `byteLength` bytes into `target`. */
  fill(target: Uint8Array): void;
}

/**
 * An initializer whose bytes are not in the model: its TensorProto names `location` (external data, offset 0,
 * `byteLength` bytes), and the session is given those bytes by that name (src/tensor/ort-binding.ts,
 * `externalData`). onnxruntime then copies them once, into the buffer it keeps, with no parse of them as part of
 * the model (inline bytes are copied into the parsed model first, then into that buffer).
 */
export interface ExternalBytes {
  external: string;
  byteLength: number;
}

class PbWriter {
  private chunks: Array<Uint8Array | RawFill> = [];
  private len = 0;

  private push(b: Uint8Array | RawFill): void {
    this.chunks.push(b);
    this.len += b.byteLength;
  }

  varint(v: number | bigint): this {
    let x = BigInt.asUintN(64, BigInt(v));
    const out: number[] = [];
    do {
      let byte = Number(x & 0x7fn);
      x >>= 7n;
      if (x !== 0n) byte |= 0x80;
      out.push(byte);
    } while (x !== 0n);
    this.push(Uint8Array.from(out));
    return this;
  }

  tag(field: number, wire: 0 | 2 | 5): this {
    return this.varint((field << 3) | wire);
  }

  int(field: number, v: number | bigint): this {
    return this.tag(field, 0).varint(v);
  }

  bytes(field: number, b: Uint8Array | RawFill): this {
    this.tag(field, 2).varint(b.byteLength);
    this.push(b);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  /** A nested message: its parts are appended as they are (no copy until the outermost `finish`). */
  message(field: number, m: PbWriter): this {
    this.tag(field, 2).varint(m.len);
    for (const c of m.chunks) this.push(c);
    return this;
  }

  float(field: number, v: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
    return this;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.len);
    let off = 0;
    for (const c of this.chunks) {
      if (c instanceof Uint8Array) out.set(c, off);
      else c.fill(out.subarray(off, off + c.byteLength));
      off += c.byteLength;
    }
    return out;
  }
}

// onnx TensorProto.DataType
export const ONNX_FLOAT = 1;
export const ONNX_UINT8 = 2;
export const ONNX_INT64 = 7;

export interface OnnxTensor {
  name: string;
  dims: number[];
  dataType: typeof ONNX_FLOAT | typeof ONNX_UINT8 | typeof ONNX_INT64;
  /** Float32Array for FLOAT, Uint8Array for UINT8, BigInt64Array for INT64, the raw little-endian bytes' source, or external bytes. */
  data: Float32Array | Uint8Array | BigInt64Array | RawFill | ExternalBytes;
}

export type OnnxAttr = { name: string; int: number } | { name: string; float: number } | { name: string; ints: number[] } | { name: string; tensor: OnnxTensor };

export interface OnnxNode {
  op: string;
  /** The operator's domain: '' (ai.onnx, the default) or 'com.microsoft' (onnxruntime's contrib ops). */
  domain?: string;
  inputs: string[];
  outputs: string[];
  name?: string;
  attrs?: OnnxAttr[];
}

export interface OnnxValueInfo {
  name: string;
  elemType: typeof ONNX_FLOAT | typeof ONNX_INT64;
  /** A number is a fixed size; a string a symbolic one (e.g. "batch"). */
  shape: Array<number | string>;
}

export interface OnnxGraph {
  name: string;
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
}

function tensorProto(t: OnnxTensor): PbWriter {
  const w = new PbWriter();
  for (const d of t.dims) w.int(1, d); // dims
  w.int(2, t.dataType); // data_type
  w.string(8, t.name); // name
  if ('external' in t.data) {
    // external_data (13): StringStringEntryProto {key = 1, value = 2}; data_location (14): EXTERNAL = 1.
    const entry = (key: string, value: string): PbWriter => new PbWriter().string(1, key).string(2, value);
    w.message(13, entry('location', t.data.external)).message(13, entry('offset', '0')).message(13, entry('length', String(t.data.byteLength)));
    return w.int(14, 1);
  }
  const raw = t.data instanceof Float32Array || t.data instanceof Uint8Array || t.data instanceof BigInt64Array ? new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) : t.data; // little-endian on x86/arm
  w.bytes(9, raw); // raw_data
  return w;
}

function valueInfo(v: OnnxValueInfo): PbWriter {
  const shape = new PbWriter();
  for (const d of v.shape) {
    const dim = new PbWriter();
    if (typeof d === 'number') dim.int(1, d); // dim_value
    else dim.string(2, d); // dim_param
    shape.message(1, dim);
  }
  const tensorType = new PbWriter().int(1, v.elemType).message(2, shape); // elem_type, shape
  const type = new PbWriter().message(1, tensorType); // TypeProto.tensor_type
  return new PbWriter().string(1, v.name).message(2, type);
}

function attribute(a: OnnxAttr): PbWriter {
  const w = new PbWriter().string(1, a.name);
  // AttributeProto: f=2, i=3, t=5, ints=8, type=20 (FLOAT=1, INT=2, TENSOR=4, INTS=7)
  if ('int' in a) w.int(3, a.int).int(20, 2);
  else if ('float' in a) w.float(2, a.float).int(20, 1);
  else if ('ints' in a) {
    for (const x of a.ints) w.int(8, x);
    w.int(20, 7);
  } else w.message(5, tensorProto(a.tensor)).int(20, 4);
  return w;
}

function nodeProto(n: OnnxNode, i: number): PbWriter {
  const w = new PbWriter();
  for (const x of n.inputs) w.string(1, x);
  for (const x of n.outputs) w.string(2, x);
  w.string(3, n.name ?? `${n.op}_${i}`);
  w.string(4, n.op);
  for (const a of n.attrs ?? []) w.message(5, attribute(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

/** The contrib domain's version that `com.microsoft` nodes are written against. */
const MICROSOFT_OPSET = 1;

export function encodeOnnxModel(g: OnnxGraph, opts: { opset?: number; irVersion?: number; producer?: string } = {}): Uint8Array {
  const graph = new PbWriter();
  g.nodes.forEach((n, i) => graph.message(1, nodeProto(n, i))); // node
  graph.string(2, g.name); // name
  for (const t of g.initializers) graph.message(5, tensorProto(t)); // initializer
  for (const v of g.inputs) graph.message(11, valueInfo(v)); // input
  for (const v of g.outputs) graph.message(12, valueInfo(v)); // output
  const model = new PbWriter()
    .int(1, opts.irVersion ?? 8) // ir_version
    .string(2, opts.producer ?? 'sesa-train') // producer_name
    .message(7, graph) // graph
    .message(8, new PbWriter().string(1, '').int(2, opts.opset ?? 14)); // opset_import: domain, version
  if (g.nodes.some((n) => n.domain === 'com.microsoft')) model.message(8, new PbWriter().string(1, 'com.microsoft').int(2, MICROSOFT_OPSET));
  return model.finish();
}
