// State file of the emulator (YAML or JSON): the seed it starts from and the state it persists; plus its query schemas.
import { z } from 'zod';
import {
  DEPLOYMENT_NAME_MAX,
  DEPLOYMENT_NAME_PATTERN,
  ProviderType,
  RevisionSource,
  SecretReference,
  SourceRevisionConfig,
  TokenEndpointAuthMethod,
} from '../core/wire/schema.js';
import { AnyDeploymentType, RevisionStatus, ServiceSourceConfig } from './requests.js';

const Uuid = z.uuid();
/** Any uuid-shaped text (as the service's path and query parsing accepts it); compared lowercased. */
export const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const IsoTime = z.iso.datetime({ offset: true });
const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex characters (a sha256)');

export const StateTenant = z.strictObject({
  id: Uuid,
  name: z.string().min(1).default('default'),
  /** Organization owning the tenant's OAuth providers; defaults to the file's organization_id. */
  organization_id: Uuid.optional(),
});
export type StateTenant = z.infer<typeof StateTenant>;

export const StateRepository = z.strictObject({
  id: z.number().int().nonnegative(),
  name: z.string().min(1),
  /** Defaults to the integration's account name. */
  owner: z.string().min(1).optional(),
  /** Defaults to https://codehost.example.com/OWNER/NAME. */
  url: z.string().min(1).optional(),
  default_branch: z.string().min(1).default('main'),
});
export type StateRepository = z.infer<typeof StateRepository>;

export const StateIntegration = z.strictObject({
  id: Uuid,
  installation_id: z.number().int(),
  name: z.string().min(1),
  repositories: z.array(StateRepository).default([]),
});
export type StateIntegration = z.infer<typeof StateIntegration>;

/**
 * A secret of a deployment. A seed may give the value; the emulator persists only its sha256
 * (`value_sha256`), so a state file it wrote never holds a secret value.
 */
export const StateSecret = z
  .strictObject({ name: z.string().min(1), value: z.string().optional(), value_sha256: Sha256.optional() })
  .refine((s) => (s.value === undefined) !== (s.value_sha256 === undefined), {
    message: 'give exactly one of value or value_sha256',
  });
export type StateSecret = z.infer<typeof StateSecret>;

export const StateRevision = z.strictObject({
  id: Uuid,
  created_at: IsoTime,
  revision_source: RevisionSource.nullish(),
  source_revision_config: SourceRevisionConfig.default({}),
  /**
   * The status it has from `ends_at` on (any text: a seed may give one the spec does not list). Absent:
   * DEPLOYED, or for the latest revision of a deployment still building, what --build-fail and
   * --deploy-fail say.
   */
  status: z.string().min(1).optional(),
  /** When it reaches `status`; absent: already (or, for the latest revision still building, at build_ready_at). */
  ends_at: IsoTime.nullish(),
  /** When its build began and how long it takes (QUEUED, BUILDING, DEPLOYING in thirds of it). */
  build_started_at: IsoTime.nullish(),
  build_ms: z.number().int().nonnegative().optional(),
  /** Why it fails (its build log says so): build, deploy or tarball-missing; absent: from its status. */
  failure: z.enum(['build', 'deploy', 'tarball-missing']).nullish(),
  /** What the PATCH that started it carried (the official deploy tool's fields). */
  tracked_packages: z.array(z.string()).nullish(),
  install_command: z.string().nullish(),
  build_command: z.string().nullish(),
});
export type StateRevision = z.infer<typeof StateRevision>;

export const StateDeployment = z.strictObject({
  /** Defaults to a uuid derived from tenant and name (stable across loads). */
  id: Uuid.optional(),
  /** Defaults to the first tenant. */
  tenant_id: Uuid.optional(),
  name: z
    .string()
    .max(DEPLOYMENT_NAME_MAX)
    .regex(DEPLOYMENT_NAME_PATTERN, 'lowercase letters, digits and dashes, starting with a letter'),
  /** One of the spec's sources, or any other text (a source this service version does not know: listed, never written). */
  source: z.string().min(1),
  /** `deployment_type` here wins over the top-level one. */
  source_config: ServiceSourceConfig.default({}),
  source_revision_config: SourceRevisionConfig.default({}),
  secrets: z.array(StateSecret).default([]),
  secret_references: z.array(SecretReference).nullish(),
  /** One of the spec's statuses, or any other text (listed as given). AWAITING_DELETE refuses writes. */
  status: z.string().min(1).default('READY'),
  created_at: IsoTime.optional(),
  updated_at: IsoTime.optional(),
  latest_revision_id: Uuid.nullish(),
  active_revision_id: Uuid.nullish(),
  /**
   * When the latest revision becomes active. Absent: a build of `build_ms` starts at load when the
   * deployment is AWAITING_DATABASE or its active revision is not the latest; null: no build pending.
   */
  build_ready_at: IsoTime.nullish(),
  image_version: z.string().nullish(),
  // Emulator-internal attributes behind the list filters of the spec (not part of the Deployment response).
  deployment_type: AnyDeploymentType.default('dev'),
  remote_reconciled: z.boolean().default(false),
  tag_value_ids: z.array(z.string().min(1)).default([]),
  revisions: z.array(StateRevision).optional(),
  /** A preview deployment: responses carry `is_preview: true`. */
  is_preview: z.boolean().default(false),
  /** With status AWAITING_DELETE: when the deployment is gone; absent or null: it stays AWAITING_DELETE. */
  delete_at: IsoTime.nullish(),
  /** Whether its tracing project goes with it. */
  delete_tracing_project: z.boolean().default(false),
});
export type StateDeployment = z.infer<typeof StateDeployment>;

export const StateProvider = z
  .strictObject({
    id: Uuid.optional(),
    organization_id: Uuid.optional(),
    provider_id: z.string().min(1),
    name: z.string().min(1),
    client_id: z.string().min(1),
    auth_url: z.string().min(1),
    token_url: z.string().min(1),
    /** Seeds only: hashed at load, never kept or written back. */
    client_secret: z.string().optional(),
    client_secret_sha256: Sha256.nullish(),
    uses_pkce: z.boolean().default(false),
    code_challenge_method: z.string().nullable().default('S256'),
    provider_type: ProviderType.nullish(),
    mcp_server_url: z.string().nullish(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.default('client_secret_post'),
    authorization_params: z.record(z.string(), z.unknown()).default({}),
    is_dynamic_client: z.boolean().default(false),
    allowed_redirect_uris: z.array(z.string()).default([]),
    created_at: IsoTime.optional(),
    updated_at: IsoTime.optional(),
  })
  .refine((p) => p.client_secret === undefined || p.client_secret_sha256 == null, {
    message: 'give at most one of client_secret or client_secret_sha256',
  });
export type StateProvider = z.infer<typeof StateProvider>;

/** A tracing project; one exists for every deployment, and a seed may hold some without a deployment. */
export const StateTracingProject = z.strictObject({
  id: Uuid.optional(),
  tenant_id: Uuid.optional(),
  name: z.string().min(1),
  created_at: IsoTime.optional(),
});
export type StateTracingProject = z.infer<typeof StateTracingProject>;

/** A source tarball object path the service handed out, to which deployment, and whether its PUT arrived. */
export const StateUpload = z.strictObject({
  object_path: z.string().min(1),
  deployment_id: Uuid,
  uploaded: z.boolean().default(true),
});
export type StateUpload = z.infer<typeof StateUpload>;

export const StateFile = z.strictObject({
  version: z
    .number()
    .pipe(z.literal(1, { error: 'version must be 1' }))
    .default(1),
  /** The organization owning OAuth providers; defaults to a fixed uuid. */
  organization_id: Uuid.optional(),
  /** Workspaces; the first is used when a request carries no X-Tenant-Id. Defaults to one tenant. */
  tenants: z.array(StateTenant).min(1).optional(),
  integrations: z.array(StateIntegration).default([]),
  deployments: z.array(StateDeployment).default([]),
  providers: z.array(StateProvider).default([]),
  tracing_projects: z.array(StateTracingProject).default([]),
  /** Source tarball object paths handed out by POST /v2/deployments/{id}/upload-url; only these are accepted by a PATCH. */
  uploads: z.array(StateUpload).default([]),
});
export type StateFile = z.infer<typeof StateFile>;
/** What a seed may leave out: every defaulted field. */
export type EmulatorSeed = z.input<typeof StateFile>;

// ---------------------------------------------------------------- query parameters of GET /v2/deployments

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** A refinement whose 422 item carries the given FastAPI error type. */
function typed(check: (v: string) => boolean, msg: string, type: string): z.ZodString {
  return z.string().refine(check, { error: msg, params: { type } });
}

const IntText = typed(
  (v) => /^[+-]?\d+$/.test(v),
  'Input should be a valid integer, unable to parse string as an integer',
  'int_parsing',
);
/** A uuid-shaped string, lowercased. */
export const UuidText = typed((v) => UUID_SHAPE.test(v), 'Input should be a valid UUID', 'uuid_parsing').transform(
  (v) => v.toLowerCase(),
);
const BOOL_TRUE = ['true', '1', 'yes', 'on', 't', 'y'];
const BOOL_FALSE = ['false', '0', 'no', 'off', 'f', 'n'];

export const ListDeploymentsQuery = z.object({
  limit: IntText.transform(Number).pipe(z.number().int().min(1).max(100)).default(20),
  offset: IntText.transform(Number).pipe(z.number().int().min(0)).default(0),
  name_contains: z.string().optional(),
  status: z.string().optional(),
  remote_reconciled: typed(
    (v) => BOOL_TRUE.includes(v.toLowerCase()) || BOOL_FALSE.includes(v.toLowerCase()),
    'Input should be a valid boolean, unable to interpret input',
    'bool_parsing',
  )
    .transform((v) => BOOL_TRUE.includes(v.toLowerCase()))
    .optional(),
  tag_value_ids: z.string().transform(splitList).optional(),
  image_version: z.string().optional(),
  deployment_type: AnyDeploymentType.optional(),
  deployment_ids: z.string().transform(splitList).pipe(z.array(UuidText)).optional(),
});
export type ListDeploymentsQuery = z.infer<typeof ListDeploymentsQuery>;

// ---------------------------------------------------------------- query parameters of GET /v2/deployments/{id}/revisions

export const ListRevisionsQuery = z.object({
  limit: IntText.transform(Number).pipe(z.number().int().min(1).max(100)).default(20),
  offset: IntText.transform(Number).pipe(z.number().int().min(0)).default(0),
  status: RevisionStatus.optional(),
});
export type ListRevisionsQuery = z.infer<typeof ListRevisionsQuery>;
