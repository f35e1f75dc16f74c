// ScriptedPolicy: a scripted TEST DOUBLE of the Policy interface (src/model/policy.ts), named as such. No model:
// a char-level codec (one id per UTF-16 code unit) and a script that says what the "model" writes next.
//
// generate() behaves like the real generator (src/model/generate.ts) token by token: it emits the script's
// text one char-token at a time and stops a row at the first token after which the generated text contains
// a stop string ('stop', with stopString), at the EOS token when the script asks for one ('eos'; the EOS id
// is the last id, decoded to nothing), or after maxNewTokens tokens ('length'). Text after a stop is never
// emitted, exactly as a model that was stopped there.
import type { Generation } from '../../src/model/generate.js';
import type { Policy, PolicyGenerateOptions } from '../../src/model/policy.js';
import type { ChatMessage } from '../../src/model/tokenizer.js';

/** The EOS token id: outside the UTF-16 range, so no text encodes to it; decode skips it (a special token). */
export const EOS_ID = 0x10ffff + 1;
/** A script reply ending with this marker makes the "model" emit EOS after the text before it. */
export const EOS = '<|eos|>';
/** The assistant-turn opener that renderChat ends with. */
export const ASSISTANT_OPENER = '<|assistant|>\n';

export interface ScriptContext {
  /** Row index in this generate() batch. */
  row: number;
  /** Index of this generate() call on this policy (0-based). */
  call: number;
  /** The rendered chat prompt (up to and including the assistant opener). */
  prompt: string;
  /** What the assistant turn holds so far (generated text and spliced observations). */
  response: string;
}

export interface ScriptReply {
  text: string;
  /** Emit EOS after `text` (same as ending `text` with EOS). */
  eos?: boolean;
  /** Log-prob of each emitted token (index into text); default: the policy's logprob function. */
  logprobs?: number[];
}

/**
 * `(promptText, turn, ctx)` → the text the model writes next. `promptText` is the whole decoded prompt of
 * the row; `turn` counts the `<information>` observations already spliced into its assistant turn.
 */
export type PolicyScript = (promptText: string, turn: number, ctx: ScriptContext) => string | ScriptReply;

export interface ScriptedPolicyOptions {
  name?: string;
  /** Log-prob of the token `id` at position `index` of this generation; default: a constant −0.25. */
  logprob?: (id: number, index: number) => number;
}

export interface RecordedCall {
  /** The decoded prompts of the batch, in row order. */
  prompts: string[];
  opts: PolicyGenerateOptions;
}

const OBSERVATION_OPEN = '\n<information>\n';

export class ScriptedPolicy implements Policy {
  readonly name: string;
  /** Every generate() call: decoded prompts and options. */
  readonly calls: RecordedCall[] = [];
  private readonly logprobOf: (id: number, index: number) => number;

  constructor(
    private readonly script: PolicyScript,
    opts: ScriptedPolicyOptions = {},
  ) {
    this.name = opts.name ?? 'scripted policy (test double)';
    this.logprobOf = opts.logprob ?? (() => -0.25);
  }

  /** Every prompt received, decoded, over all calls. */
  get prompts(): string[] {
    return this.calls.flatMap((c) => c.prompts);
  }

  /** A simple deterministic chat rendering, ending with the assistant opener. */
  static renderChatText(messages: readonly ChatMessage[]): string {
    return messages.map((m) => `<|${m.role}|>\n${m.content}\n<|end|>\n`).join('') + ASSISTANT_OPENER;
  }

  renderChat(messages: readonly ChatMessage[]): number[] {
    return this.encode(ScriptedPolicy.renderChatText(messages));
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    for (let i = 0; i < text.length; i++) ids.push(text.charCodeAt(i));
    return ids;
  }

  decode(ids: readonly number[]): string {
    let s = '';
    for (const id of ids) if (id !== EOS_ID) s += String.fromCharCode(id);
    return s;
  }

  async generate(prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]> {
    const call = this.calls.length;
    const texts = prompts.map((p) => this.decode(p));
    this.calls.push({ prompts: texts, opts: { ...opts, stopStrings: [...opts.stopStrings] } });
    return texts.map((promptText, row) => {
      const at = promptText.lastIndexOf(ASSISTANT_OPENER);
      const prompt = at < 0 ? promptText : promptText.slice(0, at + ASSISTANT_OPENER.length);
      const response = at < 0 ? '' : promptText.slice(at + ASSISTANT_OPENER.length);
      const turn = response.split(OBSERVATION_OPEN).length - 1;
      const raw = this.script(promptText, turn, { row, call, prompt, response });
      const reply: ScriptReply = typeof raw === 'string' ? { text: raw } : raw;
      let text = reply.text;
      let eos = reply.eos ?? false;
      if (text.endsWith(EOS)) {
        text = text.slice(0, -EOS.length);
        eos = true;
      }
      return this.emit(text, eos, reply.logprobs, opts);
    });
  }

  /** The real generator's loop, one char-token at a time. */
  private emit(text: string, eos: boolean, logprobs: number[] | undefined, opts: PolicyGenerateOptions): Generation {
    const ids: number[] = [];
    const lps: number[] = [];
    const tokens = [...this.encode(text), ...(eos ? [EOS_ID] : [])];
    const tail = Math.max(0, ...opts.stopStrings.map((s) => s.length)) + 1;
    for (let i = 0; i < opts.maxNewTokens && i < tokens.length; i++) {
      const id = tokens[i] as number;
      ids.push(id);
      lps.push(logprobs?.[i] ?? this.logprobOf(id, i));
      if (id === EOS_ID) return { ids, logprobs: lps, finishReason: 'eos', text: this.decode(ids) };
      const recent = this.decode(ids.slice(-tail));
      const hit = opts.stopStrings.find((s) => recent.includes(s));
      if (hit !== undefined) return { ids, logprobs: lps, finishReason: 'stop', stopString: hit, text: this.decode(ids) };
    }
    if (ids.length < opts.maxNewTokens) {
      // The script ran out of text without EOS or a stop string: a model would go on writing; the double
      // cannot, so this is a bug in the test's script.
      throw new Error(`ScriptedPolicy: the script's reply ended without a stop string or EOS: ${JSON.stringify(text)}`);
    }
    return { ids, logprobs: lps, finishReason: 'length', text: this.decode(ids) };
  }
}
