// The in-process model as a TextGenerator (src/llm/types.ts), for the roles that only need text: the judge
// and the distiller run on the base model with adapters off by default (docs/method.md, "One step").
import type { ChatMessage, CompleteOptions, TextGenerator } from '../llm/types.js';
import type { Policy } from './policy.js';

export class PolicyTextGenerator implements TextGenerator {
  constructor(
    private readonly policy: Policy,
    private readonly defaults: { maxTokens: number; seed: number } = { maxTokens: 256, seed: 0 },
  ) {}

  get name(): string {
    return `in-process:${this.policy.name}`;
  }

  async complete(messages: ChatMessage[], opts: CompleteOptions = {}): Promise<string> {
    opts.signal?.throwIfAborted();
    const [g] = await this.policy.generate([this.policy.renderChat(messages)], {
      maxNewTokens: opts.maxTokens ?? this.defaults.maxTokens,
      temperature: opts.temperature ?? 0,
      seed: this.defaults.seed,
      stopStrings: opts.stop ?? [],
    });
    let text = this.policy.decode(g?.ids ?? []);
    // The OpenAI convention: the stop string itself is not part of the reply.
    for (const s of opts.stop ?? []) {
      const at = text.indexOf(s);
      if (at >= 0) text = text.slice(0, at);
    }
    return text;
  }
}
