// Dependencies run one way (docs/method.md, "Layers"): every folder of src/ (and bench/, kernels/, models/)
// has a place in one order, top to bottom, and a file imports only from its own folder and the folders below
// its own: no cycle between folders and no upward import. kernels/ builds on src/tensor/ alone. The trainer,
// the eval and doctor never import the world: they get a task environment (src/agent/environment.ts).
// Checked on the import statements of every file.
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

/** The relative specifiers of a source text's imports (static and dynamic), in single, double or back quotes. */
function relativeSpecifiers(text: string): string[] {
  return [...text.matchAll(/(?:from|import)\s*\(?\s*(['"`])(\.[^'"`]+)\1/g)].map((m) => m[2] as string);
}

/** Project-relative targets of a file's relative imports. */
function importsOf(file: string): string[] {
  return relativeSpecifiers(readFileSync(file, 'utf8')).map((s) => relative(ROOT, resolve(dirname(file), s)));
}

const violations = (files: string[], forbidden: (target: string) => boolean): string[] =>
  files.flatMap((f) => importsOf(f).filter(forbidden).map((t) => `${relative(ROOT, f)} → ${t}`));

/** The folders, top to bottom; a folder may import the folders of the layers below its own. */
const LAYERS: string[][] = [
  ['src/cli'],
  ['bench'],
  ['src/recipes', 'src/doctor', 'src/report'],
  ['src/selfplay'],
  ['src/env', 'src/parallel', 'src/llama-cpp'],
  ['src/world'],
  ['src/eval', 'src/sft'],
  ['src/agent', 'src/checkpoint', 'src/corpus'],
  ['src/rl', 'src/settings'],
  ['kernels', 'src/model', 'src/search', 'src/skills'],
  ['src/llm', 'models', 'src/tensor'],
  ['src/formats'],
  ['src/util'],
];

/** The folder of a project path (the layer key), or undefined for a file outside every listed folder. */
function folderOf(path: string): string | undefined {
  const parts = path.split('/');
  const key = parts[0] === 'src' ? `src/${parts[1]}` : (parts[0] as string);
  return LAYERS.some((l) => l.includes(key)) ? key : undefined;
}

const layerOf = (key: string): number => LAYERS.findIndex((l) => l.includes(key));

/** The imports of `from` (project paths) that go to another folder of its own layer or of a layer above. */
function upwardImports(from: string, targets: readonly string[]): string[] {
  const own = folderOf(from) as string;
  return targets
    .filter((t) => {
      const to = folderOf(t);
      return to !== undefined && to !== own && layerOf(to) <= layerOf(own);
    })
    .map((t) => `${from} → ${t}`);
}

describe('dependency direction', () => {
  it('every folder of the code has a layer, and every import goes to its own folder or a lower layer', () => {
    const srcEntries = readdirSync(join(ROOT, 'src'));
    const srcFolders = srcEntries.filter((n) => statSync(join(ROOT, 'src', n)).isDirectory());
    for (const f of srcFolders) expect(folderOf(`src/${f}/x.ts`), `src/${f} has no layer`).toBeDefined();
    // A file directly in src/ would belong to no folder, and its imports would go unchecked.
    expect(srcEntries.filter((n) => !srcFolders.includes(n)), 'files directly in src/').toEqual([]);
    const files = LAYERS.flat().flatMap((key) => tsFiles(join(ROOT, key)));
    expect(files.length).toBeGreaterThan(200);
    expect(files.flatMap((f) => upwardImports(relative(ROOT, f), importsOf(f)))).toEqual([]);
  });

  it('the trainer, the eval and doctor take a task environment and never import the world', () => {
    const files = ['selfplay', 'eval', 'doctor'].flatMap((d) => tsFiles(join(ROOT, 'src', d)));
    expect(violations(files, (t) => t.startsWith('src/world/'))).toEqual([]);
  });

  it('the detector reads every quote style of an import', () => {
    const probe = join(ROOT, 'src', 'util', 'atomic.ts');
    const text = readFileSync(probe, 'utf8');
    expect(importsOf(probe).length).toBe([...text.matchAll(/^import .* from '\./gm)].length);
    for (const q of ["'", '"', '`']) {
      expect(relativeSpecifiers(`import { a } from ${q}./x.js${q};\nconst m = await import(${q}../y.js${q});`)).toEqual(['./x.js', '../y.js']);
    }
    // A package import is not a project import.
    expect(relativeSpecifiers(`import { b } from 'vitest';`)).toEqual([]);
  });

  it('kernels/ imports only src/tensor/ of the project, and src/tensor/ imports only itself, src/formats/ (the native path\'s ONNX models) and src/util/', () => {
    expect(violations(tsFiles(join(ROOT, 'kernels')), (t) => !t.startsWith('src/tensor/') && !t.startsWith('kernels/'))).toEqual([]);
    expect(violations(tsFiles(join(ROOT, 'src', 'tensor')), (t) => !t.startsWith('src/tensor/') && !t.startsWith('src/formats/') && !t.startsWith('src/util/'))).toEqual([]);
  });

  it('reports an upward import and an import within a layer, and passes one downward', () => {
    expect(upwardImports('src/model/qwen3.ts', ['src/selfplay/step.ts', 'src/tensor/backend.ts', 'src/model/lora.ts'])).toEqual(['src/model/qwen3.ts → src/selfplay/step.ts']);
    expect(upwardImports('src/model/qwen3.ts', ['src/search/types.ts'])).toEqual(['src/model/qwen3.ts → src/search/types.ts']);
    expect(upwardImports('src/cli/train.ts', ['src/world/setup.ts', 'src/util/rng.ts'])).toEqual([]);
  });
});
