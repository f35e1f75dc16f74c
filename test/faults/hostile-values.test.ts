// Hostile values in files a user hands over: a 20 MB card id or setting value gives a short error (the value
// cut, its length said), not one twice its size; invalid UTF-8 in a card import, a corpus, a seeds file or a
// dataset is refused naming the file and the line (Node would have turned it into U+FFFD without a word);
// a 50 MB line in a corpus is refused naming the line, before it is held whole.
import { writeFileSync } from 'node:fs';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCorpus } from '../../src/search/corpus.js';
import { readSeedsFile } from '../../src/agent/seeds.js';
import { resolveDatasets } from '../../src/eval/dataset.js';
import { CARD_A } from '../skills-helpers.js';
import { CLI, faultRoot, run } from './cli.js';

let root: string;
beforeAll(() => {
  root = faultRoot('hostile-values');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const card = (over: Record<string, unknown> = {}): string => JSON.stringify({ ...CARD_A, id: 'imported-1', source: 'mined', stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 0, ...over });
/** A byte that is never valid UTF-8 (0xff), inside otherwise fine JSON text. */
const BAD = Buffer.from([0xff]);

describe('a 20 MB value', () => {
  it('as a card id: the import error is short, naming the file and line, with the value cut', async () => {
    const bank = join(root, 'bank.json');
    expect((await run(root, [CLI, 'skills', 'init', '--bank', bank])).code).toBe(0);
    // 3 MB: within the line bound, so the card itself is checked and its id echoed, cut.
    const file = join(root, 'huge-id.jsonl');
    writeFileSync(file, `${card()}\n${card({ id: 'x'.repeat(3_000_000) })}\n`);
    const r = await run(root, [CLI, 'skills', 'import', '--bank', bank, file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.length).toBeLessThan(2_000);
    expect(r.stderr).toContain(`${file}:2 (card ${'x'.repeat(120)}… (3000000 characters)): id must match`);
    expect(r.stderr).toContain(`got "${'x'.repeat(120)}"… (3000000 characters)`);
    // 20 MB: past the line bound, refused as a line before the card is parsed; short too.
    writeFileSync(file, `${card()}\n${card({ id: 'x'.repeat(20_000_000) })}\n`);
    const huge = await run(root, [CLI, 'skills', 'import', '--bank', bank, file]);
    expect(huge.code).not.toBe(0);
    expect(huge.stderr.length).toBeLessThan(2_000);
    expect(huge.stderr).toContain(`${file}:2: the line is longer than 4194304 bytes`);
  }, 60_000);

  it('as a setting in a config file: the error is short', async () => {
    const file = join(root, 'huge.json');
    // 3 MB values, one per line: within the line bound, so the keys are checked and echoed, cut.
    writeFileSync(file, `{\n"recipe": ${JSON.stringify('r'.repeat(3_000_000))},\n${JSON.stringify('k'.repeat(3_000_000))}: 1\n}\n`);
    const r = await run(root, [CLI, 'train', '--model', 'tiny', '--config', file, '--threads', '1', '--out', join(root, 'huge-run')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.length).toBeLessThan(5_000);
    expect(r.stderr).toContain(`unknown setting '${'k'.repeat(120)}… (3000000 characters)'`);
    // 20 MB on one line: refused by the line bound, short too.
    writeFileSync(file, JSON.stringify({ recipe: 'r'.repeat(20_000_000) }));
    const huge = await run(root, [CLI, 'train', '--model', 'tiny', '--config', file, '--threads', '1', '--out', join(root, 'huge-run')]);
    expect(huge.code).not.toBe(0);
    expect(huge.stderr.length).toBeLessThan(2_000);
    expect(huge.stderr).toContain(`${file}:1: the line is longer than 4194304 bytes`);
  }, 60_000);
});

describe('invalid UTF-8', () => {
  it('in a card import: refused naming the file and line', async () => {
    const bank = join(root, 'bank-utf8.json');
    expect((await run(root, [CLI, 'skills', 'init', '--bank', bank])).code).toBe(0);
    const file = join(root, 'bad-utf8.jsonl');
    const [head, tail] = card({ description: 'A description that holds a byte here: X, which is not UTF-8.' }).split('X') as [string, string];
    writeFileSync(file, Buffer.concat([Buffer.from(`${card({ id: 'fine-1' })}\n`), Buffer.from(head), BAD, Buffer.from(`${tail}\n`)]));
    const r = await run(root, [CLI, 'skills', 'import', '--bank', bank, file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`${file}:2: not valid UTF-8 \\(byte 0xff at byte \\d+ of the line\\); save the file as UTF-8`));
    const list = await run(root, [CLI, 'skills', 'list', '--bank', bank]);
    expect(list.stdout).not.toContain('fine-1');
  }, 60_000);

  it('in a corpus, a seeds file and a dataset: refused naming the file and line', async () => {
    const corpus = join(root, 'bad-corpus.jsonl');
    writeFileSync(corpus, Buffer.concat([Buffer.from('{"id": "1", "contents": "\\"A\\"\\nfine"}\n{"id": "2", "contents": "\\"B\\"\\nbad '), BAD, Buffer.from('"}\n')]));
    await expect(loadCorpus(corpus)).rejects.toThrow(`${corpus}:2: not valid UTF-8 (byte 0xff at byte 37 of the line); save the file as UTF-8`);
    const seeds = join(root, 'bad-seeds.jsonl');
    writeFileSync(seeds, Buffer.concat([Buffer.from('{"answer": "Ok", "hops": 1}\n\n{"answer": "Bad '), BAD, Buffer.from('", "hops": 1}\n')]));
    expect(() => readSeedsFile(seeds)).toThrow(`${seeds}:3: not valid UTF-8`);
    const data = join(root, 'bad-data.jsonl');
    writeFileSync(data, Buffer.concat([Buffer.from('{"id": "1", "question": "Who '), BAD, Buffer.from('?", "golden_answers": ["x"]}\n')]));
    expect(() => resolveDatasets([data], root)).toThrow(`${data}:1: not valid UTF-8`);
  });
});

describe('a 50 MB corpus line', () => {
  it('is refused naming the line', async () => {
    const corpus = join(root, 'long-line.jsonl');
    writeFileSync(corpus, `{"id": "1", "contents": "\\"A\\"\\nfine"}\n{"id": "2", "contents": "${'y'.repeat(50 * 2 ** 20)}"}\n`);
    await expect(loadCorpus(corpus)).rejects.toThrow(new RegExp(`^${corpus}:2: the line is longer than 4194304 bytes \\(\\d+ bytes or more\\): not one JSONL record, or a damaged file$`));
  });
});
