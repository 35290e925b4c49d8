// Wire schemas of the Deployment and OAuth Provider Service (its interface and docs/against-the-real-service.md), shared by api, emulator and core.
import { z } from 'zod';
import { ResourceSpec } from './resource-spec-schema.js';

// ---------------------------------------------------------------- enums

export const SOURCES = [
  'codehost',
  'external_docker',
  'internal_docker',
  'internal_source',
  'internal_template',
] as const;
export const Source = z.enum(SOURCES);
export type Source = z.infer<typeof Source>;

export const REVISION_SOURCES = ['codehost', 'internal_docker', 'internal_source'] as const;
export const RevisionSource = z.enum(REVISION_SOURCES);
export type RevisionSource = z.infer<typeof RevisionSource>;

export const STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN'] as const;
export const DeploymentStatus = z.enum(STATUSES);
export type DeploymentStatus = z.infer<typeof DeploymentStatus>;

/** The tiers a manifest may choose (the spec's list filter enum). */
export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;
export const DeploymentType = z.enum(DEPLOYMENT_TYPES);
export type DeploymentType = z.infer<typeof DeploymentType>;

/** Every tier the service knows (docs/against-the-real-service.md §2: newer services add dev_zero and dev_free_zero). */
export const SERVICE_DEPLOYMENT_TYPES = [...DEPLOYMENT_TYPES, 'dev_zero', 'dev_free_zero'] as const;
export const ServiceDeploymentType = z.enum(SERVICE_DEPLOYMENT_TYPES);
export type ServiceDeploymentType = z.infer<typeof ServiceDeploymentType>;

/** The tier the service chooses when a codehost create leaves deployment_type out (docs/against-the-real-service.md §2). */
export const DEFAULT_DEPLOYMENT_TYPE: DeploymentType = 'prod';

export const PROVIDER_TYPES = ['microsoft', 'salesforce', 'slack', 'x'] as const;
export const ProviderType = z.enum(PROVIDER_TYPES);
export type ProviderType = z.infer<typeof ProviderType>;

export const TOKEN_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;
export const TokenEndpointAuthMethod = z.enum(TOKEN_AUTH_METHODS);
export type TokenEndpointAuthMethod = z.infer<typeof TokenEndpointAuthMethod>;

/** Deployment names: lowercase letters, digits and dashes, starting with a letter (docs/against-the-real-service.md §2). */
export const DEPLOYMENT_NAME_PATTERN = /^[a-z][a-z0-9-]*$/;
export const DEPLOYMENT_NAME_MAX = 63;

/** The name under that rule nearest to `name` (lowercased, other characters as dashes), or undefined when that does not start with a letter. */
export function validNameLike(name: string): string | undefined {
  const like = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+$/, '')
    .slice(0, DEPLOYMENT_NAME_MAX);
  return /^[a-z]/.test(like) && like !== name ? like : undefined;
}

// ---------------------------------------------------------------- small pieces (strict: used for requests and manifests)

export const Secret = z.strictObject({ name: z.string().min(1), value: z.string() });
export type Secret = z.infer<typeof Secret>;

export const SecretReference = z.strictObject({
  name: z.string().min(1),
  secret_name: z.string().min(1),
  secret_key: z.string().min(1),
});
export type SecretReference = z.infer<typeof SecretReference>;

export const SourceConfig = z.strictObject({
  integration_id: z.uuid().nullish(),
  repo_url: z.string().nullish(),
  build_on_push: z.boolean().nullish(),
  custom_url: z.string().nullish(),
  resource_spec: ResourceSpec.nullish(),
  listener_id: z.uuid().nullish(),
  listener_config: z.strictObject({ k8s_namespace: z.string().nullish() }).nullish(),
  install_command: z.string().nullish(),
  build_command: z.string().nullish(),
  /** codehost only: the tier, fixed at creation (docs/against-the-real-service.md §2). */
  deployment_type: ServiceDeploymentType.nullish(),
});
export type SourceConfig = z.infer<typeof SourceConfig>;

/** SourceConfig fields that cannot be changed once set (docs/against-the-real-service.md §3: PATCH answers 400). */
export const IMMUTABLE_SOURCE_CONFIG_FIELDS = ['integration_id', 'repo_url', 'listener_id'] as const;

/**
 * Every source_config path fixed at creation (docs/against-the-real-service.md §3: a change is refused with 400), as dotted paths:
 * the fields above, the tier and the listener's namespace.
 */
export const IMMUTABLE_SOURCE_CONFIG_PATHS = [
  ...IMMUTABLE_SOURCE_CONFIG_FIELDS,
  'deployment_type',
  'listener_config.k8s_namespace',
] as const;

/** source_config fields a create sends and a PATCH never does (the tier: a change is blocked instead). */
export const CREATE_ONLY_SOURCE_CONFIG_FIELDS = ['deployment_type'] as const;

/** SourceRevisionConfig as sent in requests: repo_commit_sha appears in responses only. */
export const SourceRevisionConfig = z.strictObject({
  repo_ref: z.string().nullish(),
  graph_config_path: z.string().nullish(),
  image_uri: z.string().nullish(),
  source_tarball_path: z.string().nullish(),
});
export type SourceRevisionConfig = z.infer<typeof SourceRevisionConfig>;

// ---------------------------------------------------------------- requests (strict)

/** POST /v2/deployments: the real service requires all five of name, source, source_config, source_revision_config, secrets. */
export const CreateDeploymentRequest = z.strictObject({
  name: z.string(),
  source: Source,
  source_config: SourceConfig,
  source_revision_config: SourceRevisionConfig,
  secrets: z.array(Secret),
  secret_references: z.array(SecretReference).nullish(),
});
export type CreateDeploymentRequest = z.infer<typeof CreateDeploymentRequest>;

export const PatchDeploymentRequest = z.strictObject({
  revision_source: RevisionSource.nullish(),
  source_config: SourceConfig.nullish(),
  source_revision_config: SourceRevisionConfig.nullish(),
  secrets: z.array(Secret).nullish(),
  secret_references: z.array(SecretReference).nullish(),
});
export type PatchDeploymentRequest = z.infer<typeof PatchDeploymentRequest>;

export const CreateProviderRequest = z.strictObject({
  provider_id: z.string().min(1),
  name: z.string().min(1),
  client_id: z.string().min(1),
  auth_url: z.string().min(1),
  token_url: z.string().min(1),
  client_secret: z.string().nullish(),
  uses_pkce: z.boolean().optional(),
  code_challenge_method: z.string().optional(),
  provider_type: ProviderType.nullish(),
  token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
  authorization_params: z.record(z.string(), z.unknown()).optional(),
  allowed_redirect_uris: z.array(z.string()).optional(),
});
export type CreateProviderRequest = z.infer<typeof CreateProviderRequest>;

export const McpDiscoverRequest = z.strictObject({
  provider_id: z.string().min(1),
  name: z.string().min(1),
  mcp_server_url: z.string().min(1),
});
export type McpDiscoverRequest = z.infer<typeof McpDiscoverRequest>;

/** PATCH /v2/auth/providers/{provider_id} (beyond the interface, docs/against-the-real-service.md §6, §7): the fields it updates; absent keeps. */
export const PatchProviderRequest = z.strictObject({
  name: z.string().min(1).optional(),
  client_id: z.string().min(1).optional(),
  client_secret: z.string().optional(),
  auth_url: z.string().min(1).optional(),
  token_url: z.string().min(1).optional(),
  uses_pkce: z.boolean().optional(),
  code_challenge_method: z.string().optional(),
});
export type PatchProviderRequest = z.infer<typeof PatchProviderRequest>;

// ---------------------------------------------------------------- responses (lenient: a newer service may add fields or enum values)

export const LiveSecret = z.looseObject({ name: z.string(), value: z.string().nullish() });
export type LiveSecret = z.infer<typeof LiveSecret>;

/**
 * A deployment as the service answers it. Tolerant: unknown fields pass, `source` and `status` are any text (a
 * newer service's value is kept and shown, never fails a listing), `tenant_id` may be missing (older services).
 */
export const Deployment = z.looseObject({
  id: z.string(),
  tenant_id: z.string().nullish(),
  name: z.string(),
  /** A source this client does not know is tolerated; plan() blocks changes to such a deployment. */
  source: z.string(),
  source_config: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((v) => v ?? {}),
  source_revision_config: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((v) => v ?? {}),
  secrets: z
    .array(LiveSecret)
    .nullish()
    .transform((v) => v ?? []),
  secret_references: z
    .array(z.looseObject({ name: z.string(), secret_name: z.string(), secret_key: z.string() }))
    .nullish(),
  created_at: z.string(),
  updated_at: z.string(),
  status: z.string(),
  latest_revision_id: z.string().nullish(),
  active_revision_id: z.string().nullish(),
  image_version: z.string().nullish(),
  /** Beyond the spec: a preview deployment, which converge never writes to. Anything but true reads as false. */
  is_preview: z
    .unknown()
    .transform((v) => v === true)
    .optional(),
});
export type Deployment = z.infer<typeof Deployment>;

export const ListDeploymentsResponse = z.looseObject({
  resources: z.array(Deployment),
  offset: z.number().int(),
});
export type ListDeploymentsResponse = z.infer<typeof ListDeploymentsResponse>;

/**
 * A revision of a deployment (beyond the spec: GET /v2/deployments/{id}/revisions[/{revision_id}], docs/against-the-real-service.md §4, §6).
 * Tolerant: `status` is any text (a newer service's value reads as progressing), unknown fields pass.
 */
export const Revision = z.looseObject({
  id: z.string(),
  status: z.string(),
  created_at: z.string().nullish(),
  updated_at: z.string().nullish(),
});
export type Revision = z.infer<typeof Revision>;

export const ListRevisionsResponse = z.looseObject({
  resources: z.array(Revision),
  offset: z.number().int(),
});
export type ListRevisionsResponse = z.infer<typeof ListRevisionsResponse>;

/** The body of the log endpoints (beyond the spec: POST /v1/projects/{id}/…_logs, against-the-real-service.md). */
export interface LogRequest {
  limit?: number;
  order?: 'asc' | 'desc';
  /** The previous answer's next_offset. */
  offset?: string;
  level?: string;
  query?: string;
  /** ISO 8601. */
  start_time?: string;
  end_time?: string;
}

/** One log line as the service answers it. Tolerant: the timestamp is ms since the epoch or ISO text, the level may be missing. */
export const LogEntry = z.looseObject({
  id: z.union([z.string(), z.number()]).nullish(),
  timestamp: z.union([z.number(), z.string()]).nullish(),
  level: z.string().nullish(),
  message: z
    .string()
    .nullish()
    .transform((v) => v ?? ''),
});
export type LogEntry = z.infer<typeof LogEntry>;

export const LogPage = z.looseObject({
  logs: z
    .array(LogEntry)
    .nullish()
    .transform((v) => v ?? []),
  next_offset: z.union([z.string(), z.number()]).nullish(),
});
export type LogPage = z.infer<typeof LogPage>;

export const OAuthProvider = z.looseObject({
  id: z.string(),
  organization_id: z.string(),
  provider_id: z.string(),
  name: z.string(),
  client_id: z.string(),
  auth_url: z.string(),
  token_url: z.string(),
  uses_pkce: z.boolean(),
  code_challenge_method: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  provider_type: z.string().nullish(),
  mcp_server_url: z.string().nullish(),
  token_endpoint_auth_method: z.string().optional(),
  authorization_params: z.record(z.string(), z.unknown()).optional(),
  is_dynamic_client: z.boolean().optional(),
  allowed_redirect_uris: z.array(z.string()).optional(),
});
export type OAuthProvider = z.infer<typeof OAuthProvider>;

export const Integration = z.looseObject({
  id: z.string(),
  installation_id: z.number().int(),
  name: z.string(),
});
export type Integration = z.infer<typeof Integration>;

export const Repository = z.looseObject({
  host_integration_id: z.string(),
  id: z.number().int(),
  name: z.string(),
  owner: z.string(),
  url: z.string(),
  default_branch: z.string(),
});
export type Repository = z.infer<typeof Repository>;

/** Error bodies (docs/against-the-real-service.md §1). */
export const ValidationIssue = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export type ValidationIssue = z.infer<typeof ValidationIssue>;
export const ErrorBody = z.object({ detail: z.union([z.string(), z.array(ValidationIssue)]) });
export type ErrorBody = z.infer<typeof ErrorBody>;
