// The base URL of a running daemon's status server, from --url: checked once for `converge status` and `converge reconcile`.
import { checkHttpUrl } from '../core/http-url.js';

/** `raw` as a base URL without a trailing slash; a UsageError (one line) when it is not an http(s) URL. */
export function daemonBaseUrl(raw: string): string {
  const parsed = checkHttpUrl(raw, { name: '--url', example: "http://HOST:PORT of the daemon's status server" });
  return parsed.toString().replace(/\/+$/, '');
}
