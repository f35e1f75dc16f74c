// A local fault-injecting server for the fault tests (not a test file itself): a Search-R1 /retrieve and an
// OpenAI-compatible /v1/chat/completions whose behaviour the test sets per request kind: answer properly,
// fail with HTTP 500 (or another status), hang, reply nonsense, or return empty lists.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RetrieveMode = 'ok' | 'status' | 'hang' | 'nonsense' | 'empty';
export type ChatMode = 'ok' | 'status' | 'hang' | 'nonsense' | 'gibberish';

export interface RecordedRequest {
  path: string;
  authorization?: string;
  body: unknown;
}

export class FaultServer {
  retrieve: RetrieveMode = 'ok';
  chat: ChatMode = 'ok';
  /** The HTTP status of mode 'status', and its body. */
  status = 500;
  statusBody = '{"error": "internal server error"}';
  /** /retrieve requests up to this count are answered properly whatever `retrieve` says (see failRetrieveAfter). */
  private retrieveOkUpTo = 0;
  private retrieves = 0;
  /** The content of an 'ok' chat reply. */
  chatReply = 'Correct';
  readonly requests: RecordedRequest[] = [];
  private readonly hung: ServerResponse[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((res) => this.server?.listen(0, '127.0.0.1', res));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** A server that fails mid-run: the next `n` /retrieve requests are answered properly, later ones as `retrieve` says. */
  failRetrieveAfter(n: number): void {
    this.retrieveOkUpTo = this.retrieves + n;
  }

  async close(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((res) => this.server?.close(() => res()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += (chunk as Buffer).toString();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    this.requests.push({ path: req.url ?? '', ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), body });
    const isRetrieve = req.url?.startsWith('/retrieve') ?? false;
    if (isRetrieve) this.retrieves++;
    const retrieveOk = isRetrieve && this.retrieves <= this.retrieveOkUpTo;
    const mode = isRetrieve ? (retrieveOk ? 'ok' : this.retrieve) : this.chat;
    if (mode === 'hang') {
      this.hung.push(res);
      return;
    }
    if (mode === 'status') {
      res.writeHead(this.status, { 'content-type': 'application/json' }).end(this.statusBody);
      return;
    }
    if (mode === 'nonsense') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>this is not the API you are looking for</html>');
      return;
    }
    if (req.url?.startsWith('/retrieve')) {
      const queries = (body as { queries?: string[] }).queries ?? [];
      const result = queries.map((q, i) =>
        mode === 'empty' ? [] : [{ document: { id: `doc-${i}`, contents: `"Probe Title"\nA passage about ${q}.` }, score: 1 }],
      );
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ result }));
      return;
    }
    const content = mode === 'gibberish' ? 'purple elephant seventeen' : this.chatReply;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
  }
}
