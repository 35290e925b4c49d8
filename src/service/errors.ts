// Typed failures of calls to the service, and classifyFailure(): the one place that decides retry, wait or fail.
import { ConvergeError, ServiceError } from '../core/errors.js';

export { ServiceError };

export type NetworkFailure =
  | 'connect_timeout'
  | 'headers_timeout'
  | 'body_timeout'
  | 'refused'
  | 'reset'
  | 'dns'
  | 'unreachable'
  | 'socket'
  | 'protocol'
  | 'truncated'
  | 'closed';

/** No usable HTTP answer arrived: the connection, the headers or the body failed or timed out. */
export class NetworkError extends ConvergeError {
  readonly reason: NetworkFailure;
  readonly method: string;
  readonly route: string;
  /** host[:port] the request went to, when known: messages name it. */
  readonly host: string | undefined;

  constructor(
    init: { reason: NetworkFailure; method: string; route: string; text: string; host?: string },
    options?: { cause?: unknown },
  ) {
    super('E_NETWORK', `${init.method} ${init.route}${init.host ? ` to ${init.host}` : ''}: ${init.text}`, options);
    this.reason = init.reason;
    this.method = init.method;
    this.route = init.route;
    this.host = init.host;
  }
}

/**
 * The service answered 2xx with something converge cannot use: not JSON, or JSON of the wrong shape.
 * The message names the endpoint and the zod path, never the body.
 */
export class BadResponseError extends ConvergeError {
  readonly method: string;
  readonly route: string;
  /** The body ended in the middle of a JSON value: likely cut off in transit, so worth another try. */
  readonly truncated: boolean;

  constructor(init: { method: string; route: string; text: string; truncated?: boolean }) {
    super('E_BAD_RESPONSE', `${init.method} ${init.route}: ${init.text}`);
    this.method = init.method;
    this.route = init.route;
    this.truncated = init.truncated ?? false;
  }
}

const NODE_NETWORK_CODES: Record<string, NetworkFailure> = {
  ECONNREFUSED: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ECONNABORTED: 'reset',
  ETIMEDOUT: 'connect_timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENETDOWN: 'unreachable',
  EHOSTDOWN: 'unreachable',
};

const UNDICI_NETWORK_CODES: Record<string, NetworkFailure> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'headers_timeout',
  UND_ERR_BODY_TIMEOUT: 'body_timeout',
  UND_ERR_SOCKET: 'socket',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'truncated',
  UND_ERR_HEADERS_OVERFLOW: 'protocol',
  UND_ERR_CLOSED: 'closed',
  UND_ERR_DESTROYED: 'closed',
  UND_ERR_ABORTED: 'closed',
};

const REASON_TEXT: Record<NetworkFailure, string> = {
  connect_timeout: 'connection timed out',
  headers_timeout: 'no response headers before the headers timeout',
  body_timeout: 'the response body stalled past the body timeout',
  refused: 'connection refused',
  reset: 'connection reset by the server',
  dns: 'host name could not be resolved',
  unreachable: 'host unreachable',
  socket: 'the connection failed',
  protocol: 'the server sent a malformed HTTP response',
  truncated: 'the response body ended early',
  closed: 'the client was closed',
};

function errorCode(error: unknown): string | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy-eyeballs connection attempts fail with an AggregateError of per-address errors.
  const inner = (error as { errors?: unknown }).errors;
  if (Array.isArray(inner) && inner.length > 0) return errorCode(inner[0]);
  return undefined;
}

/** The NetworkFailure of an error thrown by undici or node:net, or undefined when it is not a transport failure. */
export function networkFailureOf(error: unknown): NetworkFailure | undefined {
  const code = errorCode(error);
  if (!code) return undefined;
  if (code in UNDICI_NETWORK_CODES) return UNDICI_NETWORK_CODES[code];
  if (code in NODE_NETWORK_CODES) return NODE_NETWORK_CODES[code];
  if (code.startsWith('HPE_')) return 'protocol';
  return undefined;
}

/** Wraps a transport failure from undici into a NetworkError; returns undefined for anything else. */
export function toNetworkError(
  error: unknown,
  method: string,
  route: string,
  timeoutMs?: number,
  host?: string,
): NetworkError | undefined {
  const reason = networkFailureOf(error);
  if (!reason) return undefined;
  const timed =
    (reason === 'headers_timeout' || reason === 'body_timeout' || reason === 'connect_timeout') &&
    timeoutMs !== undefined;
  const text = timed ? `${REASON_TEXT[reason]} (${timeoutMs} ms)` : REASON_TEXT[reason];
  return new NetworkError({ reason, method, route, text, ...(host ? { host } : {}) }, { cause: error });
}

/** Why a try failed, in a few words for a retry line: "no answer in 30s", "connection refused", "answered 503". */
export function shortFailure(error: unknown): string {
  if (error instanceof NetworkError) {
    if (error.reason === 'headers_timeout') return 'no answer in time';
    return REASON_TEXT[error.reason];
  }
  if (error instanceof ServiceError) return `answered ${error.status}`;
  if (error instanceof BadResponseError) return error.truncated ? 'the answer was cut off' : 'a bad answer';
  return 'failed';
}

export type FailureKind = 'retry' | 'rate_limited' | 'fatal';

export interface FailureClass {
  kind: FailureKind;
  retryAfterMs?: number;
  /** One line, safe to log and to store in a job's failure reason. */
  message: string;
}

/**
 * Decides what a caller (the client's GET retries, the BullMQ workers) does with a failure.
 * - NetworkError → retry: the request may never have arrived, or the answer was lost; the next try may work.
 *   (For a write whose answer was lost, the create worker adopts the resource on the 409 of the retry.)
 * - 5xx → retry: the service or a proxy in front of it is failing or overloaded (docs/against-the-real-service.md §1: 502/503/504
 *   under load); Retry-After is passed on when sent.
 * - 408 → retry: the server gave up waiting for the request; nothing was applied.
 * - 429 → rate_limited: wait at least Retry-After (when given) before the next write.
 * - 400/401/403/404/409/422 and every other 4xx → fatal: the same request will get the same answer;
 *   the service's detail tells the user what to fix (bad field, bad key, missing resource, name taken).
 *   409 is handled by the create worker (adoption) before it gets here; as a plain failure it is fatal.
 * - E_BAD_RESPONSE of a truncated body → retry: the answer was cut off in transit.
 *   Any other E_BAD_RESPONSE → fatal: the service sent a shape converge does not understand; retrying cannot help.
 * - E_RESPONSE_TOO_LARGE, E_PAGING and any other error → fatal: retrying repeats the same answer, or it is a bug.
 */
export function classifyFailure(error: unknown): FailureClass {
  if (error instanceof NetworkError) return { kind: 'retry', message: error.message };
  if (error instanceof ServiceError) {
    const withWait = error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {};
    if (error.status === 429) return { kind: 'rate_limited', ...withWait, message: error.message };
    if (error.status >= 500 || error.status === 408) return { kind: 'retry', ...withWait, message: error.message };
    return { kind: 'fatal', message: error.message };
  }
  if (error instanceof BadResponseError) return { kind: error.truncated ? 'retry' : 'fatal', message: error.message };
  if (error instanceof ConvergeError) return { kind: 'fatal', message: error.message };
  const transport = networkFailureOf(error);
  if (transport) return { kind: 'retry', message: `network failure: ${REASON_TEXT[transport]}` };
  if (error instanceof Error) return { kind: 'fatal', message: `${error.name}: ${error.message.split('\n')[0]}` };
  return { kind: 'fatal', message: `unexpected failure: ${String(error)}` };
}
