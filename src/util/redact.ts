// Secrets never reach a log or a file: server error bodies, messages and URLs pass through here before they
// are shown or written. Removes bearer tokens, Authorization headers, key-like JSON or query fields, the user
// name and password of a URL, and any known secret value.

/** What a removed secret is replaced with: plain letters, so it survives URL encoding unchanged. */
export const REDACTED = 'REDACTED';

/** Query parameters whose value is a credential (matched case-insensitively, `-` and `_` alike). */
const SECRET_PARAMS = /^(?:api[_-]?key|key|x[_-]?api[_-]?key|access[_-]?token|token|auth|authorization|secret|password|passwd|sig|signature|client[_-]?secret|code)$/i;

const PATTERNS: RegExp[] = [
  /(bearer\s+)[A-Za-z0-9._~+/=-]+/gi,
  /("?(?:authorization|x-api-key|api[_-]?key|access[_-]?token|token|secret|password)"?\s*[:=]\s*"?)([^"\s,&});]+)/gi,
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  // The user info of a URL in text (scheme://user:password@host).
  /(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"']+@/gi,
  // Key-like query parameters of a URL in text (?key=… / &sig=…).
  /([?&](?:api[_-]?key|key|x[_-]?api[_-]?key|access[_-]?token|token|auth|secret|password|passwd|sig|signature|client[_-]?secret|code)=)[^&#\s"'),;]+/gi,
];

/** `text` with secrets replaced by [REDACTED]; `secrets` are exact values to remove too (e.g. the API key). */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined> = []): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[REDACTED]');
  out = out.replace(PATTERNS[0] as RegExp, '$1[REDACTED]');
  out = out.replace(PATTERNS[1] as RegExp, '$1[REDACTED]');
  out = out.replace(PATTERNS[2] as RegExp, '[REDACTED]');
  out = out.replace(PATTERNS[3] as RegExp, `$1${REDACTED}@`);
  out = out.replace(PATTERNS[4] as RegExp, `$1${REDACTED}`);
  return out;
}

/**
 * A URL as it may be shown or written: its user name and password replaced by REDACTED, and the value of
 * every key-like query parameter (api_key, key, token, sig, ...) too; other parameters (api-version) stay.
 * Text that is not a URL comes back through redactSecrets.
 */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactSecrets(url);
  }
  if (u.username !== '' || u.password !== '') {
    u.username = REDACTED;
    u.password = '';
  }
  if (u.search !== '') {
    // Rebuilt by hand, not through searchParams, so the other parameters keep their exact spelling.
    const parts = u.search.slice(1).split('&').map((p) => {
      const eq = p.indexOf('=');
      const name = eq < 0 ? p : p.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        // keep the raw name
      }
      return eq >= 0 && SECRET_PARAMS.test(decoded) ? `${name}=${REDACTED}` : p;
    });
    u.search = `?${parts.join('&')}`;
  }
  return u.toString();
}

/** Whether `url` holds a user name or password (which fetch refuses to send, and which must not be shown). */
export function hasUserInfo(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== '' || u.password !== '';
  } catch {
    return false;
  }
}

/** Whether `url` is one redactUrl changed (a secret was removed from it), so it cannot be used as it is. */
export function isRedactedUrl(url: string): boolean {
  try {
    const u = new URL(url);
    if (u.username === REDACTED) return true;
    return u.search.slice(1).split('&').some((p) => {
      const eq = p.indexOf('=');
      return eq >= 0 && p.slice(eq + 1) === REDACTED && SECRET_PARAMS.test(p.slice(0, eq));
    });
  } catch {
    return false;
  }
}
