// One request to a receiver or a CI host through a keep-alive undici Agent: a deadline per request, no redirect, the answer's body bounded.
import { Agent } from 'undici';

/** What a receiver answered: its status (and, when asked for, its body and headers), or why nothing came (a code such as ETIMEDOUT, never the URL). */
export type PostAnswer =
  { status: number; body?: string; headers?: Record<string, string | string[] | undefined> } | { failure: string };

/** Bytes of an answer's body read at most (the rest is dropped with the connection). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The agent of one receiver's deliveries: at most `connections` open (its in-flight limit), none shared with another. */
export function deliveryAgent(connections: number): Agent {
  return new Agent({ keepAliveTimeout: 10_000, connections });
}

/** A short, secret-free word for a failed request: the error's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT), or its kind. */
function failureOf(error: unknown, timedOut: boolean): string {
  if (timedOut) return 'no answer within the timeout';
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } } | undefined)?.code ??
    (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === 'string' ? `network error ${code}` : 'network error';
}

/** One request: its method, URL, body (none for a GET), headers, deadline, and how many bytes of the answer's body to keep (0: read and drop; a longer body is a failure). */
export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  url: string;
  body?: string;
  headers: Record<string, string>;
  timeoutMs: number;
  keepBodyBytes?: number;
}

/** Sends one request; the whole exchange (connect, headers, body) must end within `timeoutMs`. */
export async function requestTo(agent: Agent, request: HttpRequest): Promise<PostAnswer> {
  const { timeoutMs, body } = request;
  const keep = request.keepBodyBytes ?? 0;
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const target = new URL(request.url);
    const response = await agent.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: request.method,
      headers:
        body === undefined
          ? request.headers
          : { ...request.headers, 'content-length': String(Buffer.byteLength(body)) },
      ...(body === undefined ? {} : { body }),
      signal: deadline,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const limit = Math.max(keep, MAX_ANSWER_BYTES);
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of response.body) {
      read += (chunk as Buffer).length;
      if (read > limit) {
        response.body.destroy();
        // A body kept for reading is whole or not at all: half an answer is not an answer.
        if (keep > 0) return { failure: `an answer larger than ${keep} bytes` };
        break;
      }
      if (keep > 0) chunks.push(chunk as Buffer);
    }
    if (keep === 0) return { status: response.statusCode };
    return { status: response.statusCode, body: Buffer.concat(chunks).toString('utf8'), headers: response.headers };
  } catch (error) {
    return { failure: failureOf(error, deadline.aborted) };
  }
}

/** POSTs `body` with `headers`; the whole exchange (connect, headers, body) must end within `timeoutMs`. */
export function postTo(
  agent: Agent,
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<PostAnswer> {
  return requestTo(agent, { method: 'POST', url, body, headers, timeoutMs });
}
