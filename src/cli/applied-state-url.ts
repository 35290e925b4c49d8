// `plan --applied-state-url`: the applied state read from a daemon's GET /applied-state over HTTP(S) with a read-only token, instead of from Redis.
import { checkHttpUrl } from '../core/http-url.js';
import { ConvergeError, UsageError } from '../core/errors.js';
import { parseAppliedStateDocument, STATE_TOKEN_ENV, type AppliedStateRead } from '../store/applied-state-document.js';

/** The whole answer's deadline: a slow daemon fails the plan rather than hanging CI. */
const TIMEOUT_MS = 60_000;

/** Largest answer read: about 1 KB per resource (docs/saved-plans.md), so 64 MiB is far above 10,000 resources. */
export const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** The endpoint's URL: given whole (…/applied-state), or the daemon's status server URL with /applied-state added. */
export function appliedStateEndpoint(raw: string): URL {
  const url = checkHttpUrl(raw, {
    name: '--applied-state-url',
    example: "the daemon's status server URL, e.g. https://converge.example.com (its GET /applied-state)",
    noCredentials: `give the token in ${STATE_TOKEN_ENV}`,
  });
  if (!url.pathname.replace(/\/+$/, '').endsWith('/applied-state'))
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/applied-state`;
  url.search = '';
  url.hash = '';
  return url;
}

/** The body as text, refused past `max` bytes (read as it arrives, never held whole beyond the cap). */
async function cappedText(response: Response, max: number): Promise<string | undefined> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early cancels the stream: the rest is not downloaded.
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The applied records and holds a daemon serves, or a ConvergeError of one line (E_APPLIED_STATE_URL): unreachable,
 * refused (401, 404), or not the document. The token is sent, never shown.
 */
export async function readAppliedStateUrl(raw: string, token: string | undefined): Promise<AppliedStateRead> {
  const url = appliedStateEndpoint(raw);
  if (!token)
    throw new UsageError(`--applied-state-url needs the daemon's read-only token in ${STATE_TOKEN_ENV}; it is not set`);
  const where = `${url.origin}${url.pathname}`;
  const fail = (why: string, cause?: unknown): ConvergeError =>
    new ConvergeError(
      'E_APPLIED_STATE_URL',
      `cannot read the applied state from ${where}: ${why}`,
      cause === undefined ? undefined : { cause },
    );
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw fail(`no answer (${cause}); is the daemon's status server reachable from here?`, error);
  }
  const text = await cappedText(response, MAX_DOCUMENT_BYTES).catch((error: unknown) => {
    throw fail(`the answer was cut off (${(error as Error).name})`, error);
  });
  if (text === undefined) throw fail(`the answer is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  if (response.status === 401)
    throw fail(`the token was refused (401); set ${STATE_TOKEN_ENV} to the value the daemon runs with`);
  if (response.status === 404)
    throw fail(
      `404: the endpoint is not enabled there (the daemon runs without ${STATE_TOKEN_ENV}) or this is not a converge daemon`,
    );
  if (response.status !== 200) throw fail(`it answered ${response.status}${errorOf(text)}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail('the answer is not JSON; is that a converge daemon?');
  }
  const parsed = parseAppliedStateDocument(value);
  if (!parsed.ok) throw fail(parsed.error);
  return parsed.read;
}

/** The `error` line of a JSON answer, for the message (": …"), or nothing. */
function errorOf(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    return typeof error === 'string' ? `: ${error.split('\n')[0]}` : '';
  } catch {
    return '';
  }
}
