// A client for any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, SGLang, OpenAI...).
// Each attempt has its own timeout (AbortController); 5xx, 408, 429, timeouts and connection errors are
// retried a bounded number of times with exponential backoff; other 4xx fail at once. Errors name the URL,
// the model, the status and the start of the reply body (secrets redacted), so a misconfigured endpoint is
// easy to see.
import { fetchFailure, readBodyCapped } from '../util/http-client.js';
import { hasUserInfo, redactSecrets, redactUrl } from '../util/redact.js';
import type { ChatMessage, CompleteOptions, TextGenerator } from './types.js';

export interface OpenAIChatConfig {
  /** Base URL (`http://host:8000/v1`) or the full `.../chat/completions` URL. */
  url: string;
  model: string;
  /** Name of the environment variable that holds the API key (never the key itself); unset = no auth. */
  apiKeyEnv?: string;
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Retries after the first attempt. */
  maxRetries?: number;
  /** First backoff; doubles each retry, capped at maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Most bytes of one reply body: a larger one is cut off and refused without a retry. */
  maxResponseBytes?: number;
  /** Defaults for requests that do not say. */
  maxTokens?: number;
  temperature?: number;
  /** Injected for tests; defaults to the global fetch. */
  fetchImpl?: typeof fetch;
  /** Injected for tests; defaults to setTimeout-based sleep. */
  sleep?: (ms: number) => Promise<void>;
  /** Told about each retry before its backoff (e.g. for the run log). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

export const OPENAI_CHAT_DEFAULTS = {
  timeoutMs: 120_000,
  maxRetries: 3,
  backoffMs: 1_000,
  maxBackoffMs: 20_000,
  // A chat completion of a few thousand tokens is a few KB of JSON; 16 MiB is no honest reply.
  maxResponseBytes: 16 * 2 ** 20,
  maxTokens: 1024,
  temperature: 0,
} as const;

export class LlmEndpointError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly attempts: number,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'LlmEndpointError';
  }
}

/**
 * The chat-completions endpoint of a base URL: `/chat/completions` joined to its path with the URL API, so a
 * query (`?api-version=…`) stays at the end; a URL that already ends in it is used as it is.
 */
export function chatCompletionsUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`OpenAI-compatible client: ${JSON.stringify(redactUrl(url))} is not a URL (expected e.g. http://127.0.0.1:8000/v1)`);
  }
  const path = u.pathname.replace(/\/+$/, '');
  if (!/\/chat\/completions$/.test(path)) u.pathname = `${path}/chat/completions`;
  return u.toString();
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class OpenAIChatClient implements TextGenerator {
  readonly name: string;
  private readonly endpoint: string;
  private readonly cfg: Required<Omit<OpenAIChatConfig, 'apiKeyEnv' | 'fetchImpl' | 'sleep' | 'onRetry'>> & Pick<OpenAIChatConfig, 'apiKeyEnv'>;
  private readonly fetchImpl: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly onRetry: OpenAIChatConfig['onRetry'];

  constructor(config: OpenAIChatConfig) {
    if (!config.url) throw new Error('OpenAI-compatible client: url is required');
    if (!config.model) throw new Error('OpenAI-compatible client: model is required');
    if (hasUserInfo(config.url)) {
      throw new Error(`OpenAI-compatible client ${redactUrl(config.url)}: the URL must not hold a user name or password (fetch cannot send them, and they would be shown in logs); put the key in the environment variable that --api-key-env names`);
    }
    this.cfg = { ...OPENAI_CHAT_DEFAULTS, ...stripUndefined(config) } as typeof this.cfg;
    this.endpoint = chatCompletionsUrl(config.url);
    // The name goes into every message and log line: without the secrets a query may hold.
    this.name = `openai:${redactUrl(this.endpoint)} ${config.model}`;
    this.fetchImpl = config.fetchImpl ?? fetch;
    this.sleep = config.sleep ?? defaultSleep;
    if (config.apiKeyEnv === '') this.cfg.apiKeyEnv = undefined; // explicitly no key
    if (this.cfg.apiKeyEnv !== undefined && !process.env[this.cfg.apiKeyEnv]) {
      throw new Error(
        `OpenAI-compatible client ${redactUrl(this.endpoint)}: environment variable ${this.cfg.apiKeyEnv} (the API key) is not set; set it, or pass --api-key-env '' for a server without auth`,
      );
    }
    this.onRetry = config.onRetry;
  }

  async complete(messages: ChatMessage[], opts: CompleteOptions = {}): Promise<string> {
    const body = JSON.stringify({
      model: this.cfg.model,
      messages,
      max_tokens: opts.maxTokens ?? this.cfg.maxTokens,
      temperature: opts.temperature ?? this.cfg.temperature,
      ...(opts.stop && opts.stop.length > 0 ? { stop: opts.stop } : {}),
      stream: false,
    });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const key = this.cfg.apiKeyEnv ? process.env[this.cfg.apiKeyEnv] : undefined;
    if (key) headers.authorization = `Bearer ${key}`;

    const attempts = this.cfg.maxRetries + 1;
    let last: LlmEndpointError | null = null;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (opts.signal?.aborted) throw new LlmEndpointError(`${this.name}: cancelled by the caller`, null, attempt - 1, false);
      try {
        return await this.once(body, headers, attempt, opts.signal);
      } catch (err) {
        if (!(err instanceof LlmEndpointError)) throw err;
        last = err;
        if (!err.retryable || attempt === attempts) break;
        const delayMs = Math.min(this.cfg.maxBackoffMs, this.cfg.backoffMs * 2 ** (attempt - 1));
        this.onRetry?.({ attempt, delayMs, reason: err.message });
        await this.sleep(delayMs);
      }
    }
    const l = last as LlmEndpointError;
    throw new LlmEndpointError(
      l.retryable ? `${l.message} (gave up after ${l.attempts} attempt${l.attempts === 1 ? '' : 's'})` : l.message,
      l.status,
      l.attempts,
      l.retryable,
    );
  }

  private async once(body: string, headers: Record<string, string>, attempt: number, outer?: AbortSignal): Promise<string> {
    const ctrl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort();
    }, this.cfg.timeoutMs);
    const onOuter = (): void => ctrl.abort();
    outer?.addEventListener('abort', onOuter, { once: true });
    try {
      let res: Response;
      try {
        res = await this.fetchImpl(this.endpoint, { method: 'POST', headers, body, signal: ctrl.signal });
      } catch (err) {
        if (timedOut) {
          throw new LlmEndpointError(`${this.name}: no reply within ${this.cfg.timeoutMs} ms`, null, attempt, true);
        }
        if (outer?.aborted) throw new LlmEndpointError(`${this.name}: cancelled by the caller`, null, attempt, false);
        const failure = fetchFailure(err);
        throw new LlmEndpointError(`${this.name}: ${failure.why}`, null, attempt, failure.retryable);
      }
      // The body is read under the same timeout (a server that stalls mid-reply is a timeout too) and a size cap.
      const read = await readBodyCapped(res, this.cfg.maxResponseBytes, ctrl, () => (timedOut ? `no reply within ${this.cfg.timeoutMs} ms` : 'cancelled by the caller'));
      if (!('text' in read)) {
        if (outer?.aborted && !timedOut) throw new LlmEndpointError(`${this.name}: cancelled by the caller`, null, attempt, false);
        throw new LlmEndpointError(`${this.name}: ${read.why}`, res.status, attempt, read.retryable);
      }
      const text = read.text;
      if (!res.ok) {
        const retryable = res.status >= 500 || res.status === 408 || res.status === 429;
        const hint = res.status === 401 || res.status === 403 ? ' (check the API key environment variable)' : '';
        throw new LlmEndpointError(
          `${this.name}: HTTP ${res.status}${hint}: ${snippet(redactSecrets(text, [headers.authorization?.replace(/^Bearer /, '')]))}`,
          res.status,
          attempt,
          retryable,
        );
      }
      return parseChatCompletion(text, this.name, attempt);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    }
  }
}

/** Extracts choices[0].message.content; a reply of any other shape is an error naming what was missing. */
export function parseChatCompletion(text: string, who: string, attempt = 1): string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new LlmEndpointError(`${who}: reply is not JSON: ${snippet(text)}`, 200, attempt, false);
  }
  const choices = (json as { choices?: unknown }).choices;
  if (!Array.isArray(choices) || choices.length === 0) {
    throw new LlmEndpointError(`${who}: reply has no choices: ${snippet(text)}`, 200, attempt, false);
  }
  const content = (choices[0] as { message?: { content?: unknown } }).message?.content;
  if (typeof content !== 'string') {
    throw new LlmEndpointError(`${who}: reply has no choices[0].message.content string: ${snippet(text)}`, 200, attempt, false);
  }
  return content;
}

function snippet(text: string): string {
  const one = redactSecrets(text).replace(/\s+/g, ' ').trim();
  return one.length > 200 ? `${one.slice(0, 200)}…` : one || '(empty body)';
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
