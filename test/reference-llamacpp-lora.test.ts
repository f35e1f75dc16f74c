// Our exported GGUF LoRA adapter, applied by llama.cpp to our exported base GGUF, gives the same log-probs as
// our forward with that adapter (random tiny models with non-zero B).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportGguf } from '../src/checkpoint/export-gguf.js';
import { exportGgufLora } from '../src/checkpoint/export-gguf-lora.js';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { loadPeftAdapter, savePeftAdapter } from '../src/checkpoint/peft.js';
import { LoraAdapter } from '../src/model/lora.js';
import { CausalLM } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { initBackend } from '../src/tensor/backend.js';
import { Rng } from '../src/util/rng.js';
import { llamaCppMissing, llamaCppTitle, openReference } from './helpers/llama-cpp-reference.js';

const CASES: Record<string, Omit<MakeTinyOptions, 'out'>> = {
  'qwen3 (NEOX rope)': { arch: 'qwen3', hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, vocab: 320, seed: 31 },
  'llama (q/k rows permuted for NORM rope)': { arch: 'llama', hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 320, tie: false, seed: 32 },
};

let root: string;
beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sesa-lora-gguf-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(llamaCppMissing !== undefined)(llamaCppTitle('GGUF LoRA adapters in llama.cpp'), () => {
  for (const [name, spec] of Object.entries(CASES)) {
    it(`${name}: llama.cpp with our adapter matches our forward with it (≤ 1e-4)`, async () => {
      const dir = makeTinyCheckpoint({ ...spec, out: join(root, spec.arch ?? 'm') }).dir;
      const model = await CausalLM.load(dir);
      const fresh = LoraAdapter.create('solver', model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, { seed: 3, randomB: true, randomBStd: 0.1 });
      const peftDir = join(root, `${spec.arch}-adapter`);
      await savePeftAdapter(fresh, peftDir, { baseModel: dir });
      fresh.dispose();
      const adapter = loadPeftAdapter(peftDir, 'solver', model.config);
      const baseGguf = join(root, `${spec.arch}.gguf`);
      const loraGguf = join(root, `${spec.arch}-lora.gguf`);
      await exportGguf(dir, baseGguf, { dtype: 'f32' });
      exportGgufLora(peftDir, model.config, loraGguf);

      const rng = new Rng(9);
      const seqs = [48, 64].map((n) => Array.from({ length: n }, () => rng.int(model.config.vocabSize)));
      const ours = await scoreBatch(model, seqs, { adapter });
      const base = await scoreBatch(model, seqs);
      const ref = await openReference(baseGguf, { contextSize: 128, loraAdapter: loraGguf });
      let maxErr = 0;
      let maxEffect = 0;
      try {
        for (let b = 0; b < seqs.length; b++) {
          const theirs = await ref.logprobsOf(seqs[b] as number[]);
          const mine = ours[b]?.logprobs as number[];
          theirs.forEach((v, i) => {
            maxErr = Math.max(maxErr, Math.abs(v - (mine[i] as number)));
            maxEffect = Math.max(maxEffect, Math.abs((mine[i] as number) - (base[b]?.logprobs[i] as number)));
          });
        }
      } finally {
        await ref.dispose();
      }
      console.log(`[${name}] adapter effect ${maxEffect.toExponential(2)}, max |Δ logp| ours–llama.cpp ${maxErr.toExponential(2)}`);
      expect(maxEffect).toBeGreaterThan(1e-2);
      expect(maxErr).toBeLessThanOrEqual(1e-4);
      adapter.dispose();
      model.dispose();
    });
  }
});
