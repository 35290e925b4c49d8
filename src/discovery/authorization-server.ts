// Discovery's second step (RFC 8414 / OpenID Connect): the authorization server's metadata and its endpoints checked.
import type { AuthorizationServerMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describeError, listTried } from './describe.js';
import { DiscoveryFetchError, displayUrl, type DiscoveryStep } from './errors.js';
import { vetUrl } from './safe-fetch.js';
import { fail, failFetch, type Run } from './run.js';

/** The authorization server's metadata (RFC 8414, then OpenID Connect), its endpoints checked. */
export async function findAuthorizationServerMetadata(
  run: Run,
  authorizationServerUrl: string,
): Promise<AuthorizationServerMetadata> {
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
    const urls =
      tried.length > 0
        ? listTried(tried)
        : run.sdk
            .buildDiscoveryUrls(authorizationServerUrl)
            .map(({ url }) => displayUrl(url))
            .join(', ');
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
