// SFT transcripts: the loss mask covers exactly the assistant-written tokens (prompt and tool output excluded),
// checked on a rendered Search-R1-style example with the real Qwen3 tokenizer; bad lines fail naming file,
// line and field.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, qwen3TokenizerDir, type Tokenizer } from '../src/model/tokenizer.js';
import type { Generation } from '../src/model/generate.js';
import type { Policy, PolicyGenerateOptions } from '../src/model/policy.js';
import { renderResults, type Passage, type Searcher } from '../src/search/types.js';
import { solverMessages } from '../src/agent/prompts.js';
import { observationText, runRollouts } from '../src/agent/rollout.js';
import { parseTranscriptLine, readTranscripts, renderTranscript } from '../src/sft/transcript.js';

let tok: Tokenizer;
let root: string;

beforeAll(async () => {
  tok = await loadTokenizer(qwen3TokenizerDir());
  root = mkdtempSync(join(tmpdir(), 'sesa-sft-transcript-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Maximal runs of equal mask values: [mask, start, end). */
function runs(mask: number[]): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  let s = 0;
  for (let i = 1; i <= mask.length; i++) {
    if (i === mask.length || mask[i] !== mask[s]) {
      out.push([mask[s] as number, s, i]);
      s = i;
    }
  }
  return out;
}

describe('SFT transcript rendering (real Qwen3 tokenizer)', () => {
  const user = (solverMessages('Who directed the film that won the 1950 prize?')[0] as { content: string }).content;
  const a1 = '<think>I need the film first.</think>\n<search>1950 prize film</search>';
  const t1 = 'Doc 1(Title: "Prize") The 1950 prize went to Blue River.\n';
  const a2 = '<think>Now its director.</think>\n<search>Blue River director</search>';
  const t2 = 'Doc 1(Title: "Blue River") Blue River was directed by Ana Lopes.\n';
  const a3 = '<think>Found it.</think>\n<answer>Ana Lopes</answer>';
  const line = JSON.stringify({
    messages: [
      { role: 'user', content: user },
      { role: 'assistant', content: a1 },
      { role: 'tool', content: t1 },
      { role: 'assistant', content: a2 },
      { role: 'tool', content: t2 },
      { role: 'assistant', content: a3 },
    ],
  });

  it('masks the prompt and the tool output, and trains exactly the assistant text and the end-of-turn token', () => {
    const r = renderTranscript(parseTranscriptLine(line, 'data.jsonl', 1), tok);
    expect(r.ids.length).toBe(r.mask.length);
    // The whole sequence reads as the prompt the policy renders, then the turn as the rollout engine splices it.
    const prompt = tok.applyChatTemplate([{ role: 'user', content: user }], { addGenerationPrompt: true, enableThinking: false });
    expect(prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    const turn = `${a1}${observationText(t1)}${a2}${observationText(t2)}${a3}<|im_end|>`;
    expect(tok.decode(r.ids)).toBe(prompt + turn);
    // Mask runs: prompt (0), a1 (1), t1 (0), a2 (1), t2 (0), a3 + <|im_end|> (1).
    const spans = runs(r.mask);
    expect(spans.map((s) => s[0])).toEqual([0, 1, 0, 1, 0, 1]);
    const text = spans.map(([, s, e]) => tok.decode(r.ids.slice(s, e)));
    expect(text).toEqual([prompt, a1, observationText(t1), a2, observationText(t2), `${a3}<|im_end|>`]);
    expect(r.ids[r.ids.length - 1]).toBe(tok.tokenToId('<|im_end|>'));
    // The prompt tokens are exactly the policy's (same template, same encoding).
    expect(r.ids.slice(0, spans[0]?.[2])).toEqual(tok.encode(prompt));
  });

  it("lossOn 'all' trains every token after the first (prompt and tool output too), over the same ids", () => {
    const t = parseTranscriptLine(line, 'data.jsonl', 1);
    const assistant = renderTranscript(t, tok);
    const all = renderTranscript(t, tok, { lossOn: 'all' });
    expect(all.ids).toEqual(assistant.ids);
    expect(all.mask[0]).toBe(0);
    expect(all.mask.slice(1).every((m) => m === 1)).toBe(true);
    expect(assistant.mask.filter((m) => m === 0).length).toBeGreaterThan(1);
  });

  it('gives the very ids and mask the rollout engine builds when a policy writes the same turn', async () => {
    // A replay TEST DOUBLE of the Policy: the real tokenizer's chat rendering and encoding (as ModelPolicy), and
    // a "generation" that emits the encoding of the transcript's next assistant message and stops on its tag.
    const script = [a1, a2, a3];
    let calls = 0;
    const replay: Policy = {
      name: 'replay policy (test double)',
      renderChat: (messages) => tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true, enableThinking: false })),
      encode: (text) => tok.encode(text),
      decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
      generate: async (prompts: number[][], opts: PolicyGenerateOptions): Promise<Generation[]> =>
        prompts.map(() => {
          const text = script[calls++] as string;
          const ids = tok.encode(text);
          const stopString = opts.stopStrings.find((s) => text.endsWith(s));
          return { ids, logprobs: ids.map(() => -1), finishReason: 'stop', ...(stopString ? { stopString } : {}), text };
        }),
    };
    const passages: Passage[][] = [[{ id: 'p1', title: 'Prize', text: 'The 1950 prize went to Blue River.' }], [{ id: 'p2', title: 'Blue River', text: 'Blue River was directed by Ana Lopes.' }]];
    let searched = 0;
    const searcher: Searcher = { search: async (queries) => queries.map(() => passages[searched++] as Passage[]), describe: () => 'scripted searcher (test double)' };
    const question = 'Who directed the film that won the 1950 prize?';
    const [rollout] = await runRollouts(replay, searcher, [{ id: 'r', promptIds: replay.renderChat(solverMessages(question)) }], {
      maxTurns: 5, maxTokensPerTurn: 200, maxResponseTokens: 1000, temperature: 1, passagesPerQuery: 3, finalTag: 'answer', seed: 0,
    });
    expect(rollout?.outcome).toBe('final');
    const transcript = {
      messages: [
        { role: 'user', content: user },
        { role: 'assistant', content: a1 },
        { role: 'tool', content: renderResults(passages[0] as Passage[]) },
        { role: 'assistant', content: a2 },
        { role: 'tool', content: renderResults(passages[1] as Passage[]) },
        { role: 'assistant', content: a3 },
      ],
    };
    const r = renderTranscript(parseTranscriptLine(JSON.stringify(transcript), 'replay.jsonl', 1), tok);
    // The rollout stops at </answer>; SFT also trains the end-of-turn token after it.
    const P = rollout?.promptIds.length as number;
    expect(r.ids.slice(0, -1)).toEqual([...(rollout?.promptIds ?? []), ...(rollout?.responseIds ?? [])]);
    expect(r.mask.slice(P, -1)).toEqual(rollout?.responseMask);
    expect(r.mask.slice(0, P).every((m) => m === 0)).toBe(true);
  });

  it('renders earlier assistant turns as context (tool results spliced in) and trains only the last turn', () => {
    const multi = {
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: '<search>q</search>' },
        { role: 'tool', content: 'Doc 1(Title: "X") x\n' },
        { role: 'assistant', content: '<answer>x</answer>' },
        { role: 'user', content: 'second question' },
        { role: 'assistant', content: '<answer>y</answer>' },
      ],
    };
    const r = renderTranscript(parseTranscriptLine(JSON.stringify(multi), 'd.jsonl', 7), tok);
    const spans = runs(r.mask);
    expect(spans.map((s) => s[0])).toEqual([0, 1]);
    expect(tok.decode(r.ids.slice(spans[1]?.[1], spans[1]?.[2]))).toBe('<answer>y</answer><|im_end|>');
    const context = tok.decode(r.ids.slice(0, spans[0]?.[2]));
    expect(context).toContain(`<search>q</search>${observationText('Doc 1(Title: "X") x\n')}<answer>x</answer>`);
    expect(context).toContain('second question');
  });

  it('bad lines fail with the file, line and field', () => {
    const bad: Array<[string, RegExp]> = [
      ['{not json', /bad\.jsonl:3: not valid JSON/],
      ['[1, 2]', /bad\.jsonl:3: each line must be a JSON object/],
      ['{"msgs": []}', /bad\.jsonl:3: field 'messages' must be a non-empty list/],
      ['{"messages": [{"role": "robot", "content": "x"}]}', /bad\.jsonl:3: field 'messages\[0\]\.role' must be one of/],
      ['{"messages": [{"role": "user", "content": 5}]}', /bad\.jsonl:3: field 'messages\[0\]\.content' must be a string/],
      ['{"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "t"}]}', /bad\.jsonl:3: field 'messages\[1\]\.role' is 'tool' but the message before it is 'user'/],
      ['{"messages": [{"role": "user", "content": "q"}]}', /bad\.jsonl:3: field 'messages' has no assistant message/],
      ['{"messages": [{"role": "assistant", "content": "a"}]}', /bad\.jsonl:3: field 'messages\[0\]\.role' is 'assistant'/],
      ['{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"}]}', /bad\.jsonl:3: field 'messages\[2\]\.role' is 'user'; a transcript must end with the assistant turn/],
    ];
    const good = JSON.stringify({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] });
    for (const [text, error] of bad) {
      const file = join(root, 'bad.jsonl');
      writeFileSync(file, `${good}\n\n${text}\n${good}\n`);
      expect(() => readTranscripts(file), text).toThrow(error);
    }
    const empty = join(root, 'empty.jsonl');
    writeFileSync(empty, '\n\n');
    expect(() => readTranscripts(empty)).toThrow(/empty\.jsonl: no transcripts/);
    expect(() => readTranscripts(join(root, 'absent.jsonl'))).toThrow(/absent\.jsonl: cannot read/);
  });
});
