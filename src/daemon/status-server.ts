// The daemon's status server (node:http): /healthz, /readyz, /metrics, /status. Serves no secret.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConvergeError } from '../core/errors.js';

/** One readiness check: Redis, the service, the manifests, or shutting down. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  /** Why it fails, or a short note; never a secret. */
  detail?: string;
}

export interface StatusHandlers {
  readiness(): Promise<ReadinessCheck[]>;
  /** The /status document (JSON-serialisable; must hold no secret). */
  status(): unknown;
  /** Prometheus text exposition. */
  metrics(): Promise<string>;
}

export interface StatusServerOptions {
  host: string;
  /** 0 picks a free port (see `port` of the result). */
  port: number;
  handlers: StatusHandlers;
  /** Called when a handler throws (the client gets a 500 without the error's text). */
  onError?: (error: unknown, path: string) => void;
}

export interface StatusServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A readiness probe that hangs is as bad as one that fails: every check gets this long. */
export const READINESS_TIMEOUT_MS = 2_000;

function send(res: ServerResponse, status: number, type: string, body: string, head = false): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

function sendJson(res: ServerResponse, status: number, value: unknown, head: boolean): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value, null, 2) + '\n', head);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

async function route(req: IncomingMessage, res: ServerResponse, handlers: StatusHandlers): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://status').pathname;
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head) {
    res.setHeader('allow', 'GET, HEAD');
    sendJson(res, 405, { error: `method ${req.method} not allowed; use GET` }, false);
    return;
  }
  switch (path) {
    case '/healthz':
      send(res, 200, 'text/plain; charset=utf-8', 'ok\n', head);
      return;
    case '/readyz': {
      const checks = await withTimeout(handlers.readiness(), READINESS_TIMEOUT_MS, () => [
        { name: 'readiness', ok: false, detail: `checks did not answer within ${READINESS_TIMEOUT_MS} ms` },
      ]);
      const ready = checks.every((c) => c.ok);
      sendJson(res, ready ? 200 : 503, { ready, checks }, head);
      return;
    }
    case '/metrics':
      send(res, 200, PROMETHEUS_CONTENT_TYPE, await handlers.metrics(), head);
      return;
    case '/status':
      sendJson(res, 200, handlers.status(), head);
      return;
    default:
      sendJson(res, 404, { error: `no route ${path}; try /healthz, /readyz, /metrics or /status` }, head);
  }
}

/** Starts the status server; resolves once it listens. A port in use is one clear error. */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const server: Server = createServer((req, res) => {
    route(req, res, options.handlers).catch((error: unknown) => {
      options.onError?.(error, req.url ?? '/');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error; see the daemon log' }, false);
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const why = error.code === 'EADDRINUSE' ? 'the port is in use' : error.code === 'EACCES' ? 'permission denied' : error.code ?? error.message;
      reject(new ConvergeError('E_HTTP_LISTEN', `status server cannot listen on ${options.host}:${options.port} (${why}); set --http-port or --http-host`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`,
    port: address.port,
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
