// A write the service refused for good (413, 400, 422: src/core/holds.ts REFUSED_FOR_GOOD), or a create whose name is taken on the service (NameTaken), holds its desired state, as a failed build does, until the manifest changes.
import type { Logger } from 'pino';
import { serviceStatusOf } from '../../core/errors.js';
import { isNameTaken, nameTakenHold, refusedForGood, writeRefusedHold, type ResourceHold } from '../../core/holds.js';
import type { EnqueuedJob } from '../cycle/cycle-context.js';
import type { ResourceTracker } from './resource-tracker.js';

export interface RefusedWriteParts {
  tracker: ResourceTracker;
  holds: { set(key: string, hold: ResourceHold): Promise<void> } | undefined;
  log: Logger;
}

/**
 * Holds the job's desired state when the job failed on an answer no retry of the same write changes (a refusal for
 * good, or a create whose name is taken); returns whether it did. The hold is shown at once and kept in Redis (a
 * restarted daemon keeps it); the next reconcile does not write that desired state again, and a changed manifest
 * (another desired state) is written at once.
 */
export function holdIfRefused(job: EnqueuedJob, reason: string, parts: RefusedWriteParts): boolean {
  const taken = isNameTaken(reason);
  // A job without a fingerprint sends no desired state that a hold could name (a delete, a kind the listing does not show).
  if ((!taken && !refusedForGood(reason)) || !job.fingerprint) return false;
  const name = job.key.slice(job.key.indexOf('/') + 1);
  const hold = taken ? nameTakenHold(job.fingerprint, reason, name, new Date()) : writeRefusedHold(job.fingerprint, reason, name, new Date());
  parts.tracker.setHold(job.key, hold);
  const said = taken
    ? 'job failed: the name is taken on the service (NameTaken); held (no POST sent again) until its manifest changes or converge reconcile --retry-failed releases it'
    : 'job failed: the service refused this write for good; held (not sent again) until its manifest changes or converge reconcile --retry-failed releases it';
  parts.log.warn({ key: job.key, jobId: job.jobId, status: serviceStatusOf(reason) ?? (taken ? 409 : undefined), reason: hold.reason, error: reason }, said);
  parts.holds?.set(job.key, hold).catch((error: unknown) => parts.log.warn({ key: job.key, error: (error as Error)?.message?.split('\n')[0] }, 'could not record the hold of a refused write; the next reconcile may send it again'));
  return true;
}
