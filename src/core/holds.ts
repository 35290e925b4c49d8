// Holds: a resource the daemon does not write although its plan says so (its revision for this desired state failed), until the desired state changes or an operator releases it.

import { serviceStatusOf } from './errors.js';

/**
 * Why a resource is held. RevisionFailed: the revision built from this very desired state failed; sending the same
 * input again builds the same failure. WriteRefused: the service refused the write of this desired state with an
 * answer no retry of the same write changes (REFUSED_FOR_GOOD). A new reason joins this list and is released the same way.
 */
export const HOLD_REASONS = ['RevisionFailed', 'WriteRefused'] as const;

/**
 * The service's answers to a write that the same write would get again, because they are about its body: 400 (a bad
 * field), 413 (too large), 422 (a value the service refuses). Not 401/403 (the key, not the manifest), 404 (the
 * resource is gone: the next reconcile plans it again), 408/429/5xx (retried) or 409 (a name conflict, settled apart).
 */
export const REFUSED_FOR_GOOD: readonly number[] = [400, 413, 422];
/**
 * A 400 about the deployment, not the write: the service is deleting it (deleted outside converge between the job's
 * read and its write). Not held: once it is gone the next reconcile plans its create, which a hold of the same
 * desired state would stop for good.
 */
const BEING_DELETED = /answered 400: .*is being deleted/i;

/** Whether a job's failure (`reason`: its message, with the service's status) is a refusal no retry of the same write changes. */
export function refusedForGood(reason: string): boolean {
  const status = serviceStatusOf(reason);
  return status !== undefined && REFUSED_FOR_GOOD.includes(status) && !BEING_DELETED.test(reason);
}
export type HoldReason = (typeof HOLD_REASONS)[number];

/** One hold, as stored (no secret: the fingerprint is a hash). */
export interface ResourceHold {
  reason: HoldReason;
  /** Fingerprint of the desired state the hold is about; another desired state is not held. */
  desired: string;
  /** One line for status and logs. */
  message: string;
  /** ISO time the hold began. */
  since: string;
  /** RevisionFailed: the failed revision and its status. */
  revisionId?: string;
  revisionStatus?: string;
}

/** Whether `hold` stops a write of the desired state `desired` (false: no hold, or a hold about an older desired state). */
export function holdApplies(hold: ResourceHold | undefined, desired: string | undefined): hold is ResourceHold {
  return hold !== undefined && desired !== undefined && hold.desired === desired;
}

/** Which of `held` (resource keys) a release request names: true is every one; a name matches `Kind/name` or `name`. */
export function holdsNamed(held: readonly string[], request: true | readonly string[]): { released: string[]; unmatched: string[] } {
  if (request === true) return { released: [...held], unmatched: [] };
  const released = held.filter((key) => request.includes(key) || request.includes(key.slice(key.indexOf('/') + 1)));
  return { released, unmatched: namingNone(request, held) };
}

/** The names (`Kind/name` or `name`) that name none of `keys` (resource keys). */
export function namingNone(names: readonly string[], keys: readonly string[]): string[] {
  return names.filter((name) => !keys.some((key) => key === name || key.slice(key.indexOf('/') + 1) === name));
}

/** The hold of a write of the desired state `desired` that the service refused for good (`refusal`: its answer). */
export function writeRefusedHold(desired: string, refusal: string, name: string, now: Date): ResourceHold {
  return {
    reason: 'WriteRefused',
    desired,
    since: now.toISOString(),
    message: `the service refused the write of this desired state (${refusal}): the same input is not sent again; change the manifest, or run "converge reconcile --retry-failed ${name}"`,
  };
}

/** The hold of a failed revision of the desired state `desired`. */
export function revisionFailedHold(desired: string, revisionId: string, revisionStatus: string, name: string, now: Date): ResourceHold {
  return {
    reason: 'RevisionFailed',
    desired,
    revisionId,
    revisionStatus,
    since: now.toISOString(),
    message: `revision ${revisionId} of this desired state ended ${revisionStatus}: the same input is not sent again; change the manifest, or run "converge reconcile --retry-failed ${name}"`,
  };
}
