// MCP authorization discovery (RFC 9728, RFC 8414 / OpenID Connect, RFC 7591) through the official SDK and a safe fetch.
import type { DiscoveryPreview } from '../core/model.js';
import { findAuthorizationServerMetadata } from './authorization-server.js';
import { DiscoveryError, DiscoveryFetchError } from './errors.js';
import { register } from './registration.js';
import { checkResource, chooseAuthorizationServer, findResourceMetadata } from './resource-metadata.js';
import { failFetch, startRun, type DiscoverOptions } from './run.js';
import { loadMcpSdk } from './sdk.js';
import { vetUrl } from './safe-fetch.js';

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
