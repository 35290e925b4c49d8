// The daemon's status server (node:http): the status page at /, /healthz, /readyz, /metrics, /status (with an ETag), GET /applied-state behind a read-only token, and POST /reconcile and /webhook behind a token. Serves no secret.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appliedStateRoute, type AppliedStateReader } from './applied-state-route.js';
import { bearerMatches } from './bearer.js';
import { STATE_TOKEN_ENV } from '../../store/applied-state-document.js';
import { historyRoute, type HistoryReader } from './history-route.js';
import { listenStatusPort, takeOverStatusPort } from './status-port.js';
import { FieldTexts } from './field-texts.js';
import { parseReconcileBody, type ReconcileRequest } from './reconcile-request.js';
import { FormatTwo } from './status-format.js';
import { send, sendJson, sendTaggedBody, servePage } from './status-page/serve.js';
import { parseStatusQuery, RowSequence, statusAnswer, type ViewRow } from './status-view.js';
import { WEBHOOK_TOKEN_ENV } from './webhook-token.js';

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
  /** GET /history/KIND/NAME: a resource's recorded events (the event log in Redis); absent: 404. */
  history?: HistoryReader;
  /** POST /reconcile with a checked body (the token was checked before). Answers the status and the JSON body to send. */
  reconcile?(request: ReconcileRequest): Promise<{ status: number; body: unknown }>;
  /** GET /applied-state: the document a plan reads (src/store/applied-state-document.ts); its token is checked before. */
  appliedState?: AppliedStateReader;
}

/** Largest POST body accepted. */
const MAX_BODY_BYTES = 64 * 1024;

export interface StatusServerOptions {
  host: string;
  /** 0 picks a free port (see `port` of the result). */
  port: number;
  /** The status port bound already (src/daemon/server/status-port.ts): taken over, not bound again. */
  listening?: Server | undefined;
  handlers: StatusHandlers;
  /** Called when a handler throws (the client gets a 500 without the error's text). */
  onError?: (error: unknown, path: string) => void;
  /** The bearer token POST /reconcile requires; without one the endpoint is off (404). */
  webhookToken?: string;
  /** The read-only bearer token GET /applied-state requires; without one the endpoint is off (404). */
  stateToken?: string;
}

/** The guarded endpoints' tokens from the daemon's environment: each endpoint is on only while its variable is set. */
export function serverTokens(env: NodeJS.ProcessEnv): Pick<StatusServerOptions, 'webhookToken' | 'stateToken'> {
  const webhookToken = env[WEBHOOK_TOKEN_ENV];
  const stateToken = env[STATE_TOKEN_ENV];
  return { ...(webhookToken ? { webhookToken } : {}), ...(stateToken ? { stateToken } : {}) };
}

export interface StatusServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A readiness probe that hangs is as bad as one that fails: every check gets this long. */
export const READINESS_TIMEOUT_MS = 2_000;

async function withTimeout<T>(promise: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback()), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether a git host's webhook carries the token: GitHub and Gitea sign the raw body with it
 * (`X-Hub-Signature-256: sha256=<hex HMAC>`), GitLab sends it as `X-Gitlab-Token`. Compared in constant time.
 */
export function webhookMatches(headers: IncomingMessage['headers'], body: string, token: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  const signature = headers['x-hub-signature-256'];
  if (typeof signature === 'string') {
    const expected = `sha256=${createHmac('sha256', token).update(body).digest('hex')}`;
    return timingSafeEqual(digest(signature.trim().toLowerCase()), digest(expected));
  }
  const gitlab = headers['x-gitlab-token'];
  if (typeof gitlab === 'string' && gitlab.length > 0) return timingSafeEqual(digest(gitlab), digest(token));
  return false;
}

async function readBody(
  req: IncomingMessage,
): Promise<{ ok: true; text: string } | { ok: false; status: number; error: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return { ok: false, status: 413, error: `body larger than ${MAX_BODY_BYTES} bytes` };
    chunks.push(chunk as Buffer);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

async function reconcileRoute(
  req: IncomingMessage,
  res: ServerResponse,
  handlers: StatusHandlers,
  token: string | undefined,
): Promise<void> {
  if (!token || !handlers.reconcile) {
    sendJson(
      res,
      404,
      {
        error: `POST /reconcile is off; set ${WEBHOOK_TOKEN_ENV} in the daemon's environment to turn it on, and send it as "Authorization: Bearer TOKEN"`,
      },
      false,
    );
    return;
  }
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    sendJson(res, 405, { error: `method ${req.method} not allowed; use POST` }, false);
    return;
  }
  if (!bearerMatches(req.headers.authorization, token)) {
    res.setHeader('www-authenticate', 'Bearer');
    sendJson(
      res,
      401,
      { error: `missing or wrong token; send the daemon's ${WEBHOOK_TOKEN_ENV} as "Authorization: Bearer TOKEN"` },
      false,
    );
    return;
  }
  const body = await readBody(req);
  if (!body.ok) {
    sendJson(res, body.status, { error: body.error }, false);
    return;
  }
  const parsed = parseReconcileBody(body.text);
  if (!parsed.ok) {
    sendJson(res, 400, { error: parsed.error }, false);
    return;
  }
  const answer = await handlers.reconcile(parsed.request);
  sendJson(res, answer.status, answer.body, false);
}

/** POST /webhook: a git host's push event (any body) reconciles now; the token is the webhook's secret. */
async function webhookRoute(
  req: IncomingMessage,
  res: ServerResponse,
  handlers: StatusHandlers,
  token: string | undefined,
): Promise<void> {
  if (!token || !handlers.reconcile) {
    sendJson(
      res,
      404,
      {
        error: `POST /webhook is off; set ${WEBHOOK_TOKEN_ENV} in the daemon's environment and use it as the webhook's secret`,
      },
      false,
    );
    return;
  }
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    sendJson(res, 405, { error: `method ${req.method} not allowed; use POST` }, false);
    return;
  }
  const body = await readBody(req);
  if (!body.ok) {
    sendJson(res, body.status, { error: body.error }, false);
    return;
  }
  if (!webhookMatches(req.headers, body.text, token)) {
    sendJson(
      res,
      401,
      {
        error: `missing or wrong signature; set the webhook's secret to the daemon's ${WEBHOOK_TOKEN_ENV} (GitHub and Gitea sign with it, GitLab sends it as X-Gitlab-Token)`,
      },
      false,
    );
    return;
  }
  const answer = await handlers.reconcile({});
  sendJson(res, answer.status, answer.body, false);
}

/**
 * GET /status: the whole document without a query (as always); with one (docs/contracts.md "/status queries"), the
 * document with `resources` cut to the rows asked for and a `view` that says which.
 */
async function statusRoute(
  req: IncomingMessage,
  res: ServerResponse,
  status: StatusState,
  params: URLSearchParams,
  head: boolean,
): Promise<void> {
  const parsed = parseStatusQuery(params);
  if (!parsed.ok) {
    sendJson(res, 400, { error: parsed.error }, head);
    return;
  }
  const { handlers, sequence, texts } = status;
  const document = (await handlers.status()) as Record<string, unknown>;
  const rows = document.resources;
  const type = 'application/json; charset=utf-8';
  if (parsed.query === undefined || !Array.isArray(rows)) {
    if (Array.isArray(rows)) sequence.observe(rows as ViewRow[]);
    // The status page polls with If-None-Match: an unchanged document answers 304 without a body, and is tagged from
    // the texts kept of its unchanged fields (field-texts.ts), not serialized again.
    sendTaggedBody(req, res, type, texts.document(document, true), head);
    return;
  }
  const answer = statusAnswer(document, rows as ViewRow[], parsed.query, sequence);
  const sent = parsed.query.format === '2' ? status.formatTwo.encode(answer) : answer;
  // Compact JSON: a query is asked by tools and the page, which do not read it by eye.
  sendTaggedBody(req, res, type, texts.document(sent, false), head);
}

/** What GET /status reads and keeps between requests: the handlers, the change sequence and the fields' texts. */
interface StatusState {
  handlers: StatusHandlers;
  sequence: RowSequence;
  texts: FieldTexts;
  formatTwo: FormatTwo;
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  status: StatusState,
  token?: string,
  stateToken?: string,
): Promise<void> {
  const { handlers } = status;
  const url = new URL(req.url ?? '/', 'http://status');
  const path = url.pathname;
  if (path === '/reconcile') {
    await reconcileRoute(req, res, handlers, token);
    return;
  }
  if (path === '/webhook') {
    await webhookRoute(req, res, handlers, token);
    return;
  }
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
      await statusRoute(req, res, status, url.searchParams, head);
      return;
    case '/applied-state':
      await appliedStateRoute(req, res, handlers.appliedState, stateToken, head);
      return;
    default:
      if (path.startsWith('/history/')) return historyRoute(req, res, path, url.searchParams, handlers.history, head);
      if (servePage(req, res, path, head)) return;
      sendJson(
        res,
        404,
        {
          error: `no route ${path}; try / (the status page), /healthz, /readyz, /metrics, /status, /history/KIND/NAME, /applied-state, POST /reconcile or POST /webhook`,
        },
        head,
      );
  }
}

/** Starts the status server on `options.listening` (taken over) or a port of its own; resolves once it listens. */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  // One change sequence per server: its epoch makes a token of an earlier run a full answer, never a wrong delta.
  const texts = new FieldTexts();
  const sequence = new RowSequence(randomBytes(6).toString('base64url'), undefined, texts);
  const status: StatusState = { handlers: options.handlers, sequence, texts, formatTwo: new FormatTwo() };
  // A port in use is one clear error (src/daemon/server/status-port.ts).
  const server: Server = options.listening ?? (await listenStatusPort(options.host, options.port));
  takeOverStatusPort(server, (req, res) => {
    route(req, res, status, options.webhookToken, options.stateToken).catch((error: unknown) => {
      options.onError?.(error, req.url ?? '/');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error; see the daemon log' }, false);
      else res.destroy();
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
