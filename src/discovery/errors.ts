// Errors of MCP discovery and of its SSRF-safe fetch; messages name URLs without credentials, queries or secrets.
import { ConvergeError } from '../core/errors.js';

/** A URL as it may appear in a message: no user info, and the query and fragment elided (they may carry keys). */
export function displayUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    return '(invalid URL)';
  }
  const suffix = parsed.search ? '?…' : '';
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}${suffix}`;
}

/** Base of the failures of one fetch made by the SSRF-safe fetch. */
export class DiscoveryFetchError extends ConvergeError {
  /** The URL of the failing request, as displayUrl() prints it. */
  readonly url: string;

  constructor(code: string, url: string | URL, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.url = displayUrl(url);
  }
}

/** The URL itself is refused: not http(s), carries credentials, or plain http where it is not allowed. */
export class BlockedUrlError extends DiscoveryFetchError {
  constructor(url: string | URL, message: string) {
    super('E_DISCOVERY_BLOCKED_URL', url, message);
  }
}

/** The host resolves to an address that may not be fetched (private/loopback without allowLocal, or link-local). */
export class BlockedAddressError extends DiscoveryFetchError {
  readonly address: string;

  constructor(url: string | URL, address: string, message: string) {
    super('E_DISCOVERY_BLOCKED_ADDRESS', url, message);
    this.address = address;
  }
}

/** DNS failure, refused connection, TLS failure: the server could not be reached. */
export class UnreachableError extends DiscoveryFetchError {
  constructor(url: string | URL, message: string, options?: { cause?: unknown }) {
    super('E_DISCOVERY_UNREACHABLE', url, message, options);
  }
}

/** A request (or the whole discovery) did not finish in time. */
export class DiscoveryTimeoutError extends DiscoveryFetchError {
  constructor(url: string | URL, message: string, options?: { cause?: unknown }) {
    super('E_DISCOVERY_TIMEOUT', url, message, options);
  }
}

/** The caller aborted the request. */
export class DiscoveryAbortedError extends DiscoveryFetchError {
  constructor(url: string | URL, options?: { cause?: unknown }) {
    super('E_DISCOVERY_ABORTED', url, `request to ${displayUrl(url)} was aborted`, options);
  }
}

/** The response body exceeds the cap. */
export class ResponseTooLargeError extends DiscoveryFetchError {
  constructor(url: string | URL, limit: number) {
    super('E_DISCOVERY_TOO_LARGE', url, `response from ${displayUrl(url)} is larger than ${limit} bytes`);
  }
}

/** More redirects than allowed (a loop, or a chain too long). */
export class TooManyRedirectsError extends DiscoveryFetchError {
  constructor(url: string | URL, limit: number) {
    super('E_DISCOVERY_TOO_MANY_REDIRECTS', url, `more than ${limit} redirects starting at ${displayUrl(url)}`);
  }
}

/** The discovery steps, in order. `mcp-server-url` is the input itself (not a URL, or not fetchable). */
export type DiscoveryStep =
  'mcp-server-url' | 'protected-resource-metadata' | 'authorization-server-metadata' | 'client-registration';

/** One failed attempt within a step (a step may try several URLs before it gives up or falls back). */
export interface DiscoveryFailure {
  step: DiscoveryStep;
  /** The URL tried, as displayUrl() prints it; null when no request was made. */
  url: string | null;
  message: string;
}

/**
 * Discovery failed. `step` is the step that could not be completed; `failures` lists every failed attempt in
 * order, including those that discovery fell back from (e.g. a missing protected resource metadata document).
 */
export class DiscoveryError extends ConvergeError {
  readonly step: DiscoveryStep;
  readonly url: string | null;
  readonly failures: DiscoveryFailure[];

  constructor(failure: DiscoveryFailure, earlier: DiscoveryFailure[], options?: { cause?: unknown }) {
    super('E_DISCOVERY', formatFailure(failure), options);
    this.step = failure.step;
    this.url = failure.url;
    this.failures = [...earlier, failure];
  }
}

/** `authorization-server-metadata: <message> (<url>)`, the form used in messages and 422 details. */
export function formatFailure(failure: DiscoveryFailure): string {
  return failure.url === null || failure.message.includes(failure.url)
    ? `${failure.step}: ${failure.message}`
    : `${failure.step}: ${failure.message} (${failure.url})`;
}
