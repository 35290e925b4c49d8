// What the code around a request asks of every transport: send each request once (inside a job), record the writes sent (for a log line).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Dispatcher } from 'undici';

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

/** Whether the request being sent now is inside sendingOnce (then the transport tries it once). */
export function isSendingOnce(): boolean {
  return ONE_TRY.getStore() === true;
}

/** Runs `fn`, collecting every write it sends through any transport (for a log line per write with its request id). */
export async function recordWrites<T>(fn: () => Promise<T>): Promise<{ value: T; writes: WriteRecord[] }> {
  const writes: WriteRecord[] = [];
  const value = await WRITES.run(writes, fn);
  return { value, writes };
}

/** Adds a write that was answered to the record of the recordWrites it was sent inside (none: nothing to do). */
export function recordWrite(
  method: string,
  route: string,
  status: number,
  headers: Dispatcher.ResponseData['headers'],
): void {
  const requestId = requestIdOf(headers);
  WRITES.getStore()?.push({ method, route, status, ...(requestId ? { requestId } : {}) });
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
