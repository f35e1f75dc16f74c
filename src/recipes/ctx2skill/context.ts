// The context C of a Ctx2Skill run: one text file, or a folder whose text files are joined in path order,
// each under a header naming it (docs/recipes.md). Too long or empty is an error naming the path.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const CONTEXT_EXTENSIONS = ['.txt', '.md', '.markdown', '.rst', '.text'];

export interface LoadedContext {
  source: string;
  text: string;
  sha256: string;
}

function textFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...textFilesUnder(p));
    else if (CONTEXT_EXTENSIONS.some((e) => name.toLowerCase().endsWith(e))) out.push(p);
  }
  return out;
}

export function loadContext(path: string, maxChars: number): LoadedContext {
  if (!existsSync(path)) throw new Error(`--context ${path}: no such file or folder`);
  let text: string;
  if (statSync(path).isDirectory()) {
    const files = textFilesUnder(path);
    if (files.length === 0) throw new Error(`--context ${path}: the folder holds no text files (${CONTEXT_EXTENSIONS.join(', ')})`);
    text = files.map((f) => `# ${relative(path, f)}\n\n${readFileSync(f, 'utf8').trim()}`).join('\n\n');
  } else {
    text = readFileSync(path, 'utf8').trim();
  }
  if (text.trim().length === 0) throw new Error(`--context ${path}: the context is empty`);
  if (text.length > maxChars) {
    throw new Error(`--context ${path}: ${text.length} characters, more than --context-max-chars ${maxChars}; raise the limit if the models' context windows hold it`);
  }
  return { source: path, text, sha256: createHash('sha256').update(text).digest('hex') };
}
