// Reading the service's answers: a Retry-After, an error body's detail (secrets redacted), a JSON body checked against its schema.
import { STATUS_CODES } from 'node:http';
import type { z } from 'zod';
import { ErrorBody } from '../core/wire/schema.js';
import { maskValues } from '../core/mask.js';
import { BadResponseError } from './errors.js';

/** Parses Retry-After: delay-seconds or an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000);
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
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

/** The detail of an error answer's body (read up to its cap, or null when it was longer), every secret replaced. */
export function errorDetail(status: number, bytes: Buffer | null, secrets: Array<string | undefined>): string {
  let parsed: unknown;
  try {
    parsed = bytes && bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
  } catch {
    parsed = undefined;
  }
  return redact(detailText(status, parsed), secrets);
}

/** The detail with every secret (the API key, the values a request sent) masked where it stands as a value (src/core/mask.ts). */
function redact(text: string, secrets: Array<string | undefined>): string {
  return maskValues(text, secrets, '[redacted]');
}

/** The body as JSON checked by `schema`; a BadResponseError that says what was wrong (never quoting the body) otherwise. */
export function decodeJson<S extends z.ZodType>(
  where: { method: string; route: string },
  schema: S,
  bytes: Buffer,
  contentType: string,
): z.output<S> {
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
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`);
  const more = parsed.error.issues.length > 3 ? ` (and ${parsed.error.issues.length - 3} more)` : '';
  throw new BadResponseError({ ...where, text: `unexpected response shape: ${issues.join('; ')}${more}` });
}
