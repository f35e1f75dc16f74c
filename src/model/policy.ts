// A policy = the base model with one LoRA adapter (or none: the reference policy), plus its tokenizer.
// The rollout engine and the roles talk to this interface only; tests substitute a scripted double.
import type { Generation, GenerateOptions, SessionRow } from './generate.js';
import { generate, GenerationSession } from './generate.js';
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

/**
 * Multi-turn generation for the rollout engine: each call continues the sequences named by key (see
 * `SessionRow`: the full ids so far, of which a caching session runs only the new ones).
 */
export interface PolicySession {
  generate(rows: readonly SessionRow[], opts: PolicyGenerateOptions): Promise<Generation[]>;
  /** The sequence will not continue: drop what is kept for it. */
  release(key: number): void;
  close(): void;
}

export interface Policy {
  readonly name: string;
  /** Token ids of a chat prompt ending with the assistant turn opener. */
  renderChat(messages: readonly ChatMessage[]): number[];
  /** Token ids of a text fragment spliced into a turn (no special tokens added). */
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  generate(prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]>;
  /** A session that keeps each sequence's KV cache between turns; policies without one are replayed. */
  openSession?(): PolicySession;
}

/**
 * The session of a policy without a cache (test doubles): every call generates from the full ids, with the
 * largest row budget for all rows (the caller cuts each row to its own budget).
 */
export function replaySession(policy: Policy): PolicySession {
  return {
    generate: (rows, opts) =>
      policy.generate(
        rows.map((r) => r.ids),
        { ...opts, maxNewTokens: Math.max(0, ...rows.map((r) => Math.min(opts.maxNewTokens, r.maxNewTokens ?? opts.maxNewTokens))) },
      ),
    release: () => undefined,
    close: () => undefined,
  };
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
    return generate(this.model, prompts, this.generateOptions(opts));
  }

  openSession(): PolicySession {
    const session = new GenerationSession(this.model);
    return {
      generate: (rows, opts) => session.generate(rows, this.generateOptions(opts)),
      release: (key) => session.release(key),
      close: () => session.close(),
    };
  }

  private generateOptions(opts: PolicyGenerateOptions): GenerateOptions {
    return {
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
    };
  }
}
