// Sends the daemon HTTP answers: the status page (`/` and its assets), a GET whose If-None-Match names the current ETag with 304, and untagged answers (errors, POST answers).
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PAGE_CSS } from './page-css.js';
import { PAGE_HTML, PAGE_ICON_SVG } from './page-html.js';
import { PAGE_SCRIPT } from './page-script.js';

/**
 * What the page may load: its own script, stylesheet and icon, and fetch from its own origin; nothing inline, nothing
 * from elsewhere, never framed.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  type: string;
  body: string;
  etag: string;
}

/** A strong ETag of a body: its SHA-256, cut to 128 bits. */
export function etagOf(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
}

function asset(type: string, body: string): Asset {
  return { type, body, etag: etagOf(body) };
}

const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ['/', asset('text/html; charset=utf-8', PAGE_HTML)],
  ['/status-page/page.js', asset('text/javascript; charset=utf-8', PAGE_SCRIPT)],
  ['/status-page/page.css', asset('text/css; charset=utf-8', PAGE_CSS)],
  ['/status-page/icon.svg', asset('image/svg+xml', PAGE_ICON_SVG)],
]);

/** The paths the page is served at. */
export const PAGE_PATHS: readonly string[] = [...ASSETS.keys()];

/** Whether If-None-Match (a list, or `*`) names `etag`; a weak validator matches too (RFC 9110, 13.1.2). */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * Sends `body` with its ETag, or 304 and no body when the request's If-None-Match names it: a client that polls with
 * the tag it has gets nothing while nothing changed. `no-store` keeps it out of every cache (the client keeps it).
 */
export function sendTagged(
  req: IncomingMessage,
  res: ServerResponse,
  type: string,
  body: string,
  head: boolean,
  etag = etagOf(body),
  extra: Record<string, string> = {},
): void {
  sendTaggedBody(req, res, type, { etag, body: () => body }, head, extra);
}

/** sendTagged of a body made only when it is sent: a 304 makes none. */
export function sendTaggedBody(
  req: IncomingMessage,
  res: ServerResponse,
  type: string,
  tagged: { etag: string; body(): string },
  head: boolean,
  extra: Record<string, string> = {},
): void {
  const { etag } = tagged;
  if (ifNoneMatch(req.headers['if-none-match'], etag)) {
    res.writeHead(304, { etag, 'cache-control': 'no-store', ...extra });
    res.end();
    return;
  }
  const body = tagged.body();
  res.writeHead(200, {
    'content-type': type,
    'cache-control': 'no-store',
    etag,
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(head ? undefined : body);
}

/** Sends `body` as it is, kept out of every cache (an answer that is not polled with a tag: errors, POST answers). */
export function send(res: ServerResponse, status: number, type: string, body: string, head = false): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  });
  res.end(head ? undefined : body);
}

/** Sends `value` as JSON (send). */
export function sendJson(res: ServerResponse, status: number, value: unknown, head: boolean): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value, null, 2) + '\n', head);
}

/** Serves a path of the page (GET or HEAD): true when `path` is one of them. */
export function servePage(req: IncomingMessage, res: ServerResponse, path: string, head: boolean): boolean {
  const found = ASSETS.get(path);
  if (!found) return false;
  sendTagged(req, res, found.type, found.body, head, found.etag, {
    'content-security-policy': PAGE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  return true;
}
