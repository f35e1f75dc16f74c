// The endpoints a run depends on: the judge's and the distiller's text generator as the configuration names it
// (the trainer and its step workers build them alike), and start checks: each configured server is asked once
// before step 1 (a Search-R1 query to the retriever, a one-token chat completion to the judge and the
// distiller), so a dead or misconfigured endpoint is a clear error at the start, not a surprise hours in (or
// never, when the model happens not to call it).
import { textGeneratorFor } from '../llm/from-args.js';
import type { TextGenerator } from '../llm/types.js';
import type { Searcher } from '../search/types.js';
import { isLoopbackUrl } from '../util/loopback.js';
import { redactUrl } from '../util/redact.js';
import type { TrainConfig } from '../settings/train.js';

/**
 * The judge's or the distiller's generator: the server at --judge-url / --distiller-url, else `inProcess` (the
 * base model). `log` gets the keyless notice and each retry.
 */
export function endpointOf(role: 'judge' | 'distiller', config: TrainConfig, inProcess: TextGenerator, log: (line: string) => void): TextGenerator {
  const url = role === 'judge' ? config.judgeUrl : config.distillerUrl;
  // A server on this machine commonly runs without auth: with no key in the environment, call it without one.
  const keyless = url !== undefined && config.apiKeyEnv !== '' && !process.env[config.apiKeyEnv] && isLoopbackUrl(url);
  if (keyless) log(`${role}: ${redactUrl(url)} is on this machine and ${config.apiKeyEnv} is not set; calling it without an API key`);
  return textGeneratorFor(
    role,
    {
      url,
      model: role === 'judge' ? config.judgeModel : config.distillerModel,
      ...(keyless ? {} : { keyEnv: config.apiKeyEnv }),
      timeoutS: role === 'judge' ? config.judgeTimeout : config.distillerTimeout,
      retries: role === 'judge' ? config.judgeRetries : config.distillerRetries,
      onRetry: (i) => log(`${role} retry ${i.attempt} in ${i.delayMs} ms: ${i.reason}`),
    },
    inProcess,
  );
}

export interface EndpointToProbe {
  /** The flag that configured it, e.g. --judge-url, and its value. */
  flag: string;
  url: string;
}

/** Asks the retriever one query; an error names the flag. Returns a warning when it answers with nothing. */
export async function probeRetriever(searcher: Searcher, at: EndpointToProbe): Promise<string | undefined> {
  let lists;
  try {
    lists = await searcher.search(['probe query'], 1);
  } catch (err) {
    throw new Error(`${at.flag} ${redactUrl(at.url)}: the retrieval server failed a probe query before step 1: ${(err as Error).message}`);
  }
  const passages = lists[0] ?? [];
  if (!passages.some((p) => p.text.trim().length > 0)) return `${at.flag} ${redactUrl(at.url)}: the retrieval server answered a probe query with no passages; searches may all come back empty`;
  return undefined;
}

/** Asks a chat endpoint for one token; an error names the flag. */
export async function probeChat(gen: TextGenerator, at: EndpointToProbe): Promise<void> {
  try {
    await gen.complete([{ role: 'user', content: 'Reply with the word OK.' }], { maxTokens: 1, temperature: 0 });
  } catch (err) {
    throw new Error(`${at.flag} ${redactUrl(at.url)}: the endpoint failed a one-token probe before step 1: ${(err as Error).message}`);
  }
}
