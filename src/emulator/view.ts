// Response bodies built from store records: the spec's Deployment, OAuth provider, integration and repository.
import { SourceConfig, SourceRevisionConfig } from '../core/wire/schema.js';
import {
  repoCommitSha,
  type StoredDeployment,
  type StoredIntegration,
  type StoredProvider,
  type StoredRepository,
  type StoredSecret,
} from './records.js';

/** How secret values are echoed: the value, "********", or no `value` at all. */
export type SecretsMode = 'plain' | 'masked' | 'omitted';

export const MASK = '********';

const SOURCE_CONFIG_KEYS = Object.keys(SourceConfig.shape);
const REVISION_CONFIG_KEYS = Object.keys(SourceRevisionConfig.shape);
const iso = (ms: number): string => new Date(ms).toISOString();

function secretView(secret: StoredSecret, mode: SecretsMode): Record<string, string> {
  if (mode === 'omitted') return { name: secret.name };
  // A value known only by its hash (after a reload) is shown masked even in plain mode.
  if (mode === 'plain' && secret.value !== undefined) return { name: secret.name, value: secret.value };
  return { name: secret.name, value: MASK };
}

/** Every spec field, null where unset (as the service's response model serializes). */
function allKeys(keys: string[], fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = fields[key] ?? null;
  return out;
}

export function deploymentView(d: StoredDeployment, mode: SecretsMode): Record<string, unknown> {
  const revision = allKeys(REVISION_CONFIG_KEYS, d.source_revision_config);
  const repoUrl = d.source_config.repo_url;
  const repoRef = d.source_revision_config.repo_ref;
  revision.repo_commit_sha =
    d.source === 'codehost' && typeof repoUrl === 'string' && typeof repoRef === 'string' ? repoCommitSha(repoUrl, repoRef) : null;
  return {
    id: d.id,
    tenant_id: d.tenant_id,
    name: d.name,
    source: d.source,
    source_config: allKeys(SOURCE_CONFIG_KEYS, d.source_config),
    source_revision_config: revision,
    secrets: d.secrets.map((s) => secretView(s, mode)),
    secret_references: d.secret_references,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
    status: d.status,
    latest_revision_id: d.latest_revision_id,
    active_revision_id: d.active_revision_id,
    image_version: d.image_version,
  };
}

/**
 * JSON of deployments, cached per record: records are immutable, so a changed deployment is a new
 * object and misses the cache. Keeps a page of 100 cheap to serve.
 */
export function deploymentJsonCache(mode: SecretsMode): (d: StoredDeployment) => string {
  const cache = new WeakMap<StoredDeployment, string>();
  return (d) => {
    let json = cache.get(d);
    if (json === undefined) {
      json = JSON.stringify(deploymentView(d, mode));
      cache.set(d, json);
    }
    return json;
  };
}

/** The provider response: never client_secret (nor its hash). */
export function providerView(p: StoredProvider): Record<string, unknown> {
  return {
    id: p.id,
    organization_id: p.organization_id,
    provider_id: p.provider_id,
    name: p.name,
    client_id: p.client_id,
    auth_url: p.auth_url,
    token_url: p.token_url,
    uses_pkce: p.uses_pkce,
    code_challenge_method: p.code_challenge_method,
    created_at: iso(p.created_at),
    updated_at: iso(p.updated_at),
    provider_type: p.provider_type,
    mcp_server_url: p.mcp_server_url,
    token_endpoint_auth_method: p.token_endpoint_auth_method,
    authorization_params: p.authorization_params,
    is_dynamic_client: p.is_dynamic_client,
    allowed_redirect_uris: p.allowed_redirect_uris,
  };
}

export function integrationView(i: StoredIntegration): Record<string, unknown> {
  return { id: i.id, installation_id: i.installation_id, name: i.name };
}

export function repositoryView(r: StoredRepository): Record<string, unknown> {
  return { host_integration_id: r.host_integration_id, id: r.id, name: r.name, owner: r.owner, url: r.url, default_branch: r.default_branch };
}
