// The emulator's mcp-discover hook: real discovery (src/discovery) with registration; failures list every failed step.
import type { ValidationIssue } from '../core/wire/schema.js';
import { discoverProvider } from '../discovery/discover.js';
import type { DiscoverOptions } from '../discovery/run.js';
import { DiscoveryError, formatFailure } from '../discovery/errors.js';
import type { DiscoverHook, ProviderFromDiscovery } from './discover.js';

export interface EmulatorDiscoveryOptions extends Omit<DiscoverOptions, 'register' | 'allowLocal'> {
  /** Allow http and loopback/private addresses (the emulator's --allow-local-discovery). Link-local never. */
  allowLocal: boolean;
}

/** A DiscoveryError whose message lists every failed attempt in order (the emulator puts it in its 422). */
class DiscoveryFailedError extends DiscoveryError {
  /** The 422 detail items: one per failed attempt, each naming its step and URL. */
  readonly detail: ValidationIssue[];

  constructor(error: DiscoveryError) {
    const last = error.failures.at(-1) ?? { step: error.step, url: error.url, message: error.message };
    super(last, error.failures.slice(0, -1), { cause: error.cause });
    this.message = error.failures.map(formatFailure).join('; ');
    this.detail = discoveryErrorDetail(error);
  }
}

/**
 * The emulator's `discover` hook (src/emulator/discover.ts DiscoverHook): discovery with dynamic client
 * registration. A provider needs a client_id, so an authorization server without a registration endpoint
 * fails the `client-registration` step. The registered client_secret goes to the emulator, which keeps
 * only its hash; it is never in an error message.
 */
export function emulatorDiscoveryHook(options: EmulatorDiscoveryOptions): DiscoverHook {
  return async (url: string): Promise<ProviderFromDiscovery> => {
    let outcome;
    try {
      outcome = await discoverProvider(url, { ...options, register: true });
    } catch (error) {
      if (error instanceof DiscoveryError) throw new DiscoveryFailedError(error);
      throw error;
    }
    const { provider } = outcome;
    if (provider.client_id === null) {
      throw new DiscoveryFailedError(
        new DiscoveryError(
          {
            step: 'client-registration',
            url: provider.authorization_server_url,
            message: `the authorization server ${provider.issuer} offers no dynamic client registration (no registration_endpoint); define this provider manually with a client_id`,
          },
          [],
        ),
      );
    }
    const found: ProviderFromDiscovery = {
      auth_url: provider.auth_url,
      token_url: provider.token_url,
      client_id: provider.client_id,
      client_secret: outcome.clientSecret,
      uses_pkce: provider.uses_pkce,
      code_challenge_method: provider.code_challenge_method,
      is_dynamic_client: provider.is_dynamic_client,
      // passed as registered: the emulator refuses a method the service does not support
      token_endpoint_auth_method: provider.token_endpoint_auth_method,
    };
    if (provider.redirect_uris) found.allowed_redirect_uris = provider.redirect_uris;
    return found;
  };
}

/** The 422 detail for a failed discovery: one item per failed attempt, each naming its step and URL. */
function discoveryErrorDetail(error: DiscoveryError): ValidationIssue[] {
  return error.failures.map((failure) => ({
    loc: ['body', 'mcp_server_url'],
    msg: formatFailure(failure),
    type: `discovery.${failure.step}`,
  }));
}
