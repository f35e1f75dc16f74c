// What a thrown fetch means for the next attempt, shared by the HTTP clients (src/llm/openai.ts, the
// retriever's src/search/searchr1-client.ts).
import { redactSecrets } from './redact.js';

/**
 * Why fetch threw, and whether another attempt could help: a network failure (fetch's TypeError with a cause:
 * refused, reset, DNS) may pass; a request that could not even be built (a TypeError without a cause: a bad
 * URL or header) fails the same way every time. `code` is the network error's code (ECONNREFUSED, ...).
 */
export function fetchFailure(err: unknown): { retryable: boolean; why: string; code?: string } {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  if (err instanceof TypeError && e.cause === undefined) return { retryable: false, why: `request cannot be sent (${redactSecrets(e.message ?? String(err))})` };
  const code = e.cause?.code ?? e.cause?.message;
  return { retryable: true, why: `request failed (${redactSecrets(code ?? e.message ?? String(err))})`, ...(code !== undefined ? { code: redactSecrets(code) } : {}) };
}
