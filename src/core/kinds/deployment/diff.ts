// Plans one Deployment: blockers (immutable fields, unknown source, unresolved inputs), field diff, minimal request.
import type { DeploymentResource, FieldChange, ListedDeployment, PlanChange } from '../../model.js';
import { resourceKey } from '../../model.js';
import {
  IMMUTABLE_SOURCE_CONFIG_PATHS,
  SOURCES,
  STATUSES,
  type CreateDeploymentRequest,
  type PatchDeploymentRequest,
  type Secret,
} from '../../wire/schema.js';
import { SecretResolutionError } from '../../errors.js';
import { isAbsent } from '../../values.js';
import type { PlanContext } from '../kind.js';
import { SUSPENDED_NOTE, withLocation } from '../notes.js';
import { artifactField, createDeclared, diffDeclared, patchStartsRevision } from './fields.js';
import {
  diffSecrets,
  resentNote,
  secretsToSend,
  undeclaredNote,
  undeclaredSecretNames,
  writtenOnceNote,
} from './secrets.js';
import { normalisedNote } from './three-way.js';
import { missingForWrite } from './write-needs.js';

export interface DeploymentDiff {
  change: PlanChange;
  /** The minimal request to send; absent for noop/blocked. Secrets are NOT in body: secretNames lists which to send (caller resolves values). */
  request?: { op: 'create'; body: CreateDeploymentRequest } | { op: 'patch'; id: string; body: PatchDeploymentRequest };
  /** The secrets to send: empty when none changed, else every declared one (the complete set, see secretsToSend). */
  secretNames: string[];
}

/** What the plan knows of a deployment besides its manifest and live state (discovery concerns providers only). */
export type DeploymentContext = Omit<PlanContext, 'discovery'>;

const KNOWN_SOURCES: ReadonlySet<string> = new Set(SOURCES);
const KNOWN_STATUSES: ReadonlySet<string> = new Set(STATUSES);

/** Why converge never writes to this live deployment (preview, being deleted), or undefined. */
function untouchableReason(live: ListedDeployment): string | undefined {
  if (live.status === 'AWAITING_DELETE') {
    return 'the service is deleting this deployment (status AWAITING_DELETE): converge writes nothing to it; once it is gone, the next apply creates it again from the manifest';
  }
  if (live.is_preview === true) {
    return 'the service reports this as a preview deployment (is_preview: true): converge never writes to a preview deployment; give the manifest another metadata.name to manage a deployment of its own';
  }
  return undefined;
}

/** The value at a dotted path of an object, or undefined. */
function valueAt(object: unknown, path: string): unknown {
  let current = object;
  for (const segment of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

/** Reasons the live deployment cannot be brought to the manifest by a PATCH. */
function liveBlockers(resource: DeploymentResource, live: ListedDeployment): string[] {
  const reasons: string[] = [];
  const desired = resource.spec.source;
  if (!KNOWN_SOURCES.has(live.source)) {
    reasons.push(
      `the service reports source ${show(live.source)}, which this converge does not know; upgrade converge, or remove the deployment from the manifests`,
    );
  } else if (live.source !== desired) {
    reasons.push(
      `source cannot be changed after creation (live: ${show(live.source)}, manifest: ${show(desired)}); set spec.source back to ${show(live.source)}, or give the deployment a new metadata.name`,
    );
  }
  const config = resource.spec.source_config ?? {};
  for (const field of IMMUTABLE_SOURCE_CONFIG_PATHS) {
    const want = valueAt(config, field);
    const have = valueAt(live.source_config, field);
    if (isAbsent(want) || isAbsent(have) || want === have) continue;
    reasons.push(
      `source_config.${field} cannot be changed after creation (live: ${show(have)}, manifest: ${show(want)}); set it back to the live value, or give the deployment a new metadata.name`,
    );
  }
  return reasons;
}

function sourceField(resource: DeploymentResource, live: ListedDeployment): FieldChange[] {
  if (live.source === resource.spec.source) return [];
  return [{ path: 'source', before: live.source, after: resource.spec.source, sensitive: false }];
}

/**
 * The exact, minimal change for one deployment against `live` (undefined: it does not exist).
 * Pure and level-triggered: workers call it again on freshly read live state before writing.
 */
export function diffDeployment(
  resource: DeploymentResource,
  live: ListedDeployment | undefined,
  ctx: DeploymentContext,
): DeploymentDiff {
  const key = resourceKey('Deployment', resource.name);
  const blockers: string[] = [];
  if (ctx.repositoryError) blockers.push(ctx.repositoryError);
  if (live) blockers.push(...liveBlockers(resource, live));

  const declared = live
    ? diffDeclared(resource.spec, live, ctx.applied?.fields)
    : { ...createDeclared(resource.name, resource.spec), normalised: [] };
  const secrets = diffSecrets(key, resource.spec.secrets, live?.secrets, ctx.secretHashes, ctx.applied);
  const secretNames = secretsToSend(secrets, resource.spec.secrets, ctx.secretHashes);
  if (ctx.secretErrors?.length) blockers.push(...ctx.secretErrors);
  else if (secrets.unresolved.length > 0) {
    const named = secrets.unresolved.map((name) => withLocation(name, resource.secretLocations?.[name]));
    blockers.push(
      `secret ${named.join(', ')} could not be resolved; check its valueFrom (environment variable or file)`,
    );
  }

  const fields = [...(live ? sourceField(resource, live) : []), ...declared.fields, ...secrets.fields];
  if (!live || fields.length > 0) blockers.push(...missingForWrite(resource.spec, live, declared.body));
  const notes: string[] = [];
  const untouchable = live ? untouchableReason(live) : undefined;
  // Being deleted blocks even when nothing differs (the deployment is going away); a preview only blocks a write.
  if (untouchable && (live!.status === 'AWAITING_DELETE' || fields.length > 0 || blockers.length > 0))
    blockers.unshift(untouchable);
  else if (untouchable) notes.push(untouchable);
  if (live && !KNOWN_STATUSES.has(live.status)) {
    notes.push(`the service reports status ${show(live.status)}, which this converge does not know; shown as given`);
  }
  let action: PlanChange['action'];
  let newRevision = false;
  if (blockers.length > 0) {
    action = 'blocked';
    notes.push(...blockers);
  } else if (!live) {
    action = 'create';
    newRevision = true;
  } else if (fields.length === 0) {
    action = 'noop';
  } else {
    action = 'update';
    newRevision = patchStartsRevision(declared.body, secrets.names.length);
  }
  if (action !== 'blocked') {
    if (secrets.writtenOnce.length > 0) notes.push(writtenOnceNote(secrets.writtenOnce));
    const resent = action === 'update' ? secretNames.length - secrets.names.length : 0;
    if (resent > 0) notes.push(resentNote(resent));
    if (declared.normalised.length > 0) notes.push(normalisedNote(declared.normalised));
    const undeclared = undeclaredSecretNames(resource.spec.secrets, live?.secrets);
    if (undeclared.length > 0) notes.push(undeclaredNote(undeclared, secretNames.length > 0));
  }
  const artifact = artifactField(resource.spec.source);
  if (action === 'create' && artifact && !isAbsent(resource.spec.source_revision_config?.[artifact as 'image_uri'])) {
    notes.push(
      `created without source_revision_config.${artifact}, then patched with it in the same job (the service takes the artifact only by PATCH)`,
    );
  }
  if (resource.suspend) notes.push(SUSPENDED_NOTE);

  const change: PlanChange = {
    kind: 'Deployment',
    name: resource.name,
    action,
    new_revision: newRevision,
    fields,
    reason: notes.length > 0 ? notes.join('; ') : null,
  };
  if (resource.suspend) change.suspended = true;
  if (resource.suspend || action === 'blocked' || action === 'noop') return { change, secretNames: [] };
  if (action === 'create') {
    return { change, request: { op: 'create', body: declared.body as CreateDeploymentRequest }, secretNames };
  }
  return { change, request: { op: 'patch', id: live!.id, body: declared.body }, secretNames };
}

/**
 * The body to send for a diff's request, with the resolved values of exactly `diff.secretNames`.
 * A create always carries `secrets` (possibly []); a PATCH carries it only when non-empty, because an
 * absent list keeps the stored secrets and a non-empty one starts a revision.
 */
export function requestBody(
  diff: DeploymentDiff,
  values: Readonly<Record<string, string>>,
): CreateDeploymentRequest | PatchDeploymentRequest | undefined {
  if (!diff.request) return undefined;
  const secrets: Secret[] = diff.secretNames.map((name) => {
    const value = values[name];
    if (value === undefined) {
      throw new SecretResolutionError(`secret ${name} of Deployment/${diff.change.name} has no resolved value`);
    }
    return { name, value };
  });
  if (diff.request.op === 'create') return { ...diff.request.body, secrets };
  return secrets.length > 0 ? { ...diff.request.body, secrets } : { ...diff.request.body };
}
