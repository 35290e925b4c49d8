// Holds: a resource the daemon does not write although its plan says so (its revision for this desired state failed), until the desired state changes or an operator releases it.

/**
 * Why a resource is held. RevisionFailed: the revision built from this very desired state failed; sending the same
 * input again builds the same failure. WriteRefused: the service refused the write of this desired state with an
 * answer no retry of the same write changes (REFUSED_FOR_GOOD). NameTaken: its create was answered 409 and the service
 * lists no deployment of the name (a deleted deployment's tracing project keeps it): every create would be. WaveHeld:
 * its wave waits behind an earlier wave of the same change whose rollout failed (src/core/waves.ts). A new
 * reason joins this list and is released the same way.
 */
export const HOLD_REASONS = ['RevisionFailed', 'WriteRefused', 'NameTaken', 'WaveHeld'] as const;

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
const BEING_DELETED = /is being deleted/i;

/**
 * What a job's final failure was, as data (the job runner sets it from the typed error, src/jobs/runner/processor.ts):
 * the status the service answered the write with and whether that answer said the deployment is being deleted, or a
 * create whose name is taken (nameTakenReason).
 */
export interface JobFailure {
  status?: number | undefined;
  deleting?: true | undefined;
  nameTaken?: true | undefined;
}

/** Whether the service's answer says the deployment is being deleted (its detail, read once where the error is typed). */
export function answerSaysDeleting(detail: string): boolean {
  return BEING_DELETED.test(detail);
}

/**
 * The hold a job's final failure gives the desired state `desired` it carried: NameTaken for a name taken, WriteRefused
 * for a refusal the same write gets again (REFUSED_FOR_GOOD, not a deployment being deleted), else none.
 */
export function holdOfFailure(
  failure: JobFailure,
  desired: string,
  message: string,
  name: string,
  now: Date,
): ResourceHold | undefined {
  if (failure.nameTaken) return nameTakenHold(desired, message, name, now);
  if (failure.status !== undefined && REFUSED_FOR_GOOD.includes(failure.status) && !failure.deleting)
    return writeRefusedHold(desired, message, name, now);
  return undefined;
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
export function holdsNamed(
  held: readonly string[],
  request: true | readonly string[],
): { released: string[]; unmatched: string[] } {
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
export function revisionFailedHold(
  desired: string,
  revisionId: string,
  revisionStatus: string,
  name: string,
  now: Date,
): ResourceHold {
  return {
    reason: 'RevisionFailed',
    desired,
    revisionId,
    revisionStatus,
    since: now.toISOString(),
    message: `revision ${revisionId} of this desired state ended ${revisionStatus}: the same input is not sent again; change the manifest, or run "converge reconcile --retry-failed ${name}"`,
  };
}

/** How a create's NameTaken failure begins (after BlockedError's "blocked: "), so the daemon can tell it from others. */
const NAME_TAKEN = 'the name is taken on the service: ';

/**
 * Why a create answered 409 is blocked when the service lists no deployment of the name (src/sync/deployment/sync.ts):
 * what happened, and what to do. `detail`: the service's own text.
 */
export function nameTakenReason(name: string, detail: string): string {
  return `${NAME_TAKEN}the create was answered 409 (${detail}) and no deployment named "${name}" is listed (a deleted deployment's tracing project keeps its name, or another deployment has it); rename the manifest (metadata.name), or delete the tracing project "${name}"`;
}

/** The hold of a create of the desired state `desired` whose name is taken on the service (`failure`: the job's). */
export function nameTakenHold(desired: string, failure: string, name: string, now: Date): ResourceHold {
  const reason = failure.slice(failure.indexOf(NAME_TAKEN));
  return {
    reason: 'NameTaken',
    desired,
    since: now.toISOString(),
    message: `${reason}; no POST is sent again for this desired state until the manifest changes or "converge reconcile --retry-failed ${name}" releases it`,
  };
}
