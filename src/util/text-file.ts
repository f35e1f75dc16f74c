// Reading text that people and other programs write (corpora, card exports, seeds, datasets): the bytes must
// be UTF-8 and no line may run past a bound, else the file is refused naming the file and the line. Node's own
// `readFileSync(f, 'utf8')` turns invalid bytes into U+FFFD without a word, and a line of tens of megabytes in
// a JSONL file is a damaged file or not JSONL at all (and would be echoed, parsed and indexed whole).
import { createReadStream, readFileSync } from 'node:fs';

/**
 * Bytes a line of a JSONL input may hold. A corpus passage, a skill card, a seed or a QA row is a few KB; a
 * QA row with its supporting contexts some tens of KB.
 */
export const MAX_LINE_BYTES = 4 * 2 ** 20;

/**
 * The most characters of an error message the CLI prints: a list of every problem of a config fits many times
 * over; anything longer holds a hostile value echoed whole somewhere.
 */
export const MESSAGE_MAX_CHARS = 20_000;

/** Values echoed in error messages are cut to this many characters. */
export const ECHO_MAX_CHARS = 120;

/**
 * A value as an error message shows it: JSON, cut to `max` characters with the full length said, so a hostile
 * 20 MB value gives a short error, not a 40 MB one.
 */
export function echo(value: unknown, max = ECHO_MAX_CHARS): string {
  if (typeof value === 'string' && value.length > max) return `${JSON.stringify(value.slice(0, max))}… (${value.length} characters)`;
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s;
}

/** Text as an error message shows it, cut to `max` characters with the full length said. */
export function cut(text: string, max = ECHO_MAX_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

export class TextFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    problem: string,
  ) {
    super(`${file}:${line}: ${problem}`);
    this.name = 'TextFileError';
  }
}

const strict = new TextDecoder('utf-8', { fatal: true });

/** One line's bytes as text; invalid UTF-8 is an error naming the file, the line and the first bad byte. */
function decodeLine(bytes: Uint8Array, file: string, line: number): string {
  try {
    return strict.decode(bytes);
  } catch {
    // The first byte where decoding fails: grow the prefix until it no longer decodes.
    let lo = 0;
    let hi = bytes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, mid + 1), { stream: true });
        lo = mid + 1;
      } catch {
        hi = mid;
      }
    }
    throw new TextFileError(file, line, `not valid UTF-8 (byte 0x${(bytes[lo] ?? 0).toString(16).padStart(2, '0')} at byte ${lo + 1} of the line); save the file as UTF-8`);
  }
}

function tooLong(file: string, line: number, bytes: number, max: number): TextFileError {
  return new TextFileError(file, line, `the line is longer than ${max} bytes (${bytes} bytes or more): not one JSONL record, or a damaged file`);
}

/** A whole text file, checked line by line (UTF-8, at most `maxLineBytes` a line); a leading BOM is dropped. */
export function readTextFile(file: string, maxLineBytes = MAX_LINE_BYTES): string {
  const bytes = readFileSync(file);
  const parts: string[] = [];
  let start = 0;
  let line = 0;
  while (start <= bytes.length) {
    let nl = bytes.indexOf(0x0a, start);
    if (nl < 0) nl = bytes.length;
    line++;
    if (nl - start > maxLineBytes) throw tooLong(file, line, nl - start, maxLineBytes);
    parts.push(decodeLine(bytes.subarray(start, nl), file, line));
    start = nl + 1;
  }
  const text = parts.join('\n');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * A text file's lines, streamed (corpora run to gigabytes), each checked as readTextFile does; `line` is
 * 1-based and a final line without a newline is included. A line past the bound is refused before it is
 * held whole.
 */
export async function* streamLines(file: string, maxLineBytes = MAX_LINE_BYTES): AsyncGenerator<{ text: string; line: number; bytesRead: number }> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  let bytesRead = 0;
  const flush = (): string => {
    const text = decodeLine(pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingBytes), file, line);
    pending = [];
    pendingBytes = 0;
    return line === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  };
  for await (const chunk of createReadStream(file)) {
    const buf = chunk as Buffer;
    bytesRead += buf.length;
    let start = 0;
    for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, start)) {
      line++;
      if (pendingBytes + nl - start > maxLineBytes) throw tooLong(file, line, pendingBytes + nl - start, maxLineBytes);
      pending.push(buf.subarray(start, nl));
      pendingBytes += nl - start;
      yield { text: flush(), line, bytesRead };
      start = nl + 1;
    }
    if (start < buf.length) {
      if (pendingBytes + buf.length - start > maxLineBytes) throw tooLong(file, line + 1, pendingBytes + buf.length - start, maxLineBytes);
      pending.push(buf.subarray(start));
      pendingBytes += buf.length - start;
    }
  }
  if (pendingBytes > 0) {
    line++;
    yield { text: flush(), line, bytesRead };
  }
}
