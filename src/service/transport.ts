// One keep-alive undici Agent per client: timed requests, capped bodies, zod-checked JSON, GET retries with backoff (outside jobs).
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { ConvergeError, UsageError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { decodeJson, errorDetail, parseRetryAfter } from './answers.js';
import { backoffDelay } from './backoff.js';
import { isSendingOnce, recordWrite } from './call-scope.js';
import { classifyFailure, NetworkError, ServiceError, shortFailure, toNetworkError } from './errors.js';
import { requestSpan } from './trace.js';
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

/** The advice given for a service URL that carries credentials. */
export const API_KEY_ADVICE = 'give the API key with --api-key or CONVERGE_API_KEY';

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

/** "30s", "1.5s", "200ms": a duration for a progress line. */
export function formatSeconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)}s`;
}

function normaliseBase(baseUrl: string): URL {
  return checkHttpUrl(baseUrl, {
    name: 'api url',
    example: 'e.g. https://api.example.com',
    noCredentials: API_KEY_ADVICE,
  });
}

/** Checks a header value without ever echoing it (a key read from a file often ends in a newline). */
function headerValue(what: string, value: string): string {
  if (/^[\t\x20-\x7e\x80-\xff]*$/.test(value) && value.trim() === value) return value;
  throw new UsageError(
    `the ${what} contains a line break, a control character or surrounding spaces; check how it is set`,
  );
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
    const attempts =
      (call.method === 'GET' || call.idempotent === true || call.read === true) && !isSendingOnce()
        ? this.retry.attempts
        : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(call, attempt);
      } catch (error) {
        const failure = classifyFailure(error);
        if (failure.kind === 'fatal' || attempt >= attempts || this.closing.signal.aborted) throw error;
        if (failure.retryAfterMs !== undefined && failure.retryAfterMs > this.retry.maxRetryAfterMs) throw error;
        const wait = backoffDelay(
          attempt,
          { baseMs: this.retry.baseDelayMs, capMs: this.retry.maxDelayMs },
          failure.retryAfterMs,
        );
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
    // A span per attempt when tracing is on and a job or reconcile is being traced: method and route template only.
    const span = requestSpan(call.method, call.route, this.host);
    let status: number | 'network' = 'network';
    try {
      const response = await this.dispatch(call);
      status = response.statusCode;
      if (call.method !== 'GET' && call.read !== true) recordWrite(call.method, call.route, status, response.headers);
      if (status < 200 || status >= 300) throw await this.serviceError(call, response);
      if (call.noContent) {
        await this.readBody(call, response, ERROR_BODY_CAP, false);
        return call.schema.parse(undefined);
      }
      const bytes = await this.readBody(call, response, this.maxResponseBytes, true);
      return decodeJson(
        { method: call.method, route: call.route },
        call.schema,
        bytes,
        String(response.headers['content-type'] ?? 'none'),
      );
    } catch (error) {
      if (error instanceof NetworkError) status = 'network';
      throw error;
    } finally {
      span?.end(status);
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
  private async readBody(
    call: Call<z.ZodType>,
    response: Dispatcher.ResponseData,
    cap: number,
    strict: true,
  ): Promise<Buffer>;
  private async readBody(
    call: Call<z.ZodType>,
    response: Dispatcher.ResponseData,
    cap: number,
    strict: false,
  ): Promise<Buffer | null>;
  private async readBody(
    call: Call<z.ZodType>,
    response: Dispatcher.ResponseData,
    cap: number,
    strict: boolean,
  ): Promise<Buffer | null> {
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

  private async serviceError(call: Call<z.ZodType>, response: Dispatcher.ResponseData): Promise<ServiceError> {
    const status = response.statusCode;
    const bytes = await this.readBody(call, response, ERROR_BODY_CAP, false);
    const detail = errorDetail(status, bytes, [this.apiKey, ...(call.sensitive ?? [])]);
    const retryAfterMs = status === 429 || status >= 500 ? parseRetryAfter(response.headers['retry-after']) : undefined;
    return new ServiceError({
      status,
      detail,
      method: call.method,
      route: call.route,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }

  private wrapTransport(error: unknown, call: Call<z.ZodType>): unknown {
    if (error instanceof ConvergeError) return error;
    const code = (error as { code?: string } | undefined)?.code;
    const timeout =
      code === 'UND_ERR_HEADERS_TIMEOUT'
        ? this.headersTimeoutMs
        : code === 'UND_ERR_BODY_TIMEOUT'
          ? this.bodyTimeoutMs
          : code === 'UND_ERR_CONNECT_TIMEOUT'
            ? this.connectTimeoutMs
            : undefined;
    return toNetworkError(error, call.method, call.route, timeout, this.host) ?? error;
  }

  private announceRetry(
    call: Call<z.ZodType>,
    error: unknown,
    attempt: number,
    attempts: number,
    waitMs: number,
  ): void {
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
