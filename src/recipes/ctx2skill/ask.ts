// One structured role call with bounded retries (docs/recipes.md): a reply that does not parse, or parses to
// the wrong shape, is retried with the problem stated; after the last retry the outcome is a recorded
// failure, never an exception. Errors of the endpoint itself (unreachable, HTTP errors after the client's own
// retries) still throw: the run stops there and resumes from its history file.
import type { ChatMessage, TextGenerator } from '../../llm/types.js';
import { type Checked, firstValid } from '../reply-json.js';

export type Asked<T> = { ok: true; value: T; attempts: number } | { ok: false; error: string; attempts: number };

export interface AskOptions {
  retries: number;
  maxTokens: number;
  temperature: number;
}

export async function askStructured<T>(llm: TextGenerator, messages: ChatMessage[], check: (v: unknown) => Checked<T>, opts: AskOptions): Promise<Asked<T>> {
  let convo = messages;
  let problem = '';
  let lastReply = '';
  for (let attempt = 1; attempt <= opts.retries + 1; attempt++) {
    lastReply = await llm.complete(convo, { maxTokens: opts.maxTokens, temperature: opts.temperature });
    const got = firstValid(lastReply, check);
    if (got.ok) return { ok: true, value: got.value, attempts: attempt };
    problem = got.problem;
    convo = [
      ...messages,
      { role: 'assistant', content: lastReply },
      { role: 'user', content: `Your reply could not be used: ${problem}. Reply again with the one JSON object only, in the shape asked for.` },
    ];
  }
  const shown = lastReply.replace(/\s+/g, ' ').trim();
  return {
    ok: false,
    attempts: opts.retries + 1,
    error: `${llm.name}: no usable reply after ${opts.retries + 1} attempt${opts.retries === 0 ? '' : 's'}: ${problem} (last reply: ${shown.length > 160 ? `${shown.slice(0, 160)}…` : shown || '(empty)'})`,
  };
}
