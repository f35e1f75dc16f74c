// Hand-written WebAssembly kernels that run inside tfjs-backend-wasm's memory (./batched-matmul.ts,
// ./fused-wat.ts): their text is assembled with wabt when the wasm backend starts and instantiated against
// the backend's memory, so they read and write tensors where they are (byte offsets into that memory).
import type { TensorInfo } from '@tensorflow/tfjs';
import wabtInit from 'wabt';
import { WASM_HEAP_LIMIT_BYTES } from './wasm-heap.js';

/** Bytes of a wasm memory page. */
const PAGE_BYTES = 65536;

/** What the kernels need of the wasm backend: its memory and where a tensor lives in it. */
export interface WasmBackendLike {
  makeOutput(shape: number[], dtype: 'float32'): TensorInfo;
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  wasm: { wasmMemory?: WebAssembly.Memory; asm?: { memory?: WebAssembly.Memory } };
}

/** The memory of the active wasm backend: the threaded build's shared one, or the single-threaded build's. */
export function backendMemory(backend: WasmBackendLike, who: string): WebAssembly.Memory {
  const memory = backend.wasm.wasmMemory ?? backend.wasm.asm?.memory;
  if (!memory) throw new Error(`${who}: the wasm backend exposes no memory (tfjs-backend-wasm changed?)`);
  return memory;
}

/** Whether `memory` is the threaded build's (a shared memory must be imported as shared, with its maximum). */
export function isShared(memory: WebAssembly.Memory): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;
}

/**
 * A module's text assembled with wabt (SIMD on), importing env.memory as shared (the wasm heap's 4 GiB maximum)
 * or not: the text's MEMORY_LIMITS placeholder is filled in here.
 */
export async function assembleWat(file: string, text: string, shared: boolean): Promise<WebAssembly.Module> {
  const wabt = await wabtInit();
  const parsed = wabt.parseWat(file, text.replace('MEMORY_LIMITS', shared ? `${WASM_HEAP_LIMIT_BYTES / PAGE_BYTES} shared` : ''), { simd: true, threads: true });
  try {
    return new WebAssembly.Module(parsed.toBinary({}).buffer as Uint8Array<ArrayBuffer>);
  } finally {
    parsed.destroy();
  }
}

/**
 * A module's exports bound to a wasm backend's memory: assembled once per kind of memory (shared or not) and
 * instantiated again when the backend's memory changes (a switch between the single- and multi-threaded builds).
 */
export class WatKernels<E> {
  private readonly modules = new Map<boolean, WebAssembly.Module>();
  private bound: { memory: WebAssembly.Memory; exports: E } | undefined;

  constructor(
    private readonly file: string,
    private readonly text: string,
  ) {}

  /** Binds the exports to `memory` (a no-op where they are bound to it already). */
  async prepare(memory: WebAssembly.Memory): Promise<void> {
    if (this.bound?.memory === memory) return;
    const shared = isShared(memory);
    let module = this.modules.get(shared);
    if (!module) {
      module = await assembleWat(this.file, this.text, shared);
      this.modules.set(shared, module);
    }
    this.bound = { memory, exports: new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as E };
  }

  /** The exports where they are bound to `memory`, else undefined. */
  boundTo(memory: WebAssembly.Memory): E | undefined {
    return this.bound?.memory === memory ? this.bound.exports : undefined;
  }
}
