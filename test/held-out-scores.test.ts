import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pairedGainOfFiles, readPredictionScores } from '../src/eval/held-out.js';

const dir = mkdtempSync(join(tmpdir(), 'held-out-scores-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, records: object[]): string => {
  const f = join(dir, name);
  writeFileSync(f, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return f;
};

describe('readPredictionScores and pairedGainOfFiles', () => {
  it('keys each question by dataset and id, in the file order; the same id in two datasets is two questions', () => {
    const f = file('a.jsonl', [
      { dataset: 'world-1', id: 'q2', em: 1 },
      { dataset: 'world-1', id: 'q1', em: 0 },
      { dataset: 'world-2', id: 'q1', em: 1 },
    ]);
    const s = readPredictionScores(f);
    expect([...s.entries()]).toEqual([
      ['world-1\u0000q2', 1],
      ['world-1\u0000q1', 0],
      ['world-2\u0000q1', 1],
    ]);
  });

  it('names the file and line of a record without an id or em, and of a question scored twice', () => {
    const bad = file('bad.jsonl', [{ dataset: 'w', id: 'q1', em: 1 }, { dataset: 'w', id: 'q2' }]);
    expect(() => readPredictionScores(bad)).toThrow(`${bad}:2: a prediction needs a string "id" and a numeric "em"`);
    const twice = file('twice.jsonl', [{ dataset: 'w', id: 'q1', em: 1 }, { dataset: 'w', id: 'q1', em: 0 }]);
    expect(() => readPredictionScores(twice)).toThrow(`${twice}:2: question "q1" (dataset w) is scored twice`);
  });

  it('pairs two evals by question whatever their order, and gives nothing when they scored other questions', () => {
    const first = file('first.jsonl', [
      { dataset: 'w', id: 'a', em: 0 },
      { dataset: 'w', id: 'b', em: 1 },
      { dataset: 'w', id: 'c', em: 0 },
      { dataset: 'w', id: 'd', em: 0 },
    ]);
    const last = file('last.jsonl', [
      { dataset: 'w', id: 'd', em: 1 },
      { dataset: 'w', id: 'c', em: 1 },
      { dataset: 'w', id: 'b', em: 1 },
      { dataset: 'w', id: 'a', em: 0 },
    ]);
    // Paired by id: a 0→0, b 1→1, c 0→1, d 0→1, so Δ = 2/4; the interval holds it.
    const g = pairedGainOfFiles(first, last);
    expect(g?.gain).toBeCloseTo(0.5, 12);
    expect(g?.questions).toBe(4);
    expect(g && g.low <= 0.5 && 0.5 <= g.high).toBe(true);
    const other = file('other.jsonl', [{ dataset: 'w', id: 'a', em: 1 }, { dataset: 'w', id: 'b', em: 1 }, { dataset: 'w', id: 'c', em: 1 }, { dataset: 'w', id: 'e', em: 1 }]);
    expect(pairedGainOfFiles(first, other)).toBeUndefined();
    expect(pairedGainOfFiles(first, join(dir, 'missing.jsonl'))).toBeUndefined();
  });
});
