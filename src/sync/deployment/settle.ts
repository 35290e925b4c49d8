// A Deployment's write whose answer was lost with its job: whether live state shows it landed; its settle by reads.
import type { LostWritePort, PendingWrite, ServicePort, SyncResult, WrittenState } from '../../core/kinds/ports.js';
import type { AppliedRecord, LiveDeployment, Ownership, WriteAnswer } from '../../core/model.js';
import { answeredFieldHashes, fieldHash, valueAt } from '../../core/kinds/deployment/three-way.js';
import { findLiveDeployment } from '../../service/find-deployment.js';

/**
 * How far the service's clock may be behind ours when deciding that a deployment found after a lost create
 * answer is the one this job created (its created_at is after our first send, less this margin).
 */
export const CLOCK_SKEW_MS = 120_000;

/** The result message of a write whose answer was lost and that live state shows landed. */
export const LOST_ANSWER = 'the answer to an earlier attempt was lost; live state shows its write landed';

/**
 * Whether live state shows that `pending` landed, where it can tell: a create when the deployment was created after the
 * first send; a PATCH that starts a revision when the latest revision changed since. Undefined for a PATCH that starts
 * none (only its fields can tell: `fieldsLanded`).
 */
export function pendingLanded(pending: PendingWrite, live: LiveDeployment): boolean | undefined {
  if (pending.op === 'create') return Date.parse(live.created_at) >= Date.parse(pending.sentAt) - CLOCK_SKEW_MS;
  if (!pending.startsRevision) return undefined;
  return (live.latest_revision_id ?? null) !== (pending.revisionBefore ?? null);
}

/** Whether every field a PATCH sent reads in live state as it was sent (a PATCH of no field tells nothing: false). */
function fieldsLanded(pending: PendingWrite, live: LiveDeployment): boolean {
  const sent = Object.entries(pending.fields ?? {});
  return sent.length > 0 && sent.every(([path, hash]) => fieldHash(valueAt(live, path)) === hash);
}

/**
 * What to record of a write whose answer was lost: the secret hashes it sent and, for each declared field it sent, the
 * hash sent and the hash of live state there (which stands in for the answer), and the ownership it took.
 */
export function lostWriteRecord(
  pending: PendingWrite,
  live: LiveDeployment,
  ownership: Ownership | undefined,
): WrittenState {
  const written: WrittenState = {
    secrets: pending.secrets,
    replaceSecrets: Object.keys(pending.secrets).length > 0,
    fields: answeredFieldHashes(pending.fields ?? {}, live),
    answer: landedAnswer(pending, live),
  };
  if (ownership) written.ownership = ownership;
  return written;
}

/**
 * The ownership a write to `live` records: none new when converge owns it already (with its id); `adopted` for one it
 * did not create (or owns from a record of an older version that kept no id).
 */
export function adoptedOwnership(applied: AppliedRecord | undefined, live: LiveDeployment): Ownership | undefined {
  if (applied?.ownership?.id === live.id) return undefined;
  return { origin: 'adopted', id: live.id };
}

/** The ownership a landed write records: `created` for a create, else as any write to `live` (adoptedOwnership). */
export function landedOwnership(
  pending: PendingWrite,
  applied: AppliedRecord | undefined,
  live: LiveDeployment,
): Ownership | undefined {
  return pending.op === 'create' ? { origin: 'created', id: live.id } : adoptedOwnership(applied, live);
}

/**
 * What the answer to a Deployment's write said (recorded with it: WrittenState.answer), as the job's result states it:
 * `outcome`, whether it started a revision, the deployment's id and latest revision read from `live`.
 */
export function deploymentAnswer(
  outcome: WriteAnswer['outcome'],
  newRevision: boolean,
  live: LiveDeployment,
): WriteAnswer {
  return { outcome, new_revision: newRevision, ...liveIds(live) };
}

/** The deployment's id and latest revision, as a job's result and a write's answer carry them. */
export function liveIds(live: LiveDeployment): { deploymentId: string; latestRevisionId: string | null } {
  return { deploymentId: live.id, latestRevisionId: live.latest_revision_id ?? null };
}

/** What a lost write that landed did, as its own answer would have said. */
function landedAnswer(pending: PendingWrite, live: LiveDeployment): WriteAnswer {
  const created = pending.op === 'create';
  return deploymentAnswer(created ? 'created' : 'updated', created || pending.startsRevision === true, live);
}

/** The result of a job whose lost write landed: what it did, as its own answer would have said. */
function landedResult(pending: PendingWrite, live: LiveDeployment): SyncResult {
  return { ...landedAnswer(pending, live), message: LOST_ANSWER };
}

/** What the settle of a job's own lost write found: landed (recorded; the job's result), not, or none to settle. */
export type LostWriteSettle = { landed: SyncResult } | { landed: false } | undefined;

/**
 * The write `jobId` marked pending and never recorded (its process died before the answer, or with it), settled from
 * what the service reports, reading only (GET by id, else the listing): landed, it is recorded as applied and its
 * pending write removed; not landed, its pending write is removed. Either only while the pending write is still that
 * job's (LostWritePort), so a newer job's write is never settled in its stead. Undefined when the resource has no
 * pending write of that job, no live deployment, or a newer job took the pending write meanwhile.
 */
export async function settleLostDeploymentWrite(
  key: string,
  name: string,
  jobId: string,
  ports: {
    service: Pick<ServicePort, 'readDeployment' | 'listDeploymentPages'>;
    appliedState: LostWritePort;
  },
  liveId?: string,
): Promise<LostWriteSettle> {
  const { applied, pending } = await ports.appliedState.read(key);
  if (!pending || pending.jobId !== jobId || (pending.op !== 'create' && pending.op !== 'patch')) return undefined;
  const live = await findLiveDeployment(ports.service, name, liveId);
  if (!live) return undefined;
  const landed = pendingLanded(pending, live) ?? fieldsLanded(pending, live);
  if (!landed) return (await ports.appliedState.clearSettled(key, pending)) ? { landed: false } : undefined;
  const written = lostWriteRecord(pending, live, landedOwnership(pending, applied, live));
  const recorded = await ports.appliedState.recordSettled(key, pending, written, applied ?? null);
  return recorded ? { landed: landedResult(pending, live) } : undefined;
}
