// The status port bound before the daemon's modules load: /healthz 200, /readyz 503 "starting", anything else 503 until the status server takes the same socket over.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ConvergeError } from '../../core/errors.js';

/** What a client is told to wait before asking again while the daemon starts (seconds, the Retry-After header). */
const STARTING_RETRY_AFTER_S = 1;

/** The readiness of a daemon still loading: the shape of the daemon's own /readyz answer, one check failing. */
const STARTING_READINESS = { ready: false, checks: [{ name: 'running', ok: false, detail: 'starting' }] };

/** One JSON or text answer; a HEAD gets the headers only. */
function answer(req: IncomingMessage, res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The answers while the daemon starts: alive, not ready, every other route "come back in a moment". */
function startingAnswer(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://status').pathname;
  if (path === '/healthz') return answer(req, res, 200, 'text/plain; charset=utf-8', 'ok\n');
  const json = 'application/json; charset=utf-8';
  if (path === '/readyz') return answer(req, res, 503, json, JSON.stringify(STARTING_READINESS) + '\n');
  res.setHeader('retry-after', String(STARTING_RETRY_AFTER_S));
  answer(req, res, 503, json, JSON.stringify({ error: 'the daemon is starting; retry in a moment' }) + '\n');
}

/**
 * Binds the status port now, answering as a daemon that is starting; the status server (src/daemon/server/status-server.ts)
 * takes the same server over with `takeOverStatusPort`, so the port is never closed between the two. A port that cannot
 * be bound is one ConvergeError (E_HTTP_LISTEN) naming the address and the fix.
 */
export async function listenStatusPort(host: string, port: number): Promise<Server> {
  const server = createServer(startingAnswer);
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'the port is in use'
          : error.code === 'EACCES'
            ? 'permission denied'
            : (error.code ?? error.message);
      reject(
        new ConvergeError(
          'E_HTTP_LISTEN',
          `status server cannot listen on ${host}:${port} (${why}); set --http-port or --http-host`,
          { cause: error },
        ),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return server;
}

/** Hands the listening server's requests to `handle` from now on (the starting answers stop). */
export function takeOverStatusPort(server: Server, handle: (req: IncomingMessage, res: ServerResponse) => void): void {
  server.removeListener('request', startingAnswer);
  server.on('request', handle);
}

/** Closes a status port no daemon took over (the start failed before): its connections are dropped. */
export async function closeStatusPort(server: Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
