// The copy drill (src/world/copy-drill.ts): its sequences are a span, a gap and the same span again, with the
// loss on the repeat's predictable tokens only; a drill run trains the model in place, reports its windows,
// stops at maxSteps, and leaves no tensors behind.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { CausalLM } from '../src/model/qwen3.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { COPY_DRILL_DEFAULTS, copyDrill, drillSequence } from '../src/world/copy-drill.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-copy-drill-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('copy drill', () => {
  it('builds span ‖ gap ‖ span with the mask on the repeat after its first token', () => {
    const rng = new Rng(3);
    for (let k = 0; k < 20; k++) {
      const s = drillSequence({ spanTokens: 5, minGap: 2, maxGap: 6, firstId: 10, lastId: 50 }, rng);
      const gap = s.ids.length - 10;
      expect(gap).toBeGreaterThanOrEqual(2);
      expect(gap).toBeLessThanOrEqual(6);
      expect(s.ids.slice(-5)).toEqual(s.ids.slice(0, 5));
      expect(s.ids.every((id) => id >= 10 && id < 50)).toBe(true);
      expect(s.mask).toEqual(s.ids.map((_, i) => (i > s.ids.length - 5 ? 1 : 0)));
    }
  });

  it('trains in place for maxSteps, reports one loss per window, and leaves the live tensor count flat', async () => {
    await initBackend('cpu');
    const dir = makeTinyCheckpoint({ out: join(root, 'm'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, seed: 2 }).dir;
    const model = await CausalLM.load(dir, { trainable: true });
    const before = [...model.variables().values()].map((v) => v.dataSync().slice());
    const live = tf.memory().numTensors;
    const r = copyDrill(model, { ...COPY_DRILL_DEFAULTS, maxSteps: 6, window: 3, batchSize: 2, spanTokens: 4, minGap: 2, maxGap: 4, lastId: 390, targetLoss: 0 });
    expect(r).toMatchObject({ steps: 6, reachedTarget: false });
    expect(r.windows).toHaveLength(2);
    expect(r.windows.every((l) => Number.isFinite(l) && l > 0)).toBe(true);
    expect(tf.memory().numTensors).toBe(live);
    const after = [...model.variables().values()].map((v) => v.dataSync());
    expect(after.some((a, i) => a.some((x, j) => x !== before[i]?.[j]))).toBe(true);
    expect(() => copyDrill(model, { ...COPY_DRILL_DEFAULTS, lastId: 15 })).toThrow(/too small/);
    model.dispose();
  });
});
