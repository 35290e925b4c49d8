// One POST to a receiver through a keep-alive undici Agent: a deadline per request, no redirect, the answer's body read and dropped.
import { Agent } from 'undici';

/** What a receiver answered: its status, or why nothing came (a code such as ETIMEDOUT, never the URL). */
export type PostAnswer = { status: number } | { failure: string };

/** Bytes of an answer's body read at most (the rest is dropped with the connection). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The agent of one receiver's deliveries: at most `connections` open (its in-flight limit), none shared with another. */
export function deliveryAgent(connections: number): Agent {
  return new Agent({ keepAliveTimeout: 10_000, connections });
}

/** A short, secret-free word for a failed request: the error's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT), or its kind. */
function failureOf(error: unknown, timedOut: boolean): string {
  if (timedOut) return 'no answer within the timeout';
  const code = (error as { code?: unknown; cause?: { code?: unknown } } | undefined)?.code ?? (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === 'string' ? `network error ${code}` : 'network error';
}

/** POSTs `body` with `headers`; the whole exchange (connect, headers, body) must end within `timeoutMs`. */
export async function postTo(agent: Agent, url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const target = new URL(url);
    const response = await agent.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      body,
      signal: deadline,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    let read = 0;
    for await (const chunk of response.body) {
      read += (chunk as Buffer).length;
      if (read > MAX_ANSWER_BYTES) {
        response.body.destroy();
        break;
      }
    }
    return { status: response.statusCode };
  } catch (error) {
    return { failure: failureOf(error, deadline.aborted) };
  }
}
