// One discovery's context (the SDK, the traced safe fetch, what it fetched, the failures noted) and how a step fails.
import type { TraceEntry } from './describe.js';
import {
  DiscoveryError,
  displayUrl,
  type DiscoveryFailure,
  type DiscoveryFetchError,
  type DiscoveryStep,
} from './errors.js';
import type { McpSdk } from './sdk.js';
import { createSafeFetch, type FetchLike, type SafeFetchOptions } from './safe-fetch.js';

export interface DiscoverOptions extends SafeFetchOptions {
  /** Register a client (RFC 7591) when the authorization server offers a registration endpoint. */
  register: boolean;
  /** Time allowed for the whole discovery, in ms. Default 30000. (timeoutMs bounds each request.) */
  deadlineMs?: number;
  /** client_name sent when registering. Default "converge". */
  clientName?: string;
  /** redirect_uris sent when registering. Default DEFAULT_REDIRECT_URIS. */
  redirectUris?: string[];
  /** Aborts discovery. */
  signal?: AbortSignal;
}

export const DEFAULT_REDIRECT_URIS = ['http://127.0.0.1/oauth/callback'];
export const DEFAULT_DEADLINE_MS = 30_000;

/** One discovery: the SDK, the server, the options, the traced safe fetch, what it fetched and the failures noted. */
export interface Run {
  sdk: McpSdk;
  serverUrl: URL;
  options: DiscoverOptions;
  fetch: FetchLike;
  trace: TraceEntry[];
  failures: DiscoveryFailure[];
}

export function startRun(mcpServerUrl: string, options: DiscoverOptions, sdk: McpSdk): Run {
  const failures: DiscoveryFailure[] = [];
  let serverUrl: URL;
  try {
    serverUrl = new URL(mcpServerUrl);
  } catch {
    throw new DiscoveryError(
      { step: 'mcp-server-url', url: null, message: `"${mcpServerUrl.slice(0, 200)}" is not a URL` },
      [],
    );
  }
  serverUrl.hash = '';
  const deadline = AbortSignal.timeout(options.deadlineMs ?? DEFAULT_DEADLINE_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const trace: TraceEntry[] = [];
  const safe = createSafeFetch(options);
  // The SDK asks for redirect: 'manual' and follows same-origin hops itself; the safe fetch follows (and vets) them instead.
  const tracing: FetchLike = async (url, init) => {
    const entry: TraceEntry = { url: displayUrl(url), finalUrl: null, status: null, contentType: null };
    trace.push(entry);
    const response = await safe(url, { ...init, redirect: 'follow', signal });
    entry.status = response.status;
    entry.finalUrl = displayUrl(response.url || url);
    entry.contentType = response.headers.get('content-type');
    return response;
  };
  return { sdk, serverUrl, options, fetch: tracing, trace, failures };
}

export function note(run: Run, step: DiscoveryStep, url: string | null, message: string): void {
  run.failures.push({ step, url, message });
}

export function fail(run: Run, step: DiscoveryStep, url: string | null, message: string, cause?: unknown): never {
  throw new DiscoveryError({ step, url, message }, run.failures, cause === undefined ? undefined : { cause });
}

export function failFetch(run: Run, step: DiscoveryStep, error: DiscoveryFetchError): never {
  return fail(run, step, error.url, error.message, error);
}
