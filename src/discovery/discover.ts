// MCP authorization discovery (RFC 9728, RFC 8414 / OpenID Connect, RFC 7591) through the official SDK and a safe fetch.
import type {
  AuthorizationServerMetadata,
  OAuthClientMetadata,
  OAuthProtectedResourceMetadata,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { DiscoveryPreview } from '../core/model.js';
import { describeError, listTried, type TraceEntry } from './describe.js';
import {
  DiscoveryError,
  DiscoveryFetchError,
  displayUrl,
  type DiscoveryFailure,
  type DiscoveryStep,
} from './errors.js';
import { loadMcpSdk, type McpSdk } from './sdk.js';
import { createSafeFetch, vetUrl, type FetchLike, type SafeFetchOptions } from './safe-fetch.js';

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

export type PreviewOptions = Omit<DiscoverOptions, 'register'>;

/** What discovery found: the fields of a provider created from an MCP server, and where they came from. */
export interface DiscoveredProvider {
  mcp_server_url: string;
  auth_url: string;
  token_url: string;
  /** The registered client's id; null when nothing was registered (register false, or no registration endpoint). */
  client_id: string | null;
  /** The authorization server lists S256 in code_challenge_methods_supported. */
  uses_pkce: boolean;
  code_challenge_method: 'S256' | null;
  /** A client was registered dynamically by this discovery. */
  is_dynamic_client: boolean;
  /** The issuer named in the authorization server metadata. */
  issuer: string;
  /** The authorization server URL discovery used (authorization_servers[0], or the MCP server's origin). */
  authorization_server_url: string;
  /** The authorization server offers dynamic client registration. */
  registration_offered: boolean;
  /** The registered client's token_endpoint_auth_method; null when nothing was registered. */
  token_endpoint_auth_method: string | null;
  /** The registered client's redirect_uris; null when nothing was registered. */
  redirect_uris: string[] | null;
  /** Where the protected resource metadata was found; absent when the MCP server publishes none. */
  resource_metadata_url?: string;
}

/**
 * The result of discoverProvider. `clientSecret` (from registration, if the server issued one) is a
 * non-enumerable property: it never appears in JSON.stringify, a spread, or a logged object.
 */
export interface DiscoveryOutcome {
  provider: DiscoveredProvider;
  readonly clientSecret: string | null;
}

export const DEFAULT_REDIRECT_URIS = ['http://127.0.0.1/oauth/callback'];
export const DEFAULT_DEADLINE_MS = 30_000;

interface Run {
  sdk: McpSdk;
  serverUrl: URL;
  options: DiscoverOptions;
  fetch: FetchLike;
  trace: TraceEntry[];
  failures: DiscoveryFailure[];
}

/**
 * Discovers the OAuth provider of an MCP server: protected resource metadata (path-inserted well-known URL,
 * then the root one, then the resource_metadata of a 401 from the server itself), authorization server metadata
 * (RFC 8414, then OpenID Connect, with path-insertion variants), then dynamic client registration when asked
 * and offered. Throws DiscoveryError naming the failing step and URL.
 */
export async function discoverProvider(mcpServerUrl: string, options: DiscoverOptions): Promise<DiscoveryOutcome> {
  const run = startRun(mcpServerUrl, options, await loadMcpSdk());
  try {
    await vetUrl(run.serverUrl, options);
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, 'mcp-server-url', error);
    throw error;
  }
  const resource = await findResourceMetadata(run);
  if (resource.metadata) checkResource(run, resource.metadata, resource.url);
  const authorizationServerUrl = chooseAuthorizationServer(run, resource.metadata);
  const metadata = await findAuthorizationServerMetadata(run, authorizationServerUrl);
  const uses_pkce = metadata.code_challenge_methods_supported?.includes('S256') ?? false;
  const provider: DiscoveredProvider = {
    mcp_server_url: mcpServerUrl,
    auth_url: metadata.authorization_endpoint,
    token_url: metadata.token_endpoint,
    client_id: null,
    uses_pkce,
    code_challenge_method: uses_pkce ? 'S256' : null,
    is_dynamic_client: false,
    issuer: metadata.issuer,
    authorization_server_url: authorizationServerUrl,
    registration_offered: Boolean(metadata.registration_endpoint),
    token_endpoint_auth_method: null,
    redirect_uris: null,
  };
  if (resource.url !== undefined) provider.resource_metadata_url = resource.url;
  let clientSecret: string | null = null;
  if (options.register && metadata.registration_endpoint) {
    const scope = resource.scope ?? resource.metadata?.scopes_supported?.join(' ');
    const client = await register(run, authorizationServerUrl, metadata, scope);
    provider.client_id = client.client_id;
    provider.is_dynamic_client = true;
    provider.token_endpoint_auth_method = client.token_endpoint_auth_method ?? 'client_secret_basic';
    provider.redirect_uris = client.redirect_uris;
    clientSecret = client.client_secret ?? null;
  }
  const outcome = { provider } as DiscoveryOutcome;
  Object.defineProperty(outcome, 'clientSecret', { value: clientSecret, enumerable: false });
  return outcome;
}

/** The same discovery, read-only (no registration); never throws for a discovery failure. */
export async function previewDiscovery(url: string, options: PreviewOptions = {}): Promise<DiscoveryPreview> {
  try {
    const { provider } = await discoverProvider(url, { ...options, register: false });
    const preview: DiscoveryPreview = {
      ok: true,
      auth_url: provider.auth_url,
      token_url: provider.token_url,
      uses_pkce: provider.uses_pkce,
      registration: provider.registration_offered,
      issuer: provider.issuer,
    };
    if (provider.resource_metadata_url !== undefined) preview.resource_metadata_url = provider.resource_metadata_url;
    return preview;
  } catch (error) {
    if (error instanceof DiscoveryError) return { ok: false, step: error.step, message: error.message };
    throw error;
  }
}

function startRun(mcpServerUrl: string, options: DiscoverOptions, sdk: McpSdk): Run {
  const failures: DiscoveryFailure[] = [];
  let serverUrl: URL;
  try {
    serverUrl = new URL(mcpServerUrl);
  } catch {
    throw new DiscoveryError({ step: 'mcp-server-url', url: null, message: `"${mcpServerUrl.slice(0, 200)}" is not a URL` }, []);
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

function note(run: Run, step: DiscoveryStep, url: string | null, message: string): void {
  run.failures.push({ step, url, message });
}

function fail(run: Run, step: DiscoveryStep, url: string | null, message: string, cause?: unknown): never {
  throw new DiscoveryError({ step, url, message }, run.failures, cause === undefined ? undefined : { cause });
}

function failFetch(run: Run, step: DiscoveryStep, error: DiscoveryFetchError): never {
  return fail(run, step, error.url, error.message, error);
}

interface ResourceMetadataResult {
  metadata?: OAuthProtectedResourceMetadata;
  url?: string;
  /** The scope of the server's WWW-Authenticate challenge, when it sent one. */
  scope?: string;
}

/** RFC 9728 at the well-known URLs, then through the resource_metadata of a 401 from the MCP server. */
async function findResourceMetadata(run: Run): Promise<ResourceMetadataResult> {
  const step: DiscoveryStep = 'protected-resource-metadata';
  const start = run.trace.length;
  try {
    const metadata = await run.sdk.discoverOAuthProtectedResourceMetadata(run.serverUrl, { protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION }, run.fetch);
    const found = run.trace.at(-1);
    return { metadata, url: found?.finalUrl ?? found?.url };
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    const tried = run.trace.slice(start);
    const last = tried.at(-1);
    if (last?.status !== null && last?.status !== undefined && last.status >= 400 && last.status < 500) {
      for (const entry of tried) note(run, step, entry.url, `no protected resource metadata (HTTP ${entry.status ?? '?'})`);
    } else {
      note(run, step, last?.url ?? null, describeError(error, last));
    }
  }
  return probeServer(run);
}

/** Asks the MCP server itself (an MCP initialize request) and follows the resource_metadata of its 401 challenge. */
async function probeServer(run: Run): Promise<ResourceMetadataResult> {
  const step: DiscoveryStep = 'protected-resource-metadata';
  const shownServer = displayUrl(run.serverUrl);
  let response: Response;
  try {
    response = await run.fetch(run.serverUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': run.sdk.LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'converge', version: '1' } },
      }),
    });
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    throw error;
  }
  if (response.status !== 401) {
    note(run, step, shownServer, `the MCP server answered HTTP ${response.status}, not 401 with a resource_metadata challenge`);
    return {};
  }
  const { resourceMetadataUrl, scope } = run.sdk.extractWWWAuthenticateParams(response);
  if (!resourceMetadataUrl) {
    note(run, step, shownServer, 'the MCP server answered 401 without resource_metadata in WWW-Authenticate');
    return scope === undefined ? {} : { scope };
  }
  const start = run.trace.length;
  try {
    const metadata = await run.sdk.discoverOAuthProtectedResourceMetadata(
      run.serverUrl,
      { protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION, resourceMetadataUrl },
      run.fetch,
    );
    const result: ResourceMetadataResult = { metadata, url: resourceMetadataUrl.href };
    if (scope !== undefined) result.scope = scope;
    return result;
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    const last = run.trace.slice(start).at(-1);
    const message =
      last?.status !== null && last?.status !== undefined && !(last.status >= 200 && last.status < 300)
        ? `the resource_metadata URL from the 401 challenge answered HTTP ${last.status}`
        : describeError(error, last);
    return fail(run, step, displayUrl(resourceMetadataUrl), message, error);
  }
}

/** The metadata must describe this MCP server (same origin, path within `resource`), as the SDK's auth() demands. */
function checkResource(run: Run, metadata: OAuthProtectedResourceMetadata, foundAt: string | undefined): void {
  const expected = run.sdk.resourceUrlFromServerUrl(run.serverUrl);
  let allowed: boolean;
  try {
    allowed = run.sdk.checkResourceAllowed({ requestedResource: expected, configuredResource: metadata.resource });
  } catch {
    allowed = false;
  }
  if (allowed) return;
  fail(
    run,
    'protected-resource-metadata',
    foundAt ?? null,
    `the protected resource metadata is for resource "${metadata.resource.slice(0, 200)}", which does not cover the MCP server ${displayUrl(expected)}`,
  );
}

/** authorization_servers[0] of the resource metadata, or the MCP server's origin (the SDK's legacy fallback). */
function chooseAuthorizationServer(run: Run, metadata: OAuthProtectedResourceMetadata | undefined): string {
  const advertised = metadata?.authorization_servers?.[0];
  if (advertised === undefined) return new URL('/', run.serverUrl).href;
  try {
    return new URL(advertised).href;
  } catch {
    return fail(run, 'authorization-server-metadata', null, `authorization_servers[0] "${advertised.slice(0, 200)}" is not a URL`);
  }
}

async function findAuthorizationServerMetadata(run: Run, authorizationServerUrl: string): Promise<AuthorizationServerMetadata> {
  const step: DiscoveryStep = 'authorization-server-metadata';
  const start = run.trace.length;
  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await run.sdk.discoverAuthorizationServerMetadata(authorizationServerUrl, {
      fetchFn: run.fetch,
      protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION,
    });
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    const last = run.trace.slice(start).at(-1);
    return fail(run, step, last?.url ?? displayUrl(authorizationServerUrl), describeError(error, last), error);
  }
  if (!metadata) {
    const tried = run.trace.slice(start);
    const urls = tried.length > 0 ? listTried(tried) : run.sdk.buildDiscoveryUrls(authorizationServerUrl).map(({ url }) => displayUrl(url)).join(', ');
    return fail(run, step, displayUrl(authorizationServerUrl), `no OAuth or OpenID Connect metadata at ${urls}`);
  }
  await checkEndpoints(run, metadata);
  return metadata;
}

/** auth_url must be http(s) as the safe fetch would allow; token_url (fetched later by the service) must pass full vetting. */
async function checkEndpoints(run: Run, metadata: AuthorizationServerMetadata): Promise<void> {
  const step: DiscoveryStep = 'authorization-server-metadata';
  const authUrl = new URL(metadata.authorization_endpoint);
  const allowedSchemes = run.options.allowLocal ? ['https:', 'http:'] : ['https:'];
  if (!allowedSchemes.includes(authUrl.protocol)) {
    fail(run, step, displayUrl(authUrl), `authorization_endpoint ${displayUrl(authUrl)} is not an https URL`);
  }
  try {
    await vetUrl(metadata.token_endpoint, run.options);
  } catch (error) {
    if (!(error instanceof DiscoveryFetchError)) throw error;
    fail(run, step, error.url, `token_endpoint refused: ${error.message}`, error);
  }
}

/** The client authentication to ask for: the service's default (client_secret_post) when offered. */
function chooseAuthMethod(supported: string[] | undefined): string | undefined {
  if (!supported) return undefined;
  return ['client_secret_post', 'client_secret_basic', 'none'].find((method) => supported.includes(method));
}

async function register(
  run: Run,
  authorizationServerUrl: string,
  metadata: AuthorizationServerMetadata,
  scope: string | undefined,
): Promise<{ client_id: string; client_secret?: string; token_endpoint_auth_method?: string; redirect_uris: string[] }> {
  const step: DiscoveryStep = 'client-registration';
  const clientMetadata: OAuthClientMetadata = {
    client_name: run.options.clientName ?? 'converge',
    redirect_uris: run.options.redirectUris ?? DEFAULT_REDIRECT_URIS,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  };
  const method = chooseAuthMethod(metadata.token_endpoint_auth_methods_supported);
  if (method !== undefined) clientMetadata.token_endpoint_auth_method = method;
  const start = run.trace.length;
  try {
    return await run.sdk.registerClient(authorizationServerUrl, { metadata, clientMetadata, scope, fetchFn: run.fetch });
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    const last = run.trace.slice(start).at(-1);
    const endpoint = displayUrl(metadata.registration_endpoint ?? authorizationServerUrl);
    const status = last?.status !== null && last?.status !== undefined ? `HTTP ${last.status}: ` : '';
    const errorCode = (error as { errorCode?: unknown }).errorCode;
    const code = typeof errorCode === 'string' ? `${errorCode}: ` : '';
    const reason =
      error instanceof SyntaxError || (error instanceof Error && error.name === 'ZodError')
        ? describeError(error, last)
        : `${status}${code}${describeError(error, undefined)}`;
    return fail(run, step, endpoint, `registration refused: ${reason}`, error);
  }
}
