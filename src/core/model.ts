// Desired resources (from manifests), applied-state records and the plan object (docs/contracts.md §1, §3).
import type {
  Deployment as LiveDeployment,
  OAuthProvider as LiveProvider,
  ProviderType,
  SecretReference,
  Source,
  SourceConfig,
  SourceRevisionConfig,
  TokenEndpointAuthMethod,
} from './wire/schema.js';
import type { ManifestVersion } from './manifest-version.js';
import type { HealthCondition } from './health.js';

export type { LiveDeployment, LiveProvider };

/**
 * A deployment as a listing keeps it for a plan (src/core/kinds/deployment/listed.ts): the fields the plan, the
 * decision and the rollout follower read. A deployment read by id (the whole `LiveDeployment`) is one too.
 */
export type ListedDeployment = Pick<
  LiveDeployment,
  | 'id'
  | 'name'
  | 'source'
  | 'status'
  | 'updated_at'
  | 'source_config'
  | 'source_revision_config'
  | 'secrets'
  | 'secret_references'
  | 'latest_revision_id'
  | 'active_revision_id'
  | 'is_preview'
>;

export interface SourceLocation {
  /** Manifest path relative to the manifest directory, forward slashes. */
  file: string;
  line: number;
  column: number;
}

/** `file:line:column`, as messages name a place in the manifests. */
export function formatLocation(at: SourceLocation): string {
  return `${at.file}:${at.line}:${at.column}`;
}

/** Where a secret's value comes from. `value` (a literal) is only accepted with --allow-literal-secrets. */
export type SecretSource = { env: string } | { file: string } | { value: string };

export interface SecretRef {
  name: string;
  from: SecretSource;
}

/**
 * Where a secret's value comes from, by name only: the environment variable, the file path, or a literal written in
 * the manifest (never its value). What the applied record keeps of a write and what a plan shows of a moved secret.
 */
export type SecretSourceName = { env: string } | { file: string } | { literal: true };

export type DriftPolicy = 'heal' | 'report';

interface ResourceBase {
  /** metadata.name: the deployment name, or the provider_id. */
  name: string;
  location: SourceLocation;
  /** metadata.annotations["converge/suspend"] == "true": shown in plans, never applied. */
  suspend: boolean;
  /** metadata.annotations["converge/drift"]: per-resource drift policy, when given. */
  driftPolicy?: DriftPolicy;
  /** metadata.annotations["converge/adopt"] == "true": converge may take over a live resource it did not create (adopt: explicit). */
  adopt?: true;
  /** metadata.annotations["converge/prune"] == "false": never deleted by --prune once its manifest is gone. */
  keep?: true;
  /** metadata.annotations["converge/wave"] when not 0: the rollout wave (docs/rollouts.md); absent is wave 0. */
  wave?: number;
  /**
   * Where each secret's source is written (secret name, or "client_secret" for a manual provider), so a
   * secret that cannot be resolved is reported at its file:line:column. Set by the manifest loader.
   */
  secretLocations?: Record<string, SourceLocation>;
}

export interface DeploymentSpec {
  source: Source;
  /** `owner/name` shortcut for codehost; resolved at the edge into source_config/source_revision_config. */
  repository?: string;
  /** Code-host account name that picks among several installations holding `repository`. */
  integration?: string;
  source_config?: SourceConfig;
  source_revision_config?: SourceRevisionConfig;
  secrets?: SecretRef[];
  secret_references?: SecretReference[];
}

export interface DeploymentResource extends ResourceBase {
  kind: 'Deployment';
  spec: DeploymentSpec;
  /** Where spec.repository is written, for diagnostics about resolving it. */
  repositoryLocation?: SourceLocation;
}

export interface ManualProviderSpec {
  mode: 'manual';
  name: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  client_secret?: SecretSource;
  uses_pkce?: boolean;
  code_challenge_method?: string;
  provider_type?: ProviderType | null;
  token_endpoint_auth_method?: TokenEndpointAuthMethod;
  authorization_params?: Record<string, unknown>;
  allowed_redirect_uris?: string[];
}

export interface McpProviderSpec {
  mode: 'mcp';
  name: string;
  mcp_server_url: string;
}

/** The endpoints read-only MCP discovery found for an mcp provider (the plan's preview, carried into its job). */
export interface DiscoveredEndpoints {
  auth_url: string;
  token_url: string;
  uses_pkce: boolean;
}

export interface ProviderResource extends ResourceBase {
  kind: 'OAuthProvider';
  spec: ManualProviderSpec | McpProviderSpec;
  /**
   * mcp mode: what discovery of spec.mcp_server_url found when this resource was planned (set by src/observe), so
   * the job compares the live provider's endpoints with the same values the plan showed. Absent: not discovered.
   */
  discovered?: DiscoveredEndpoints;
}

/**
 * What the service told about its OAuth providers (GET /v2/auth/providers, beyond the spec): the list, or that
 * it cannot list them (it answered 404 or 405: a service as the spec describes it), with the note the plan shows.
 */
export type LiveProviders = { readable: true; providers: LiveProvider[] } | { readable: false; note: string };

/**
 * The live side of one plan: what the service's listings returned, one field per listing (read by src/observe/live.ts);
 * each kind's live hooks (src/core/kinds, `liveView`) read their own part of it.
 */
export interface LiveState {
  /** Every live deployment (GET /v2/deployments, page by page; of the name prefix, when given). */
  deployments: ListedDeployment[];
  /**
   * The live OAuth providers (GET /v2/auth/providers, beyond the spec), or that the service cannot list them. Absent
   * when none was listed (no manifest declares a provider): providers are then planned from the applied records.
   */
  providers?: LiveProviders;
}

export type DesiredResource = DeploymentResource | ProviderResource;
export type ResourceKind = DesiredResource['kind'];

/** `Deployment/support-agent`: the key a resource is known by in jobs, Redis and status. */
export function resourceKey(kind: ResourceKind, name: string): string {
  return `${kind}/${name}`;
}

/** The name in a resource key (`KIND/NAME`, resourceKey). */
export function resourceName(key: string): string {
  return key.slice(key.indexOf('/') + 1);
}

/** A resource whose manifest is invalid (or collides): it is planned as `blocked`, never applied, never orphaned. */
export interface BlockedResource {
  kind: ResourceKind;
  name: string;
  location: SourceLocation;
  reason: string;
}

/**
 * What the answer to one write said, as the job's result (src/core/kinds/ports.ts SyncResult) states it: what the write
 * did, whether it started a revision, the live id and its latest revision. Ids and a flag only, never a value.
 */
export interface WriteAnswer {
  outcome: 'created' | 'updated' | 'adopted';
  new_revision: boolean;
  deploymentId?: string;
  latestRevisionId?: string | null;
}

/**
 * What converge last applied to a resource (kept in Redis by the queue; read-only for plan).
 * Holds hashes only, never values.
 */
export interface AppliedRecord {
  /** secret name -> secretHash() of the value last written. Deployments, and a provider's client_secret. */
  secrets: Record<string, string>;
  /**
   * secret name -> where the value last written came from (names only, never a value); absent in records of older
   * versions and for a write whose sources are not known (a lost answer settled later): a plan then shows no source.
   */
  secretSources?: Record<string, SecretSourceName>;
  /** objectHash() of the provider definition last created (secret values as hashes). Providers only. */
  definitionHash?: string;
  /**
   * Deployments: declared field path (e.g. source_config.listener_config) -> hashes of what the last write of it
   * sent and what the service answered (the three-way comparison). Absent in records of older versions: no
   * three-way knowledge, every field is compared with live state alone.
   */
  fields?: Record<string, FieldHashes>;
  /** The fingerprint of the desired state the last write came from (its job's), when the job carried one. */
  desired?: string;
  /** The manifests the last write came from (git commit or content hash), when its job carried them. */
  manifestVersion?: ManifestVersion;
  /** ISO time of the write. */
  appliedAt: string;
  /**
   * Which live resource converge owns under this key and how it came to: `created` it, or `adopted` one that existed
   * (src/core/ownership.ts). Absent in records of older versions: converge wrote to it, the id is not known.
   */
  ownership?: Ownership;
  /**
   * The job whose write this is: a former leader's job dropped before its result was folded is folded from it
   * (src/jobs/runner/unfolded-write.ts).
   */
  jobId?: string;
  /**
   * What the service's answer to that write said, as its job's result states it: a former leader's job whose result
   * was never folded is folded from it, with no read of the service (src/jobs/runner/unfolded-write.ts). Absent: the
   * kind's sync records none, or an older converge wrote the record.
   */
  answer?: WriteAnswer;
  /** The manifest last declared converge/prune: "false" (kept apart from the record; see AppliedStateStore.recordKeep). */
  keep?: true;
  /**
   * The manifest file (relative path) that last declared it, kept apart from the record (AppliedStateStore.recordFiles):
   * prune tells a file that now declares nothing from a removed one. Absent: not known (an older converge wrote it).
   */
  file?: string;
  /**
   * The converge/wave its manifest last declared, when not 0 (kept apart from the record: AppliedStateStore.recordWaves):
   * prune deletes in descending wave order once the manifest is gone (docs/rollouts.md).
   */
  wave?: number;
}

/** How converge came to own a live resource, and that resource's id (a deployment's id; a provider's provider_id). */
export interface Ownership {
  origin: 'created' | 'adopted';
  id: string;
}

/** fieldHash() (src/core/kinds/deployment/three-way.ts) of a field as converge sent it and as the service answered it. */
export interface FieldHashes {
  sent: string;
  answered: string;
}

// ---------------------------------------------------------------- the plan (docs/contracts.md §3)

/**
 * `adopt`: the first write to (or taking over of) a live resource converge did not create; `delete`: a resource
 * converge owns whose manifest is gone, deleted with --prune.
 */
export type Action = 'create' | 'update' | 'adopt' | 'delete' | 'noop' | 'orphan' | 'blocked';

export interface FieldChange {
  /** Dotted path, e.g. source_config.resource_spec.max_scale, secrets.OPENAI_API_KEY. */
  path: string;
  before: unknown;
  after: unknown;
  /** True for secret values: before/after are then the string "(sensitive)". */
  sensitive: boolean;
  /**
   * True for a secret written only because its live value cannot be compared (the service hides it and no applied
   * record holds its hash). The daemon does not send a write made only of these (SecretsUnknown).
   */
  uncompared?: true;
  /** A secret whose source changed since the applied record's write (names only: a variable's name, a file's path). */
  source?: { before: SecretSourceName; after: SecretSourceName };
}

export interface PlanChange {
  kind: ResourceKind;
  name: string;
  action: Action;
  /** True exactly when the minimal request would start a new revision (docs/against-the-real-service.md §4). */
  new_revision: boolean;
  fields: FieldChange[];
  /** Why a change is blocked, or a note (suspended, secret written once). Null when there is nothing to say. */
  reason: string | null;
  /** True when the manifest carries converge/suspend: shown, never applied. */
  suspended?: boolean;
  /** An orphan converge applied once: its manifest is gone, and converge stopped managing it. */
  released?: boolean;
  /**
   * Blocked as unknown: converge applied it, no file that loads declares it, and a file of the tree fails to load (it
   * may declare it there): neither deleted nor released until every file loads.
   */
  unknown?: true;
  /** `delete`: the live id the delete is sent to (never by name). */
  id?: string;
  /**
   * The daemon's `delete` that waits (src/core/prune-grace.ts): since when it is undeclared, when the grace ends (null:
   * it waits for `converge reconcile --confirm-delete NAME`). Nothing is sent for it yet.
   */
  pending_delete?: { since: string; due: string | null; confirm: boolean };
  /** The rollout wave of its resource (converge/wave), set only when the plan's writes span several waves. */
  wave?: number;
}

/** One wave of a plan whose writes span several (Plan.waves): its number and what it writes (docs/rollouts.md). */
export interface PlanWave {
  wave: number;
  create: number;
  update: number;
  adopt: number;
}

export interface PlanDiagnostic {
  severity: 'error' | 'warning';
  file: string;
  line: number;
  column: number;
  message: string;
}

/**
 * Counts per action; a suspended create or update counts as `suspended` only (never applied), so `create`
 * and `update` count exactly what apply would send.
 */
export type PlanSummary = Record<Action, number> & { suspended: number };

/** The rollout of one planned resource that is not healthy (read from its latest revision): a plan's health note. */
export interface HealthNote {
  kind: ResourceKind;
  name: string;
  status: HealthCondition['status'];
  reason: HealthCondition['reason'];
  message: string;
  revisionId?: string;
  revisionStatus?: string;
  /** The service's `created_at` and `updated_at` of that revision, when read (src/core/health.ts). */
  revisionCreatedAt?: string;
  revisionUpdatedAt?: string;
}

export interface Plan {
  format_version: '1';
  summary: PlanSummary;
  changes: PlanChange[];
  diagnostics: PlanDiagnostic[];
  /** Notes about the plan as a whole, each said once: what it could not see and how that limits it (applied state not read, an endpoint beyond the spec the service lacks); rendered in every format. */
  notes?: string[];
  /**
   * --prune was asked for and a guard refused it (a file that fails to load, no manifest at all, more deletes than --max-deletes): why, in the
   * words of its note. Nothing is deleted, so apply cannot converge: plan and apply exit 1 (src/core/exit-code.ts).
   */
  prune_refused?: string;
  /** Rollouts that are progressing or degraded (docs/decision.md): shown in every format; exit codes stay about changes. */
  health?: HealthNote[];
  /**
   * --target: the plan is partial, limited to these resources (`Kind/name`); the other manifests and the live
   * resources no manifest declares were not looked at, and nothing is pruned. Absent: the whole directory was planned.
   */
  targets?: string[];
  /** The waves of its writes, ascending, when they span several (src/core/waves.ts); absent: one wave. */
  waves?: PlanWave[];
}

export const SENSITIVE = '(sensitive)';

/**
 * What read-only MCP discovery found for an OAuthProvider with mcp_server_url (computed at the edge by
 * src/discovery before plan(); plan() only renders it). `ok: false` makes the provider `blocked`.
 */
export type DiscoveryPreview =
  | {
      ok: true;
      auth_url: string;
      token_url: string;
      uses_pkce: boolean;
      /** The authorization server offers dynamic client registration (RFC 7591). */
      registration: boolean;
      issuer: string;
      resource_metadata_url?: string;
    }
  | { ok: false; step: string; message: string };
