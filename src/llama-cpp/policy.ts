// A policy whose generate() runs on llama.cpp (see ./engine.ts) and whose log-probs come from our own
// forward: the chat rendering, tokenization and decoding are the native policy's, so the rollout engine
// (src/agent/rollout.ts) splices tools, applies stop strings and budgets exactly as it does natively.
import type { Generation } from '../model/generate.js';
import type { ModelPolicy, Policy, PolicyGenerateOptions } from '../model/policy.js';
import { continuationLogprobs } from '../model/token-logprobs.js';
import type { ChatMessage } from '../model/tokenizer.js';
import type { LlamaCppEngine } from './engine.js';

export class LlamaCppPolicy implements Policy {
  /**
   * `adapterVersion` names the current weights of the native policy's adapter (e.g. its optimizer's step
   * count): when it changes, the adapter is exported again before the next generation.
   */
  constructor(
    readonly native: ModelPolicy,
    private readonly engine: LlamaCppEngine,
    private readonly adapterVersion: () => number,
  ) {}

  get name(): string {
    return this.native.name;
  }

  renderChat(messages: readonly ChatMessage[]): number[] {
    return this.native.renderChat(messages);
  }

  encode(text: string): number[] {
    return this.native.encode(text);
  }

  decode(ids: readonly number[]): string {
    return this.native.decode(ids);
  }

  async generate(prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]> {
    const { model, tokenizer, adapter } = this.native;
    const generations = await this.engine.generate(
      prompts,
      {
        maxNewTokens: opts.maxNewTokens,
        temperature: opts.temperature,
        topK: opts.topK ?? 0,
        topP: opts.topP ?? 1,
        seed: opts.seed,
        stopStrings: opts.stopStrings,
        stopTokenIds: [...new Set([...tokenizer.eosTokenIds, ...model.config.eosTokenIds])],
        decode: (ids) => tokenizer.decode(ids),
      },
      adapter ? { adapter, version: this.adapterVersion() } : undefined,
    );
    const logprobs = await continuationLogprobs(
      model,
      prompts,
      generations.map((g) => g.ids),
      { temperature: opts.temperature, padTokenId: tokenizer.padTokenId, ...(adapter ? { adapter } : {}) },
    );
    return generations.map((g, i) => ({
      ids: g.ids,
      logprobs: logprobs[i] as number[],
      finishReason: g.finishReason,
      ...(g.stopString !== undefined ? { stopString: g.stopString } : {}),
      text: tokenizer.decode(g.ids, { skipSpecialTokens: true }),
    }));
  }
}
