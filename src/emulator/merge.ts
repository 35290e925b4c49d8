// The deployment write rules of design.md §1 as pure functions: create, PATCH merge, and when a revision starts.
import { canonicalJson } from '../core/hash.js';
import {
  IMMUTABLE_SOURCE_CONFIG_FIELDS,
  type CreateDeploymentRequest,
  type PatchDeploymentRequest,
  type Secret,
  type ValidationIssue,
} from '../core/wire/schema.js';
import { fail, invalid, issue, ok, type Result } from './issues.js';
import { compactFields, compactSourceConfig, sha256Hex, type StoredDeployment, type StoredRevision, type StoredSecret } from './records.js';
import {
  SOURCE_RULES,
  missingFieldProblems,
  nameProblems,
  refusedFieldProblems,
  repositoryProblem,
  secretProblems,
  type RepoLookup,
} from './validate.js';

/** What a write needs from outside: the time, the build time, an id source and the integrations. */
export interface WriteContext {
  now: number;
  buildMs: number;
  newId: () => string;
  repos: RepoLookup;
}

export interface PatchOutcome {
  next: StoredDeployment;
  /** The PATCH started a new revision (design.md §1). */
  newRevision: boolean;
  /** Anything stored changed (a new revision counts). */
  changed: boolean;
}

/**
 * design.md §1: a PATCH starts a new revision when it holds any non-null source_revision_config
 * field (changed or not), a non-empty secrets list, a resource_spec, secret_references or a revision_source.
 */
export function startsRevision(patch: PatchDeploymentRequest): boolean {
  if (patch.revision_source != null) return true;
  if (patch.secret_references != null) return true;
  if (patch.secrets != null && patch.secrets.length > 0) return true;
  if (patch.source_config?.resource_spec != null) return true;
  const revision = patch.source_revision_config;
  if (revision) {
    for (const value of Object.values(revision)) if (value !== null && value !== undefined) return true;
  }
  return false;
}

function storeSecrets(secrets: readonly Secret[]): StoredSecret[] {
  return secrets.map((s) => ({ name: s.name, sha256: sha256Hex(s.value), value: s.value }));
}

/** Non-empty secrets upsert by name: a known name gets the new value in place, a new name is appended. */
function upsertSecrets(stored: readonly StoredSecret[], incoming: readonly Secret[]): StoredSecret[] {
  const byName = new Map(storeSecrets(incoming).map((s) => [s.name, s]));
  const out = stored.map((s) => byName.get(s.name) ?? s);
  const known = new Set(stored.map((s) => s.name));
  for (const s of byName.values()) if (!known.has(s.name)) out.push(s);
  return out;
}

function revisionStatus(ctx: WriteContext): { buildReadyAt: number | null } {
  return { buildReadyAt: ctx.buildMs > 0 ? ctx.now + ctx.buildMs : null };
}

/** Builds a new deployment from a create request, or the service's 422/400 answer. Name conflicts are the store's. */
export function newDeployment(tenantId: string, request: CreateDeploymentRequest, ctx: WriteContext): Result<StoredDeployment> {
  const source = request.source;
  const sourceConfig = compactSourceConfig(request.source_config);
  const revisionConfig = compactFields(request.source_revision_config);
  const problems: ValidationIssue[] = [
    ...nameProblems(request.name),
    ...refusedFieldProblems(source, source, request.source_config, request.source_revision_config, request.secret_references),
    ...missingFieldProblems(source, sourceConfig, revisionConfig, `source ${source}`),
    ...secretProblems(request.secrets),
  ];
  if (problems.length > 0) return invalid(problems);
  if (source === 'codehost') {
    const problem = repositoryProblem(sourceConfig, ctx.repos);
    if (problem) return fail(400, problem);
  }
  const revisionId = ctx.newId();
  const { buildReadyAt } = revisionStatus(ctx);
  const revision: StoredRevision = { id: revisionId, created_at: ctx.now, revision_source: null, source_revision_config: revisionConfig };
  return ok({
    id: ctx.newId(),
    tenant_id: tenantId,
    name: request.name,
    source,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets: storeSecrets(request.secrets ?? []),
    secret_references: request.secret_references ?? null,
    status: buildReadyAt === null ? 'READY' : 'AWAITING_DATABASE',
    created_at: ctx.now,
    updated_at: ctx.now,
    latest_revision_id: revisionId,
    active_revision_id: buildReadyAt === null ? revisionId : null,
    build_ready_at: buildReadyAt,
    image_version: null,
    deployment_type: 'dev',
    remote_reconciled: false,
    tag_value_ids: [],
    revisions: [revision],
  });
}

function immutableProblem(current: StoredDeployment, patch: PatchDeploymentRequest): string | null {
  for (const key of IMMUTABLE_SOURCE_CONFIG_FIELDS) {
    const incoming = patch.source_config?.[key];
    if (incoming === null || incoming === undefined) continue;
    const stored = current.source_config[key];
    const same = key === 'repo_url' ? incoming === stored : String(incoming).toLowerCase() === stored;
    if (same) continue;
    const was = stored === undefined ? 'unset' : `"${String(stored)}"`;
    return `source_config.${key} cannot be changed after creation (it is ${was}); create a new deployment instead`;
  }
  return null;
}

/**
 * The PATCH of design.md §1, in one place: top-level merge of source_config and source_revision_config
 * where null never clears; resource_spec replaced whole; secrets absent or [] keep the stored ones,
 * non-empty secrets upsert by name; integration_id, repo_url and listener_id immutable (400); per-source
 * rules (422); and a new revision (new latest_revision_id, active one kept until the build ends) when
 * startsRevision() says so.
 */
export function mergePatch(current: StoredDeployment, patch: PatchDeploymentRequest, ctx: WriteContext): Result<PatchOutcome> {
  const rules = SOURCE_RULES[current.source];
  const problems: ValidationIssue[] = [];
  if (patch.revision_source != null && !rules.revisionSource) {
    problems.push(issue(['body', 'revision_source'], `revision_source is not available for ${current.source} deployments`));
  }
  const revisionSource = patch.revision_source ?? current.source;
  problems.push(
    ...refusedFieldProblems(current.source, revisionSource, patch.source_config, patch.source_revision_config, patch.secret_references),
    ...secretProblems(patch.secrets),
  );
  if (problems.length > 0) return invalid(problems);
  const immutable = immutableProblem(current, patch);
  if (immutable) return fail(400, immutable);

  const sourceConfig = { ...current.source_config, ...compactSourceConfig(patch.source_config) };
  const revisionConfig = { ...current.source_revision_config, ...compactFields(patch.source_revision_config) };
  const what = patch.revision_source != null ? `revision_source ${revisionSource}` : `source ${current.source}`;
  const missing = missingFieldProblems(revisionSource, sourceConfig, revisionConfig, what);
  if (missing.length > 0) return invalid(missing);

  const secrets = patch.secrets && patch.secrets.length > 0 ? upsertSecrets(current.secrets, patch.secrets) : current.secrets;
  const secretReferences = patch.secret_references ?? current.secret_references;
  const newRevision = startsRevision(patch);
  const contentChanged =
    canonicalJson([sourceConfig, revisionConfig, secretReferences, secrets.map((s) => [s.name, s.sha256])]) !==
    canonicalJson([current.source_config, current.source_revision_config, current.secret_references, current.secrets.map((s) => [s.name, s.sha256])]);
  const changed = newRevision || contentChanged;
  if (!changed) return ok({ next: current, newRevision: false, changed: false });

  let next: StoredDeployment = {
    ...current,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets,
    secret_references: secretReferences,
    updated_at: ctx.now,
  };
  if (newRevision) {
    const revisionId = ctx.newId();
    const { buildReadyAt } = revisionStatus(ctx);
    const revision: StoredRevision = {
      id: revisionId,
      created_at: ctx.now,
      revision_source: patch.revision_source ?? null,
      source_revision_config: revisionConfig,
    };
    next = {
      ...next,
      latest_revision_id: revisionId,
      active_revision_id: buildReadyAt === null ? revisionId : current.active_revision_id,
      build_ready_at: buildReadyAt,
      status: buildReadyAt === null && current.status === 'AWAITING_DATABASE' ? 'READY' : current.status,
      revisions: [...current.revisions, revision],
    };
  }
  return ok({ next, newRevision, changed: true });
}
