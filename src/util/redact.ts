// Secrets never reach a log: server error bodies and messages pass through here before they are shown.
// Removes bearer tokens, Authorization headers, key-like JSON or query fields, and any known secret value.

const PATTERNS: RegExp[] = [
  /(bearer\s+)[A-Za-z0-9._~+/=-]+/gi,
  /("?(?:authorization|x-api-key|api[_-]?key|access[_-]?token|token|secret|password)"?\s*[:=]\s*"?)([^"\s,&}]+)/gi,
  /\bsk-[A-Za-z0-9_-]{8,}/g,
];

/** `text` with secrets replaced by [REDACTED]; `secrets` are exact values to remove too (e.g. the API key). */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined> = []): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[REDACTED]');
  out = out.replace(PATTERNS[0] as RegExp, '$1[REDACTED]');
  out = out.replace(PATTERNS[1] as RegExp, '$1[REDACTED]');
  out = out.replace(PATTERNS[2] as RegExp, '[REDACTED]');
  return out;
}
