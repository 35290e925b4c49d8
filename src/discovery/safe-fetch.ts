// SSRF-safe fetch for MCP discovery: vetted and pinned addresses, manual redirects, capped bodies, timeouts.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { classifyAddress } from './address.js';
import {
  BlockedAddressError,
  BlockedUrlError,
  DiscoveryAbortedError,
  DiscoveryFetchError,
  DiscoveryTimeoutError,
  ResponseTooLargeError,
  TooManyRedirectsError,
  UnreachableError,
  displayUrl,
} from './errors.js';

/** The fetch signature the MCP SDK accepts as `fetchFn` (its FetchLike). */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (default: node:dns lookup with all: true). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface SafeFetchOptions {
  /** Allow plain http and loopback/private addresses (never link-local). Default false. */
  allowLocal?: boolean;
  /** Time allowed for each request (DNS, connect, headers and body), in ms. Default 5000. */
  timeoutMs?: number;
  /** Largest response body accepted, in bytes. Default 256 KiB. */
  maxBodyBytes?: number;
  /** Redirects followed (each one re-vetted) before giving up. Default 3. */
  maxRedirects?: number;
  /** Host name resolution; the default uses node:dns. Tests inject one to exercise pinning. */
  resolve?: Resolver;
}

export const SAFE_FETCH_DEFAULTS = { timeoutMs: 5_000, maxBodyBytes: 256 * 1024, maxRedirects: 3 } as const;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
const USER_AGENT = 'converge (MCP discovery)';

/** Returns a FetchLike that refuses unsafe URLs and addresses (see SafeFetchOptions), for the SDK's `fetchFn`. */
export function createSafeFetch(options: SafeFetchOptions = {}): FetchLike {
  return (url, init) => safeFetch(url, init, options);
}

/**
 * One request with redirects handled here: `redirect: 'follow'` (the default) follows up to maxRedirects,
 * re-vetting each hop; 'manual' returns a 3xx as it is; 'error' refuses a redirect. The body is read fully
 * (within the cap) before the response is returned, so the connection is closed when this resolves.
 */
async function safeFetch(
  input: string | URL,
  init: RequestInit = {},
  options: SafeFetchOptions = {},
): Promise<Response> {
  const maxRedirects = options.maxRedirects ?? SAFE_FETCH_DEFAULTS.maxRedirects;
  const first = parseUrl(input);
  const mode = init.redirect ?? 'follow';
  let url = first;
  let hopInit: RequestInit = { ...init };
  for (let hop = 0; ; hop += 1) {
    const response = await fetchHop(url, hopInit, options);
    const location = REDIRECT_STATUSES.has(response.status) ? response.headers.get('location') : null;
    if (location === null || mode === 'manual') return response;
    if (mode === 'error') throw new TooManyRedirectsError(first, 0);
    if (hop >= maxRedirects) throw new TooManyRedirectsError(first, maxRedirects);
    const next = parseUrl(location, url);
    hopInit = redirectInit(hopInit, response.status, url, next);
    url = next;
  }
}

/** Checks a URL as a fetch would (scheme, credentials, every resolved address) without fetching it. */
export async function vetUrl(input: string | URL, options: SafeFetchOptions = {}): Promise<void> {
  const url = parseUrl(input);
  const timeoutMs = options.timeoutMs ?? SAFE_FETCH_DEFAULTS.timeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    await vettedAddresses(url, options, timeout);
  } catch (error) {
    throw mapError(error, url, { timeout, timeoutMs, caller: undefined });
  }
}

/** The URL's addresses once the URL and every address pass the checks: what a request may connect to. */
async function vettedAddresses(url: URL, options: SafeFetchOptions, signal: AbortSignal): Promise<ResolvedAddress[]> {
  const allowLocal = options.allowLocal ?? false;
  checkUrl(url, allowLocal);
  const addresses = await resolveHost(url, options.resolve ?? defaultResolve, signal);
  vetAddresses(url, addresses, allowLocal);
  return addresses;
}

function parseUrl(input: string | URL, base?: URL): URL {
  try {
    return new URL(String(input), base);
  } catch {
    throw new BlockedUrlError(base ?? '(invalid URL)', `not a valid URL: "${String(input).slice(0, 200)}"`);
  }
}

/** The request for the next hop: 303 (and 301/302 after a POST) becomes a body-less GET; other origins get no credentials. */
function redirectInit(init: RequestInit, status: number, from: URL, to: URL): RequestInit {
  const method = (init.method ?? 'GET').toUpperCase();
  const headers = new Headers(init.headers);
  const next: RequestInit = { ...init };
  if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
    next.method = 'GET';
    delete next.body;
    headers.delete('content-type');
    headers.delete('content-length');
  }
  if (from.origin !== to.origin) {
    headers.delete('authorization');
    headers.delete('cookie');
  }
  next.headers = headers;
  return next;
}

function checkUrl(url: URL, allowLocal: boolean): void {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new BlockedUrlError(url, `refusing ${url.protocol} URL ${displayUrl(url)}: only https URLs are fetched`);
  }
  if (url.username || url.password) {
    throw new BlockedUrlError(url, `refusing ${displayUrl(url)}: URLs with credentials are not fetched`);
  }
  if (url.protocol === 'http:' && !allowLocal) {
    throw new BlockedUrlError(
      url,
      `refusing plain http URL ${displayUrl(url)}: use https (http to loopback or private addresses needs --allow-local-discovery)`,
    );
  }
}

function vetAddresses(url: URL, addresses: ResolvedAddress[], allowLocal: boolean): void {
  if (addresses.length === 0) throw new UnreachableError(url, `host ${url.hostname} has no address`);
  const literal = isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0;
  const what = (address: string): string => (literal ? address : `${url.hostname} resolves to ${address}`);
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (kind === 'link-local') {
      throw new BlockedAddressError(
        url,
        address,
        `refusing ${displayUrl(url)}: ${what(address)}, a link-local or cloud metadata address, which is never fetched`,
      );
    }
    if (kind === 'local' && !allowLocal) {
      throw new BlockedAddressError(
        url,
        address,
        `refusing ${displayUrl(url)}: ${what(address)}, a loopback or private address (allowed only with --allow-local-discovery)`,
      );
    }
  }
  const publicAddress = addresses.find(({ address }) => classifyAddress(address) === 'public');
  if (url.protocol === 'http:' && publicAddress) {
    throw new BlockedUrlError(
      url,
      `refusing plain http URL ${displayUrl(url)}: ${what(publicAddress.address)}, a public address; use https`,
    );
  }
}

async function defaultResolve(hostname: string): Promise<ResolvedAddress[]> {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

async function resolveHost(url: URL, resolve: Resolver, signal: AbortSignal): Promise<ResolvedAddress[]> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(hostname);
  if (literal !== 0) return [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  try {
    return await raceSignal(resolve(hostname), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UnreachableError(url, `cannot resolve host ${hostname} (${code})`, { cause: error });
  }
}

/** A connect-time lookup that answers only with the vetted addresses, so a second DNS answer cannot swap them. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const family =
      options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const candidates = family === 0 ? addresses : addresses.filter((entry) => entry.family === family);
    const first = candidates[0];
    if (!first) {
      const error: NodeJS.ErrnoException = new Error(`no vetted IPv${family} address for ${hostname}`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all) {
      callback(
        null,
        candidates.map(({ address, family: f }) => ({ address, family: f })),
      );
      return;
    }
    callback(null, first.address, first.family);
  };
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

async function fetchHop(url: URL, init: RequestInit, options: SafeFetchOptions): Promise<Response> {
  const timeoutMs = options.timeoutMs ?? SAFE_FETCH_DEFAULTS.timeoutMs;
  const maxBodyBytes = options.maxBodyBytes ?? SAFE_FETCH_DEFAULTS.maxBodyBytes;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  let agent: Agent | undefined;
  try {
    const addresses = await vettedAddresses(url, options, signal);
    agent = new Agent({ connect: { lookup: pinnedLookup(addresses) } });
    const headers = new Headers(init.headers);
    if (!headers.has('user-agent')) headers.set('user-agent', USER_AGENT);
    const response = await undiciFetch(url.href, {
      method: init.method ?? 'GET',
      headers: [...headers],
      body: (init.body ?? null) as UndiciRequestInit['body'],
      redirect: 'manual',
      signal,
      dispatcher: agent,
    });
    const body = await readCapped(response, url, maxBodyBytes);
    return toResponse(response, body, url);
  } catch (error) {
    throw mapError(error, url, { timeout, timeoutMs, caller: init.signal ?? undefined });
  } finally {
    await agent?.destroy().catch(() => undefined);
  }
}

async function readCapped(
  response: Awaited<ReturnType<typeof undiciFetch>>,
  url: URL,
  limit: number,
): Promise<Uint8Array | null> {
  const declared = Number(response.headers.get('content-length') ?? 'NaN');
  if (Number.isFinite(declared) && declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new ResponseTooLargeError(url, limit);
  }
  if (!response.body) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    // undici types the body as a stream of `any`; the Fetch standard makes its chunks Uint8Array.
    const read = await reader.read();
    if (read.done) break;
    const value: unknown = read.value;
    if (!(value instanceof Uint8Array)) {
      await reader.cancel().catch(() => undefined);
      throw new TypeError(`the response body of ${url.origin} yielded a chunk that is not bytes`);
    }
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new ResponseTooLargeError(url, limit);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** A global (WHATWG) Response holding the already-read body, with `url` set to the URL it came from. */
function toResponse(response: Awaited<ReturnType<typeof undiciFetch>>, body: Uint8Array | null, url: URL): Response {
  const headers = new Headers();
  for (const [name, value] of response.headers) headers.append(name, value);
  const result = new Response(NULL_BODY_STATUSES.has(response.status) ? null : body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
  Object.defineProperty(result, 'url', { value: url.href });
  return result;
}

function mapError(
  error: unknown,
  url: URL,
  signals: { timeout: AbortSignal; timeoutMs: number; caller: AbortSignal | undefined },
): DiscoveryFetchError {
  if (error instanceof DiscoveryFetchError) return error;
  const caller = signals.caller;
  if (caller?.aborted) {
    const reason: unknown = caller.reason;
    if (reason instanceof Error && reason.name === 'TimeoutError') {
      return new DiscoveryTimeoutError(url, `discovery ran out of time while fetching ${displayUrl(url)}`, {
        cause: error,
      });
    }
    return new DiscoveryAbortedError(url, { cause: error });
  }
  if (signals.timeout.aborted) {
    return new DiscoveryTimeoutError(url, `no complete answer from ${displayUrl(url)} within ${signals.timeoutMs} ms`, {
      cause: error,
    });
  }
  return new UnreachableError(url, `cannot reach ${displayUrl(url)}: ${describeCause(error)}`, { cause: error });
}

/** The most specific reason in an error's cause chain: an errno-style code when there is one. */
function describeCause(error: unknown): string {
  let current: unknown = error;
  let message = error instanceof Error ? error.message : String(error);
  for (let depth = 0; current instanceof Error && depth < 5; depth += 1) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.length > 0)
      return current.message.includes(code) ? current.message : `${code}: ${current.message}`;
    message = current.message;
    current = current.cause;
  }
  return message;
}
