// Where onnxruntime-node's binding does not load (here: a double of src/tensor/ort-binding.ts that says it is not
// installed), `auto` picks wasm and says why, `--backend native` is refused with the reason, and the wasm path
// runs as before: no matMul is routed and a model keeps every weight as a tensor.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

vi.mock('../src/tensor/ort-binding.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../src/tensor/ort-binding.js')>()),
  ortAvailability: () => ({ ok: false, reason: 'onnxruntime-node is not installed' }),
}));

const { initBackend, tf } = await import('../src/tensor/backend.js');
const { nativeMatMulCalls } = await import('../src/tensor/native-matmul.js');
const { CausalLM } = await import('../src/model/qwen3.js');
const { makeTinyCheckpoint } = await import('../src/checkpoint/make-tiny.js');
const { checkNative } = await import('../src/doctor/tensor-backends.js');

describe('without the onnxruntime binding', () => {
  const root = mkdtempSync(join(tmpdir(), 'sesa-no-ort-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('auto picks wasm and names the reason; native is refused with it', async () => {
    const info = await initBackend('auto', { threads: 1 });
    expect(info.name).toBe('wasm');
    expect(info.reason).toContain('onnxruntime-node is not installed');
    await expect(initBackend('native', { threads: 1 })).rejects.toThrow(/--backend native cannot start: onnxruntime-node is not installed/);
  });

  it('doctor fails native when it is asked for and warns otherwise, with the reason and the fix', async () => {
    const asked = await checkNative({ backend: 'native' }, 2);
    expect(asked).toMatchObject({ check: 'native', status: 'fail' });
    expect(asked.detail).toContain('onnxruntime-node is not installed');
    expect(asked.fix).toContain('npm ci');
    expect((await checkNative({ backend: 'auto' }, 2)).status).toBe('warn');
  });

  it('runs a model on wasm as before: nothing routed, every weight a tensor', async () => {
    await initBackend('wasm', { threads: 1 });
    const dir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', layers: 1, hidden: 512, heads: 8, kvHeads: 2, headDim: 64, intermediate: 1024, vocab: 320, seed: 2, dtype: 'f32' }).dir;
    const model = await CausalLM.load(dir);
    const calls = nativeMatMulCalls();
    const h = tf.tidy(() => model.forward([Array.from({ length: 32 }, (_, i) => i)]).shape);
    expect(h).toEqual([1, 32, 512]);
    expect(nativeMatMulCalls()).toBe(calls);
    expect(model.heapWeightFloats()).toBe(model.parameterCount() + 320 * 512); // + the tied head's transposed copy
    model.dispose();
  });
});
