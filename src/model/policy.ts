// A policy = the base model with one LoRA adapter (or none: the reference policy), plus its tokenizer.
// The rollout engine and the roles talk to this interface only; tests substitute a scripted double.
import type { Generation } from './generate.js';
import { generate } from './generate.js';
import type { LoraAdapter } from './lora.js';
import type { CausalLM } from './qwen3.js';
import type { ChatMessage, Tokenizer } from './tokenizer.js';

export interface PolicyGenerateOptions {
  maxNewTokens: number;
  temperature: number;
  topP?: number;
  topK?: number;
  seed: number;
  stopStrings: string[];
}

export interface Policy {
  readonly name: string;
  /** Token ids of a chat prompt ending with the assistant turn opener. */
  renderChat(messages: readonly ChatMessage[]): number[];
  /** Token ids of a text fragment spliced into a turn (no special tokens added). */
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  generate(prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]>;
}

export interface ModelPolicyOptions {
  /** Qwen3's `enable_thinking`; docs/method.md, "Rollouts": off by default. */
  enableThinking?: boolean;
}

export class ModelPolicy implements Policy {
  constructor(
    readonly name: string,
    readonly model: CausalLM,
    readonly tokenizer: Tokenizer,
    readonly adapter: LoraAdapter | undefined,
    private readonly options: ModelPolicyOptions = {},
  ) {}

  renderChat(messages: readonly ChatMessage[]): number[] {
    const text = this.tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true, enableThinking: this.options.enableThinking ?? false });
    return this.tokenizer.encode(text);
  }

  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  decode(ids: readonly number[]): string {
    return this.tokenizer.decode(ids, { skipSpecialTokens: true });
  }

  generate(prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]> {
    return generate(this.model, prompts, {
      maxNewTokens: opts.maxNewTokens,
      temperature: opts.temperature,
      topP: opts.topP ?? 1,
      topK: opts.topK ?? 0,
      seed: opts.seed,
      stopStrings: opts.stopStrings,
      stopTokenIds: [...new Set([...this.tokenizer.eosTokenIds, ...this.model.config.eosTokenIds])],
      tokenizer: { decode: (ids, o) => this.tokenizer.decode(ids, o) },
      padTokenId: this.tokenizer.padTokenId,
      ...(this.adapter ? { adapter: this.adapter } : {}),
    });
  }
}
