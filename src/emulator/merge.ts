// The deployment write rules of docs/against-the-real-service.md §2-§4 as pure functions: create, PATCH merge, revisions.
import { canonicalJson } from '../core/hash.js';
import { IMMUTABLE_SOURCE_CONFIG_FIELDS, type Secret, type Source, type ValidationIssue } from '../core/wire/schema.js';
import { fail, invalid, issue, ok, type Result } from './issues.js';
import {
  compactFields,
  compactSourceConfig,
  advanceDeployment,
  sha256Hex,
  type StoredDeployment,
  type StoredRevision,
  type StoredSecret,
} from './records.js';
import { DEFAULT_DEPLOYMENT_TYPE, type AnyDeploymentType, type CreateBody, type PatchBody } from './requests.js';
import {
  SOURCE_RULES,
  missingFieldProblems,
  nameProblems,
  refusedFieldProblems,
  repositoryProblem,
  rulesFor,
  secretProblems,
  type RepoLookup,
} from './validate.js';

/** How a non-empty secrets list in a PATCH is applied: merged by name into the stored set, or replacing it. */
export type SecretsPatchMode = 'merge' | 'replace';

/** The status a new revision ends in. */
export type RevisionOutcome = 'DEPLOYED' | 'BUILD_FAILED' | 'DEPLOY_FAILED';

/** The source tarballs the service handed out (POST .../upload-url), as a write needs to know them. */
export interface UploadLookup {
  /** The deployment the object path was handed out to; undefined when this service never handed it out. */
  ownerOf(objectPath: string): string | undefined;
  /** Whether the tarball was PUT to its signed URL. */
  uploaded(objectPath: string): boolean;
}

/** What a revision records of the PATCH that started it besides its source_revision_config (the official tool's fields). */
export interface RevisionExtras {
  tracked_packages: readonly string[] | null;
  install_command: string | null;
  build_command: string | null;
}

const NO_EXTRAS: RevisionExtras = { tracked_packages: null, install_command: null, build_command: null };

/** What a write needs from outside: the time, the build time, an id source, the integrations and the knobs. */
export interface WriteContext {
  now: number;
  buildMs: number;
  newId: () => string;
  repos: RepoLookup;
  uploads: UploadLookup;
  /** --any-tarball-path: take any source_tarball_path, as older emulators did (the real service refuses them). */
  anyTarballPath: boolean;
  secretsPatch: SecretsPatchMode;
  /** --lenient-create: accept the old incomplete create bodies (see RuleMode). */
  lenient: boolean;
  /** How a new revision of the named deployment ends (--build-fail, --deploy-fail). */
  outcome: (name: string) => RevisionOutcome;
}

export interface PatchOutcome {
  next: StoredDeployment;
  /** The PATCH started a new revision (docs/against-the-real-service.md §4). */
  newRevision: boolean;
  /** Anything stored changed (a new revision counts). */
  changed: boolean;
}

/**
 * docs/against-the-real-service.md §4: a PATCH starts a new revision when it holds any non-null source_revision_config
 * field (changed or not), a non-empty secrets list, a resource_spec, secret_references or a revision_source.
 */
export function startsRevision(patch: PatchBody): boolean {
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

/**
 * A new revision: QUEUED, BUILDING and DEPLOYING over buildMs, then its outcome (a build failure ends
 * after the building phase, never deploying).
 */
export function startRevision(
  ctx: WriteContext,
  name: string,
  revisionSource: StoredRevision['revision_source'],
  revisionConfig: Readonly<Record<string, unknown>>,
  extras: RevisionExtras,
): StoredRevision {
  const tarball = revisionConfig.source_tarball_path;
  const notUploaded =
    typeof tarball === 'string' && ctx.uploads.ownerOf(tarball) !== undefined && !ctx.uploads.uploaded(tarball);
  const outcome: RevisionOutcome = notUploaded ? 'BUILD_FAILED' : ctx.outcome(name);
  const failure: StoredRevision['failure'] = notUploaded
    ? 'tarball-missing'
    : outcome === 'BUILD_FAILED'
      ? 'build'
      : outcome === 'DEPLOY_FAILED'
        ? 'deploy'
        : null;
  const span = outcome === 'BUILD_FAILED' ? Math.floor((2 * ctx.buildMs) / 3) : ctx.buildMs;
  return {
    id: ctx.newId(),
    created_at: ctx.now,
    revision_source: revisionSource,
    source_revision_config: revisionConfig,
    build_started_at: ctx.now,
    build_ms: ctx.buildMs,
    ends_at: ctx.now + span,
    outcome,
    failure,
    ...extras,
  };
}

/**
 * 400 detail when a write names a source_tarball_path this service did not hand out to the deployment (against-the-real-service.md:
 * only an upload URL's object_path is accepted); the path the deployment already holds is taken again. Null when fine.
 */
function tarballProblem(
  current: StoredDeployment | undefined,
  incoming: Readonly<Record<string, unknown>>,
  ctx: WriteContext,
): string | null {
  const path = incoming.source_tarball_path;
  if (typeof path !== 'string' || ctx.anyTarballPath) return null;
  if (current && current.source_revision_config.source_tarball_path === path) return null;
  if (current && ctx.uploads.ownerOf(path) === current.id) return null;
  const target = current ? `deployment ${current.id}` : 'a deployment that does not exist yet';
  return `source_tarball_path "${path}" was not issued for ${target}; request one with POST /v2/deployments/{deployment_id}/upload-url, PUT the tarball to its upload_url and send its object_path`;
}

/** Earlier revisions still building when a new one starts are superseded: SKIPPED from now on. */
function supersede(revisions: readonly StoredRevision[], now: number): StoredRevision[] {
  return revisions.map((r) => (r.ends_at > now ? { ...r, outcome: 'SKIPPED', ends_at: now } : r));
}

function hasArtifact(source: Source, revisionConfig: Record<string, unknown>): boolean {
  return SOURCE_RULES[source].artifact.every((key) => revisionConfig[key] !== undefined);
}

/**
 * Builds a new deployment from a create request, or the service's 422/400 answer. Name conflicts are the
 * store's. A codehost deployment gets deployment_type (default prod); an internal_docker or internal_source
 * one created without its artifact has no revision until a PATCH sets it.
 */
export function newDeployment(tenantId: string, request: CreateBody, ctx: WriteContext): Result<StoredDeployment> {
  const source = request.source;
  const sourceConfig = compactSourceConfig(request.source_config);
  const revisionConfig = compactFields(request.source_revision_config);
  const mode = { lenient: ctx.lenient };
  const problems: ValidationIssue[] = [
    ...nameProblems(request.name),
    ...refusedFieldProblems(
      source,
      source,
      request.source_config,
      request.source_revision_config,
      request.secret_references,
      mode,
    ),
    ...missingFieldProblems(source, sourceConfig, revisionConfig, `source ${source}`, 'create', mode),
    ...secretProblems(request.secrets),
  ];
  if (problems.length > 0) return invalid(problems);
  if (source === 'codehost') {
    const problem = repositoryProblem(sourceConfig, ctx.repos);
    if (problem) return fail(400, problem);
  }
  const tarball = tarballProblem(undefined, revisionConfig, ctx);
  if (tarball) return fail(400, tarball);
  // Every source takes the tier (the official tool sends it on every create); absent, the service chooses prod.
  const deploymentType = (sourceConfig.deployment_type as AnyDeploymentType | undefined) ?? DEFAULT_DEPLOYMENT_TYPE;
  sourceConfig.deployment_type = deploymentType;
  const revision = hasArtifact(source, revisionConfig)
    ? startRevision(ctx, request.name, null, revisionConfig, NO_EXTRAS)
    : null;
  const created: StoredDeployment = {
    id: ctx.newId(),
    tenant_id: tenantId,
    name: request.name,
    source,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets: storeSecrets(request.secrets ?? []),
    secret_references: request.secret_references ?? null,
    status: 'AWAITING_DATABASE',
    created_at: ctx.now,
    updated_at: ctx.now,
    latest_revision_id: revision?.id ?? null,
    active_revision_id: null,
    build_ready_at: revision?.ends_at ?? null,
    image_version: null,
    deployment_type: deploymentType,
    remote_reconciled: false,
    tag_value_ids: [],
    revisions: revision ? [revision] : [],
    is_preview: false,
    delete_at: null,
    delete_tracing_project: false,
  };
  return ok(advanceDeployment(created, ctx.now));
}

function sameValue(key: string, incoming: unknown, stored: unknown): boolean {
  if (key === 'integration_id' || key === 'listener_id') return String(incoming).toLowerCase() === stored;
  return incoming === stored;
}

/** 400 detail for a PATCH changing a field fixed at creation (docs/against-the-real-service.md §3); null when none changes. */
function immutableProblem(current: StoredDeployment, patch: PatchBody): string | null {
  const incoming = patch.source_config;
  const checks: Array<[string, unknown, unknown]> = [
    ...IMMUTABLE_SOURCE_CONFIG_FIELDS.map((key): [string, unknown, unknown] => [
      key,
      incoming?.[key],
      current.source_config[key],
    ]),
    ['deployment_type', incoming?.deployment_type, current.source_config.deployment_type],
    [
      'listener_config.k8s_namespace',
      incoming?.listener_config?.k8s_namespace,
      (current.source_config.listener_config as { k8s_namespace?: unknown } | undefined)?.k8s_namespace,
    ],
  ];
  for (const [key, value, stored] of checks) {
    if (value === null || value === undefined || sameValue(key, value, stored)) continue;
    const was = stored === undefined ? 'unset' : `"${typeof stored === 'string' ? stored : JSON.stringify(stored)}"`;
    return `source_config.${key} cannot be changed after creation (it is ${was}); create a new deployment instead`;
  }
  return null;
}

/**
 * The PATCH of docs/against-the-real-service.md §3 and §4, in one place: top-level merge of source_config and
 * source_revision_config where null never clears; resource_spec replaced whole; secrets absent or []
 * keep the stored ones, non-empty secrets merge by name or replace the set (ctx.secretsPatch);
 * integration_id, repo_url, listener_id, deployment_type and listener_config.k8s_namespace immutable
 * (400); per-source rules (422); a deployment being deleted, or of a source this service does not know,
 * refuses writes (400); and a new revision (new latest_revision_id, active one kept until it is deployed)
 * when startsRevision() says so.
 */
export function mergePatch(current: StoredDeployment, patch: PatchBody, ctx: WriteContext): Result<PatchOutcome> {
  const refused = refusedPatch(current, patch, ctx);
  if (refused) return refused;
  const incomingRevision = compactFields(patch.source_revision_config);
  const tarball = tarballProblem(current, incomingRevision, ctx);
  if (tarball) return fail(400, tarball);
  const sourceConfig = { ...current.source_config, ...compactSourceConfig(patch.source_config) };
  const revisionConfig = { ...current.source_revision_config, ...incomingRevision };
  const missing = missingAfterPatch(current, patch, sourceConfig, revisionConfig, ctx);
  if (missing.length > 0) return invalid(missing);

  const incoming = patch.secrets && patch.secrets.length > 0 ? patch.secrets : null;
  const secrets =
    incoming === null
      ? current.secrets
      : ctx.secretsPatch === 'replace'
        ? storeSecrets(incoming)
        : upsertSecrets(current.secrets, incoming);
  const secretReferences = patch.secret_references ?? current.secret_references;
  const newRevision = startsRevision(patch);
  const contentChanged =
    canonicalJson([sourceConfig, revisionConfig, secretReferences, secrets.map((s) => [s.name, s.sha256])]) !==
    canonicalJson([
      current.source_config,
      current.source_revision_config,
      current.secret_references,
      current.secrets.map((s) => [s.name, s.sha256]),
    ]);
  const changed = newRevision || contentChanged;
  if (!changed) return ok({ next: current, newRevision: false, changed: false });

  const next: StoredDeployment = {
    ...current,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets,
    secret_references: secretReferences,
    updated_at: ctx.now,
  };
  return ok({ next: newRevision ? withNewRevision(current, next, patch, ctx) : next, newRevision, changed: true });
}

/**
 * The refusals of a PATCH before anything is merged: a deployment being deleted or of a source this service does not
 * know (400), fields its source refuses and bad secrets (422), a field fixed at creation (400); undefined when none.
 */
function refusedPatch(current: StoredDeployment, patch: PatchBody, ctx: WriteContext): Result<never> | undefined {
  if (current.status === 'AWAITING_DELETE') return fail(400, `Deployment ID ${current.id} is being deleted.`);
  const source = current.source;
  const rules = rulesFor(source);
  if (!rules)
    return fail(400, `Deployment ID ${current.id} has source "${source}", which this service version cannot change.`);
  const known = source as Source;
  const mode = { lenient: ctx.lenient };
  const problems: ValidationIssue[] = [];
  if (patch.revision_source != null && !rules.revisionSource) {
    problems.push(issue(['body', 'revision_source'], `revision_source is not available for ${source} deployments`));
  }
  const revisionSource = patch.revision_source ?? known;
  problems.push(
    ...refusedFieldProblems(
      known,
      revisionSource,
      patch.source_config,
      patch.source_revision_config,
      patch.secret_references,
      mode,
    ),
    ...secretProblems(patch.secrets),
  );
  if (problems.length > 0) return invalid(problems);
  const immutable = immutableProblem(current, patch);
  return immutable ? fail(400, immutable) : undefined;
}

/** The fields the merged configs still lack for the revision source the PATCH writes with (422 problems). */
function missingAfterPatch(
  current: StoredDeployment,
  patch: PatchBody,
  sourceConfig: Record<string, unknown>,
  revisionConfig: Record<string, unknown>,
  ctx: WriteContext,
): ValidationIssue[] {
  const source = current.source as Source;
  const revisionSource = patch.revision_source ?? source;
  const overridden = patch.revision_source != null;
  const what = overridden ? `revision_source ${revisionSource}` : `source ${source}`;
  const mode = { lenient: ctx.lenient };
  const write = overridden ? 'override' : 'write';
  return missingFieldProblems(revisionSource, sourceConfig, revisionConfig, what, write, mode);
}

/** The merged deployment with the revision the PATCH starts: the latest one; earlier ones still building superseded. */
function withNewRevision(
  current: StoredDeployment,
  next: StoredDeployment,
  patch: PatchBody,
  ctx: WriteContext,
): StoredDeployment {
  const sourceConfig = next.source_config;
  const revision = startRevision(ctx, current.name, patch.revision_source ?? null, next.source_revision_config, {
    tracked_packages: patch.tracked_packages ?? null,
    install_command: typeof sourceConfig.install_command === 'string' ? sourceConfig.install_command : null,
    build_command: typeof sourceConfig.build_command === 'string' ? sourceConfig.build_command : null,
  });
  return advanceDeployment(
    {
      ...next,
      latest_revision_id: revision.id,
      build_ready_at: revision.ends_at,
      revisions: [...supersede(current.revisions, ctx.now), revision],
    },
    ctx.now,
  );
}
