// Dependencies run one way (docs/method.md, "The tensor stack"): kernels/ builds on src/tensor/ and never the
// reverse; the lower layers (tensor, model, rl, skills, search, checkpoint, llm, corpus, util) never import
// the layers that drive them (selfplay, cli, eval, report). Checked on the import statements of every file.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Project-relative targets of a file's relative imports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1] as string);
  return specs.map((s) => relative(ROOT, resolve(dirname(file), s)));
}

const violations = (files: string[], forbidden: (target: string) => boolean): string[] =>
  files.flatMap((f) => importsOf(f).filter(forbidden).map((t) => `${relative(ROOT, f)} → ${t}`));

describe('dependency direction', () => {
  it('kernels/ imports only src/tensor/ of the project, and src/tensor/ imports only itself and src/util/', () => {
    expect(violations(tsFiles(join(ROOT, 'kernels')), (t) => !t.startsWith('src/tensor/') && !t.startsWith('kernels/'))).toEqual([]);
    expect(violations(tsFiles(join(ROOT, 'src', 'tensor')), (t) => !t.startsWith('src/tensor/') && !t.startsWith('src/util/'))).toEqual([]);
  });

  it('the lower layers never import selfplay, cli, eval or report', () => {
    const lower = ['tensor', 'model', 'rl', 'skills', 'search', 'checkpoint', 'llm', 'corpus', 'util'].flatMap((d) => tsFiles(join(ROOT, 'src', d)));
    expect(lower.length).toBeGreaterThan(50);
    expect(violations(lower, (t) => /^src\/(selfplay|cli|eval|report)\//.test(t))).toEqual([]);
    expect(violations(tsFiles(join(ROOT, 'src', 'selfplay')), (t) => t.startsWith('src/cli/'))).toEqual([]);
  });
});
