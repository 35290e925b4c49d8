// One Deployment, level-triggered: read it by id right before writing, settle an earlier lost write, send the minimal change, record it.
import { BlockedError, ServiceError } from '../../core/errors.js';
import { nameTakenReason } from '../../core/holds.js';
import type { AppliedRecord, DeploymentResource, LiveDeployment, WriteAnswer } from '../../core/model.js';
import type { CreateDeploymentRequest, PatchDeploymentRequest } from '../../core/wire/schema.js';
import type {
  DesiredSecrets,
  JobWrite,
  PendingWrite,
  SyncPorts,
  SyncResult,
  WrittenState,
} from '../../core/kinds/ports.js';
import { blockedNow, liveChanged, undecidedNow } from '../../core/write-premise.js';
import {
  diffDeployment,
  requestBody,
  type DeploymentContext,
  type DeploymentDiff,
} from '../../core/kinds/deployment/diff.js';
import { artifactField, declaredFieldPaths } from '../../core/kinds/deployment/fields.js';
import { answeredFieldHashes, sentFieldHashes } from '../../core/kinds/deployment/three-way.js';
import { declaredSources } from '../../core/kinds/deployment/secrets.js';
import { resourceKey, type Ownership } from '../../core/model.js';
import { ownershipOf } from '../../core/ownership.js';
import { isAbsent } from '../../core/values.js';
import { findLiveDeployment } from '../../service/find-deployment.js';
import {
  adoptedOwnership,
  deploymentAnswer,
  landedOwnership,
  liveIds,
  LOST_ANSWER,
  lostWriteRecord,
  pendingLanded,
} from './settle.js';

/** A create still unanswered after this long is treated as a new write (its send time is not reused). */
const PENDING_REUSE_MS = 3_600_000;

function pick(hashes: Record<string, string>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (hashes[name] !== undefined) out[name] = hashes[name]!;
  return out;
}

/**
 * What to record of a write: the secret hashes it sent (when it sent any, the complete declared set, so they replace
 * the recorded ones), for each declared field it sent, the hash sent and the hash of the service's answer there, and
 * what that answer said (`said`: the job's result as far as this write goes).
 */
function writtenState(
  secrets: Record<string, string>,
  sentFields: Readonly<Record<string, string>>,
  answer: unknown,
  said: WriteAnswer,
  ownership?: Ownership,
  resource?: DeploymentResource,
): WrittenState {
  const written: WrittenState = {
    secrets,
    replaceSecrets: Object.keys(secrets).length > 0,
    fields: answeredFieldHashes(sentFields, answer),
    answer: said,
  };
  // where each value sent came from (names only)
  if (resource && written.replaceSecrets)
    written.secretSources = declaredSources(resource.spec.secrets, Object.keys(secrets));
  if (ownership) written.ownership = ownership;
  return written;
}

/** fieldHash() of each declared field the body sends (recorded as pending before the send, as applied after). */
function sentFields(resource: DeploymentResource, body: unknown): Record<string, string> {
  return sentFieldHashes(declaredFieldPaths(resource.spec), body);
}

/** The desired deployment as this sync writes it: repository resolved, secrets hashed (values on demand). */
interface Desired {
  key: string;
  resource: DeploymentResource;
  secrets: DesiredSecrets;
  repositoryError?: string;
}

async function desiredState(resource: DeploymentResource, ports: SyncPorts): Promise<Desired> {
  let desired = resource;
  let repositoryError: string | undefined;
  const config = resource.spec.source_config ?? {};
  // Jobs from apply carry the repository already resolved in the same reconcile; resolve only what is missing.
  if (resource.spec.repository && (!config.integration_id || !config.repo_url)) {
    const resolved = await ports.resolveRepository(resource);
    desired = resolved.resource;
    repositoryError = resolved.error;
  }
  const out: Desired = {
    key: resourceKey('Deployment', resource.name),
    resource: desired,
    secrets: await ports.desiredSecrets(desired),
  };
  if (repositoryError) out.repositoryError = repositoryError;
  return out;
}

function diffFor(
  desired: Desired,
  live: LiveDeployment | undefined,
  applied: AppliedRecord | undefined,
): DeploymentDiff {
  const context: DeploymentContext = { secretHashes: desired.secrets.hashes, secretErrors: desired.secrets.errors };
  if (applied) context.applied = applied;
  if (desired.repositoryError) context.repositoryError = desired.repositoryError;
  return diffDeployment(desired.resource, live, context);
}

/** What a sync found of an earlier attempt's write whose answer was lost. */
interface Settled {
  applied: AppliedRecord | undefined;
  /** The earlier write, when live state shows it landed (its hashes are now recorded as applied). */
  landed?: PendingWrite;
  /** A PATCH that starts no revision: whether it landed shows only in the diff, decided by the caller. */
  unsure?: PendingWrite;
  /** No live deployment: the pending write as read (left in place; a create retry reuses its send time). */
  pending?: PendingWrite;
}

/**
 * A write whose answer was lost may still have landed. Decide from live state whether it did, and if so record
 * its hashes as applied, so it is not sent a second time (a second PATCH with secrets is a needless revision).
 * A create landed when the deployment now exists and was created after the first send; a PATCH with secrets
 * landed when the latest revision changed since. Anything else is forgotten: this attempt decides afresh.
 */
async function settlePending(key: string, ports: SyncPorts, live: LiveDeployment | undefined): Promise<Settled> {
  const { applied, pending } = await ports.appliedState.read(key);
  if (!pending || (pending.op !== 'create' && pending.op !== 'patch')) return { applied };
  if (!live) return { applied, pending };
  const landed = pendingLanded(pending, live);
  if (landed === undefined) {
    await ports.appliedState.clearPending(key);
    return { applied, unsure: pending };
  }
  if (!landed) {
    await ports.appliedState.clearPending(key);
    return { applied };
  }
  // The answer was lost: the live state read now stands in for it.
  const written = lostWriteRecord(pending, live, landedOwnership(pending, applied, live));
  return { applied: await ports.appliedState.recordWrite(key, written, applied ?? null), landed: pending };
}

function deploymentResult(
  outcome: SyncResult['outcome'],
  newRevision: boolean,
  live: LiveDeployment | undefined,
  message?: string,
): SyncResult {
  const result: SyncResult = { outcome, new_revision: newRevision, ...(live ? liveIds(live) : {}) };
  if (message) result.message = message;
  return result;
}

/** The result of a sync that has nothing left to send: its own earlier write, or nothing at all, did the work. */
function settledResult(settled: Settled, live: LiveDeployment | undefined): SyncResult {
  const earlier = settled.landed ?? settled.unsure;
  if (!earlier) return deploymentResult('unchanged', false, live);
  if (earlier.op === 'create') return deploymentResult('created', true, live, LOST_ANSWER);
  return deploymentResult('updated', earlier.startsRevision === true, live, LOST_ANSWER);
}

interface Patched {
  sent: boolean;
  live: LiveDeployment;
  newRevision: boolean;
}

/**
 * Sends the PATCH of `diff` (if any), marked pending first, and records it over `applied` (the record read during this
 * sync) with what its answer said: `outcome` (the job's: `created` when it completes a create, which started a
 * revision).
 */
async function patchIfNeeded(
  desired: Desired,
  diff: DeploymentDiff,
  live: LiveDeployment,
  ports: SyncPorts,
  applied: AppliedRecord | undefined,
  outcome: WriteAnswer['outcome'],
): Promise<Patched> {
  if (!diff.request || diff.request.op !== 'patch') return { sent: false, live, newRevision: false };
  const newRevision = outcome === 'created' || diff.change.new_revision;
  const written = pick(desired.secrets.hashes, diff.secretNames);
  const body = requestBody(diff, await desired.secrets.values(diff.secretNames)) as PatchDeploymentRequest;
  const fields = sentFields(desired.resource, diff.request.body);
  await ports.appliedState.setPending(desired.key, {
    op: 'patch',
    secrets: written,
    fields,
    sentAt: ports.now().toISOString(),
    revisionBefore: live.latest_revision_id ?? null,
    startsRevision: diff.change.new_revision,
  });
  const updated = await ports.service.patchDeployment(diff.request.id, body);
  const said = deploymentAnswer(outcome, newRevision, updated);
  await ports.appliedState.recordWrite(
    desired.key,
    writtenState(written, fields, updated, said, adoptedOwnership(applied, live), desired.resource),
    applied ?? null,
  );
  return { sent: true, live: updated, newRevision };
}

/**
 * The rebuild the operator asked for (`converge reconcile --retry-failed`, decided as write op `rebuild`) of a deployment
 * whose live state matches: a PATCH of its declared revision fields, unchanged, which starts a new revision of the same
 * input (docs/against-the-real-service.md §4: a non-null revision field starts one even when its value is unchanged). Undefined
 * when it declares none.
 */
function rebuildDiff(desired: Desired, diff: DeploymentDiff, live: LiveDeployment): DeploymentDiff | undefined {
  const declared = Object.entries(desired.resource.spec.source_revision_config ?? {}).filter(
    ([, value]) => !isAbsent(value),
  );
  if (declared.length === 0) return undefined;
  const body = { source_revision_config: Object.fromEntries(declared) } as PatchDeploymentRequest;
  const fields = declared.map(([name, value]) => ({
    path: `source_revision_config.${name}`,
    before: value,
    after: value,
    sensitive: false,
  }));
  return {
    change: { ...diff.change, action: 'update', new_revision: true, fields },
    request: { op: 'patch', id: live.id, body },
    secretNames: [],
  };
}

/**
 * Whether the live deployment a create job finds is its own create of an earlier attempt: the create's answer was
 * lost and live state shows it landed now, or it was settled by an attempt before (the record names this id as
 * created). The decision saw no deployment, so no other create of converge's can have made it.
 */
function createdByThisJob(live: LiveDeployment, settled: Settled): boolean {
  if (settled.landed?.op === 'create') return true;
  const ownership = settled.applied?.ownership;
  return ownership?.origin === 'created' && ownership.id === live.id;
}

/**
 * The one check of the write step: whether the live state it read (after settling its own lost answer) still fits the
 * decided write: not blocked now, the deployment decided on (none for a create), no field differing that did not.
 * Undefined when it does; else the result that sends nothing.
 */
function premiseBroken(
  write: JobWrite,
  desired: Desired,
  found: { live: LiveDeployment | undefined; liveId: string | undefined },
  settled: Settled,
  diff: DeploymentDiff,
): SyncResult | undefined {
  const { live, liveId } = found;
  const blocked = blockedNow(diff.change, desired.key, desired.secrets.errors);
  if (blocked) return blocked;
  if (write.op === 'create' && live && !createdByThisJob(live, settled))
    return liveChanged(
      `a deployment named "${desired.resource.name}" exists now (id ${live.id}); the decision was to create it`,
    );
  if (write.op !== 'create' && !live) return liveChanged('the deployment is gone');
  if (write.op !== 'create' && liveId && live!.id !== liveId)
    return liveChanged(`another deployment holds the name now (id ${live!.id}; the decision was about ${liveId})`);
  return undecidedNow(write, diff.change);
}

/**
 * One Deployment: read it (by id when known), settle an earlier lost write, check that live state still fits the
 * decided `write`, and send what of it is still missing.
 */
export async function syncDeployment(
  resource: DeploymentResource,
  write: JobWrite,
  ports: SyncPorts,
  liveId?: string,
): Promise<SyncResult> {
  const desired = await desiredState(resource, ports);
  const live = await findLiveDeployment(ports.service, desired.resource.name, liveId);
  const settled = await settlePending(desired.key, ports, live);
  let diff = diffFor(desired, live, settled.applied);
  const broken = premiseBroken(write, desired, { live, liveId }, settled, diff);
  if (broken) return broken;
  const rebuild =
    write.op === 'rebuild' && !diff.request && live && !settled.landed && !settled.unsure
      ? rebuildDiff(desired, diff, live)
      : undefined;
  if (rebuild) diff = rebuild;
  if (!diff.request) return settledResult(settled, live);
  // The flap guard, before anything is marked pending or sent: a refusal is this job's result.
  const refused = await ports.writeGate?.();
  if (refused) return refused;
  if (diff.request.op === 'patch') {
    // An earlier attempt's create landed but its answer was lost: this PATCH is the artifact that create left out.
    const completing = settled.landed?.op === 'create';
    // A first write to a deployment converge does not own takes it over: its result says so, as the plan's adopt did.
    const owned = ownershipOf(settled.applied, live!.id) === 'owned';
    const outcome = completing ? 'created' : owned ? 'updated' : 'adopted';
    const patched = await patchIfNeeded(desired, diff, live!, ports, settled.applied, outcome);
    const result = deploymentResult(outcome, patched.newRevision, patched.live, completing ? LOST_ANSWER : undefined);
    return { ...result, fields: diff.change.fields };
  }
  return sendCreate(desired, diff, settled, ports);
}

/** Sends the create of `diff`, marked pending first (a retry reuses the first send's time), and completes it. */
async function sendCreate(
  desired: Desired,
  diff: DeploymentDiff,
  settled: Settled,
  ports: SyncPorts,
): Promise<SyncResult> {
  const request = diff.request as { op: 'create'; body: CreateDeploymentRequest };
  const written = pick(desired.secrets.hashes, diff.secretNames);
  const body = requestBody(diff, await desired.secrets.values(diff.secretNames)) as CreateDeploymentRequest;
  const now = ports.now();
  const earlier = settled.pending;
  const retrying = earlier?.op === 'create' && now.getTime() - Date.parse(earlier.sentAt) < PENDING_REUSE_MS;
  const sentAt = retrying ? earlier.sentAt : now.toISOString();
  const fields = sentFields(desired.resource, request.body);
  await ports.appliedState.setPending(desired.key, { op: 'create', secrets: written, fields, sentAt });
  let created: LiveDeployment;
  try {
    created = await ports.service.createDeployment(body);
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    return createConflict(desired, ports, error);
  }
  const said = deploymentAnswer('created', true, created);
  const applied = await ports.appliedState.recordWrite(
    desired.key,
    writtenState(written, fields, created, said, { origin: 'created', id: created.id }, desired.resource),
  );
  return { ...(await completeCreate(desired, created, ports, applied)), fields: diff.change.fields };
}

/**
 * After a create: an internal source's artifact (image_uri, source_tarball_path) was left out of it, as the service
 * takes it only by PATCH; diff against the create's answer and send that PATCH now, marked pending first like any other.
 */
async function completeCreate(
  desired: Desired,
  created: LiveDeployment,
  ports: SyncPorts,
  applied: AppliedRecord,
): Promise<SyncResult> {
  const artifact = artifactField(desired.resource.spec.source);
  if (!artifact || isAbsent(desired.resource.spec.source_revision_config?.[artifact as 'image_uri'])) {
    return deploymentResult('created', true, created);
  }
  const diff = diffFor(desired, created, applied);
  const patched = await patchIfNeeded(desired, diff, created, ports, applied, 'created');
  return deploymentResult('created', true, patched.live);
}

/**
 * A create answered 409: the name exists. When live state shows it is this job's own earlier create (its answer lost
 * and not yet listed at the first read), the create is complete; a deployment made elsewhere is not taken over here
 * (the decision was to create): nothing more is sent. No deployment listed under the name: another resource holds it
 * (NameTaken), which no retry can change.
 */
async function createConflict(desired: Desired, ports: SyncPorts, conflict: ServiceError): Promise<SyncResult> {
  const live = await findLiveDeployment(ports.service, desired.resource.name);
  if (!live) {
    await ports.appliedState.clearPending(desired.key);
    // The daemon holds it (NameTaken, src/daemon/status/refused-writes.ts): no later reconcile sends the create again.
    throw new BlockedError(nameTakenReason(desired.resource.name, conflict.detail), { nameTaken: true });
  }
  const settled = await settlePending(desired.key, ports, live);
  if (settled.landed?.op !== 'create') {
    await ports.appliedState.clearPending(desired.key);
    return liveChanged(
      `the create was answered 409: a deployment named "${desired.resource.name}" was made elsewhere meanwhile (id ${live.id})`,
    );
  }
  const completed = await completeCreate(desired, live, ports, settled.applied!);
  return { ...completed, message: LOST_ANSWER };
}
