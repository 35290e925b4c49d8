// A loopback HTTP proxy in front of the emulator that holds one chosen request until the test lets it go: a slow service, on the test's signal instead of a timer.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldProxy {
  url: string;
  /** Holds the next request `match` accepts (one), until release(); every other request is forwarded at once. */
  holdNext(match: (method: string, path: string) => boolean): void;
  /** The requests held now, as `METHOD PATH`. */
  held(): string[];
  /** Forwards the held requests whose client is still connected (one whose client went away is never sent) and holds no more. */
  release(): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sends the request upstream and its answer back. */
function forward(req: IncomingMessage, body: Buffer, res: ServerResponse, upstream: URL): void {
  const out = httpRequest(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host, connection: 'close' } },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => req.socket.destroy());
  out.end(body);
}

export async function heldProxy(target: string): Promise<HeldProxy> {
  const upstream = new URL(target);
  let match: ((method: string, path: string) => boolean) | undefined;
  const waiting = new Map<string, () => void>();
  let released = false;
  const server = createServer((req, res) => {
    void readBody(req).then(async (body) => {
      const line = `${req.method ?? 'GET'} ${req.url ?? '/'}`;
      if (match?.(req.method ?? 'GET', req.url ?? '/') && !released) {
        match = undefined;
        await new Promise<void>((resolve) => waiting.set(line, resolve));
        // The client died while it waited (a killed process): its request never reaches the service.
        if (req.socket.destroyed) return;
      }
      forward(req, body, res, upstream);
    }).catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = (): void => {
    released = true;
    match = undefined;
    for (const [line, resolve] of [...waiting]) {
      waiting.delete(line);
      resolve();
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    holdNext(next) {
      released = false;
      match = next;
    },
    held: () => [...waiting.keys()],
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
