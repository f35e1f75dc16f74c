// Reading a JSON object out of an LLM reply: models wrap JSON in prose, code fences or <think> blocks, so the
// first parseable object (or array) is taken. Shape checks return a problem string instead of throwing, so
// the caller can retry the role and finally record the failure (docs/recipes.md).

/** Every candidate JSON value in `text`: fenced blocks first, then each balanced {...} / [...] span. */
export function jsonCandidates(text: string): unknown[] {
  const cleaned = text.replace(/<think>[\s\S]*?<\/think>/g, ' ');
  const found: unknown[] = [];
  const tryParse = (s: string): void => {
    try {
      found.push(JSON.parse(s));
    } catch {
      // not JSON: the next candidate may be
    }
  };
  for (const m of cleaned.matchAll(/```(?:json)?\s*\n?([\s\S]*?)```/g)) tryParse((m[1] as string).trim());
  for (let start = 0; start < cleaned.length; start++) {
    const ch = cleaned[start];
    if (ch !== '{' && ch !== '[') continue;
    const end = balancedEnd(cleaned, start);
    if (end < 0) continue;
    const before = found.length;
    tryParse(cleaned.slice(start, end + 1));
    // A parsed span is taken whole; nested spans inside it are not separate candidates.
    if (found.length > before) start = end;
  }
  return found;
}

/** Index of the bracket that closes the one at `start` (string- and escape-aware), or −1. */
function balancedEnd(s: string, start: number): number {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < s.length; i++) {
    const c = s[i] as string;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') stack.push('}');
    else if (c === '[') stack.push(']');
    else if (c === '}' || c === ']') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The first candidate `check` accepts; else the problem with the last candidate (or "no JSON found"). */
export function firstValid<T>(text: string, check: (v: unknown) => Checked<T>): Checked<T> {
  const candidates = jsonCandidates(text);
  if (candidates.length === 0) return { ok: false, problem: 'the reply holds no JSON object' };
  let last: Checked<T> = { ok: false, problem: 'no JSON candidate' };
  for (const c of candidates) {
    last = check(c);
    if (last.ok) return last;
  }
  return last;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A non-empty trimmed string field, or undefined. */
export function text(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' && v.trim().length > 0 ? v.trim() : undefined;
}
