// Response bodies built from store records: the spec's Deployment, OAuth provider, integration and repository.
import { SourceRevisionConfig } from '../core/wire/schema.js';
import { ServiceSourceConfig } from './requests.js';
import {
  repoCommitSha,
  revisionStatusAt,
  revisionUpdatedAt,
  type StoredDeployment,
  type StoredIntegration,
  type StoredProvider,
  type StoredRepository,
  type StoredRevision,
  type StoredSecret,
} from './records.js';

/** How secret values are echoed: the value, "********", or no `value` at all. */
export type SecretsMode = 'plain' | 'masked' | 'omitted';

/**
 * How deployments are echoed. exact: every field as it was sent (only the spec's fields, plus
 * `is_preview: true` on a preview deployment). real: as the real service answers (docs/against-the-real-service.md §5):
 * listener_config, install_command and build_command come back null, custom_url is the service's own
 * for codehost, and responses carry display_name and is_preview, which the spec does not list.
 */
export type EchoMode = 'exact' | 'real';

export interface ViewOptions {
  secrets: SecretsMode;
  echo: EchoMode;
  /** Leave tenant_id out, as older services do. */
  omitTenantId: boolean;
}

export const MASK = '********';

const SOURCE_CONFIG_KEYS = Object.keys(ServiceSourceConfig.shape);
const NOT_ECHOED = ['listener_config', 'install_command', 'build_command'];
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

/** The URL the real service gives a codehost deployment. */
export function serviceUrl(d: StoredDeployment): string {
  return `https://${d.name}-${d.id.slice(0, 8)}.example.app`;
}

function revisionConfigView(
  source: string,
  sourceConfig: Readonly<Record<string, unknown>>,
  fields: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const revision = allKeys(REVISION_CONFIG_KEYS, fields);
  const repoUrl = sourceConfig.repo_url;
  const repoRef = fields.repo_ref;
  revision.repo_commit_sha =
    source === 'codehost' && typeof repoUrl === 'string' && typeof repoRef === 'string'
      ? repoCommitSha(repoUrl, repoRef)
      : null;
  return revision;
}

export function deploymentView(d: StoredDeployment, options: ViewOptions): Record<string, unknown> {
  const sourceConfig = allKeys(SOURCE_CONFIG_KEYS, d.source_config);
  if (options.echo === 'real') {
    for (const key of NOT_ECHOED) sourceConfig[key] = null;
    if (d.source === 'codehost') sourceConfig.custom_url = serviceUrl(d);
  }
  const view: Record<string, unknown> = {
    id: d.id,
    tenant_id: d.tenant_id,
    name: d.name,
    source: d.source,
    source_config: sourceConfig,
    source_revision_config: revisionConfigView(d.source, d.source_config, d.source_revision_config),
    secrets: d.secrets.map((s) => secretView(s, options.secrets)),
    secret_references: d.secret_references,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
    status: d.status,
    latest_revision_id: d.latest_revision_id,
    active_revision_id: d.active_revision_id,
    image_version: d.image_version,
  };
  if (options.omitTenantId) delete view.tenant_id;
  if (options.echo === 'real') {
    view.display_name = d.name;
    view.is_preview = d.is_preview;
  } else if (d.is_preview) {
    view.is_preview = true;
  }
  return view;
}

/** A revision as GET /v2/deployments/{id}/revisions/{revision_id} answers it, as of `now`. */
export function revisionView(d: StoredDeployment, r: StoredRevision, now: number): Record<string, unknown> {
  return {
    id: r.id,
    created_at: iso(r.created_at),
    updated_at: iso(revisionUpdatedAt(r, now)),
    status: revisionStatusAt(r, now),
    source: r.revision_source ?? d.source,
    source_revision_config: revisionConfigView(
      r.revision_source ?? d.source,
      d.source_config,
      r.source_revision_config,
    ),
    // What the PATCH that started it carried besides its config (the official deploy tool's fields).
    tracked_packages: r.tracked_packages,
    install_command: r.install_command,
    build_command: r.build_command,
  };
}

/**
 * JSON of deployments, cached per record: records are immutable, so a changed deployment is a new
 * object and misses the cache. Keeps a page of 100 cheap to serve.
 */
export function deploymentJsonCache(options: ViewOptions): (d: StoredDeployment) => string {
  const cache = new WeakMap<StoredDeployment, string>();
  return (d) => {
    let json = cache.get(d);
    if (json === undefined) {
      json = JSON.stringify(deploymentView(d, options));
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
  return {
    host_integration_id: r.host_integration_id,
    id: r.id,
    name: r.name,
    owner: r.owner,
    url: r.url,
    default_branch: r.default_branch,
  };
}
