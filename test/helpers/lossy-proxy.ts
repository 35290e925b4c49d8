// A loopback HTTP proxy in front of the emulator that loses chosen answers or hides a deployment from a list once.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxyRules {
  /** Forward the request, let it land, then drop the connection instead of answering. Called once per request. */
  loseAnswer?(method: string, path: string): boolean;
  /** Answer 429 (Retry-After 0.1 s) without forwarding. */
  rateLimit?(method: string, path: string): boolean;
  /** Remove deployments of this name from list answers while it returns true (`path`: the listing's, with its query). */
  hideFromList?(name: string, path: string): boolean;
  hiddenName?: string;
}

export interface LossyProxy {
  url: string;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function lossyProxy(target: string, rules: ProxyRules): Promise<LossyProxy> {
  const upstream = new URL(target);
  // A failure while relaying (the client went away) drops the connection, as a real proxy would.
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    relay(req, res, upstream, rules).catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Forwards one request upstream and its answer back, losing or editing the answer as the rules say. */
async function relay(req: IncomingMessage, res: ServerResponse, upstream: URL, rules: ProxyRules): Promise<void> {
  const body = await readBody(req);
  if (rules.rateLimit?.(req.method ?? 'GET', req.url ?? '/')) {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0.1' });
    res.end(JSON.stringify({ detail: 'slow down' }));
    return;
  }
  const lose = rules.loseAnswer?.(req.method ?? 'GET', req.url ?? '/') ?? false;
  const forward = httpRequest(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: upstream.host, connection: 'close' },
    },
    (answer) => {
      readBody(answer).then(
        (data) => {
          if (lose) {
            req.socket.destroy();
            return;
          }
          let out = data;
          // Lists only (GET /v2/deployments?...), not a read by id.
          const listing = req.method === 'GET' && /^\/v2\/deployments(\?|$)/.test(req.url ?? '');
          if (rules.hiddenName && listing && rules.hideFromList?.(rules.hiddenName, req.url ?? '/')) {
            const parsed = JSON.parse(data.toString()) as { resources: Array<{ name: string }>; offset: number };
            parsed.resources = parsed.resources.filter((d) => d.name !== rules.hiddenName);
            out = Buffer.from(JSON.stringify(parsed));
          }
          const headers = { ...answer.headers, 'content-length': String(out.length) };
          delete headers['transfer-encoding'];
          res.writeHead(answer.statusCode ?? 502, headers);
          res.end(out);
        },
        () => req.socket.destroy(),
      );
    },
  );
  forward.on('error', () => req.socket.destroy());
  forward.end(body);
}
