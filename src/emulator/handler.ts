// The emulator's HTTP layer: routing, body limits, content types, faults, auth, errors in the service's shapes, request log.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConvergeError } from '../core/errors.js';
import type { ValidationIssue } from '../core/wire/schema.js';
import { delayFor, deleteOutage, drawFault, drawLostResponse, type FaultKnobs } from './faults.js';
import type { ApiFailure } from './issues.js';
import type { StoredTenant } from './records.js';
import { isJson, jsonErrorPlace, readBody, redactBody } from './request-body.js';
import { UUID_SHAPE } from './schema.js';
import type { EmulatorStore } from './store.js';
import type { RequestLogEntry } from './request-log.js';
import { handleUpload, isUpload } from './uploads.js';

/** Request bodies above this answer 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface Reply {
  status: number;
  /** Serialized as JSON. */
  body?: unknown;
  /** Already-serialized JSON (the list path). */
  json?: string;
  headers?: Record<string, string>;
}

export interface RouteContext {
  params: Record<string, string>;
  query: URLSearchParams;
  /** Parsed JSON body; undefined when the request had none. */
  body: unknown;
  tenant: StoredTenant;
  /** http://HOST:PORT the client addressed (its Host header): the base of URLs the emulator hands out. */
  origin: string;
  log: RequestLogEntry;
  /** Resolves once the changes made so far are in the state file (at once without one). */
  persist(): Promise<void>;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Template with {param} segments. */
  path: string;
  /** Takes a JSON body. */
  body?: boolean;
  handle(ctx: RouteContext): Reply | Promise<Reply>;
}

export function replyFailure(error: ApiFailure): Reply {
  return { status: error.status, body: { detail: error.detail }, headers: error.headers };
}

export interface HandlerOptions {
  routes: Route[];
  store: EmulatorStore;
  knobs: FaultKnobs;
  apiKey?: string;
  /** --org-scoped-key: the key spans several workspaces, so a request without X-Tenant-Id answers 403. */
  orgScopedKey?: boolean;
  /** Request bodies larger than this answer 413 (default MAX_BODY_BYTES). */
  maxBodyBytes?: number;
  clock: () => number;
  persist(): Promise<void>;
  record(entry: RequestLogEntry): void;
  isClosing(): boolean;
  onError?: (error: unknown) => void;
}

interface CompiledRoute {
  route: Route;
  segments: string[];
}

type Match =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method'; template: string; allow: string[] }
  | { kind: 'none' };

function compile(routes: Route[]): CompiledRoute[] {
  return routes.map((route) => ({ route, segments: route.path.split('/') }));
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i += 1) {
    const seg = segments[i]!;
    const part = parts[i]!;
    if (seg.startsWith('{')) {
      if (part === '') return null;
      try {
        params[seg.slice(1, -1)] = decodeURIComponent(part);
      } catch {
        return null;
      }
    } else if (seg !== part) {
      return null;
    }
  }
  return params;
}

function matchRoute(compiled: CompiledRoute[], method: string, path: string): Match {
  const parts = path.split('/');
  const allow: string[] = [];
  let template = '';
  for (const c of compiled) {
    const params = matchSegments(c.segments, parts);
    if (!params) continue;
    if (c.route.method === method) return { kind: 'found', route: c.route, params };
    allow.push(c.route.method);
    template = c.route.path;
  }
  return allow.length > 0 ? { kind: 'method', template, allow } : { kind: 'none' };
}

function sameKey(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function send(res: ServerResponse, reply: Reply, close = false): void {
  if (res.destroyed || res.writableEnded) return;
  const text = reply.json ?? (reply.body === undefined ? '' : JSON.stringify(reply.body));
  // 204 carries no body, so neither a content type nor a length.
  const headers: Record<string, string | number> =
    reply.status === 204
      ? { ...reply.headers }
      : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...reply.headers };
  if (close) headers.connection = 'close';
  res.writeHead(reply.status, headers);
  res.end(text);
}

function detail(status: number, text: string | ValidationIssue[], headers?: Record<string, string>): Reply {
  return { status, body: { detail: text }, headers };
}

function finish(
  res: ServerResponse,
  entry: RequestLogEntry,
  reply: Reply,
  close = false,
  outcome?: RequestLogEntry['outcome'],
): void {
  entry.status = reply.status;
  entry.outcome = outcome ?? (reply.status < 400 ? 'ok' : 'error');
  send(res, reply, close);
}

/**
 * What comes before handling: the knobs' latency, then a request dropped because the emulator is closing, or an
 * injected fault (a DELETE during the DELETE outage: 503; else drawn: reset, 503, 429). True when the request was answered or dropped here.
 */
async function delayOrFault(
  req: IncomingMessage,
  res: ServerResponse,
  entry: RequestLogEntry,
  options: HandlerOptions,
): Promise<boolean> {
  const { knobs } = options;
  const delay = delayFor(knobs);
  if (delay > 0) await sleep(delay);
  if (options.isClosing()) {
    // Shutting down: drop the request unhandled rather than write after close().
    res.destroy();
    entry.outcome = 'error';
    return true;
  }
  const fault = deleteOutage(knobs, req.method ?? 'GET', options.clock()) ? 'unavailable' : drawFault(knobs);
  if (fault === 'reset') {
    entry.outcome = 'fault-reset';
    req.socket.destroy();
    return true;
  }
  if (fault === 'unavailable') {
    finish(
      res,
      entry,
      detail(503, 'Service temporarily unavailable (injected fault); retry later'),
      false,
      'fault-503',
    );
    return true;
  }
  if (fault === 'rate-limited') {
    const seconds = String(knobs.retryAfterSeconds);
    finish(
      res,
      entry,
      detail(429, `Rate limit exceeded; retry after ${seconds} seconds`, { 'retry-after': seconds }),
      false,
      'fault-429',
    );
    return true;
  }
  return false;
}

type Checked<T> = { ok: true; value: T } | { ok: false; reply: Reply };

/** The tenant the request acts for (X-Tenant-Id, else the first), or the 401/403 for its API key or tenant. */
function requestTenant(req: IncomingMessage, options: HandlerOptions): Checked<StoredTenant> {
  if (options.apiKey !== undefined) {
    const given = req.headers['x-api-key'];
    if (typeof given !== 'string' || given === '') return { ok: false, reply: detail(401, 'Missing API key') };
    if (!sameKey(given, options.apiKey)) return { ok: false, reply: detail(403, 'Invalid API key') };
  }
  const tenantHeader = req.headers['x-tenant-id'];
  if (options.orgScopedKey && (typeof tenantHeader !== 'string' || tenantHeader === '')) {
    // The official tool recognises this answer by "requires workspace specification" (docs/official-tool.md).
    return {
      ok: false,
      reply: detail(
        403,
        'This API key is org-scoped and requires workspace specification: send the X-Tenant-Id header with the id of a workspace',
      ),
    };
  }
  if (typeof tenantHeader === 'string' && tenantHeader !== '') {
    const known = UUID_SHAPE.test(tenantHeader) ? options.store.tenant(tenantHeader.toLowerCase()) : undefined;
    if (!known) return { ok: false, reply: detail(403, `Tenant ${tenantHeader} is not accessible with this API key`) };
    return { ok: true, value: known };
  }
  return { ok: true, value: options.store.defaultTenant };
}

/** The parsed JSON body of a route that takes one (undefined when none was sent), or the 415/400 for it. */
function requestBody(req: IncomingMessage, route: Route, data: Buffer): Checked<unknown> {
  if (!route.body || data.length === 0) return { ok: true, value: undefined };
  if (!isJson(req.headers['content-type'])) {
    const given = req.headers['content-type'] ?? 'none';
    return {
      ok: false,
      reply: detail(
        415,
        `Unsupported media type "${given}"; send the body as JSON with Content-Type: application/json`,
      ),
    };
  }
  const text = data.toString('utf8');
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reply: detail(400, `Malformed JSON body: ${jsonErrorPlace(error, text)}`) };
  }
}

/** One request to a route of the table: match, body limit, faults, auth, JSON body, the route, a lost answer. */
async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  entry: RequestLogEntry,
  compiled: CompiledRoute[],
  options: HandlerOptions,
): Promise<void> {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  entry.path = path;
  entry.query = Object.fromEntries(query);
  const match = matchRoute(compiled, method, path);
  entry.route = match.kind === 'found' ? match.route.path : match.kind === 'method' ? match.template : '(unmatched)';

  const maxBody = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const read = await readBody(req, maxBody);
  if (read.kind === 'aborted') {
    // The client went away mid-body: nothing to answer (status stays 0).
    entry.outcome = 'error';
    return;
  }
  if (read.kind === 'too-large') {
    finish(res, entry, detail(413, `Request body too large: at most ${maxBody} bytes are accepted`), true);
    return;
  }
  if (await delayOrFault(req, res, entry, options)) return;

  if (match.kind === 'none') return finish(res, entry, detail(404, 'Not Found'));
  if (match.kind === 'method') {
    return finish(res, entry, detail(405, 'Method Not Allowed', { allow: match.allow.join(', ') }));
  }
  const tenant = requestTenant(req, options);
  if (!tenant.ok) return finish(res, entry, tenant.reply);
  const body = requestBody(req, match.route, read.data);
  if (!body.ok) return finish(res, entry, body.reply);
  if (body.value !== undefined) entry.body = redactBody(body.value);

  const origin = `http://${req.headers.host ?? `${req.socket.localAddress}:${req.socket.localPort}`}`;
  const ctx: RouteContext = {
    params: match.params,
    query,
    body: body.value,
    tenant: tenant.value,
    origin,
    log: entry,
    persist: () => options.persist(),
  };
  const reply = await match.route.handle(ctx);
  if (drawLostResponse(options.knobs)) {
    entry.status = reply.status;
    entry.outcome = 'fault-lost';
    req.socket.destroy();
    return;
  }
  finish(res, entry, reply);
}

/** Builds the request listener of the emulator's node:http server. */
export function createHandler(options: HandlerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const compiled = compile(options.routes);
  const { store } = options;
  return async (req, res) => {
    const entry: RequestLogEntry = {
      at: options.clock(),
      method: req.method ?? 'GET',
      path: '',
      route: '',
      query: {},
      status: 0,
      outcome: 'ok',
    };
    try {
      if (isUpload(entry.method, req.url ?? '')) await handleUpload(req, res, store, entry);
      else await handle(req, res, entry, compiled, options);
    } catch (error) {
      options.onError?.(error);
      const message = error instanceof ConvergeError ? error.message : 'Internal Server Error';
      finish(res, entry, detail(500, message));
    } finally {
      options.record(entry);
    }
  };
}
