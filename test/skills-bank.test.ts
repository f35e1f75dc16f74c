// The skill bank's whole life cycle with exact expectations (docs/method.md, "The skill bank").
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { BankFileError, readBankFile } from '../src/skills/bank-file.js';
import { SkillBank } from '../src/skills/bank.js';
import { contentId, type CardContent, type SkillCard } from '../src/skills/card.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { seedCards } from '../src/skills/seeds.js';
import { CARD_A, CARD_A_REWORDED, CARD_B, CARD_DELTA, CARD_EPS, CARD_G, failure, json, promptQuestion, tempDir } from './skills-helpers.js';

const lex = (): LexicalEmbedder => new LexicalEmbedder();
const seed06 = seedCards()[5] as SkillCard;
const CARD_D: CardContent = { ...seed06, description: seed06.description.replace('several names', 'several different names') };

describe('a new bank', () => {
  it('starts from the seed cards, version 0, and records its embedder in the file', async () => {
    const path = join(tempDir(), 'bank.json');
    const bank = await SkillBank.open(path, { embedder: lex() });
    expect(bank.cards.length).toBe(18);
    expect(bank.cards.every((c) => c.source === 'seed' && c.createdStep === 0)).toBe(true);
    expect(new Set(bank.cards.map((c) => c.id)).size).toBe(18);
    const f = readBankFile(path);
    expect(f.version).toBe(0);
    expect(f.embedder).toEqual({ name: 'lexical', model: 'lexical-v1-d4096', dim: 4096, dedupThreshold: 0.8 });
    expect(f.cards.map((c) => c.id)).toEqual(bank.cards.map((c) => c.id));
    const empty = await SkillBank.open(join(tempDir(), 'b.json'), { embedder: lex(), seedCards: false });
    expect(empty.cards.length).toBe(0);
    expect(await empty.retrieve('anything')).toEqual([]);
  });
});

describe('retrieval', () => {
  it('returns the top k by cosine, ties broken by id, the same for the same version', async () => {
    const path = join(tempDir(), 'bank.json');
    const bank = await SkillBank.open(path, { embedder: lex() });
    const q = 'Which royalist commander was born in Prague in 1619 as the younger son of Frederick V?';
    const r1 = await bank.retrieve(q);
    expect(r1.length).toBe(3);
    expect(r1[0]?.card.id).toBe('seed-01-attribute-disambiguation');
    expect(r1[0]!.score).toBeGreaterThanOrEqual(r1[1]!.score);
    expect((await bank.retrieve(q)).map((r) => [r.card.id, r.score])).toEqual(r1.map((r) => [r.card.id, r.score]));
    expect((await bank.retrieve(q, 5)).length).toBe(5);

    // Two cards with the same text score the same: the smaller id comes first.
    const twin = (id: string): SkillCard => ({ ...seedCards()[0]!, id, source: 'mined' });
    await bank.importCards([twin('zz-twin'), twin('aa-twin')]);
    const r2 = await bank.retrieve(q, 3);
    expect(r2.map((r) => r.card.id)).toEqual(['aa-twin', 'seed-01-attribute-disambiguation', 'zz-twin']);
    expect(r2[0]!.score).toBe(r2[2]!.score);
  });

  it('with a score floor gives only the top-k cards scoring at least it; the floor must be a cosine', async () => {
    const q = 'Which royalist commander was born in Prague in 1619 as the younger son of Frederick V?';
    const all = await (await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex() })).retrieve(q, 5);
    const floor = ((all[1]?.score as number) + (all[2]?.score as number)) / 2;
    const floored = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex(), config: { minScore: floor } });
    expect((await floored.retrieve(q, 5)).map((r) => r.card.id)).toEqual(all.slice(0, 2).map((r) => r.card.id));
    // A floor above every card: no card, and the prompt gets none.
    const high = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex(), config: { minScore: 1 } });
    expect(await high.retrieve('an unrelated question about nothing in particular')).toEqual([]);
    await expect(SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex(), config: { minScore: 1.5 } })).rejects.toThrow('skill bank config: minScore must be a cosine in [-1, 1], got 1.5');
  });

  it('renders the retrieved cards within a token budget, shedding detail from the last card first', async () => {
    const bank = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex() });
    const hits = await bank.retrieve('how many years after the company was founded was its founder born?', 3);
    const full = bank.render(hits, { tokenBudget: 10_000 });
    expect(full.cardIds).toEqual(hits.map((h) => h.card.id));
    expect(full.text.split('\n')[0]).toBe('Strategies from past search experience (use them if they apply):');
    expect(full.text.match(/Queries:/g)?.length).toBe(hits.filter((h) => h.card.queries.length > 0).length);
    for (const budget of [300, 150, 80, 40]) {
      const r = bank.render(hits, { tokenBudget: budget });
      expect(r.tokens).toBeLessThanOrEqual(budget);
      expect(Math.ceil(r.text.length / 4)).toBe(r.tokens);
      expect(r.cardIds[0]).toBe(hits[0]!.card.id);
    }
    // A caller's own counter (here: words) is honoured.
    const words = (t: string): number => t.split(/\s+/).filter(Boolean).length;
    const w = bank.render(hits, { tokenBudget: 60, countTokens: words });
    expect(words(w.text)).toBeLessThanOrEqual(60);
    expect(bank.render([], { tokenBudget: 100 }).text).toBe('');
  });
});

describe('utility and the failure queue', () => {
  it('counts retrieved for every rollout, helpful for correct, hurt for wrong, nothing more for malformed', async () => {
    const bank = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex() });
    const [a, b] = [bank.cards[0]!.id, bank.cards[1]!.id];
    bank.recordOutcome([a, b], 'correct');
    bank.recordOutcome([a], 'wrong');
    bank.recordOutcome([a, b], 'malformed');
    expect(bank.recordOutcome([a, 'gone-card'], 'wrong')).toEqual(['gone-card']);
    expect(bank.card(a)!.stats).toEqual({ retrieved: 4, helpful: 1, hurt: 2 });
    expect(bank.card(b)!.stats).toEqual({ retrieved: 2, helpful: 1, hurt: 0 });
  });

  it('keeps one record per question with a repeat count, at most the capacity, and selects in priority order', async () => {
    const path = join(tempDir(), 'bank.json');
    const bank = await SkillBank.open(path, { embedder: lex(), config: { queueCapacity: 5 } });
    bank.enqueueFailure(failure('Q one?'), 1); // tier 0
    bank.enqueueFailure(failure('Q two?', { retrievedSkillIds: ['s'] }), 1); // tier 1
    bank.enqueueFailure(failure('Q three?'), 2);
    bank.enqueueFailure(failure('  q   THREE? ', { prediction: 'latest' }), 3); // same question → count 2, tier 2
    bank.enqueueFailure(failure('Q four?', { retrievedSkillIds: ['s'] }), 3);
    bank.enqueueFailure(failure('Q four?', { retrievedSkillIds: ['s'] }), 4); // tier 3
    bank.enqueueFailure(failure('Q five?'), 4); // tier 0, newer than one
    expect(bank.pendingFailures().length).toBe(5);
    expect(bank.pendingFailures().find((r) => r.key === 'q three?')).toMatchObject({ count: 2, prediction: 'latest', firstStep: 2, lastStep: 3 });
    // Full: a new question displaces the lowest tier, lowest count, oldest record ("q one?").
    expect(bank.enqueueFailure(failure('Q six?'), 5)).toEqual({ key: 'q six?', dropped: 'q one?' });
    expect(bank.counters.queueDropped).toBe(1);
    bank.commit(5);
    const f = readBankFile(path);
    expect(f.queue.map((r) => r.key).sort()).toEqual(['q five?', 'q four?', 'q six?', 'q three?', 'q two?']);
    // Selection: repeated + despite skills, repeated, despite skills, then the oldest plain failures.
    const reopened = await SkillBank.open(path, { embedder: lex(), config: { queueCapacity: 5, minPending: 1, consolidateEvery: 1, maxSelected: 4 } });
    const job = reopened.startConsolidation(6, new ScriptedTextGenerator([(m) => `no card for ${promptQuestion(m)}`], { cycle: true }));
    expect(job?.selected).toBe(4);
    await reopened.waitForConsolidation();
    const change = reopened.readyChange()!;
    expect(change.selectedKeys).toEqual(['q four?', 'q three?', 'q two?', 'q five?']);
  });
});

describe('consolidation', () => {
  /** 35 failures: the distiller's reply depends on the question. */
  function scenario(bank: SkillBank): void {
    const sid = bank.cards[0]!.id;
    // Higher priority first: repeated + despite skills (A), then despite skills (C, D, G, H, B, invalid ones).
    bank.enqueueFailure(failure('qA how old was the author when the novel came out?', { retrievedSkillIds: [sid] }), 1);
    bank.enqueueFailure(failure('qA how old was the author when the novel came out?', { retrievedSkillIds: [sid] }), 2);
    bank.enqueueFailure(failure('qB which countries does the river flow through?', { retrievedSkillIds: [sid] }), 2);
    bank.enqueueFailure(failure('qC what age did the painter reach at his first exhibition?', { retrievedSkillIds: [sid] }), 3);
    bank.enqueueFailure(failure('qD what was the stage name of the singer?', { retrievedSkillIds: [sid] }), 3);
    bank.enqueueFailure(failure('qE prose reply', { retrievedSkillIds: [sid] }), 3);
    bank.enqueueFailure(failure('qF no triggers', { retrievedSkillIds: [sid] }), 3);
    bank.enqueueFailure(failure('qG where did the team play in 1960?', { retrievedSkillIds: [sid] }), 4);
    bank.enqueueFailure(failure('qH endpoint down', { retrievedSkillIds: [sid] }), 4);
    for (let i = 1; i <= 27; i++) bank.enqueueFailure(failure(`filler question number ${String(i).padStart(2, '0')}`), 4 + Math.floor(i / 5));
  }
  const replies = (messages: Parameters<typeof promptQuestion>[0]): string => {
    const q = promptQuestion(messages);
    if (q.startsWith('qA')) return json(CARD_A);
    if (q.startsWith('qB')) return `Here is the card:\n${json(CARD_B)}\nHope it helps.`;
    if (q.startsWith('qC')) return json(CARD_A_REWORDED);
    if (q.startsWith('qD')) return json(CARD_D);
    if (q.startsWith('qE')) return 'The agent should have searched more carefully.';
    if (q.startsWith('qF')) return JSON.stringify({ ...CARD_B, triggers: undefined, description: 'Something with no triggers at all here.' });
    if (q.startsWith('qG')) return `<think>the {guidance} missed time</think>Sure!\n\`\`\`json\n${json(CARD_G)}\n\`\`\``;
    if (q.startsWith('qH')) throw new Error('HTTP 503 from the distiller');
    return 'I cannot produce a card for this.';
  };

  it('selects, distills, admits, rejects duplicates and invalid output, and commits only when asked', async () => {
    const path = join(tempDir(), 'bank.json');
    const bank = await SkillBank.open(path, { embedder: lex() });
    scenario(bank);
    expect(bank.pendingFailures().length).toBe(35);
    expect(bank.consolidationDue(9)).toBe(false); // not a multiple of 10
    expect(bank.consolidationDue(10)).toBe(true);

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const distiller = new ScriptedTextGenerator([replies], { cycle: true, gate });
    const q = 'how old was the writer at the age of his first novel?';
    const before = { version: bank.version, ids: bank.cards.map((c) => c.id), hits: await bank.retrieve(q), file: readFileSync(path, 'utf8') };

    const job = bank.startConsolidation(10, distiller);
    expect(job).not.toBeNull();
    expect(job!.selected).toBe(30);
    expect(bank.consolidationInFlight).toBe(true);
    expect(bank.startConsolidation(10, distiller)).toBeNull(); // at most one in flight
    expect(bank.readyChange()).toBeNull();
    release();
    await bank.waitForConsolidation();

    // Done, but not committed: nothing visible has changed.
    expect(bank.version).toBe(before.version);
    expect(bank.cards.map((c) => c.id)).toEqual(before.ids);
    expect(await bank.retrieve(q)).toEqual(before.hits);
    expect(readFileSync(path, 'utf8')).toBe(before.file);
    expect(bank.pendingFailures().length).toBe(35);
    expect(bank.startConsolidation(20, distiller)).toBeNull(); // the finished change still waits for its commit

    const change = bank.readyChange()!;
    expect(change.selectedKeys.slice(0, 9)).toEqual([
      'qa how old was the author when the novel came out?',
      'qb which countries does the river flow through?',
      'qc what age did the painter reach at his first exhibition?',
      'qd what was the stage name of the singer?',
      'qe prose reply',
      'qf no triggers',
      'qg where did the team play in 1960?',
      'qh endpoint down',
      'filler question number 01',
    ]);
    // The 5 left over are the newest plain failures.
    const unselected = bank.pendingFailures().map((r) => r.key).filter((k) => !change.selectedKeys.includes(k));
    expect(unselected.sort()).toEqual(['filler question number 23', 'filler question number 24', 'filler question number 25', 'filler question number 26', 'filler question number 27']);
    expect(bank.version).toBe(0);

    const report = bank.commit(10, change);
    expect(() => bank.commit(11, change)).toThrow(/already committed/);
    const idA = contentId('d', CARD_A);
    const idB = contentId('d', CARD_B);
    const idG = contentId('d', CARD_G);
    expect(report.version).toBe(1);
    expect(report.admitted).toEqual([idA, idB, idG]);
    expect(report.duplicates.map((d) => [d.fromKey, d.nearest])).toEqual([
      ['qc what age did the painter reach at his first exhibition?', 'candidate:qa how old was the author when the novel came out?'],
      ['qd what was the stage name of the singer?', 'seed-06-aliases-and-names'],
    ]);
    expect(report.duplicates.every((d) => d.maxCosine > 0.8)).toBe(true);
    expect(report.invalid).toBe(24);
    expect(report.failed).toBe(1);
    expect(report.consumed).toBe(29);
    expect(report.evicted).toEqual([]);
    expect(bank.version).toBe(1);
    expect(bank.cards.length).toBe(21);
    expect(bank.card(idA)).toMatchObject({ source: 'distilled', createdStep: 10, bankVersion: 1, stats: { retrieved: 0, helpful: 0, hurt: 0 }, description: CARD_A.description });
    // The endpoint failure stays queued, with the 5 unselected records.
    expect(bank.pendingFailures().map((r) => r.key).sort()).toEqual([...unselected, 'qh endpoint down'].sort());
    const f = readBankFile(path);
    expect(f.version).toBe(1);
    expect(f.cards.map((c) => c.id)).toEqual(bank.cards.map((c) => c.id));
    expect(f.queue.length).toBe(6);
    expect(f.counters).toMatchObject({ commits: 1, consolidations: 1, distilled: 5, invalid: 24, failed: 1, admitted: 3, duplicates: 2 });
    expect(f.lastConsolidationStep).toBe(10);
    // The new card is retrievable after the commit.
    expect((await bank.retrieve(q))[0]?.card.id).toBe(idA);

    // ---- Round 2: utility decides eviction; seeds stay whatever their utility.
    bank.recordOutcome([idA], 'wrong');
    bank.recordOutcome([idA], 'wrong');
    bank.recordOutcome([idA], 'malformed'); // A: retrieved 3, net −2 → evicted
    bank.recordOutcome([idB], 'correct');
    bank.recordOutcome([idB], 'wrong');
    bank.recordOutcome([idB], 'malformed'); // B: retrieved 3, net 0 → kept
    bank.recordOutcome([idG], 'wrong'); // G: net −1 but retrieved 1 → kept
    for (let i = 0; i < 3; i++) bank.recordOutcome(['seed-01-attribute-disambiguation'], 'wrong'); // seed → kept
    for (let i = 1; i <= 14; i++) bank.enqueueFailure(failure(`second round question ${i}`), 15);
    bank.enqueueFailure(failure('qDelta who won the award at the ceremony?', { retrievedSkillIds: [idA], }), 16);
    expect(bank.pendingFailures().length).toBe(21);
    expect(bank.startConsolidation(19, distiller)).toBeNull(); // not a consolidation step
    const d2 = new ScriptedTextGenerator([(m) => (promptQuestion(m).startsWith('qDelta') ? json(CARD_DELTA) : 'nothing')], { cycle: true });
    expect(bank.startConsolidation(20, d2)).not.toBeNull();
    await bank.waitForConsolidation();
    // The distiller saw the card that was retrieved for the failure.
    const deltaCall = d2.calls.find((m) => promptQuestion(m).startsWith('qDelta'))!;
    expect(deltaCall[1]!.content).toContain(CARD_A.description);
    const r2 = bank.commit(20, bank.readyChange());
    const idDelta = contentId('d', CARD_DELTA);
    expect(r2.version).toBe(2);
    expect(r2.admitted).toEqual([idDelta]);
    expect(r2.evicted).toEqual([{ id: idA, reason: 'negative-utility' }]);
    expect(bank.card(idA)).toBeUndefined();
    expect(bank.card(idB)?.stats).toEqual({ retrieved: 3, helpful: 1, hurt: 1 });
    expect(bank.card(idG)).toBeDefined();
    expect(bank.card('seed-01-attribute-disambiguation')?.stats).toEqual({ retrieved: 3, helpful: 0, hurt: 3 });
    expect(bank.cards.length).toBe(21);

    // Everything committed survives a reopen, stats and queue included.
    const again = await SkillBank.open(path, { embedder: lex() });
    expect(again.version).toBe(2);
    expect(again.cards.map((c) => [c.id, c.stats])).toEqual(bank.cards.map((c) => [c.id, c.stats]));
    expect(again.pendingFailures().map((r) => r.key).sort()).toEqual(bank.pendingFailures().map((r) => r.key).sort());
    // A checkpoint snapshot reopens as the same bank.
    const ckpt = join(tempDir(), 'ckpt', 'skills.json');
    bank.writeSnapshot(ckpt);
    const snap = await SkillBank.open(ckpt, { embedder: lex(), create: false });
    expect(snap.toFileData()).toEqual(bank.toFileData());
  });

  it('over the cap removes the lowest-scoring non-seed cards, never seeds', async () => {
    const bank = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex(), config: { maxCards: 20, minPending: 2, consolidateEvery: 1 } });
    const by = (map: Record<string, CardContent>) => new ScriptedTextGenerator([(m) => json(map[promptQuestion(m)] ?? CARD_A)], { cycle: true });
    bank.enqueueFailure(failure('x1'), 1);
    bank.enqueueFailure(failure('x2'), 1);
    bank.startConsolidation(1, by({ x1: CARD_A, x2: CARD_B }));
    await bank.waitForConsolidation();
    expect(bank.commit(1, bank.readyChange()).admitted.length).toBe(2);
    const [idA, idB] = [contentId('d', CARD_A), contentId('d', CARD_B)];
    bank.recordOutcome([idA], 'correct'); // score +0.5
    bank.recordOutcome([idB], 'wrong'); // score −0.5
    bank.enqueueFailure(failure('y1'), 2);
    bank.enqueueFailure(failure('y2'), 2);
    bank.startConsolidation(2, by({ y1: CARD_G, y2: CARD_EPS }));
    await bank.waitForConsolidation();
    const r = bank.commit(2, bank.readyChange());
    const [idG, idE] = [contentId('d', CARD_G), contentId('d', CARD_EPS)];
    expect(r.admitted).toEqual([idG, idE]);
    // 22 cards > 20: B (lowest score), then the tie at 0 between the two new unretrieved cards → smaller id.
    expect(r.evicted).toEqual([
      { id: idB, reason: 'over-cap' },
      { id: [idG, idE].sort()[0]!, reason: 'over-cap' },
    ]);
    expect(bank.cards.length).toBe(20);
    expect(bank.cards.filter((c) => c.source === 'seed').length).toBe(18);
  });

  it('re-checks admission at commit when the card set changed after the job started', async () => {
    const bank = await SkillBank.open(join(tempDir(), 'bank.json'), { embedder: lex(), config: { minPending: 1, consolidateEvery: 1 } });
    bank.enqueueFailure(failure('z'), 1);
    bank.startConsolidation(1, new ScriptedTextGenerator([json(CARD_B)]));
    await bank.waitForConsolidation();
    const change = bank.readyChange()!;
    expect(change.decisions.map((d) => d.admitted)).toEqual([true]);
    // Meanwhile an import adds the same card under another id.
    await bank.importCards([{ ...CARD_B, id: 'mined-river', source: 'mined', stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 0 }]);
    const r = bank.commit(1, change);
    expect(r.admitted).toEqual([]);
    expect(r.duplicates.map((d) => d.nearest)).toEqual(['mined-river']);
  });

  it('a consolidation that fails as a whole keeps every record queued', async () => {
    const path = join(tempDir(), 'bank.json');
    const emb = lex();
    const bank = await SkillBank.open(path, { embedder: emb, config: { minPending: 1, consolidateEvery: 1 } });
    bank.enqueueFailure(failure('w'), 1);
    // Break the embedder only for the job's candidate embedding.
    const orig = emb.embed.bind(emb);
    emb.embed = async () => {
      throw new Error('embedder crashed');
    };
    bank.startConsolidation(1, new ScriptedTextGenerator([json(CARD_B)]));
    await bank.waitForConsolidation();
    expect(bank.readyChange()).toBeNull();
    expect(bank.lastConsolidationError?.message).toBe('embedder crashed');
    emb.embed = orig;
    expect(bank.pendingFailures().length).toBe(1);
    expect(bank.version).toBe(0);
  });
});

describe('the bank file', () => {
  it('refuses a damaged or schema-invalid file with an error naming the file and field, and leaves it alone', async () => {
    const dir = tempDir();
    const path = join(dir, 'bank.json');
    await SkillBank.open(path, { embedder: lex() });
    const good = readFileSync(path, 'utf8');

    writeFileSync(path, good.slice(0, good.length / 2));
    const torn = readFileSync(path, 'utf8');
    await expect(SkillBank.open(path, { embedder: lex() })).rejects.toThrow(new RegExp(`skill bank ${path}: \\(file\\): not valid JSON`));
    expect(readFileSync(path, 'utf8')).toBe(torn);

    const bad = JSON.parse(good) as { cards: Array<{ stats: { hurt: number } }>; version: number };
    bad.cards[3]!.stats.hurt = -1;
    writeFileSync(path, JSON.stringify(bad));
    const err = await SkillBank.open(path, { embedder: lex() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BankFileError);
    expect((err as BankFileError).field).toBe('cards[3]');
    expect((err as Error).message).toContain(path);
    expect((err as Error).message).toContain('stats.hurt must be a non-negative integer, got -1');

    const bad2 = JSON.parse(good) as Record<string, unknown>;
    bad2.version = 'three';
    writeFileSync(path, JSON.stringify(bad2));
    await expect(SkillBank.open(path, { embedder: lex() })).rejects.toThrow(`skill bank ${path}: version: must be a non-negative integer, got "three"`);

    const bad3 = JSON.parse(good) as { cards: Array<{ id: string }> };
    bad3.cards[1]!.id = bad3.cards[0]!.id;
    writeFileSync(path, JSON.stringify(bad3));
    await expect(SkillBank.open(path, { embedder: lex() })).rejects.toThrow('cards[1].id: duplicate id seed-01-attribute-disambiguation');
  });

  it('refuses another embedder unless asked to re-embed, then records the new one at the next commit', async () => {
    const path = join(tempDir(), 'bank.json');
    await SkillBank.open(path, { embedder: lex() });
    const other = new LexicalEmbedder({ dim: 1024 });
    await expect(SkillBank.open(path, { embedder: other })).rejects.toThrow(/recorded with lexical \(lexical-v1-d4096, dim 4096\) but this run uses lexical \(lexical-v1-d1024, dim 1024\)/);
    const bank = await SkillBank.open(path, { embedder: other, reembed: true });
    expect(readBankFile(path).embedder.dim).toBe(4096);
    bank.commit(1);
    expect(readBankFile(path).embedder).toEqual({ name: 'lexical', model: 'lexical-v1-d1024', dim: 1024, dedupThreshold: 0.8 });
    expect(readBankFile(path).version).toBe(1);
  });

  it('exports and imports JSONL losslessly; duplicate ids need replace', async () => {
    const a = await SkillBank.open(join(tempDir(), 'a.json'), { embedder: lex() });
    a.recordOutcome([a.cards[2]!.id], 'correct');
    a.commit(3);
    const jsonl = a.exportJsonl();
    expect(jsonl.trimEnd().split('\n').length).toBe(18);
    const bPath = join(tempDir(), 'b.json');
    const b = await SkillBank.open(bPath, { embedder: lex(), seedCards: false });
    const { cardsFromJsonl } = await import('../src/skills/bank-file.js');
    const cards = cardsFromJsonl(jsonl, 'export.jsonl');
    expect(await b.importCards(cards)).toEqual({ added: 18, replaced: 0, version: 1 });
    expect(readBankFile(bPath).cards).toEqual(a.cards);
    await expect(b.importCards(cards.slice(0, 1))).rejects.toThrow(/already in the bank/);
    expect(await b.importCards(cards.slice(0, 2), { replace: true })).toEqual({ added: 0, replaced: 2, version: 2 });
    expect(() => cardsFromJsonl('{"id":"x"}\n', 'in.jsonl')).toThrow(/^in\.jsonl:1 \(card x\): /);
    expect(() => cardsFromJsonl('\n{oops\n', 'in.jsonl')).toThrow(/^in\.jsonl:2: not valid JSON/);
  });
});
