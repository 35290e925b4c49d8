// A real node:http server on a loopback port 0 whose answers each test scripts, recording what it received.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  /** Path and query as sent. */
  url: URL;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the request's headers arrived. */
  at: number;
  /** 0 for the first request the server saw. */
  index: number;
  /** The client's port: the same port for two requests means one kept-alive connection. */
  remotePort: number;
}

export type Handler = (request: Received, response: ServerResponse) => unknown;

export interface ScriptedServer {
  url: string;
  received: Received[];
  /** The most requests the server was handling at the same time. */
  maxInFlight: number;
  close(): Promise<void>;
}

/** Starts a server; `handler` answers each request (or never does, to simulate a stall). */
export async function startServer(handler: Handler): Promise<ScriptedServer> {
  const received: Received[] = [];
  let inFlight = 0;
  const state = { maxInFlight: 0 };
  const server = createServer((req, res) => {
    const at = Date.now();
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    res.on('close', () => {
      inFlight--;
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry: Received = {
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://loopback'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at,
        index: received.length,
        remotePort: req.socket.remotePort ?? 0,
      };
      received.push(entry);
      Promise.resolve(handler(entry, res)).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(599).end(String(error));
        else res.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    get maxInFlight() {
      return state.maxInFlight;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes a JSON answer. */
export function json(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

/** A Deployment as the service answers it. */
export function deployment(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `00000000-0000-4000-8000-${name.padStart(12, '0').slice(-12)}`,
    tenant_id: '11111111-1111-4111-8111-111111111111',
    name,
    source: 'codehost',
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-01T00:00:00Z',
    status: 'READY',
    latest_revision_id: null,
    active_revision_id: null,
    ...extra,
  };
}

/** An OAuth provider as the service answers it. */
export function provider(providerId: string): Record<string, unknown> {
  return {
    id: '22222222-2222-4222-8222-222222222222',
    organization_id: '33333333-3333-4333-8333-333333333333',
    provider_id: providerId,
    name: providerId,
    client_id: 'client',
    auth_url: 'https://auth.example.com/authorize',
    token_url: 'https://auth.example.com/token',
    uses_pkce: true,
    code_challenge_method: 'S256',
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-01T00:00:00Z',
  };
}
