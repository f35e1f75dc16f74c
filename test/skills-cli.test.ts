// `sesa-train skills ...` through yargs with the real command module, output captured in-process.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs from 'yargs';
import { describe, expect, it, vi } from 'vitest';
import { command } from '../src/cli/skills.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { SkillBank } from '../src/skills/bank.js';
import { readBankFile } from '../src/skills/bank-file.js';
import { contentId } from '../src/skills/card.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { CARD_B, failure, json, tempDir } from './skills-helpers.js';

async function cli(...argv: string[]): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  try {
    await yargs(argv)
      .command(command)
      .strict()
      .fail((msg, err) => {
        throw err ?? new Error(msg);
      })
      .parseAsync();
  } finally {
    spy.mockRestore();
  }
  return out;
}

/** A bank with some history: one distilled card, utility on two cards, two queued failures. */
async function bankWithHistory(): Promise<string> {
  const path = join(tempDir('sk-cli'), 'bank.json');
  const bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), config: { minPending: 1, consolidateEvery: 1 } });
  bank.enqueueFailure(failure('which countries does the river cross?'), 1);
  bank.startConsolidation(1, new ScriptedTextGenerator([json(CARD_B)]));
  await bank.waitForConsolidation();
  bank.commit(1, bank.readyChange());
  const idB = contentId('d', CARD_B);
  for (const o of ['correct', 'correct', 'wrong'] as const) bank.recordOutcome([idB], o);
  for (const o of ['wrong', 'wrong', 'malformed'] as const) bank.recordOutcome(['seed-05-numeric-answers'], o);
  bank.enqueueFailure(failure('q1', { retrievedSkillIds: [idB] }), 2);
  bank.enqueueFailure(failure('q1', { retrievedSkillIds: [idB] }), 3);
  bank.enqueueFailure(failure('q2'), 3);
  bank.commit(3);
  return path;
}

describe('sesa-train skills', () => {
  it('stats: what the bank holds and which cards help or hurt', async () => {
    const path = await bankWithHistory();
    const idB = contentId('d', CARD_B);
    const human = await cli('skills', 'stats', '--bank', path);
    expect(human).toContain(`skill bank ${path}\nversion 2; last commit at step 3; last consolidation started at step 1\n`);
    expect(human).toContain('embedder lexical (lexical-v1-d4096, dim 4096); dedup threshold 0.8\n');
    expect(human).toContain('cards 19: seed 18, mined 0, distilled 1; never retrieved 17\n');
    expect(human).toContain('usage: retrieved 6, helpful 2, hurt 3\n');
    expect(human).toContain(`most helpful:\n  ${idB}  net +1 (helpful 2, hurt 1, retrieved 3, score 0.25)\n`);
    expect(human).toContain('most hurtful:\n  seed-05-numeric-answers  net -2 (helpful 0, hurt 2, retrieved 3, score -0.5)\n');
    expect(human).toContain('failure queue: 2 pending of 300 (1 repeated, 1 despite skills)\n');
    expect(human).toContain('lifetime: 2 commits, 1 consolidations; distilled 1, invalid 0, failed 0; admitted 1, duplicates 0;');
    const j = JSON.parse(await cli('skills', 'stats', '--bank', path, '--json')) as { version: number; cards: { distilled: number }; mostHurtful: Array<{ id: string }> };
    expect(j.version).toBe(2);
    expect(j.cards.distilled).toBe(1);
    expect(j.mostHurtful.map((r) => r.id)).toEqual(['seed-05-numeric-answers']);
  });

  it('list, show and search', async () => {
    const path = await bankWithHistory();
    const idB = contentId('d', CARD_B);
    const list = (await cli('skills', 'list', '--bank', path, '--sort', 'hurt')).split('\n');
    expect(list[0]).toBe('bank version 2: 19 of 19 cards');
    expect(list[2]).toMatch(/^seed-05-numeric-answers\s+seed\s+dates-numbers\s+3\s+0\s+2\s+-0\.500 /);
    expect(list[3]).toMatch(new RegExp(`^${idB}\\s+distilled\\s+geography\\s+3\\s+2\\s+1\\s+0\\.250 `));
    const only = JSON.parse(await cli('skills', 'list', '--bank', path, '--source', 'distilled', '--json')) as { cards: Array<{ id: string }> };
    expect(only.cards.map((c) => c.id)).toEqual([idB]);

    const show = await cli('skills', 'show', idB, '--bank', path);
    expect(show).toContain(`${idB}  [geography, distilled, created at step 1, bank version 1]`);
    expect(show).toContain(CARD_B.description);
    expect(show).toContain('query templates:\n  - [river] source country\n  - [river] flows through');
    await expect(cli('skills', 'show', 'nope', '--bank', path)).rejects.toThrow(/no card 'nope' in .* \(19 cards/);

    const s = JSON.parse(await cli('skills', 'search', 'Which countries does the Danube river flow through?', '--bank', path, '--k', '2', '--json')) as {
      hits: Array<{ id: string; score: number }>;
      prompt: string;
      version: number;
    };
    expect(s.version).toBe(2);
    expect(s.hits.length).toBe(2);
    expect(s.hits[0]!.id).toBe(idB);
    expect(s.prompt).toContain(CARD_B.description);
    const human = await cli('skills', 'search', 'Which countries does the Danube river flow through?', '--bank', path);
    expect(human).toMatch(new RegExp(`^bank version 2, embedder lexical; top 3 for: Which countries .*\\n1\\. 0\\.\\d{4}  ${idB}  \\[geography, distilled\\]\\n`));
    expect(human).toContain('solver prompt block (~');
    // A question that shares no word with any card: no card listed at score 0, and it says that none matched.
    const none = await cli('skills', 'search', 'x', '--bank', path);
    expect(none).toBe(`bank version 2, embedder lexical; top 3 for: x\nno card matched: all 19 cards score 0 for this question\n`);
    const noneJson = JSON.parse(await cli('skills', 'search', 'x', '--bank', path, '--json')) as { hits: unknown[]; unmatched: number };
    expect([noneJson.hits, noneJson.unmatched]).toEqual([[], 3]);
  });

  it('export and import round-trip, init creates a bank, and errors are clear', async () => {
    const path = await bankWithHistory();
    const dir = tempDir('sk-cli2');
    const jsonl = await cli('skills', 'export', '--bank', path);
    expect(jsonl.trimEnd().split('\n').length).toBe(19);
    expect(await cli('skills', 'export', '--bank', path, '--out', join(dir, 'cards.jsonl'))).toBe(`exported 19 cards (bank version 2) to ${join(dir, 'cards.jsonl')}\n`);
    expect(readFileSync(join(dir, 'cards.jsonl'), 'utf8')).toBe(jsonl);

    const fresh = join(dir, 'fresh.json');
    // --seeds was the seed cards' old name (train's --seeds FILE is answer seeds): refused naming the new one.
    await expect(cli('skills', 'init', '--bank', fresh, '--no-seeds')).rejects.toThrow(/^--seeds was renamed --seed-cards \(the hand-written seed cards, .*\): use --no-seed-cards$/);
    await expect(cli('skills', 'init', '--bank', fresh, '--seeds')).rejects.toThrow(/--seeds was renamed --seed-cards .*: use --seed-cards$/);
    await expect(cli('skills', 'search', 'q', '--bank', path, '--seeds')).rejects.toThrow(/--seeds was renamed --seed-cards/);
    expect(await cli('skills', 'init', '--bank', fresh, '--no-seed-cards')).toBe(`created ${fresh}: 0 cards, embedder lexical (lexical-v1-d4096), dedup threshold 0.8\n`);
    await expect(cli('skills', 'init', '--bank', fresh)).rejects.toThrow(/already exists/);
    expect(await cli('skills', 'import', join(dir, 'cards.jsonl'), '--bank', fresh)).toBe(`imported 19 cards from ${join(dir, 'cards.jsonl')} (19 new, 0 replaced); bank version 1\n`);
    expect(readBankFile(fresh).cards).toEqual(readBankFile(path).cards);
    await expect(cli('skills', 'import', join(dir, 'cards.jsonl'), '--bank', fresh)).rejects.toThrow(/cards\.jsonl: cards .* already in .*fresh\.json: give --replace to overwrite them/);
    expect(await cli('skills', 'import', join(dir, 'cards.jsonl'), '--bank', fresh, '--replace')).toContain('(0 new, 19 replaced); bank version 2');

    writeFileSync(join(dir, 'bad.jsonl'), `${jsonl.split('\n')[0]}\n{"id":"x","source":"found"}\n`);
    await expect(cli('skills', 'import', join(dir, 'bad.jsonl'), '--bank', fresh)).rejects.toThrow(/bad\.jsonl:2 \(card x\): source must be one of seed\|mined\|distilled/);
    await expect(cli('skills', 'stats', '--bank', join(dir, 'missing.json'))).rejects.toThrow(/no skill bank at .*missing\.json; create one with `sesa-train skills init/);
    await expect(cli('skills', 'search', '--bank', fresh)).rejects.toThrow(/skills search needs a question/);
    writeFileSync(join(dir, 'torn.json'), '{"format": "sesa-skill-bank", "vers');
    await expect(cli('skills', 'list', '--bank', join(dir, 'torn.json'))).rejects.toThrow(/torn\.json: \(file\): not valid JSON, the file is damaged/);
  });
});
