// Multi-turn rollouts through the two rollout engines, native (our forward on wasm) and llama.cpp (CPU build,
// node-llama-cpp), on the tiny and the ~100M configurations with an adapter, at ctx.threads threads. Each
// turn the model generates, then a search call is appended (the selfplay bench's harness), so every turn pays
// generation, a BM25 search, the spliced observation and the re-prefill of the longer context. The llama.cpp
// rate includes what the trainer adds to it: the adapter's GGUF export (first call) and the recomputation of
// the sampled tokens' log-probs with our forward; the "generation only" row leaves the recomputation out.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { generateSyntheticCorpus } from '../src/corpus/synthetic/index.js';
import { llamaCppUnavailableReason } from '../src/llama-cpp/binding.js';
import { LlamaCppEngine } from '../src/llama-cpp/engine.js';
import { LlamaCppPolicy } from '../src/llama-cpp/policy.js';
import { LORA_DEFAULTS, LoraAdapter } from '../src/model/lora.js';
import { ModelPolicy, type Policy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { Bm25Index } from '../src/search/bm25-index.js';
import { parseContents } from '../src/search/corpus.js';
import { type RolloutConfig, runRollouts } from '../src/agent/rollout.js';
import { initBackend } from '../src/tensor/backend.js';
import { SearchTurnsPolicy } from './selfplay.bench.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  batch: number;
  tokensPerTurn: number;
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 2000, seed: 1 }, batch: 8, tokensPerTurn: 32 },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, batch: 4, tokensPerTurn: 16 },
];

const TURNS = 4;

export const suite: BenchSuite = {
  name: 'rollout-engines',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const missing = await llamaCppUnavailableReason();
    if (missing) {
      ctx.log(`rollout-engines: skipped: ${missing}`);
      return rows;
    }
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-engines-'));
    try {
      await initBackend('wasm');
      const synth = generateSyntheticCorpus({ seed: 0 });
      const searcher = await Bm25Index.fromPassages(synth.corpus.map((r) => ({ id: r.id, ...parseContents(r.contents) })), { cacheDir: null, warn: ctx.log }, 'demo corpus');
      for (const c of CASES) {
        if (ctx.quick && c.key === '100m') continue;
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        const model = await CausalLM.load(dir);
        const tokenizer = await loadTokenizer(dir);
        const adapter = LoraAdapter.create('solver', model.config, LORA_DEFAULTS, { seed: 3, randomB: true, randomBStd: 0.01 });
        const native = new ModelPolicy('solver', model, tokenizer, adapter);
        const engine = await LlamaCppEngine.open({ modelDir: dir, modelConfig: model.config, workDir: join(root, `${c.key}-llama`), gpu: false, threads: ctx.threads });
        const llama = new LlamaCppPolicy(native, engine, () => 0);
        const requests = Array.from({ length: c.batch }, (_, i) => ({ id: `r${i}`, promptIds: native.renderChat([{ role: 'user', content: `Question ${i}: which river flows past the town where the composer was born?` }]) }));
        const config: RolloutConfig = { maxTurns: TURNS, maxTokensPerTurn: c.tokensPerTurn, maxResponseTokens: 4096, temperature: 1, passagesPerQuery: 3, finalTag: 'answer', seed: 1 };
        const measure = async (policy: Policy): Promise<{ rate: number; seconds: number }> => {
          await runRollouts(policy, searcher, requests.slice(0, 2), { ...config, maxTurns: 1, maxTokensPerTurn: 4 }); // warm-up (and the adapter export)
          const harness = new SearchTurnsPolicy(policy, TURNS);
          const t = performance.now();
          await runRollouts(harness, searcher, requests, config);
          const seconds = (performance.now() - t) / 1000;
          return { rate: harness.generatedTokens / seconds, seconds };
        };
        try {
          ctx.log(`rollout-engines: ${c.key} native`);
          const n = await measure(native);
          ctx.log(`rollout-engines: ${c.key} llama.cpp`);
          const l = await measure(llama);
          // Generation alone: the engine without the log-prob recomputation.
          const genOnly: Policy = {
            name: 'llama.cpp generation only',
            renderChat: (m) => native.renderChat(m),
            encode: (t) => native.encode(t),
            decode: (ids) => native.decode(ids),
            generate: async (prompts, o) =>
              (
                await engine.generate(prompts, { maxNewTokens: o.maxNewTokens, temperature: o.temperature, topK: 0, topP: 1, seed: o.seed, stopStrings: o.stopStrings, stopTokenIds: tokenizer.eosTokenIds, decode: (ids) => tokenizer.decode(ids) }, { adapter, version: 0 })
              ).map((g) => ({ ...g, logprobs: g.ids.map(() => 0) })),
          };
          const g = await measure(genOnly);
          const what = `rollouts ${c.key} b${c.batch}, ${TURNS - 1} search turns + answer, ${c.tokensPerTurn} tok/turn, LoRA r${LORA_DEFAULTS.r}`;
          const note = `${ctx.threads} thread${ctx.threads > 1 ? 's' : ''}; model tokens only in the rate`;
          rows.push({ case: what, engine: 'native (sesa/wasm)', metric: 'generated', value: n.rate, unit: 'tok/s', notes: `${note}; ${n.seconds.toFixed(2)} s` });
          rows.push({ case: what, engine: 'llama.cpp + recompute', metric: 'generated', value: l.rate, unit: 'tok/s', ratio: l.rate / n.rate, notes: `${note}; ${l.seconds.toFixed(2)} s; ratio = llama.cpp / native` });
          rows.push({ case: what, engine: 'llama.cpp generation only', metric: 'generated', value: g.rate, unit: 'tok/s', ratio: g.rate / n.rate, notes: `${note}; ${g.seconds.toFixed(2)} s` });
        } finally {
          await engine.dispose();
          adapter.dispose();
          model.dispose();
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
