// The store's records as a state file (schema.ts) to persist: every record, with secrets only as sha256 hashes.
import type { StateDeployment, StateFile, StateProvider } from './schema.js';
import type { StoredDeployment, StoredProvider } from './records.js';
import type { EmulatorStore } from './store.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * The whole store as a state file. Secret values and client secrets appear only as sha256 hashes,
 * so the file never holds a secret; reloading it restores every record.
 */
export function stateFromStore(store: EmulatorStore): StateFile {
  return {
    version: 1,
    organization_id: store.organizationId,
    tenants: store.tenants().map((t) => ({ id: t.id, name: t.name, organization_id: t.organization_id })),
    integrations: store.integrations().map((i) => ({
      id: i.id,
      installation_id: i.installation_id,
      name: i.name,
      repositories: i.repositories.map((r) => ({
        id: r.id,
        name: r.name,
        owner: r.owner,
        url: r.url,
        default_branch: r.default_branch,
      })),
    })),
    deployments: store.allDeployments().map(stateDeploymentOf),
    providers: store.providers().map(stateProviderOf),
    tracing_projects: store
      .tracingProjects()
      .map((t) => ({ id: t.id, tenant_id: t.tenant_id, name: t.name, created_at: iso(t.created_at) })),
    uploads: store.uploads(),
  };
}

/** One deployment and its revisions as the state file keeps them: secret values as sha256 hashes. */
function stateDeploymentOf(d: StoredDeployment): StateDeployment {
  return {
    id: d.id,
    tenant_id: d.tenant_id,
    name: d.name,
    source: d.source,
    source_config: d.source_config,
    source_revision_config: d.source_revision_config,
    secrets: d.secrets.map((s) => ({ name: s.name, value_sha256: s.sha256 })),
    secret_references: d.secret_references ? [...d.secret_references] : null,
    status: d.status,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
    latest_revision_id: d.latest_revision_id,
    active_revision_id: d.active_revision_id,
    build_ready_at: d.build_ready_at === null ? null : iso(d.build_ready_at),
    image_version: d.image_version,
    deployment_type: d.deployment_type,
    remote_reconciled: d.remote_reconciled,
    tag_value_ids: [...d.tag_value_ids],
    revisions: d.revisions.map((r) => ({
      id: r.id,
      created_at: iso(r.created_at),
      revision_source: r.revision_source,
      source_revision_config: r.source_revision_config,
      status: r.outcome,
      ends_at: iso(r.ends_at),
      build_started_at: iso(r.build_started_at),
      build_ms: r.build_ms,
      failure: r.failure,
      tracked_packages: r.tracked_packages ? [...r.tracked_packages] : null,
      install_command: r.install_command,
      build_command: r.build_command,
    })),
    is_preview: d.is_preview,
    delete_at: d.delete_at === null ? null : iso(d.delete_at),
    delete_tracing_project: d.delete_tracing_project,
  };
}

/** One OAuth provider as the state file keeps it: the client secret as a sha256 hash. */
function stateProviderOf(p: StoredProvider): StateProvider {
  return {
    id: p.id,
    organization_id: p.organization_id,
    provider_id: p.provider_id,
    name: p.name,
    client_id: p.client_id,
    auth_url: p.auth_url,
    token_url: p.token_url,
    client_secret_sha256: p.client_secret_sha256,
    uses_pkce: p.uses_pkce,
    code_challenge_method: p.code_challenge_method,
    provider_type: p.provider_type,
    mcp_server_url: p.mcp_server_url,
    token_endpoint_auth_method: p.token_endpoint_auth_method,
    authorization_params: { ...p.authorization_params },
    is_dynamic_client: p.is_dynamic_client,
    allowed_redirect_uris: [...p.allowed_redirect_uris],
    created_at: iso(p.created_at),
    updated_at: iso(p.updated_at),
  };
}
