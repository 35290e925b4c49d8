// One keep-alive undici Agent per client: timed requests, capped bodies, zod-checked JSON, GET retries with backoff (outside jobs).
import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';
import { STATUS_CODES } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { ConvergeError, UsageError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { ErrorBody } from '../core/wire/schema.js';
import { backoffDelay } from './backoff.js';
import { BadResponseError, classifyFailure, NetworkError, ServiceError, shortFailure, toNetworkError } from './errors.js';
import { VERSION } from './version.js';

export interface RetryPolicy {
  /** Attempts per GET (and per idempotent call), the first included, outside a job (see sendingOnce). Writes always get exactly one. */
  attempts: number;
  /** First backoff ceiling; doubles per attempt ("full jitter": the wait is random in [0, ceiling)). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited out here: the error is thrown for the caller to schedule. */
  maxRetryAfterMs: number;
}

export interface RequestInfo {
  method: string;
  /** Templated route, e.g. /v2/deployments/{deployment_id}: never an id, a query or a body. */
  route: string;
  status: number | 'network';
  durationMs: number;
  /** 1 for the first try. */
  attempt: number;
}

/** One write (POST, PATCH) sent to the service, and the request id it answered with, if any. */
export interface WriteRecord {
  method: string;
  /** Templated route, e.g. /v2/deployments/{deployment_id}. */
  route: string;
  status: number | 'network';
  /** From the answer's X-Request-Id (or Request-Id, X-Amzn-RequestId, X-Correlation-Id) header, when the service sends one. */
  requestId?: string;
}

const WRITES = new AsyncLocalStorage<WriteRecord[]>();

/** Set while a job runs: its requests are sent once each, and the job's attempts are the one retry layer. */
const ONE_TRY = new AsyncLocalStorage<true>();

/**
 * Runs `fn` with every request it sends through any transport tried once: a failure goes straight to the caller,
 * which retries the whole unit itself (a job: its attempts, with the same backoff). One retry layer per request,
 * so a read that always fails is sent `attempts` times in all, not attempts x the transport's tries.
 */
export function sendingOnce<T>(fn: () => Promise<T>): Promise<T> {
  return ONE_TRY.run(true, fn);
}

/** The advice given for a service URL that carries credentials. */
export const API_KEY_ADVICE = 'give the API key with --api-key or CONVERGE_API_KEY';

/** Runs `fn`, collecting every write it sends through any transport (for a log line per write with its request id). */
export async function recordWrites<T>(fn: () => Promise<T>): Promise<{ value: T; writes: WriteRecord[] }> {
  const writes: WriteRecord[] = [];
  const value = await WRITES.run(writes, fn);
  return { value, writes };
}

const REQUEST_ID_HEADERS = ['x-request-id', 'request-id', 'x-amzn-requestid', 'x-correlation-id'];

function requestIdOf(headers: Dispatcher.ResponseData['headers']): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers[name];
    const text = Array.isArray(value) ? value[0] : value;
    // An id is short and printable; anything else is not worth a log field.
    if (typeof text === 'string' && /^[\x21-\x7e]{1,128}$/.test(text)) return text;
  }
  return undefined;
}

/** One GET about to be tried again, for a line on stderr as it happens. */
export interface RetryInfo {
  method: string;
  route: string;
  /** host[:port] of the service. */
  host: string;
  /** Why the last try failed, in a few words ("no answer in 30s", "connection refused", "answered 503"). */
  why: string;
  /** The try about to start (2 for the first retry), and how many there are in all. */
  attempt: number;
  attempts: number;
  waitMs: number;
}

export interface HttpOptions {
  /** e.g. https://api.example.com or http://127.0.0.1:8080/prefix */
  baseUrl: string;
  apiKey?: string;
  tenantId?: string;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** How long an idle keep-alive connection is kept (server Keep-Alive hints may shorten it). */
  keepAliveTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Bodies larger than this fail with E_RESPONSE_TOO_LARGE. */
  maxResponseBytes?: number;
  /** Called once per attempt, for metrics. Must not throw (a throw is ignored). */
  onRequest?: (info: RequestInfo) => void;
  /** Called before each retry of a GET (e.g. a line on stderr). Must not throw (a throw is ignored). */
  onRetry?: (info: RetryInfo) => void;
  userAgent?: string;
}

export interface Call<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  route: string;
  /** The concrete path below the base URL, ids already encoded. */
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  /** Strings the service might echo that must never reach an error message (secret values in the body). */
  sensitive?: string[];
  schema: S;
  /** The success answer has no body (DELETE's 204): whatever comes is read and dropped, the schema sees undefined. */
  noContent?: boolean;
  /** A call other than a GET that changes nothing however often it is sent (a DELETE of an id no deployment has): retried like a GET. */
  idempotent?: boolean;
  /** A POST that only reads (the log endpoints): retried like a GET, never recorded as a write. */
  read?: boolean;
}

export const DEFAULTS = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  keepAliveTimeoutMs: 4_000,
  maxResponseBytes: 32 * 1024 * 1024,
  retry: { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 } satisfies RetryPolicy,
  userAgent: `converge/${VERSION}`,
};

/** Error bodies are read up to this size for their detail; anything longer is not parsed. */
const ERROR_BODY_CAP = 64 * 1024;

/** Parses Retry-After: delay-seconds or an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000);
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** "30s", "1.5s", "200ms": a duration for a progress line. */
export function formatSeconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)}s`;
}

/** Turns a service error body into one readable line; 422 lists become "loc: msg; loc: msg". */
export function detailText(status: number, parsed: unknown): string {
  const body = ErrorBody.safeParse(parsed);
  if (body.success) {
    const { detail } = body.data;
    if (typeof detail === 'string') return detail || (STATUS_CODES[status] ?? `HTTP ${status}`);
    if (detail.length === 0) return STATUS_CODES[status] ?? `HTTP ${status}`;
    return detail.map((issue) => `${issue.loc.map(String).join('.')}: ${issue.msg}`).join('; ');
  }
  if (parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string') {
    return (parsed as { message: string }).message;
  }
  return STATUS_CODES[status] ?? `HTTP ${status}`;
}

function redact(text: string, secrets: Array<string | undefined>): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join('[redacted]');
  return out;
}

function normaliseBase(baseUrl: string): URL {
  return checkHttpUrl(baseUrl, { name: 'api url', example: 'e.g. https://api.example.com', noCredentials: API_KEY_ADVICE });
}

/** Checks a header value without ever echoing it (a key read from a file often ends in a newline). */
function headerValue(what: string, value: string): string {
  if (/^[\t\x20-\x7e\x80-\xff]*$/.test(value) && value.trim() === value) return value;
  throw new UsageError(`the ${what} contains a line break, a control character or surrounding spaces; check how it is set`);
}

/** The transport of ServiceClient. Holds the Agent; close() ends its connections. */
export class HttpTransport {
  private readonly agent: Agent;
  private readonly origin: string;
  private readonly basePath: string;
  private readonly headers: Record<string, string>;
  private readonly retry: RetryPolicy;
  private readonly maxResponseBytes: number;
  private readonly headersTimeoutMs: number;
  private readonly bodyTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly apiKey: string | undefined;
  private readonly onRequest: HttpOptions['onRequest'];
  private readonly onRetry: HttpOptions['onRetry'];
  /** host[:port] of the base URL: network errors and retry lines name it. */
  private readonly host: string;
  private readonly closing = new AbortController();
  private closed: Promise<void> | undefined;
  private destroyed: Promise<void> | undefined;

  constructor(options: HttpOptions) {
    const base = normaliseBase(options.baseUrl);
    this.origin = base.origin;
    this.host = base.host;
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.apiKey = options.apiKey || undefined;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    this.headersTimeoutMs = options.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs;
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULTS.maxResponseBytes;
    this.retry = { ...DEFAULTS.retry, ...options.retry };
    if (!(this.retry.attempts >= 1)) throw new UsageError('retry attempts must be at least 1');
    this.onRequest = options.onRequest;
    this.onRetry = options.onRetry;
    // Every GET waiting out a retry listens on this one signal: many in flight are expected, not a leak.
    setMaxListeners(0, this.closing.signal);
    this.headers = { accept: 'application/json', 'user-agent': options.userAgent ?? DEFAULTS.userAgent };
    if (this.apiKey) this.headers['x-api-key'] = headerValue('api key', this.apiKey);
    if (options.tenantId) this.headers['x-tenant-id'] = headerValue('tenant id', options.tenantId);
    this.agent = new Agent({
      connectTimeout: this.connectTimeoutMs,
      headersTimeout: this.headersTimeoutMs,
      bodyTimeout: this.bodyTimeoutMs,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULTS.keepAliveTimeoutMs,
    });
  }

  /**
   * Sends one call: outside a job, GETs (and idempotent calls) retry on classifyFailure()'s retry/rate_limited; writes,
   * and every call inside a job (sendingOnce), are sent once.
   */
  async send<S extends z.ZodType>(call: Call<S>): Promise<z.output<S>> {
    const attempts = (call.method === 'GET' || call.idempotent === true || call.read === true) && ONE_TRY.getStore() !== true ? this.retry.attempts : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(call, attempt);
      } catch (error) {
        const failure = classifyFailure(error);
        if (failure.kind === 'fatal' || attempt >= attempts || this.closing.signal.aborted) throw error;
        if (failure.retryAfterMs !== undefined && failure.retryAfterMs > this.retry.maxRetryAfterMs) throw error;
        const wait = backoffDelay(attempt, { baseMs: this.retry.baseDelayMs, capMs: this.retry.maxDelayMs }, failure.retryAfterMs);
        this.announceRetry(call, error, attempt + 1, attempts, wait);
        try {
          await sleep(wait, undefined, { signal: this.closing.signal });
        } catch {
          throw error;
        }
      }
    }
  }

  /** Stops pending retries and closes the connections once in-flight requests finish. */
  async close(): Promise<void> {
    this.closing.abort();
    this.closed ??= this.destroyed ?? this.agent.close();
    await this.closed;
  }

  /** Stops pending retries and drops every connection now: requests in flight fail with a network error. */
  async destroy(): Promise<void> {
    this.closing.abort();
    this.destroyed ??= this.agent.destroy();
    await this.destroyed;
  }

  private async attempt<S extends z.ZodType>(call: Call<S>, attempt: number): Promise<z.output<S>> {
    const started = performance.now();
    let status: number | 'network' = 'network';
    try {
      const response = await this.dispatch(call);
      status = response.statusCode;
      if (call.method !== 'GET' && call.read !== true) {
        const requestId = requestIdOf(response.headers);
        WRITES.getStore()?.push({ method: call.method, route: call.route, status, ...(requestId ? { requestId } : {}) });
      }
      if (status < 200 || status >= 300) throw await this.serviceError(call, response);
      if (call.noContent) {
        await this.readBody(call, response, ERROR_BODY_CAP, false);
        return call.schema.parse(undefined);
      }
      const bytes = await this.readBody(call, response, this.maxResponseBytes, true);
      return this.decode(call, bytes, String(response.headers['content-type'] ?? 'none'));
    } catch (error) {
      if (error instanceof NetworkError) status = 'network';
      throw error;
    } finally {
      this.report({ method: call.method, route: call.route, status, durationMs: performance.now() - started, attempt });
    }
  }

  private async dispatch(call: Call<z.ZodType>): Promise<Dispatcher.ResponseData> {
    const query = call.query?.toString();
    const headers = { ...this.headers };
    let body: string | undefined;
    if (call.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.body);
    }
    try {
      return await this.agent.request({
        origin: this.origin,
        path: `${this.basePath}${call.path}${query ? `?${query}` : ''}`,
        method: call.method,
        headers,
        body,
      });
    } catch (error) {
      throw this.wrapTransport(error, call);
    }
  }

  /** Reads the body up to `cap` bytes. Over the cap: E_RESPONSE_TOO_LARGE when `strict`, else null. */
  private async readBody(call: Call<z.ZodType>, response: Dispatcher.ResponseData, cap: number, strict: true): Promise<Buffer>;
  private async readBody(call: Call<z.ZodType>, response: Dispatcher.ResponseData, cap: number, strict: false): Promise<Buffer | null>;
  private async readBody(call: Call<z.ZodType>, response: Dispatcher.ResponseData, cap: number, strict: boolean): Promise<Buffer | null> {
    const tooLarge = (): null => {
      // Destroying an unread undici body emits an abort error; nobody else is listening for it.
      response.body.on('error', () => undefined);
      response.body.destroy();
      if (!strict) return null;
      throw new ConvergeError(
        'E_RESPONSE_TOO_LARGE',
        `${call.method} ${call.route}: the response is larger than the ${cap}-byte limit (raise maxResponseBytes if this is expected)`,
      );
    };
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > cap) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      // A declared length within the cap bounds the body (HTTP/1.1 framing): read it whole, which costs undici less
      // than iterating the stream chunk by chunk.
      if (Number.isFinite(declared)) return Buffer.from(await response.body.arrayBuffer());
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > cap) return tooLarge();
        chunks.push(chunk);
      }
    } catch (error) {
      throw this.wrapTransport(error, call);
    }
    return Buffer.concat(chunks, size);
  }

  private decode<S extends z.ZodType>(call: Call<S>, bytes: Buffer, contentType: string): z.output<S> {
    const where = { method: call.method, route: call.route };
    if (bytes.length === 0) throw new BadResponseError({ ...where, text: 'the response body is empty; expected JSON' });
    let data: unknown;
    try {
      data = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      // The parser's own message can quote the body, so it is not passed on.
      const message = error instanceof Error ? error.message : '';
      const truncated = /end of JSON input|Unterminated/i.test(message);
      throw new BadResponseError({
        ...where,
        truncated,
        text: `the response is not valid JSON (${bytes.length} bytes, content-type ${contentType}${truncated ? ', cut off' : ''})`,
      });
    }
    const parsed = call.schema.safeParse(data);
    if (parsed.success) return parsed.data;
    const issues = parsed.error.issues.slice(0, 3).map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`);
    const more = parsed.error.issues.length > 3 ? ` (and ${parsed.error.issues.length - 3} more)` : '';
    throw new BadResponseError({ ...where, text: `unexpected response shape: ${issues.join('; ')}${more}` });
  }

  private async serviceError(call: Call<z.ZodType>, response: Dispatcher.ResponseData): Promise<ServiceError> {
    const status = response.statusCode;
    const bytes = await this.readBody(call, response, ERROR_BODY_CAP, false);
    let parsed: unknown;
    try {
      parsed = bytes && bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
    } catch {
      parsed = undefined;
    }
    const detail = redact(detailText(status, parsed), [this.apiKey, ...(call.sensitive ?? [])]);
    const retryAfterMs = status === 429 || status >= 500 ? parseRetryAfter(response.headers['retry-after']) : undefined;
    return new ServiceError({ status, detail, method: call.method, route: call.route, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
  }

  private wrapTransport(error: unknown, call: Call<z.ZodType>): unknown {
    if (error instanceof ConvergeError) return error;
    const code = (error as { code?: string } | undefined)?.code;
    const timeout =
      code === 'UND_ERR_HEADERS_TIMEOUT' ? this.headersTimeoutMs
      : code === 'UND_ERR_BODY_TIMEOUT' ? this.bodyTimeoutMs
      : code === 'UND_ERR_CONNECT_TIMEOUT' ? this.connectTimeoutMs
      : undefined;
    return toNetworkError(error, call.method, call.route, timeout, this.host) ?? error;
  }

  private announceRetry(call: Call<z.ZodType>, error: unknown, attempt: number, attempts: number, waitMs: number): void {
    if (!this.onRetry) return;
    const timedOut = error instanceof NetworkError && error.reason === 'headers_timeout';
    const why = timedOut ? `no answer in ${formatSeconds(this.headersTimeoutMs)}` : shortFailure(error);
    try {
      this.onRetry({ method: call.method, route: call.route, host: this.host, why, attempt, attempts, waitMs });
    } catch {
      // A progress line must never change the outcome of a request.
    }
  }

  private report(info: RequestInfo): void {
    if (!this.onRequest) return;
    try {
      this.onRequest(info);
    } catch {
      // Metrics must never change the outcome of a request.
    }
  }
}
