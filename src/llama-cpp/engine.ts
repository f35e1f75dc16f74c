// Generation through llama.cpp (node-llama-cpp): the base model exported to GGUF once, each adapter exported
// as a GGUF LoRA whenever its version changes and applied to the context that generates for it. Rows of a
// batch are sequences of one context, so llama.cpp decodes them together. Stopping follows the native engine
// (src/model/generate.ts): stop token ids, stop strings found in the decoded tail, the token budget. The
// sampled tokens' log-probs are not taken from llama.cpp: the policy recomputes them with our own forward.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureDir, writeFileAtomic } from '../util/atomic.js';
import { exportGguf, type GgufExportDtype } from '../checkpoint/export-gguf.js';
import { exportGgufLora } from '../checkpoint/export-gguf-lora.js';
import { savePeftAdapter } from '../checkpoint/peft.js';
import type { ModelConfig } from '../model/config.js';
import type { FinishReason } from '../model/generate.js';
import type { LoraAdapter } from '../model/lora.js';
import { Rng } from '../util/rng.js';
import { type Llama, type LlamaContext, type LlamaModel, openLlama } from './binding.js';

export interface LlamaCppEngineOptions {
  /** The Hugging Face model folder (exported to `workDir/base.gguf` once). */
  modelDir: string;
  modelConfig: ModelConfig;
  /** Where the GGUF exports live (the run folder's `llama-cpp/`). */
  workDir: string;
  /** f32 matches the native engine to ~1e-5 in log-prob; f16 halves the memory (default f32). */
  dtype?: GgufExportDtype;
  /** 'auto' = llama.cpp's best build here (CUDA, Vulkan, Metal, else CPU); false = the CPU build. */
  gpu?: 'auto' | false;
  /**
   * CPU threads per context (default: all cores). llama.cpp's workers spin while they wait, so on a machine
   * where other processes hold the cores, fewer threads are much faster (1 thread: 24 tokens in 30 ms on a
   * tiny model; 2 threads on 2 busy cores: 8 s).
   */
  threads?: number;
}

export interface EngineGenerateOptions {
  maxNewTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  seed: number;
  stopStrings: string[];
  stopTokenIds: number[];
  decode: (ids: number[]) => string;
}

export interface EngineGeneration {
  ids: number[];
  finishReason: FinishReason;
  stopString?: string;
}

/** An adapter and the version of its weights (e.g. its optimizer's step count): a new version is re-exported. */
export interface VersionedAdapter {
  adapter: LoraAdapter;
  version: number;
}

export class LlamaCppEngine {
  /** LoRA GGUF files by adapter name: the version exported last. */
  private readonly exported = new Map<string, { version: number; path: string }>();

  private constructor(
    private readonly options: LlamaCppEngineOptions,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
  ) {}

  /** CPU threads of every context: `threads`, else all cores. */
  get threads(): number {
    return this.options.threads ?? availableParallelism();
  }

  /** Exports the base model (unless `workDir` already holds this export) and loads it into llama.cpp. */
  static async open(options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    ensureDir(options.workDir);
    const dtype = options.dtype ?? 'f32';
    const gguf = join(options.workDir, `base-${dtype}.gguf`);
    const stampFile = `${gguf}.source.json`;
    const stamp = JSON.stringify({ modelDir: resolve(options.modelDir), dtype });
    if (!existsSync(gguf) || !existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== stamp) {
      await exportGguf(options.modelDir, gguf, { dtype });
      writeFileAtomic(stampFile, stamp);
    }
    const llama = await openLlama({ gpu: options.gpu ?? 'auto', ...(options.threads ? { maxThreads: options.threads } : {}) });
    const model = await llama.loadModel({ modelPath: gguf, gpuLayers: llama.gpu ? 'max' : 0 });
    return new LlamaCppEngine(options, llama, model);
  }

  /** The GGUF LoRA file of this adapter version, exported when the version is new. */
  async loraFile(v: VersionedAdapter): Promise<string> {
    const name = v.adapter.name;
    const last = this.exported.get(name);
    if (last && last.version === v.version) return last.path;
    const peftDir = join(this.options.workDir, `${name}-peft`);
    await savePeftAdapter(v.adapter, peftDir, { baseModel: this.options.modelDir });
    // A new file name per version: llama.cpp keeps loaded adapters by path.
    const path = join(this.options.workDir, `${name}-v${v.version}.gguf`);
    exportGgufLora(peftDir, this.options.modelConfig, path);
    if (last) await this.forgetLora(last.path);
    this.exported.set(name, { version: v.version, path });
    return path;
  }

  async generate(prompts: number[][], opts: EngineGenerateOptions, adapter?: VersionedAdapter): Promise<EngineGeneration[]> {
    if (prompts.length === 0) return [];
    if (prompts.some((p) => p.length === 0)) throw new Error('llama.cpp generate: every prompt needs at least one token');
    const V = this.options.modelConfig.vocabSize;
    for (const p of prompts) {
      const bad = p.find((id) => !Number.isInteger(id) || id < 0 || id >= V);
      if (bad !== undefined) throw new Error(`llama.cpp generate: prompt token id ${bad} is outside the vocabulary [0, ${V})`);
    }
    const results: EngineGeneration[] = prompts.map(() => ({ ids: [], finishReason: 'length' }));
    if (opts.maxNewTokens === 0) return results;
    const lora = adapter ? await this.loraFile(adapter) : undefined;
    const perSequence = Math.max(...prompts.map((p) => p.length)) + opts.maxNewTokens + 1;
    const threads = this.threads;
    const context: LlamaContext = await this.model.createContext({
      contextSize: prompts.length * perSequence,
      sequences: prompts.length,
      batchSize: Math.min(2048, prompts.length * perSequence),
      // The settings under which llama.cpp's log-probs match ours to ~1e-5 (F32 KV cache, no flash attention).
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      threads,
      ...(lora ? { lora: { adapters: [{ filePath: lora, scale: 1 }] } } : {}),
    });
    const stopIds = new Set(opts.stopTokenIds);
    const tailTokens = Math.max(0, ...opts.stopStrings.map((s) => s.length)) + 1;
    try {
      await Promise.all(
        prompts.map(async (prompt, i) => {
          const r = results[i] as EngineGeneration;
          const sequence = context.getSequence();
          try {
            // llama.cpp's samplers: top-k 0 and top-p 1 switch them off (its defaults are 40 and 0.95).
            const seed = Math.floor(Rng.derive(opts.seed, i).next() * 2 ** 32);
            for await (const token of sequence.evaluate(prompt, { temperature: opts.temperature, topK: opts.topK, topP: opts.topP, minP: 0, seed })) {
              r.ids.push(token);
              if (stopIds.has(token)) {
                r.finishReason = 'eos';
                break;
              }
              if (opts.stopStrings.length > 0) {
                const tail = opts.decode(r.ids.slice(-tailTokens));
                const hit = opts.stopStrings.find((s) => tail.includes(s));
                if (hit !== undefined) {
                  r.finishReason = 'stop';
                  r.stopString = hit;
                  break;
                }
              }
              if (r.ids.length >= opts.maxNewTokens) break;
            }
          } finally {
            sequence.dispose();
          }
        }),
      );
    } finally {
      await context.dispose();
    }
    return results;
  }

  /**
   * Frees an old adapter version. node-llama-cpp keeps every LoRA it loaded, by path, until the model is
   * disposed and has no public call to unload one; without this a long run would hold every version. Safe
   * here because each generate() disposes its context (the adapter's only user) before returning.
   */
  private async forgetLora(path: string): Promise<void> {
    const loaded = (this.model as unknown as { _loraAdapters?: Map<string, { dispose?: () => Promise<void> }> })._loraAdapters;
    const key = resolve(path);
    const lora = loaded instanceof Map ? loaded.get(key) : undefined;
    if (lora && loaded) {
      loaded.delete(key);
      await lora.dispose?.();
    }
    rmSync(path, { force: true });
  }

  get gpu(): string {
    return this.llama.gpu || 'cpu';
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
    for (const { path } of this.exported.values()) rmSync(path, { force: true });
    this.exported.clear();
  }
}
