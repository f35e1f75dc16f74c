// Reading a JSONL passage corpus (docs/method.md, "Search"). Two row formats are accepted:
//   wiki-18 (what Search-R1's retrieval server indexes): {"id", "contents": "\"Title\"\ntext"}
//   plain:                                              {"id", "title", "text"}
// The file is streamed (corpora run to gigabytes) and every bad row is reported as `file:line: why`, since
// a corpus is hand-assembled data and the line number is what a person needs to fix it.
import { createHash, type Hash } from 'node:crypto';
import { statSync } from 'node:fs';
import { streamLines, TextFileError } from '../util/text-file.js';
import type { Passage } from './types.js';
import { echo } from '../util/text-file.js';

export class CorpusError extends Error {
  constructor(
    message: string,
    readonly file: string,
    readonly line?: number,
  ) {
    super(line === undefined ? `${file}: ${message}` : `${file}:${line}: ${message}`);
    this.name = 'CorpusError';
  }
}

export interface CorpusProgress {
  bytesRead: number;
  totalBytes: number;
  rows: number;
}

/** Lines between two progress reports. */
const PROGRESS_EVERY_LINES = 1000;

export interface ReadCorpusOptions {
  /** Called every PROGRESS_EVERY_LINES lines and at the end. */
  onProgress?: (p: CorpusProgress) => void;
}

/**
 * Splits wiki-18 `contents` into title and text. The title line is the first line when it is wrapped in
 * double quotes (inner quotes doubled, CSV style, as DPR's TSV wrote them); contents without such a line
 * (some corpora store bare text) become text with an empty title rather than an error, so that the first
 * sentence of a passage is never mistaken for its title.
 */
export function parseContents(contents: string): { title: string; text: string } {
  const nl = contents.indexOf('\n');
  if (nl >= 0) {
    const first = contents.slice(0, nl).replace(/\r$/, '');
    if (first.length >= 2 && first.startsWith('"') && first.endsWith('"')) {
      return { title: first.slice(1, -1).replaceAll('""', '"'), text: contents.slice(nl + 1) };
    }
  }
  return { title: '', text: contents };
}

const FORMATS = 'expected {"id","contents"} or {"id","title","text"}';

/** One corpus line → a passage; throws CorpusError naming `file:line`. */
export function parseCorpusLine(line: string, file: string, lineNo: number): Passage {
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch (err) {
    throw new CorpusError(`invalid JSON (${(err as Error).message})`, file, lineNo);
  }
  if (typeof row !== 'object' || row === null || Array.isArray(row)) {
    throw new CorpusError(`row is not a JSON object; ${FORMATS}`, file, lineNo);
  }
  const r = row as Record<string, unknown>;
  let id: string;
  if (typeof r.id === 'string' && r.id !== '') id = r.id;
  else if (typeof r.id === 'number' && Number.isSafeInteger(r.id)) id = String(r.id);
  else if (r.id === undefined) throw new CorpusError(`row has no "id"; ${FORMATS}`, file, lineNo);
  else throw new CorpusError(`"id" must be a non-empty string or an integer, got ${echo(r.id)}`, file, lineNo);

  // A row carrying both shapes is taken by its structured fields, which need no guessing.
  if (typeof r.title === 'string' && typeof r.text === 'string') return { id, title: r.title, text: r.text };
  if (typeof r.contents === 'string') return { id, ...parseContents(r.contents) };
  const missing =
    r.contents !== undefined
      ? '"contents" must be a string'
      : r.title !== undefined || r.text !== undefined
        ? `row with "title"/"text" needs both as strings (missing or not a string: ${
            typeof r.title !== 'string' ? '"title"' : '"text"'
          })`
        : 'row has no "contents" and no "title"/"text"';
  throw new CorpusError(`${missing}; ${FORMATS}`, file, lineNo);
}

/** The content hash of a corpus: over the parsed passages, so that it is the same for a file and for memory. */
export class CorpusHasher {
  private readonly hash: Hash = createHash('sha256');
  add(p: Passage): void {
    this.hash.update(JSON.stringify([p.id, p.title, p.text]));
    this.hash.update('\n');
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

export function hashPassages(passages: Iterable<Passage>): string {
  const h = new CorpusHasher();
  for (const p of passages) h.add(p);
  return h.digest();
}

/** Streams a corpus file's rows with their 1-based line numbers; blank lines are skipped. */
export async function* readCorpusRows(
  file: string,
  options: ReadCorpusOptions = {},
): AsyncGenerator<{ passage: Passage; line: number }> {
  let totalBytes: number;
  try {
    totalBytes = statSync(file).size;
  } catch (err) {
    throw new CorpusError(`cannot read corpus (${(err as Error).message})`, file);
  }
  let rows = 0;
  // Lines are split on bytes and each is checked (UTF-8, at most MAX_LINE_BYTES) before it is parsed.
  try {
    for await (const { text, line: lineNo, bytesRead } of streamLines(file)) {
      const line = text.endsWith('\r') ? text.slice(0, -1) : text;
      if (line.trim() !== '') {
        rows += 1;
        yield { passage: parseCorpusLine(line, file, lineNo), line: lineNo };
      }
      if (lineNo % PROGRESS_EVERY_LINES === 0) options.onProgress?.({ bytesRead, totalBytes, rows });
    }
  } catch (err) {
    if (err instanceof TextFileError) throw new CorpusError(err.message.slice(`${file}:${err.line}: `.length), file, err.line);
    throw err;
  }
  options.onProgress?.({ bytesRead: totalBytes, totalBytes, rows });
}

export interface LoadedCorpus {
  file: string;
  passages: Passage[];
  /** sha256 (hex) of the parsed passages, see CorpusHasher. */
  contentHash: string;
}

/** Reads a whole corpus, rejecting duplicate ids and empty corpora. */
export async function loadCorpus(file: string, options: ReadCorpusOptions = {}): Promise<LoadedCorpus> {
  const passages: Passage[] = [];
  const firstLine = new Map<string, number>();
  const hasher = new CorpusHasher();
  for await (const { passage, line } of readCorpusRows(file, options)) {
    const seen = firstLine.get(passage.id);
    if (seen !== undefined) {
      throw new CorpusError(`duplicate id ${echo(passage.id)} (first at line ${seen})`, file, line);
    }
    firstLine.set(passage.id, line);
    passages.push(passage);
    hasher.add(passage);
  }
  if (passages.length === 0) throw new CorpusError('corpus has no passages', file);
  return { file, passages, contentHash: hasher.digest() };
}
