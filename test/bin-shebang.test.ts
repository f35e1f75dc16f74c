// bin/sesa-train.mjs starts Node through `env -S` with glibc's malloc settings (its header says why). Linux
// before 5.1 reads only the first 127 bytes of a script's first line and cuts the rest silently: a longer line
// would run a truncated command (`env: 'no': No such file or directory`) instead of the CLI.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const first = readFileSync(new URL('../bin/sesa-train.mjs', import.meta.url), 'utf8').split('\n', 1)[0] as string;

describe('bin/sesa-train.mjs first line', () => {
  it('fits the 127 bytes an older Linux reads', () => {
    expect(Buffer.byteLength(first)).toBeLessThanOrEqual(127);
  });

  it('is env -S, KEY=VALUE settings only, then node', () => {
    const words = first.split(' ');
    expect(words.slice(0, 2)).toEqual(['#!/usr/bin/env', '-S']);
    expect(words.at(-1)).toBe('node');
    const settings = words.slice(2, -1);
    for (const w of settings) expect(w).toMatch(/^[A-Z_]+=\S+$/);
    const env = Object.fromEntries(settings.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
    expect(env).toEqual({ MALLOC_MMAP_THRESHOLD_: '999999999', MALLOC_TRIM_THRESHOLD_: '4294967296', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' });
  });
});
