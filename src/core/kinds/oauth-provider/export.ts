// Export of live OAuth providers as manual provider manifests: their definitions as live, client_secret as an env reference.
import type { LiveProvider } from '../../model.js';
import { isAbsent } from '../../values.js';
import { secretEnvName, type ExportedDocument } from '../export-names.js';
import type { Exported, ExportSource } from '../kind.js';

/** The manual-provider fields a live provider reports, in manifest order (client_secret is never returned). */
const FIELDS = [
  'name',
  'client_id',
  'auth_url',
  'token_url',
  'uses_pkce',
  'code_challenge_method',
  'provider_type',
  'token_endpoint_auth_method',
  'authorization_params',
  'allowed_redirect_uris',
] as const;

/**
 * A live provider as a manual provider manifest: every field it reports, and client_secret as a `valueFrom: { env }`
 * reference (the service never returns the secret; it is written once, as converge has no record of it).
 */
function exportProvider(live: LiveProvider): ExportedDocument {
  const spec: Record<string, unknown> = {};
  const source = live as unknown as Record<string, unknown>;
  for (const field of FIELDS) {
    if (field === 'authorization_params' && Object.keys((source[field] as object | undefined) ?? {}).length === 0)
      continue;
    if (field === 'allowed_redirect_uris' && ((source[field] as unknown[] | undefined) ?? []).length === 0) continue;
    if (!isAbsent(source[field])) spec[field] = source[field];
  }
  const env = secretEnvName(live.provider_id, 'client_secret');
  spec.client_secret = { valueFrom: { env } };
  return { kind: 'OAuthProvider', name: live.provider_id, spec, env: [env] };
}

/** The manifests of every live provider, when the service lists them (else why none was exported). */
export function exportProviders(source: ExportSource): Exported {
  if (!source.providers.readable) return { docs: [], skipped: [`OAuth providers: ${source.providers.note}`] };
  return { docs: source.providers.providers.map(exportProvider), skipped: [] };
}
