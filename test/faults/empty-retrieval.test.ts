// Retrieval that finds nothing is never silent: a corpus whose passages are all empty text is warned about
// at the start (through the CLI), and a step in which most searches come back empty is warned about with
// the counts (the trainer's RoleWatch around the step's searcher).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CountingSearcher, RoleHealth } from '../../src/selfplay/role-health.js';
import { FakeSearcher } from '../helpers/fake-searcher.js';
import { faultRoot, run, tinyModel, trainArgs } from './cli.js';

let root: string;

beforeAll(() => {
  root = faultRoot('empty');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('empty retrieval', () => {
  it('a corpus of empty passages trains with a warning at the start', async () => {
    const model = tinyModel(root);
    const corpus = join(root, 'empty.jsonl');
    writeFileSync(corpus, Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `p${i}`, title: `Place ${i}`, text: '' })).join('\n') + '\n');
    const r = await run(root, trainArgs(model, join(root, 'run'), 1).map((a) => (a === 'encyclopedia' ? corpus : a)));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`warning: ${corpus}: every passage has empty text; searches will find titles at most`);
  });

  it('a step in which most searches return nothing is warned about with the counts', async () => {
    const searcher = new CountingSearcher(new FakeSearcher([{ id: 'a', title: 'Alpha', text: 'alpha river town' }, { id: 'b', title: 'Beta', text: '' }]));
    // One query finds a passage with text; one finds only a passage with empty text; two find nothing.
    const lists = await searcher.search(['alpha', 'beta', 'gamma', 'delta'], 3);
    expect(lists.map((l) => l.map((p) => p.id))).toEqual([['a'], ['b'], [], []]);
    const counts = searcher.take();
    expect(counts).toEqual({ queries: 4, empty: 3, failed: 0 });
    expect(new RoleHealth(3).check(5, [], counts)).toEqual(['step 5: search: 3 of 4 searches returned no passage with text']);
    // Half or fewer empty: no warning.
    await searcher.search(['alpha', 'gamma'], 3);
    expect(new RoleHealth(3).check(6, [], searcher.take())).toEqual([]);
  });
});
