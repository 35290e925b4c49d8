// Reads the state file (schema.ts) into the store's records: parsing, validation, and seeding with defaults.
import { parse as parseYaml } from 'yaml';
import { ConvergeError } from '../core/errors.js';
import { StateFile, type StateDeployment, type StateRevision } from './schema.js';
import {
  compactFields,
  compactSourceConfig,
  derivedUuid,
  sha256Hex,
  type StoredDeployment,
  type StoredIntegration,
  type StoredProvider,
  type StoredRevision,
  type StoredTenant,
  type StoredTracingProject,
} from './records.js';
import type { RevisionOutcome, SecretsPatchMode } from './merge.js';
import type { AnyDeploymentType } from './requests.js';
import { EmulatorStore } from './store.js';

/** What seeding needs besides the file: the time, the build time and the write knobs. */
export interface StoreOptions {
  clock: () => number;
  buildMs: number;
  file?: string;
  secretsPatch?: SecretsPatchMode;
  lenient?: boolean;
  outcome?: (name: string) => RevisionOutcome;
  /** --any-tarball-path. */
  anyTarballPath?: boolean;
}

/** The state file is unreadable, not YAML/JSON, or breaks its schema. */
export class EmulatorStateError extends ConvergeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_EMULATOR_STATE', message, options);
  }
}

const DEFAULT_ORGANIZATION = derivedUuid('organization', 'default');
const DEFAULT_TENANT = derivedUuid('tenant', 'default');

/** Parses state file text (YAML, which includes JSON) into a seed; errors name the file and the field. */
export function parseStateText(text: string, file: string): StateFile {
  let data: unknown;
  try {
    data = parseYaml(text, { maxAliasCount: 100 }) ?? {};
  } catch (error) {
    throw new EmulatorStateError(`state file ${file}: ${(error as Error).message.split('\n')[0]}`);
  }
  return validateSeed(data, file);
}

/** Validates a seed (from a file or given in memory). */
export function validateSeed(data: unknown, file = 'seed'): StateFile {
  const parsed = StateFile.safeParse(data);
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0]!;
  const where = first.path.length > 0 ? first.path.map(String).join('.') : '(top level)';
  const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more problems)` : '';
  throw new EmulatorStateError(`state file ${file}: ${where}: ${first.message}${more}`);
}

function time(iso: string | undefined | null, fallback: number): number {
  return iso ? Date.parse(iso) : fallback;
}

function seedRevisions(
  d: StateDeployment,
  ids: { latest: string; active: string | null },
  createdAt: number,
  buildReadyAt: number | null,
  revisionConfig: Record<string, unknown>,
  options: SeedContext,
): StoredRevision[] {
  const given: StateRevision[] = d.revisions ?? [
    ...(ids.active !== null && ids.active !== ids.latest
      ? [{ id: ids.active, created_at: new Date(createdAt).toISOString(), source_revision_config: revisionConfig }]
      : []),
    { id: ids.latest, created_at: new Date(createdAt).toISOString(), source_revision_config: revisionConfig },
  ];
  return given.map((r) => {
    const building = r.id === ids.latest && buildReadyAt !== null;
    const endsAt = r.ends_at ? Date.parse(r.ends_at) : building ? buildReadyAt : Date.parse(r.created_at);
    const buildMs = r.build_ms ?? (building ? options.buildMs : 0);
    return {
      id: r.id,
      created_at: Date.parse(r.created_at),
      revision_source: r.revision_source ?? null,
      source_revision_config: compactFields(r.source_revision_config),
      build_started_at: r.build_started_at ? Date.parse(r.build_started_at) : endsAt - buildMs,
      build_ms: buildMs,
      ends_at: endsAt,
      outcome: r.status ?? (building ? options.outcome(d.name) : 'DEPLOYED'),
      failure: r.failure ?? failureOf(r.status ?? (building ? options.outcome(d.name) : 'DEPLOYED')),
      tracked_packages: r.tracked_packages ?? null,
      install_command: r.install_command ?? null,
      build_command: r.build_command ?? null,
    };
  });
}

/** Why a seeded revision of this status fails, when its seed does not say. */
function failureOf(status: string): StoredRevision['failure'] {
  if (status === 'BUILD_FAILED') return 'build';
  if (status === 'DEPLOY_FAILED' || status === 'CREATE_FAILED') return 'deploy';
  return null;
}

interface SeedContext {
  now: number;
  buildMs: number;
  outcome: (name: string) => RevisionOutcome;
  file: string;
}

function seedDeployment(d: StateDeployment, index: number, tenantId: string, options: SeedContext): StoredDeployment {
  const { now, buildMs } = options;
  const createdAt = time(d.created_at, now - (1_000_000 - index) * 1000);
  const latest = d.latest_revision_id ?? derivedUuid('revision', tenantId, d.name, '1');
  const building =
    d.status === 'AWAITING_DATABASE' || (d.active_revision_id !== undefined && d.active_revision_id !== latest);
  const active =
    d.active_revision_id !== undefined ? d.active_revision_id : d.status === 'AWAITING_DATABASE' ? null : latest;
  const buildReadyAt =
    d.build_ready_at === undefined
      ? building
        ? now + buildMs
        : null
      : d.build_ready_at === null
        ? null
        : Date.parse(d.build_ready_at);
  const sourceConfig = compactSourceConfig(d.source_config);
  const revisionConfig = compactFields(d.source_revision_config);
  // A seed's source_config.deployment_type wins for every source; codehost deployments always echo one.
  const deploymentType: AnyDeploymentType =
    (sourceConfig.deployment_type as AnyDeploymentType | undefined) ?? d.deployment_type;
  if (d.source === 'codehost') sourceConfig.deployment_type = deploymentType;
  return {
    id: d.id ?? derivedUuid('deployment', tenantId, d.name),
    tenant_id: tenantId,
    name: d.name,
    source: d.source,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets: d.secrets.map((s) =>
      s.value !== undefined
        ? { name: s.name, sha256: sha256Hex(s.value), value: s.value }
        : { name: s.name, sha256: s.value_sha256! },
    ),
    secret_references: d.secret_references ?? null,
    status: d.status,
    created_at: createdAt,
    updated_at: time(d.updated_at, createdAt),
    latest_revision_id: latest,
    active_revision_id: active,
    build_ready_at: buildReadyAt,
    image_version: d.image_version ?? null,
    deployment_type: deploymentType,
    remote_reconciled: d.remote_reconciled,
    tag_value_ids: d.tag_value_ids,
    revisions: seedRevisions(d, { latest, active }, createdAt, buildReadyAt, revisionConfig, options),
    is_preview: d.is_preview,
    delete_at: d.delete_at ? Date.parse(d.delete_at) : null,
    delete_tracing_project: d.delete_tracing_project,
  };
}

/** The tenant id a record names (the first tenant when it names none), lower-cased; `where` names the record in errors. */
type TenantOf = (id: string | undefined, where: string) => string;

/** The tenant id a record names, checked against the tenants of the state file. */
function tenantResolver(tenants: StoredTenant[], file: string): TenantOf {
  const tenantIds = new Set(tenants.map((t) => t.id));
  return (id, where) => {
    const tenantId = (id ?? tenants[0]!.id).toLowerCase();
    if (!tenantIds.has(tenantId))
      throw new EmulatorStateError(`state file ${file}: ${where}: tenant ${tenantId} is not listed under tenants`);
    return tenantId;
  };
}

/** The code-host integrations of the state file; a repository without an owner takes the integration's name, without a URL one on codehost.example.com. */
function seedIntegrations(state: StateFile): StoredIntegration[] {
  return state.integrations.map((i) => ({
    id: i.id.toLowerCase(),
    installation_id: i.installation_id,
    name: i.name,
    repositories: i.repositories.map((r) => {
      const owner = r.owner ?? i.name;
      return {
        host_integration_id: i.id.toLowerCase(),
        id: r.id,
        name: r.name,
        owner,
        url: r.url ?? `https://codehost.example.com/${owner}/${r.name}`,
        default_branch: r.default_branch,
      };
    }),
  }));
}

/** Throws when two deployments share a name in a tenant, or an id. */
function checkUniqueDeployments(deployments: StoredDeployment[], file: string): void {
  const seen = new Map<string, string>();
  deployments.forEach((d, index) => {
    for (const key of [`name "${d.name}" in tenant ${d.tenant_id}`, `id ${d.id}`]) {
      if (seen.has(key))
        throw new EmulatorStateError(
          `state file ${file}: deployments.${index}: ${key} is also used by ${seen.get(key)}`,
        );
      seen.set(key, `deployments.${index}`);
    }
  });
}

/** The seeded tracing projects, plus one of each deployment's name where the seed has none. */
function seedTracingProjects(
  state: StateFile,
  deployments: StoredDeployment[],
  tenantOf: TenantOf,
  now: number,
): StoredTracingProject[] {
  const projects = new Map<string, StoredTracingProject>();
  state.tracing_projects.forEach((p, index) => {
    const tenantId = tenantOf(p.tenant_id, `tracing_projects.${index}`);
    const owner = deployments.find((d) => d.tenant_id === tenantId && d.name === p.name);
    projects.set(`${tenantId}\0${p.name}`, {
      id: p.id ?? derivedUuid('tracing-project', tenantId, p.name),
      tenant_id: tenantId,
      name: p.name,
      created_at: time(p.created_at, owner?.created_at ?? now),
      deployment_id: owner?.id ?? null,
    });
  });
  for (const d of deployments) {
    const key = `${d.tenant_id}\0${d.name}`;
    if (!projects.has(key)) {
      projects.set(key, {
        id: derivedUuid('tracing-project', d.tenant_id, d.name),
        tenant_id: d.tenant_id,
        name: d.name,
        created_at: d.created_at,
        deployment_id: d.id,
      });
    }
  }
  return [...projects.values()];
}

/** The seeded providers (client secrets hashed); throws when a provider_id appears twice in an organization. */
function seedProviders(state: StateFile, organizationId: string, file: string, now: number): StoredProvider[] {
  const providerKeys = new Set<string>();
  return state.providers.map((p, index) => {
    const orgId = (p.organization_id ?? organizationId).toLowerCase();
    const key = `${orgId}\0${p.provider_id}`;
    if (providerKeys.has(key))
      throw new EmulatorStateError(
        `state file ${file}: providers.${index}: provider_id "${p.provider_id}" appears twice`,
      );
    providerKeys.add(key);
    const createdAt = time(p.created_at, now);
    return {
      id: p.id ?? derivedUuid('provider', orgId, p.provider_id),
      organization_id: orgId,
      provider_id: p.provider_id,
      name: p.name,
      client_id: p.client_id,
      auth_url: p.auth_url,
      token_url: p.token_url,
      client_secret_sha256:
        p.client_secret !== undefined ? sha256Hex(p.client_secret) : (p.client_secret_sha256 ?? null),
      uses_pkce: p.uses_pkce,
      code_challenge_method: p.code_challenge_method,
      provider_type: p.provider_type ?? null,
      mcp_server_url: p.mcp_server_url ?? null,
      token_endpoint_auth_method: p.token_endpoint_auth_method,
      authorization_params: p.authorization_params,
      is_dynamic_client: p.is_dynamic_client,
      allowed_redirect_uris: p.allowed_redirect_uris,
      created_at: createdAt,
      updated_at: time(p.updated_at, createdAt),
    };
  });
}

/** Builds a store from a validated state file; checks ids and names are unique and tenants exist. */
export function storeFromState(state: StateFile, options: StoreOptions): EmulatorStore {
  const file = options.file ?? 'seed';
  const now = options.clock();
  const organizationId = state.organization_id ?? DEFAULT_ORGANIZATION;
  const tenants: StoredTenant[] = (state.tenants ?? [{ id: DEFAULT_TENANT, name: 'default' }]).map((t) => ({
    id: t.id.toLowerCase(),
    name: t.name,
    organization_id: t.organization_id ?? organizationId,
  }));
  const tenantOf = tenantResolver(tenants, file);
  const integrations = seedIntegrations(state);
  const outcome = options.outcome ?? ((): RevisionOutcome => 'DEPLOYED');
  const seedContext: SeedContext = { now, buildMs: options.buildMs, outcome, file };
  const deployments = state.deployments.map((d, index) =>
    seedDeployment(d, index, tenantOf(d.tenant_id, `deployments.${index}`), seedContext),
  );
  checkUniqueDeployments(deployments, file);
  const tracingProjects = seedTracingProjects(state, deployments, tenantOf, now);
  const providers = seedProviders(state, organizationId, file, now);
  return new EmulatorStore({
    organizationId: organizationId.toLowerCase(),
    tenants,
    integrations,
    deployments,
    providers,
    tracingProjects,
    clock: options.clock,
    buildMs: options.buildMs,
    secretsPatch: options.secretsPatch ?? 'merge',
    lenient: options.lenient ?? false,
    outcome,
    uploads: state.uploads,
    anyTarballPath: options.anyTarballPath ?? false,
  });
}
