// Real HTTP receivers of notifications on loopback for the tests: every request kept, each answered as the test says.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status answered (undefined while the request hangs). */
  status?: number;
  /** A hanging request whose connection was closed (by the sender's timeout, or the receiver's close). */
  closed?: boolean;
}

/** What to answer: a status, or 'hang' (never answer; the connection stays open until the receiver closes). */
export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  requests: Received[];
  /** Requests not answered (hanging). */
  hanging(): number;
  /** JSON bodies of the requests answered 2xx. */
  delivered(): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A config file's one webhook receiver `ops` (its URL in OPS_URL) for every event about a resource. */
export const OPS_WEBHOOK_CONFIG = `notifications:
  - name: ops
    type: webhook
    url_env: OPS_URL
    events: [write_sent, write_failed, rollout_succeeded, rollout_failed, held, conflict, drift_detected, drift_healed, pruned]
`;

/** A receiver on 127.0.0.1 answering each request with `answer(request, index)`. */
export async function startReceiver(
  answer: (request: Received, index: number) => Answer = () => 200,
): Promise<Receiver> {
  const requests: Received[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const received: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      requests.push(received);
      const said = answer(received, requests.length - 1);
      if (said === 'hang') {
        open.add(res);
        res.on('close', () => {
          open.delete(res);
          received.closed = true;
        });
        return;
      }
      received.status = said;
      res
        .writeHead(said, { 'content-type': 'application/json' })
        .end(said < 300 ? '{"ok":true}' : '{"error":"receiver says no"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    hanging: () => requests.filter((r) => r.status === undefined).length,
    delivered: () =>
      requests
        .filter((r) => r.status !== undefined && r.status < 300)
        .map((r) => JSON.parse(r.body) as Record<string, unknown>),
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
