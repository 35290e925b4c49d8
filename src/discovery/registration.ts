// Discovery's last step (RFC 7591): dynamic client registration, when asked and offered.
import type { AuthorizationServerMetadata, OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describeError } from './describe.js';
import { DiscoveryFetchError, displayUrl, type DiscoveryStep } from './errors.js';
import { DEFAULT_REDIRECT_URIS, fail, failFetch, type Run } from './run.js';

/** The client authentication to ask for: the service's default (client_secret_post) when offered. */
function chooseAuthMethod(supported: string[] | undefined): string | undefined {
  if (!supported) return undefined;
  return ['client_secret_post', 'client_secret_basic', 'none'].find((method) => supported.includes(method));
}

/** Registers a client (RFC 7591) at the authorization server's registration endpoint. */
export async function register(
  run: Run,
  authorizationServerUrl: string,
  metadata: AuthorizationServerMetadata,
  scope: string | undefined,
): Promise<{
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method?: string;
  redirect_uris: string[];
}> {
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
    return await run.sdk.registerClient(authorizationServerUrl, {
      metadata,
      clientMetadata,
      scope,
      fetchFn: run.fetch,
    });
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
