// The OAuth provider records the store keeps: a new one from its fields (the client secret hashed), and a PATCH over one.
import type { CreateProviderRequest } from '../core/wire/schema.js';
import { sha256Hex, type StoredProvider } from './records.js';
import type { ProviderPatchBody } from './requests.js';

/** The fields of a provider to create, whether given by hand or discovered. `client_secret` is hashed, never kept. */
export type ProviderInput = Omit<CreateProviderRequest, 'client_secret' | 'code_challenge_method'> & {
  client_secret?: string | null;
  /** Absent: S256; null: none (a discovered server that offers no PKCE method). */
  code_challenge_method?: string | null;
  mcp_server_url?: string | null;
  is_dynamic_client?: boolean;
};

/** A new provider of the organization, created at `now`, with the defaults of the fields left out. */
export function newProvider(organizationId: string, input: ProviderInput, id: string, now: number): StoredProvider {
  return {
    id,
    organization_id: organizationId,
    provider_id: input.provider_id,
    name: input.name,
    client_id: input.client_id,
    auth_url: input.auth_url,
    token_url: input.token_url,
    client_secret_sha256: input.client_secret != null ? sha256Hex(input.client_secret) : null,
    uses_pkce: input.uses_pkce ?? false,
    code_challenge_method: input.code_challenge_method === undefined ? 'S256' : input.code_challenge_method,
    provider_type: input.provider_type ?? null,
    mcp_server_url: input.mcp_server_url ?? null,
    token_endpoint_auth_method: input.token_endpoint_auth_method ?? 'client_secret_post',
    authorization_params: input.authorization_params ?? {},
    is_dynamic_client: input.is_dynamic_client ?? false,
    allowed_redirect_uris: input.allowed_redirect_uris ?? [],
    created_at: now,
    updated_at: now,
  };
}

/**
 * `current` with the PATCH's fields (absent fields kept; code_challenge_method null means none), updated_at
 * untouched; null when the PATCH changes nothing.
 */
export function patchedProvider(current: StoredProvider, patch: ProviderPatchBody): StoredProvider | null {
  const next: StoredProvider = {
    ...current,
    name: patch.name ?? current.name,
    client_id: patch.client_id ?? current.client_id,
    auth_url: patch.auth_url ?? current.auth_url,
    token_url: patch.token_url ?? current.token_url,
    uses_pkce: patch.uses_pkce ?? current.uses_pkce,
    code_challenge_method:
      patch.code_challenge_method === undefined ? current.code_challenge_method : patch.code_challenge_method,
    client_secret_sha256: patch.client_secret != null ? sha256Hex(patch.client_secret) : current.client_secret_sha256,
  };
  const same = (Object.keys(next) as Array<keyof StoredProvider>).every((key) => next[key] === current[key]);
  return same ? null : next;
}
