// The emulator's in-memory records (immutable: every change makes a new object) and small helpers on them.
import { createHash } from 'node:crypto';
import type { ProviderType, RevisionSource, SecretReference, TokenEndpointAuthMethod } from '../core/wire/schema.js';
import type { AnyDeploymentType } from './requests.js';

/** A deployment secret: the value lives in memory only; the state file keeps `sha256`. */
export interface StoredSecret {
  readonly name: string;
  readonly sha256: string;
  /** Unknown after a reload from a state file (only the hash is persisted). */
  readonly value?: string;
}

/**
 * A revision. It passes QUEUED, BUILDING and DEPLOYING over `build_ms` from `build_started_at`, and has
 * `outcome` from `ends_at` on (DEPLOYED, BUILD_FAILED, DEPLOY_FAILED, SKIPPED when a newer one superseded
 * it, or any status a seed gives).
 */
export interface StoredRevision {
  readonly id: string;
  readonly created_at: number;
  readonly revision_source: RevisionSource | null;
  readonly source_revision_config: Readonly<Record<string, unknown>>;
  readonly build_started_at: number;
  readonly build_ms: number;
  readonly ends_at: number;
  readonly outcome: string;
  /** Why it fails (its build log's last lines say it): the --build-fail/--deploy-fail knobs, or a tarball never uploaded. */
  readonly failure: 'build' | 'deploy' | 'tarball-missing' | null;
  /** What the PATCH that started it carried besides its config (the official tool's fields); null when absent. */
  readonly tracked_packages: readonly string[] | null;
  readonly install_command: string | null;
  readonly build_command: string | null;
}

export interface StoredDeployment {
  readonly id: string;
  readonly tenant_id: string;
  readonly name: string;
  /** One of SOURCES, or a value a seed gives that this emulator does not know (never written to). */
  readonly source: string;
  /** Non-null fields only; a codehost deployment always holds deployment_type. */
  readonly source_config: Readonly<Record<string, unknown>>;
  /** Non-null fields only; never repo_commit_sha (derived in responses). */
  readonly source_revision_config: Readonly<Record<string, unknown>>;
  readonly secrets: readonly StoredSecret[];
  readonly secret_references: readonly SecretReference[] | null;
  /** One of STATUSES, or any value a seed gives. */
  readonly status: string;
  readonly created_at: number;
  readonly updated_at: number;
  readonly latest_revision_id: string | null;
  readonly active_revision_id: string | null;
  /** When the latest revision becomes active (ms since epoch); null when no build is pending. */
  readonly build_ready_at: number | null;
  readonly image_version: string | null;
  /** The list filter's tier: source_config.deployment_type for codehost, an emulator-internal attribute otherwise. */
  readonly deployment_type: AnyDeploymentType;
  readonly remote_reconciled: boolean;
  readonly tag_value_ids: readonly string[];
  readonly revisions: readonly StoredRevision[];
  /** A preview deployment (a seed's `is_preview: true`). */
  readonly is_preview: boolean;
  /** AWAITING_DELETE after a DELETE: gone at this time; null when not being deleted (or stuck, as a seed may say). */
  readonly delete_at: number | null;
  /** The DELETE asked for the tracing project to go too. */
  readonly delete_tracing_project: boolean;
}

export interface StoredProvider {
  readonly id: string;
  readonly organization_id: string;
  readonly provider_id: string;
  readonly name: string;
  readonly client_id: string;
  readonly auth_url: string;
  readonly token_url: string;
  /** sha256 of the client secret; the value itself is never kept. */
  readonly client_secret_sha256: string | null;
  readonly uses_pkce: boolean;
  readonly code_challenge_method: string | null;
  readonly provider_type: ProviderType | null;
  readonly mcp_server_url: string | null;
  readonly token_endpoint_auth_method: TokenEndpointAuthMethod;
  readonly authorization_params: Readonly<Record<string, unknown>>;
  readonly is_dynamic_client: boolean;
  readonly allowed_redirect_uris: readonly string[];
  readonly created_at: number;
  readonly updated_at: number;
}

export interface StoredTracingProject {
  readonly id: string;
  readonly tenant_id: string;
  readonly name: string;
  readonly created_at: number;
  readonly deployment_id: string | null;
}

export interface StoredRepository {
  readonly host_integration_id: string;
  readonly id: number;
  readonly name: string;
  readonly owner: string;
  readonly url: string;
  readonly default_branch: string;
}

export interface StoredIntegration {
  readonly id: string;
  readonly installation_id: number;
  readonly name: string;
  readonly repositories: readonly StoredRepository[];
}

export interface StoredTenant {
  readonly id: string;
  readonly name: string;
  readonly organization_id: string;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** The log's stand-in for a secret value: enough to tell values apart, never the value. */
export function redactedValue(value: string): string {
  return `<redacted sha256:${sha256Hex(value).slice(0, 12)}>`;
}

const NAMESPACE = Buffer.from('5b0f6a8e2c3d4e5f9a1b2c3d4e5f6a7b', 'hex');

/** A name-based (version 5) uuid: the same seed text always gives the same id. */
export function derivedUuid(...parts: string[]): string {
  const hash = createHash('sha1').update(NAMESPACE).update(parts.join('\0')).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The commit a codehost revision builds: a fake but stable 40-hex sha derived from the repository and ref. */
export function repoCommitSha(repoUrl: string, repoRef: string): string {
  return createHash('sha1').update(`${repoUrl}#${repoRef}`).digest('hex');
}

/** Drops null and undefined fields: what the store keeps of a source_config or source_revision_config. */
export function compactFields(fields: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!fields) return out;
  for (const [key, value] of Object.entries(fields)) {
    if (value !== null && value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * What the store keeps of a source_config: compactFields, resource_spec and listener_config compacted too
 * (a listener_config left empty is dropped, so it never clears a stored namespace), uuid references lowercased.
 */
export function compactSourceConfig(fields: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const out = compactFields(fields);
  if (out.resource_spec && typeof out.resource_spec === 'object') {
    out.resource_spec = compactFields(out.resource_spec as Record<string, unknown>);
  }
  if (out.listener_config && typeof out.listener_config === 'object') {
    const listener = compactFields(out.listener_config as Record<string, unknown>);
    if (Object.keys(listener).length === 0) delete out.listener_config;
    else out.listener_config = listener;
  }
  for (const key of ['integration_id', 'listener_id']) {
    if (typeof out[key] === 'string') out[key] = out[key].toLowerCase();
  }
  return out;
}

/** Order of the deployment list: created_at, then id. */
export function compareDeployments(a: StoredDeployment, b: StoredDeployment): number {
  if (a.created_at !== b.created_at) return a.created_at - b.created_at;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The status of a revision at `now`: its phase while it builds, its outcome from ends_at on. */
export function revisionStatusAt(r: StoredRevision, now: number): string {
  if (now >= r.ends_at) return r.outcome;
  const t = now - r.build_started_at;
  if (t < Math.floor(r.build_ms / 3)) return 'QUEUED';
  if (t < Math.floor((2 * r.build_ms) / 3)) return 'BUILDING';
  return 'DEPLOYING';
}

/** When a revision last changed status, as of `now`. */
export function revisionUpdatedAt(r: StoredRevision, now: number): number {
  if (now >= r.ends_at) return Math.max(r.ends_at, r.created_at);
  const boundaries = [Math.floor((2 * r.build_ms) / 3), Math.floor(r.build_ms / 3)].map((b) => r.build_started_at + b);
  for (const at of boundaries) if (now >= at) return Math.max(at, r.created_at);
  return r.created_at;
}

/**
 * Advances the latest revision once its build has ended: DEPLOYED makes it the active one; a failure leaves the
 * active revision on the last good one. Either way the deployment's infrastructure is there, so status
 * AWAITING_DATABASE becomes READY (a failed build shows on the revision only, as on the real service).
 */
export function advanceDeployment(d: StoredDeployment, now: number): StoredDeployment {
  if (d.build_ready_at === null || now < d.build_ready_at) return d;
  const latest = d.revisions.find((r) => r.id === d.latest_revision_id);
  const deployed = latest === undefined || latest.outcome === 'DEPLOYED';
  return {
    ...d,
    active_revision_id: deployed ? d.latest_revision_id : d.active_revision_id,
    build_ready_at: null,
    status: d.status === 'AWAITING_DATABASE' ? 'READY' : d.status,
  };
}
