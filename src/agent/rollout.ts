// The rollout engine (docs/method.md, "Rollouts"): batched multi-turn generation with a search tool.
//
// Each turn, every unfinished rollout generates until `</search>`, its final tag (`</answer>` for the solver,
// `</question>` for the proposer), EOS or its token budget. A policy session keeps each rollout's KV cache
// between turns, so a turn runs only the tokens appended since the last one (the observation); rollouts with
// the same prompt (a group) share one prefill. All searches of the turn go to the searcher in one
// batch; each result is spliced into the same assistant turn as `\n<information>\n…</information>\n\n` and
// generation continues. Generated tokens carry loss mask 1 and their sampling log-probs; tool output carries
// mask 0. An output with no valid action gets a short corrective observation (also mask 0).
import type { Generation } from '../model/generate.js';
import { type Policy, type PolicySession, replaySession } from '../model/policy.js';
import type { Passage, Searcher } from '../search/types.js';
import { renderResults } from '../search/types.js';
import { yieldToEventLoop } from '../util/yield.js';

export type FinalTag = 'answer' | 'question';

/** Turn t of a rollout batch samples with seed `seed · TURN_SEED_STRIDE + t` (a prime, so batches do not collide). */
export const TURN_SEED_STRIDE = 1009;

export interface RolloutConfig {
  /** Generations per rollout (docs/method.md, "Rollouts"). */
  maxTurns: number;
  /** New tokens per turn. */
  maxTokensPerTurn: number;
  /** Response tokens per rollout (generated plus tool output). */
  maxResponseTokens: number;
  temperature: number;
  /** Passages per query (docs/method.md, "Search"). */
  passagesPerQuery: number;
  finalTag: FinalTag;
  seed: number;
}

export interface RolloutRequest {
  /** Caller's id, carried through (e.g. "seed3/p1"). */
  id: string;
  promptIds: number[];
  /**
   * The rollout's sampling stream: its samples derive from (config.seed, stream, turn) alone, whichever batch
   * or worker runs it (docs/scale-out.md). Default: the request's index in the call. Unique within a call.
   */
  stream?: number;
  /**
   * Which rollouts must run together (the step's seed index: a GRPO group never spans workers); read by
   * sharded runners only.
   */
  shard?: number;
  /** The corpus its searches go to, an index into the runner's search tools (docs/method.md, "Training corpora"); default 0. */
  corpus?: number;
}

/** The search tools of a rollout call: one, or one per corpus (a request searches the one its `corpus` names). */
export type SearchTools = Searcher | readonly Searcher[];

/** The search tool of corpus `corpus` (default 0); a single tool serves corpus 0 only. */
export function searcherOf(tools: SearchTools, corpus: number | undefined): Searcher {
  const k = corpus ?? 0;
  const list = Array.isArray(tools) ? (tools as readonly Searcher[]) : [tools as Searcher];
  const s = list[k];
  if (!Number.isInteger(k) || k < 0 || s === undefined) throw new Error(`a rollout asks for corpus ${k}, but the runner has ${list.length} search tool${list.length === 1 ? '' : 's'}`);
  return s;
}

export type RolloutOutcome = 'final' | 'eos' | 'max-turns' | 'budget';

export interface Rollout {
  id: string;
  promptIds: number[];
  /** Generated and tool-output tokens of the assistant turn, in order. */
  responseIds: number[];
  /** 1 for generated tokens (trained), 0 for tool output (context only). */
  responseMask: number[];
  /** Sampling log-prob of each generated token; 0 at tool-output positions. */
  logprobs: number[];
  /** The T of softmax(logits / T) that `logprobs` are under (the sampler reports greedy tokens under T = 1). */
  samplingTemperature: number;
  queries: string[];
  /** Retrieved passages, one list per query. */
  retrieved: Passage[][];
  /** Content of the last `<answer>…</answer>` / `<question>…</question>`, when there is one. */
  final?: string;
  outcome: RolloutOutcome;
  turns: number;
  invalidActions: number;
  /** The decoded response (generated text with the observations spliced in). */
  text: string;
}

/** Content of the last `<tag>…</tag>` in `text`, trimmed; undefined when absent. */
export function lastTagContent(text: string, tag: string): string | undefined {
  const close = text.lastIndexOf(`</${tag}>`);
  if (close < 0) return undefined;
  const open = text.lastIndexOf(`<${tag}>`, close);
  if (open < 0) return undefined;
  return text.slice(open + tag.length + 2, close).trim();
}

/** What encodeLiteral needs of a tokenizer: encode (special-token strings become their ids) and a decode that skips special tokens. */
export interface TextCodec {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
}

/** Spans that could be a special token: `<…>` or `[…]` without spaces (`<|im_end|>`, `<|endoftext|>`, `[INST]`). */
const SPECIAL_CANDIDATE = /<[^<>\s]{1,64}>|\[[^[\]\s]{1,64}\]/g;
const specialCache = new WeakMap<TextCodec, Map<string, boolean>>();

/** Whether `s` is one of the codec's special tokens: it encodes to one id, which a decode that skips special tokens drops. */
function isSpecialToken(codec: TextCodec, s: string): boolean {
  let known = specialCache.get(codec);
  if (!known) specialCache.set(codec, (known = new Map()));
  let yes = known.get(s);
  if (yes === undefined) {
    const ids = codec.encode(s);
    yes = ids.length === 1 && codec.decode(ids) === '';
    known.set(s, yes);
  }
  return yes;
}

/**
 * Token ids of text that must stay text: a passage or a tool result that holds the string of a special token
 * (`<|im_end|>` in a scraped page) would otherwise become that token, and end the turn or open a new one in
 * the model's context. Each such string is split after its first character, so it is tokenized as ordinary
 * characters; text without one is tokenized exactly as `codec.encode` does.
 */
export function encodeLiteral(codec: TextCodec, text: string): number[] {
  const cuts: number[] = [];
  for (const m of text.matchAll(SPECIAL_CANDIDATE)) if (isSpecialToken(codec, m[0])) cuts.push((m.index as number) + 1);
  if (cuts.length === 0) return codec.encode(text);
  const ids: number[] = [];
  let from = 0;
  for (const at of [...cuts, text.length]) {
    // A piece may hold another special string only across a cut, which the next cut splits: encode each as is.
    if (at > from) ids.push(...codec.encode(text.slice(from, at)));
    from = at;
  }
  return ids;
}

/** Characters per token that a text past the budget is cut at before tokenizing (see encodeWithin). */
const BOUNDED_CHARS_PER_TOKEN = 16;

/**
 * encodeLiteral of `text` when it may be longer than `room` tokens (an observation past the response budget,
 * which is cut there): a text far longer than the room could ever hold (a hostile retriever's megabytes of
 * passage take seconds per megabyte to tokenize) is first cut at a space near room × 16 characters. A cut
 * before a space is a boundary of the tokenizer's pre-tokens, so the prefix's tokens are the whole text's
 * first tokens; when they reach `room`, they are what the caller keeps anyway. Otherwise (tokens that long,
 * or no space to cut at) the whole text is tokenized. Texts within the bound are tokenized as a whole, as before.
 */
export function encodeWithin(codec: TextCodec, text: string, room: number): number[] {
  const bound = (room + 64) * BOUNDED_CHARS_PER_TOKEN;
  if (text.length > 2 * bound) {
    const at = text.lastIndexOf(' ', bound);
    if (at > bound / 2) {
      const ids = encodeLiteral(codec, text.slice(0, at));
      if (ids.length > room) return ids;
    }
  }
  return encodeLiteral(codec, text);
}

export function observationText(passagesText: string): string {
  return `\n<information>\n${passagesText}\n</information>\n\n`;
}

export function invalidActionText(finalTag: FinalTag): string {
  return (
    `\n<information>\nNo valid action. To search, put a query between <search> and </search>. ` +
    `To finish, put the final ${finalTag} between <${finalTag}> and </${finalTag}>.\n</information>\n\n`
  );
}

interface Live {
  rollout: Rollout;
  done: boolean;
  /** The search tool of the request's corpus. */
  searcher: Searcher;
}

export async function runRollouts(policy: Policy, searcher: SearchTools, requests: RolloutRequest[], config: RolloutConfig): Promise<Rollout[]> {
  const stopStrings = ['</search>', `</${config.finalTag}>`];
  const streams = requests.map((r, i) => r.stream ?? i);
  if (new Set(streams).size !== streams.length) throw new Error('runRollouts: two requests share a sampling stream');
  const live: Live[] = requests.map((r) => ({
    rollout: { id: r.id, promptIds: r.promptIds, responseIds: [], responseMask: [], logprobs: [], samplingTemperature: config.temperature > 0 ? config.temperature : 1, queries: [], retrieved: [], outcome: 'max-turns', turns: 0, invalidActions: 0, text: '' },
    done: false,
    searcher: searcherOf(searcher, r.corpus),
  }));
  const append = (r: Rollout, ids: number[], logprobs: number[] | undefined): void => {
    r.responseIds.push(...ids);
    r.responseMask.push(...ids.map(() => (logprobs ? 1 : 0)));
    r.logprobs.push(...(logprobs ?? ids.map(() => 0)));
  };

  const session = policy.openSession?.() ?? replaySession(policy);
  try {
    await runTurns(live, streams, session, config, stopStrings, append, policy);
  } finally {
    session.close();
  }
  return live.map((l) => l.rollout);
}

async function runTurns(
  live: Live[],
  streams: readonly number[],
  session: PolicySession,
  config: RolloutConfig,
  stopStrings: string[],
  append: (r: Rollout, ids: number[], logprobs: number[] | undefined) => void,
  policy: Policy,
): Promise<void> {
  const keyOf = new Map(live.map((l, i) => [l, streams[i] as number]));
  for (let turn = 0; turn < config.maxTurns; turn++) {
    const active = live.filter((l) => !l.done);
    if (active.length === 0) break;
    // A turn is seconds to minutes of synchronous tensor work: let signal handlers (Ctrl-C) in before each.
    await yieldToEventLoop();
    const budgets = active.map((l) => Math.min(config.maxTokensPerTurn, config.maxResponseTokens - l.rollout.responseIds.length));
    const maxNewTokens = Math.max(...budgets);
    const generations: Generation[] = await session.generate(
      active.map((l, i) => ({ key: keyOf.get(l) as number, ids: [...l.rollout.promptIds, ...l.rollout.responseIds], maxNewTokens: budgets[i] as number })),
      { maxNewTokens, temperature: config.temperature, seed: config.seed * TURN_SEED_STRIDE + turn, stopStrings },
    );

    const searches: Array<{ live: Live; query: string }> = [];
    active.forEach((l, i) => {
      const g = generations[i] as Generation;
      const r = l.rollout;
      // Rows share one maxNewTokens; a row with a smaller budget keeps only what its budget allows.
      const keep = Math.min(g.ids.length, budgets[i] as number);
      const ids = g.ids.slice(0, keep);
      append(r, ids, g.logprobs.slice(0, keep));
      r.turns = turn + 1;
      const turnText = policy.decode(ids);
      r.text += turnText;
      const truncated = keep < g.ids.length;
      if (!truncated && g.finishReason === 'stop' && g.stopString === `</${config.finalTag}>`) {
        r.final = lastTagContent(r.text, config.finalTag);
        r.outcome = 'final';
        l.done = true;
      } else if (!truncated && g.finishReason === 'stop' && g.stopString === '</search>') {
        const query = lastTagContent(turnText, 'search');
        if (query) searches.push({ live: l, query });
        else r.invalidActions++;
      } else if (!truncated && g.finishReason === 'eos') {
        const final = lastTagContent(r.text, config.finalTag);
        if (final !== undefined) r.final = final;
        r.outcome = final !== undefined ? 'final' : 'eos';
        l.done = true;
      } else {
        r.invalidActions++;
      }
    });

    // One batch of searches per search tool (one tool: one batch, as before there were corpora), in the
    // order the tools first appear.
    const tools = [...new Set(searches.map((s) => s.live.searcher))];
    for (const tool of tools) {
      const mine = searches.filter((s) => s.live.searcher === tool);
      const results = await tool.search(
        mine.map((s) => s.query),
        config.passagesPerQuery,
      );
      mine.forEach((s, i) => {
        const passages = results[i] ?? [];
        s.live.rollout.queries.push(s.query);
        s.live.rollout.retrieved.push(passages);
      });
    }
    const searched = new Map(searches.map((s, i) => [s.live, i]));
    for (const l of active) {
      if (l.done) continue;
      const r = l.rollout;
      const i = searched.get(l);
      const obs = i !== undefined ? observationText(renderResults(r.retrieved[r.retrieved.length - 1] ?? [])) : invalidActionText(config.finalTag);
      // Tool output counts toward the response budget too: an observation that does not fit is cut where the
      // budget ends (the rollout ends there), so no rollout is longer than maxResponseTokens.
      // The observation is text: a special-token string in a passage stays characters (encodeLiteral).
      const room = Math.max(0, config.maxResponseTokens - r.responseIds.length);
      const obsIds = encodeWithin(policy, obs, room);
      const kept = obsIds.length <= room ? obsIds : obsIds.slice(0, room);
      append(r, kept, undefined);
      r.text += kept === obsIds ? obs : policy.decode(kept);
      if (r.responseIds.length >= config.maxResponseTokens) {
        r.outcome = 'budget';
        l.done = true;
      }
    }
    for (const l of active) if (l.done) session.release(keyOf.get(l) as number);
  }
}
