// One text-generation interface for every role that only needs text (the distiller now, the judge later).
// Implementations: an OpenAI-compatible chat-completions endpoint (openai.ts), scripted fakes for tests
// (scripted.ts), and, later, the in-process base model (adapters off) behind the same call.

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export interface CompleteOptions {
  /** Upper bound on generated tokens. */
  maxTokens?: number;
  /** Sampling temperature; 0 = greedy. */
  temperature?: number;
  /** Stop strings; generation ends before any of them. */
  stop?: string[];
  /** Cancels the request (the caller's own deadline, on top of the client's timeout). */
  signal?: AbortSignal;
}

export interface TextGenerator {
  /** A short human-readable name for logs, e.g. "openai:http://127.0.0.1:8000/v1 qwen2.5-32b". */
  readonly name: string;
  complete(messages: ChatMessage[], opts?: CompleteOptions): Promise<string>;
}

/**
 * The shape the in-process model adapter will fill: the lead's generator takes token-id prompts, so the
 * adapter needs a chat template (messages → ids), the generate call and a decoder. Declared here so that the
 * adapter can be written against it without this module importing any tensor code.
 */
export interface TokenTextCodec {
  renderChat(messages: ChatMessage[]): number[];
  decode(ids: number[]): string;
}

export interface TokenGenerateFn {
  (prompts: number[][], opts: { maxTokens: number; temperature: number; stop?: string[] }): Promise<number[][]>;
}

/** Adapts a token-level generator (e.g. the base model with adapters off) to TextGenerator. */
export class TokenTextGenerator implements TextGenerator {
  constructor(
    readonly name: string,
    private readonly codec: TokenTextCodec,
    private readonly generate: TokenGenerateFn,
    private readonly defaults: { maxTokens: number; temperature: number } = { maxTokens: 512, temperature: 0 },
  ) {}

  async complete(messages: ChatMessage[], opts: CompleteOptions = {}): Promise<string> {
    const prompt = this.codec.renderChat(messages);
    const [ids] = await this.generate([prompt], {
      maxTokens: opts.maxTokens ?? this.defaults.maxTokens,
      temperature: opts.temperature ?? this.defaults.temperature,
      stop: opts.stop,
    });
    let text = this.codec.decode(ids ?? []);
    // Stop strings are honoured here too, in case the generator only stops on token ids.
    for (const s of opts.stop ?? []) {
      const at = text.indexOf(s);
      if (at >= 0) text = text.slice(0, at);
    }
    return text;
  }
}
