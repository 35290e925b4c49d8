// A deployment's health: from its listing, the revision read when the latest is not active, and the hold of a failed one.
import { healthOfDeployment, healthOfRevision, progressDeadline, type HealthCondition } from '../../health.js';
import type { ListedDeployment } from '../../model.js';
import type { HealthInput, RevisionReading } from '../kind.js';

/** When the service says the revision began, when earlier than since when converge knows it builds. */
function startedAt(revision: RevisionReading, since: number | undefined): number | undefined {
  const at = revision.createdAt ? Date.parse(revision.createdAt) : Number.NaN;
  if (!Number.isFinite(at)) return since;
  return since === undefined ? at : Math.min(at, since);
}

/**
 * A rollout follower's read of the latest revision alone (src/core/rollout.ts: no listing) is the revision's word. No
 * live deployment otherwise: it waits for its create. Otherwise the latest revision's word when it was read (a failed
 * build looks like a build from the listing), else the hold of that very revision, else the listing (latest active
 * and READY: healthy; otherwise progressing, degraded past the progress deadline).
 */
export function deploymentHealth(input: HealthInput): HealthCondition {
  const { live, revision, hold, clock } = input;
  const now = clock?.now ?? 0;
  const deadlineMs = clock?.deadlineMs ?? Number.POSITIVE_INFINITY;
  const ofRevision = (read: RevisionReading): HealthCondition =>
    progressDeadline(healthOfRevision(read.id, read.status, read), now, startedAt(read, clock?.since), deadlineMs);
  if (!live && revision) return ofRevision(revision);
  if (!live)
    return {
      status: 'unknown',
      reason: 'AwaitingCreate',
      message: input.action === 'create' ? 'not created yet' : 'no live deployment of this name',
    };
  const latest = live.latest_revision_id ?? null;
  const fromList = healthOfDeployment(live, now, clock?.since, deadlineMs);
  if (fromList.status === 'healthy' || fromList.status === 'unknown') return fromList;
  if (latest !== null && revision?.id === latest) return ofRevision(revision);
  if (hold?.reason === 'RevisionFailed' && latest !== null && hold.revisionId === latest && hold.revisionStatus) {
    return { ...healthOfRevision(latest, hold.revisionStatus), message: hold.message };
  }
  return fromList;
}

/** The latest revision when it is not the active one: health reads it (the listing cannot tell a build from a failed one). */
export function deploymentRevisionToRead(live: ListedDeployment | undefined): string | undefined {
  const latest = live?.latest_revision_id ?? null;
  if (latest === null || latest === (live?.active_revision_id ?? null)) return undefined;
  return latest;
}
