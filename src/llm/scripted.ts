// A fake TextGenerator for tests and demos, named as such: it answers from a script instead of a model.
import type { ChatMessage, CompleteOptions, TextGenerator } from './types.js';

export type ScriptedReply = string | Error | ((messages: ChatMessage[]) => string | Promise<string>);

/**
 * ScriptedTextGenerator replies in order from `replies` (cycling when `cycle` is set, else throwing once
 * exhausted). Every call is recorded in `calls`, so tests can check the prompts that were sent.
 */
export class ScriptedTextGenerator implements TextGenerator {
  readonly name: string;
  readonly calls: ChatMessage[][] = [];
  private next = 0;

  constructor(
    private readonly replies: ScriptedReply[],
    private readonly opts: { cycle?: boolean; name?: string; gate?: Promise<void> } = {},
  ) {
    this.name = opts.name ?? 'scripted (fake LLM)';
  }

  async complete(messages: ChatMessage[], _opts?: CompleteOptions): Promise<string> {
    this.calls.push(messages);
    // A test can hold every reply back until it releases the gate, to check what happens meanwhile.
    if (this.opts.gate) await this.opts.gate;
    if (this.next >= this.replies.length) {
      if (!this.opts.cycle || this.replies.length === 0) throw new Error(`${this.name}: script exhausted after ${this.next} replies`);
      this.next = 0;
    }
    const reply = this.replies[this.next++] as ScriptedReply;
    if (reply instanceof Error) throw reply;
    return typeof reply === 'function' ? reply(messages) : reply;
  }
}
