// The base URL of a running daemon's status server, from --url: checked once for `converge status` and `converge reconcile`.
import { UsageError } from '../core/errors.js';

/** `raw` as a base URL without a trailing slash; a UsageError (one line) when it is not an http(s) URL. */
export function daemonBaseUrl(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new UsageError(`--url "${raw}" is not a URL; give http://HOST:PORT of the daemon's status server`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url must use http or https, not ${parsed.protocol}//`);
  return parsed.toString().replace(/\/+$/, '');
}
