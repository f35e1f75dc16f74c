// Direct access to a tensor's storage, for buffers that are written in place (the KV cache).
//
// tfjs tensors are immutable: every op makes a new one. A cache that grows by one token per step would then
// copy itself once per token. The wasm backend keeps tensors in its heap and the cpu backend in plain typed
// arrays, both visible from JS, so a buffer made once can be filled slot by slot. Only the owner of a buffer
// may write it, and only while no other tensor shares its storage (a reshape does; dispose it first).
import * as tf from '@tensorflow/tfjs';

interface WasmLike {
  typedArrayFromHeap(info: { dataId: object; shape: number[]; dtype: tf.DataType }): Float32Array | Int32Array | Uint8Array;
}

interface CpuLike {
  data: { get(dataId: object): { values?: unknown } | undefined };
}

/** The backend that holds `t` (not necessarily the active one). */
function backendOf(t: tf.Tensor): { name: string; backend: tf.KernelBackend } {
  const info = (tf.engine() as unknown as { state: { tensorInfo: { get(id: object): { backend: tf.KernelBackend } | undefined } } }).state.tensorInfo.get(t.dataId);
  if (!info) throw new Error('host memory: the tensor was disposed');
  const engine = tf.engine() as unknown as { registry: Record<string, tf.KernelBackend> };
  const name = Object.keys(engine.registry).find((n) => engine.registry[n] === info.backend) ?? 'unknown';
  return { name, backend: info.backend };
}

/** Whether tensors of the active backend can be written in place (wasm and cpu can; native TensorFlow cannot). */
export function activeBackendHasHostMemory(): boolean {
  const name = tf.getBackend();
  return name === 'wasm' || name === 'cpu';
}

/**
 * The live float32 storage of `t` (writes change the tensor). Throws for a backend whose memory is not
 * visible from JS, and for non-float32 tensors.
 */
export function hostFloat32(t: tf.Tensor): Float32Array {
  if (t.dtype !== 'float32') throw new Error(`host memory: expected a float32 tensor, got ${t.dtype}`);
  const { name, backend } = backendOf(t);
  if (name === 'wasm') {
    return (backend as unknown as WasmLike).typedArrayFromHeap({ dataId: t.dataId, shape: t.shape, dtype: t.dtype }) as Float32Array;
  }
  if (name === 'cpu') {
    const values = (backend as unknown as CpuLike).data.get(t.dataId)?.values;
    if (values instanceof Float32Array) return values;
    throw new Error('host memory: the cpu backend holds this tensor without a float32 array');
  }
  throw new Error(`host memory: the '${name}' backend keeps tensors where JS cannot write them`);
}
