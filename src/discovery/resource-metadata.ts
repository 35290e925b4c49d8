// Discovery's first step (RFC 9728): the MCP server's protected resource metadata, checked, and its authorization server.
import type { OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describeError } from './describe.js';
import { DiscoveryFetchError, displayUrl, type DiscoveryStep } from './errors.js';
import { fail, failFetch, note, type Run } from './run.js';

export interface ResourceMetadataResult {
  metadata?: OAuthProtectedResourceMetadata;
  url?: string;
  /** The scope of the server's WWW-Authenticate challenge, when it sent one. */
  scope?: string;
}

/** RFC 9728 at the well-known URLs, then through the resource_metadata of a 401 from the MCP server. */
export async function findResourceMetadata(run: Run): Promise<ResourceMetadataResult> {
  const step: DiscoveryStep = 'protected-resource-metadata';
  const start = run.trace.length;
  try {
    const metadata = await run.sdk.discoverOAuthProtectedResourceMetadata(
      run.serverUrl,
      { protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION },
      run.fetch,
    );
    const found = run.trace.at(-1);
    return { metadata, url: found?.finalUrl ?? found?.url };
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    const tried = run.trace.slice(start);
    const last = tried.at(-1);
    if (last?.status !== null && last?.status !== undefined && last.status >= 400 && last.status < 500) {
      for (const entry of tried)
        note(run, step, entry.url, `no protected resource metadata (HTTP ${entry.status ?? '?'})`);
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
        params: {
          protocolVersion: run.sdk.LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'converge', version: '1' },
        },
      }),
    });
  } catch (error) {
    if (error instanceof DiscoveryFetchError) failFetch(run, step, error);
    throw error;
  }
  if (response.status !== 401) {
    note(
      run,
      step,
      shownServer,
      `the MCP server answered HTTP ${response.status}, not 401 with a resource_metadata challenge`,
    );
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
export function checkResource(run: Run, metadata: OAuthProtectedResourceMetadata, foundAt: string | undefined): void {
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
export function chooseAuthorizationServer(run: Run, metadata: OAuthProtectedResourceMetadata | undefined): string {
  const advertised = metadata?.authorization_servers?.[0];
  if (advertised === undefined) return new URL('/', run.serverUrl).href;
  try {
    return new URL(advertised).href;
  } catch {
    return fail(
      run,
      'authorization-server-metadata',
      null,
      `authorization_servers[0] "${advertised.slice(0, 200)}" is not a URL`,
    );
  }
}
