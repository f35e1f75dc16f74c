// SFT transcripts (docs/sft.md): JSONL lines of {"messages": [{role, content}, ...]}, rendered into token ids
// with a per-token loss mask exactly as the rollout engine builds a sequence (src/agent/rollout.ts):
//
//   prompt  = the chat template over every message before the last assistant turn, ending with the assistant
//             opener (the same call a policy makes, `enable_thinking` included)                     mask 0
//   turn    = the last assistant turn: each assistant message's content, encoded on its own          mask 1
//             with each following tool message spliced in as `\n<information>\n…\n</information>\n\n` mask 0
//   end     = the end-of-turn token (the tokenizer's first eos, `<|im_end|>` for ChatML)              mask 1
//
// An assistant turn is a run of assistant and tool messages (consecutive assistant messages join, as
// generation continues the same turn); a tool message must directly follow an assistant message. Earlier assistant turns are context:
// their tool messages are spliced into them the same way and the template renders them as history.
//
// With `lossOn: 'all'` every token after the first is a target (prompt and tool output too): language
// modelling on the whole transcript, for a model trained from random init that must first learn the text it
// reads (docs/sft.md). The default, `assistant`, is the usual SFT mask above.
import type { ChatMessage, Tokenizer } from '../model/tokenizer.js';
import { encodeLiteral, observationText } from '../agent/rollout.js';
import { echo, readTextFile, TextFileError } from '../util/text-file.js';

export const ROLES = ['system', 'user', 'assistant', 'tool'] as const;
export type Role = (typeof ROLES)[number];

export interface Transcript {
  messages: ChatMessage[];
  /** Where it came from, for error messages: "file:line". */
  where: string;
}

export interface RenderedExample {
  /** The whole sequence: prompt, assistant turn, end-of-turn token. */
  ids: number[];
  /** Per token: 1 when the token is a loss target (assistant-written), 0 for prompt and tool output. */
  mask: number[];
  where: string;
}

export const LOSS_ON = ['assistant', 'all'] as const;
export type LossOn = (typeof LOSS_ON)[number];

export interface RenderOptions {
  /** Qwen3's `enable_thinking` for the prompt (the rollout default is false). */
  enableThinking?: boolean;
  /** Which tokens are loss targets (see the file header); default `assistant`. */
  lossOn?: LossOn;
}

/** Parses one JSONL line into a transcript; errors name the file, the line and the field. */
export function parseTranscriptLine(text: string, file: string, line: number): Transcript {
  const where = `${file}:${line}`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: not valid JSON (${(err as Error).message})`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where}: each line must be a JSON object with a 'messages' list`);
  const list = (raw as { messages?: unknown }).messages;
  if (!Array.isArray(list) || list.length === 0) throw new Error(`${where}: field 'messages' must be a non-empty list of {role, content}`);
  const messages: ChatMessage[] = list.map((m: unknown, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new Error(`${where}: field 'messages[${i}]' must be an object {role, content}`);
    const { role, content } = m as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
      throw new Error(`${where}: field 'messages[${i}].role' must be one of ${ROLES.join(', ')}, got ${echo(role)}`);
    }
    if (typeof content !== 'string') throw new Error(`${where}: field 'messages[${i}].content' must be a string, got ${echo(content)}`);
    return { role: role as Role, content };
  });
  messages.forEach((m, i) => {
    if (m.role === 'tool' && messages[i - 1]?.role !== 'assistant') {
      throw new Error(`${where}: field 'messages[${i}].role' is 'tool' but the message before it is ${i === 0 ? 'absent' : `'${messages[i - 1]?.role}'`}; a tool result must follow the assistant message that searched`);
    }
  });
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  if (firstAssistant < 0) throw new Error(`${where}: field 'messages' has no assistant message, so nothing would be trained`);
  if (firstAssistant === 0) throw new Error(`${where}: field 'messages[0].role' is 'assistant'; a transcript needs a system or user message before the first assistant turn`);
  const last = messages[messages.length - 1] as ChatMessage;
  if (last.role !== 'assistant' && last.role !== 'tool') {
    throw new Error(`${where}: field 'messages[${messages.length - 1}].role' is '${last.role}'; a transcript must end with the assistant turn to train`);
  }
  return { messages, where };
}

/** Reads a JSONL file of transcripts (blank lines skipped). */
export function readTranscripts(file: string): Transcript[] {
  let text: string;
  try {
    text = readTextFile(file);
  } catch (err) {
    if (err instanceof TextFileError) throw err;
    throw new Error(`${file}: cannot read (${(err as Error).message})`);
  }
  const out: Transcript[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim().length > 0) out.push(parseTranscriptLine(line, file, i + 1));
  });
  if (out.length === 0) throw new Error(`${file}: no transcripts (expected JSONL lines of {"messages": [...]})`);
  return out;
}

/** Index of the first message of the last assistant turn. */
function lastTurnStart(messages: readonly ChatMessage[]): number {
  // The trailing run of assistant and tool messages (it starts with an assistant: a tool follows one).
  let i = messages.length - 1;
  while (i > 0 && (messages[i - 1]?.role === 'assistant' || messages[i - 1]?.role === 'tool')) i--;
  return i;
}

/** Context messages for the template: each earlier assistant turn becomes one message with its tool results spliced in. */
function mergeTurns(messages: readonly ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (m.role === 'tool' && prev) prev.content += observationText(m.content);
    else if (m.role === 'assistant' && prev?.role === 'assistant') prev.content += m.content;
    else out.push({ role: m.role, content: m.content });
  }
  return out;
}

/** Renders a transcript into ids and the loss mask (see the file header). */
export function renderTranscript(t: Transcript, tokenizer: Tokenizer, opts: RenderOptions = {}): RenderedExample {
  const start = lastTurnStart(t.messages);
  const prompt = tokenizer.applyChatTemplate(mergeTurns(t.messages.slice(0, start)), { addGenerationPrompt: true, enableThinking: opts.enableThinking ?? false });
  const ids = tokenizer.encode(prompt);
  const mask = ids.map(() => 0);
  const codec = { encode: (text: string) => tokenizer.encode(text), decode: (ids: readonly number[]) => tokenizer.decode(ids, { skipSpecialTokens: true }) };
  for (const m of t.messages.slice(start)) {
    // A tool result is text, as in a rollout: a special-token string in it stays characters.
    const piece = m.role === 'tool' ? encodeLiteral(codec, observationText(m.content)) : tokenizer.encode(m.content);
    ids.push(...piece);
    mask.push(...piece.map(() => (m.role === 'tool' ? 0 : 1)));
  }
  const eos = tokenizer.eosTokenIds[0];
  if (eos === undefined) throw new Error(`${t.where}: the tokenizer in ${tokenizer.dir} has no eos token to end the assistant turn`);
  ids.push(eos);
  mask.push(1);
  if (ids.length < 2 || mask[0] !== 0) throw new Error(`${t.where}: the rendered prompt is empty (the chat template produced no tokens)`);
  if (opts.lossOn === 'all') mask.fill(1, 1);
  return { ids, mask, where: t.where };
}
