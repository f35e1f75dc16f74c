// The retrieval server: reachable, and answering a query in the Search-R1 /retrieve format.
import { SearchR1Client } from '../search/searchr1-client.js';
import { type CheckResult, firstLine } from './types.js';

export async function checkRetriever(url: string | undefined, timeoutMs = 10_000): Promise<CheckResult | undefined> {
  if (url === undefined) return undefined;
  let client: SearchR1Client;
  try {
    client = new SearchR1Client({ url, attempts: 1, timeoutMs });
  } catch (err) {
    return { check: 'retriever', status: 'fail', detail: firstLine(err), fix: 'pass --retriever-url http://HOST:PORT/retrieve' };
  }
  const t0 = performance.now();
  try {
    const [passages] = await client.search(['who wrote the origin of species'], 3);
    const ms = performance.now() - t0;
    if (!passages || passages.length === 0) return { check: 'retriever', status: 'fail', detail: `${client.endpoint} answered with no passages`, fix: 'check the server has its index loaded' };
    return { check: 'retriever', status: 'ok', detail: `${client.endpoint} answered 1 query with ${passages.length} passages in ${ms.toFixed(0)} ms (Search-R1 format)` };
  } catch (err) {
    return { check: 'retriever', status: 'fail', detail: firstLine(err), fix: 'start the Search-R1 retrieval server (retrieval_launch.sh) or fix --retriever-url' };
  }
}
