// What the HTTP clients (src/llm/openai.ts, the retriever's src/search/searchr1-client.ts) share about a
// response: what a thrown fetch means for the next attempt, and reading a body within a size cap, telling a
// connection closed mid-body from one that never opened.
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

/** A body read to its end, or why not and whether another attempt could help. */
export type BodyRead = { text: string } | { retryable: boolean; why: string };

/**
 * The response body as text, at most `maxBytes` of it: a larger one (by its Content-Length, or as it streams
 * in) is cut off, the request aborted, and reported as not worth a retry. A connection closed mid-body is
 * reported as that, with the bytes received; a body that stalls past the caller's timeout (its `ac` aborted)
 * is reported by `timedOut`.
 */
export async function readBodyCapped(res: Response, maxBytes: number, ac: AbortController, timedOut: () => string): Promise<BodyRead> {
  const mib = maxBytes / 2 ** 20;
  const tooLarge = (): BodyRead => ({ retryable: false, why: `the response is larger than ${Number.isInteger(mib) ? mib : mib.toFixed(3)} MiB` });
  const announced = Number(res.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(announced) && announced > maxBytes) {
    ac.abort();
    await res.body?.cancel().catch(() => undefined);
    return tooLarge();
  }
  if (!res.body) return { text: '' };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) {
        ac.abort();
        await reader.cancel().catch(() => undefined);
        return tooLarge();
      }
      chunks.push(value);
    }
  } catch (err) {
    if (ac.signal.aborted) return { retryable: true, why: timedOut() };
    const why = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    return { retryable: fetchFailure(err).retryable, why: `the connection closed mid-response after ${bytes} bytes (${redactSecrets(why)})` };
  }
  return { text: Buffer.concat(chunks).toString('utf8') };
}
