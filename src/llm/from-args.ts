// Command-line options for a TextGenerator endpoint (the distiller now, the judge later), as plain yargs
// option objects so any command can add them without this module importing yargs; and the one function
// that turns parsed options into a TextGenerator.
import { OPENAI_CHAT_DEFAULTS, OpenAIChatClient } from './openai.js';
import type { TextGenerator } from './types.js';

export interface EndpointArgs {
  url?: string;
  model?: string;
  keyEnv?: string;
  timeoutS?: number;
  retries?: number;
  /** Told about each retry (e.g. for the run log). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

/** `--<role>-url`, `--<role>-model`, `--<role>-key-env`, `--<role>-timeout`, `--<role>-retries`. */
export function endpointOptions(role: 'distiller' | 'judge'): Record<string, { type: 'string' | 'number'; describe: string; default?: number }> {
  return {
    [`${role}-url`]: { type: 'string', describe: `OpenAI-compatible chat-completions base URL for the ${role} (default: the in-process base model)` },
    [`${role}-model`]: { type: 'string', describe: `model name sent to the ${role} endpoint` },
    [`${role}-key-env`]: { type: 'string', describe: `environment variable holding the ${role} endpoint's API key` },
    [`${role}-timeout`]: { type: 'number', default: OPENAI_CHAT_DEFAULTS.timeoutMs / 1000, describe: `seconds per ${role} request attempt` },
    [`${role}-retries`]: { type: 'number', default: OPENAI_CHAT_DEFAULTS.maxRetries, describe: `retries of a failed ${role} request (5xx, timeouts)` },
  };
}

/** Reads the role's options from parsed args (yargs camel-cases them: distillerUrl, distillerKeyEnv, ...). */
export function endpointArgs(role: 'distiller' | 'judge', args: Record<string, unknown>): EndpointArgs {
  const s = (k: string): string | undefined => (typeof args[k] === 'string' ? (args[k] as string) : undefined);
  const n = (k: string): number | undefined => (typeof args[k] === 'number' ? (args[k] as number) : undefined);
  return { url: s(`${role}Url`), model: s(`${role}Model`), keyEnv: s(`${role}KeyEnv`), timeoutS: n(`${role}Timeout`), retries: n(`${role}Retries`) };
}

/**
 * The endpoint when a URL is given, else `inProcess` (the base model with adapters off). Errors name the
 * flag that is missing.
 */
export function textGeneratorFor(role: 'distiller' | 'judge', a: EndpointArgs, inProcess?: TextGenerator): TextGenerator {
  if (a.url === undefined) {
    if (a.model !== undefined) throw new Error(`--${role}-model needs --${role}-url`);
    if (!inProcess) throw new Error(`no ${role}: give --${role}-url and --${role}-model, or load a model in process`);
    return inProcess;
  }
  if (!a.model) throw new Error(`--${role}-url needs --${role}-model (the model name the server expects)`);
  if (a.timeoutS !== undefined && !(a.timeoutS > 0)) throw new Error(`--${role}-timeout must be a positive number of seconds`);
  if (a.retries !== undefined && (!Number.isInteger(a.retries) || a.retries < 0)) throw new Error(`--${role}-retries must be a non-negative integer`);
  return new OpenAIChatClient({
    url: a.url,
    model: a.model,
    ...(a.keyEnv !== undefined ? { apiKeyEnv: a.keyEnv } : {}),
    ...(a.timeoutS !== undefined ? { timeoutMs: Math.round(a.timeoutS * 1000) } : {}),
    ...(a.retries !== undefined ? { maxRetries: a.retries } : {}),
    ...(a.onRetry ? { onRetry: a.onRetry } : {}),
  });
}
