// The workarounds the wasm backend needs (docs/method.md, "The tensor stack"), all in one place.
//
// 1. `UnsortedSegmentSum` is not registered for wasm, so the gradient of `gather` (embedding lookups) fails.
//    We register a typed-array implementation.
// 2. The wasm `Slice` kernel reads its whole input back from the heap on every call, so slicing one row of a
//    large tensor (the KV cache, per-head attention) costs a full copy. We re-register it to copy only the
//    slice. `Unpack` (unstack, the gradient of stack) and `SplitV` (split, the gradient of concat) call that
//    slice once per output, so n outputs cost n full copies: they are re-registered the same way.
// 3. The wasm `Identity` kernel copies its input, and tfjs clones (Identity) every tensor a gradient saves:
//    a customGrad that saves a weight, or `gather` on an embedding table, copied the whole table on every
//    pass (the ~100M model's 98 MB head three times per GRPO pass). We re-register it to share the data, as
//    the cpu backend's does. Sharing is safe because kernels never write into their inputs; the one in-place
//    writer, the KV cache (src/model/kv-cache.ts), writes only buffers it made itself, which nothing clones.
// The fourth, matMul gradients that use transposed operands (7× slower on XNNPACK), is handled where matMul is
// called: see `linear` in ./ops.ts, which is correct on every backend.
import * as tf from '@tensorflow/tfjs';

interface WasmBackendLike {
  incRef(dataId: object): void;
  readSync(dataId: object): ArrayLike<number>;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array | Int32Array | Uint8Array;
}

let registered = false;

function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

export function registerWasmFixes(): void {
  if (registered) return;
  registered = true;

  tf.registerKernel({
    kernelName: 'UnsortedSegmentSum',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const wasm = backend as unknown as WasmBackendLike;
      const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
      const numSegments = (attrs as { numSegments: number }).numSegments;
      const ids = wasm.readSync(segmentIds.dataId);
      const values = wasm.readSync(x.dataId);
      // segmentIds covers the leading dims of x; the remaining dims are summed as rows.
      const rowSize = sizeOf(x.shape.slice(segmentIds.shape.length));
      const outShape = [numSegments, ...x.shape.slice(segmentIds.shape.length)];
      const out = wasm.makeOutput(outShape, x.dtype);
      const outValues = wasm.typedArrayFromHeap(out);
      outValues.fill(0);
      for (let i = 0; i < ids.length; i++) {
        const seg = ids[i] as number;
        if (seg < 0 || seg >= numSegments) continue;
        const src = i * rowSize;
        const dst = seg * rowSize;
        for (let j = 0; j < rowSize; j++) outValues[dst + j] = (outValues[dst + j] as number) + (values[src + j] as number);
      }
      return out;
    },
  });

  // Pieces along one axis: output j takes `sizes[j]` entries of the axis starting at their running sum.
  const splitAlong = (wasm: WasmBackendLike, x: tf.TensorInfo, axis: number, sizes: number[], keepAxis: boolean): tf.TensorInfo[] => {
    const rank = x.shape.length;
    const ax = axis < 0 ? axis + rank : axis;
    const outer = sizeOf(x.shape.slice(0, ax));
    const inner = sizeOf(x.shape.slice(ax + 1));
    const n = x.shape[ax] as number;
    const outs = sizes.map((size) => {
      const shape = [...x.shape];
      if (keepAxis) shape[ax] = size;
      else shape.splice(ax, 1);
      return wasm.makeOutput(shape, x.dtype);
    });
    const src = wasm.typedArrayFromHeap(x);
    let start = 0;
    sizes.forEach((size, j) => {
      const dst = wasm.typedArrayFromHeap(outs[j] as tf.TensorInfo);
      const run = size * inner;
      for (let o = 0; o < outer; o++) dst.set(src.subarray((o * n + start) * inner, (o * n + start) * inner + run), o * run);
      start += size;
    });
    return outs;
  };

  tf.unregisterKernel('Unpack', 'wasm');
  tf.registerKernel({
    kernelName: 'Unpack',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { value } = inputs as { value: tf.TensorInfo };
      const axis = (attrs as { axis: number }).axis;
      const rank = value.shape.length;
      const n = value.shape[axis < 0 ? axis + rank : axis] as number;
      return splitAlong(backend as unknown as WasmBackendLike, value, axis, new Array<number>(n).fill(1), false);
    },
  });

  tf.unregisterKernel('SplitV', 'wasm');
  tf.registerKernel({
    kernelName: 'SplitV',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x } = inputs as { x: tf.TensorInfo };
      const { numOrSizeSplits, axis } = attrs as unknown as { numOrSizeSplits: number | number[]; axis: number };
      const ax = tf.util.parseAxisParam(axis, x.shape)[0] as number;
      const sizes = tf.backend_util.prepareSplitSize(x as unknown as tf.Tensor, numOrSizeSplits, ax);
      return splitAlong(backend as unknown as WasmBackendLike, x, ax, sizes, true);
    },
  });

  // Replacing a registered kernel: unregister first, or tfjs warns on every start.
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({
    kernelName: 'Identity',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x } = inputs as { x: tf.TensorInfo };
      (backend as unknown as WasmBackendLike).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });

  tf.unregisterKernel('Slice', 'wasm');
  tf.registerKernel({
    kernelName: 'Slice',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const wasm = backend as unknown as WasmBackendLike;
      const { x } = inputs as { x: tf.TensorInfo };
      const { begin, size } = attrs as unknown as { begin: number | number[]; size: number | number[] };
      const [starts, sizes] = tf.slice_util.parseSliceParams(x, begin, size) as [number[], number[]];
      const out = wasm.makeOutput(sizes, x.dtype);
      if (sizeOf(sizes) === 0) return out;
      const src = wasm.typedArrayFromHeap(x);
      const dst = wasm.typedArrayFromHeap(out);
      const rank = x.shape.length;
      const strides = new Array<number>(rank).fill(1);
      for (let d = rank - 2; d >= 0; d--) strides[d] = (strides[d + 1] as number) * (x.shape[d + 1] as number);
      // Innermost contiguous run: the trailing dims that are taken whole, plus one partial dim.
      let inner = rank - 1;
      let run = sizes[rank - 1] as number;
      while (inner > 0 && sizes[inner] === x.shape[inner] && starts[inner] === 0) {
        inner--;
        run *= sizes[inner] as number;
      }
      if (rank === 0) {
        dst[0] = src[0] as number;
        return out;
      }
      // Iterate over the outer index space (dims < inner), copying `run` contiguous elements each time.
      const outer = sizes.slice(0, inner);
      const outerCount = sizeOf(outer);
      const idx = new Array<number>(inner).fill(0);
      let dstOffset = 0;
      for (let n = 0; n < outerCount; n++) {
        let srcOffset = (starts[inner] as number) * (strides[inner] as number);
        for (let d = 0; d < inner; d++) srcOffset += ((starts[d] as number) + (idx[d] as number)) * (strides[d] as number);
        dst.set(src.subarray(srcOffset, srcOffset + run), dstOffset);
        dstOffset += run;
        for (let d = inner - 1; d >= 0; d--) {
          idx[d] = (idx[d] as number) + 1;
          if ((idx[d] as number) < (outer[d] as number)) break;
          idx[d] = 0;
        }
      }
      return out;
    },
  });
}
