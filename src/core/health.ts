// Sync status and rollout health of a resource, Flux-condition style (status, stable reason code, message), and the pure rules that derive health from a revision.

/** Whether live state matches the manifest (and, if not, why converge is not writing it). */
export const SYNC_STATUSES = ['synced', 'out_of_sync', 'blocked', 'suspended'] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];

/** Whether what was written runs: the latest revision deployed, builds, failed, or cannot be told. */
export const HEALTH_STATUSES = ['healthy', 'progressing', 'degraded', 'unknown'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** Stable reason codes of health (docs/daemon.md: "Health, beside sync"). */
export const HEALTH_REASONS = [
  'RevisionDeployed',
  'RevisionSkipped',
  'RevisionBuilding',
  'RevisionBuildFailed',
  'RevisionDeployFailed',
  'RevisionCreateFailed',
  'ProgressDeadlineExceeded',
  'AwaitingCreate',
  'NoRevision',
  'NoRollout',
] as const;
export type HealthReason = (typeof HEALTH_REASONS)[number];

/** Reasons of a failed revision (counted by converge_revision_failures_total{reason}). */
export const REVISION_FAILURE_REASONS = [
  'RevisionBuildFailed',
  'RevisionDeployFailed',
  'RevisionCreateFailed',
  'ProgressDeadlineExceeded',
] as const;
export type RevisionFailureReason = (typeof REVISION_FAILURE_REASONS)[number];

/** A condition: status, reason code, one-line message. */
export interface Condition<S extends string, R extends string = string> {
  status: S;
  reason: R;
  message: string;
}

export type SyncCondition = Condition<SyncStatus>;

export interface HealthCondition extends Condition<HealthStatus, HealthReason> {
  /** The revision this health is about (the deployment's latest), when known. */
  revisionId?: string;
  /** The service's status of that revision, when read. */
  revisionStatus?: string;
  /** When the service says that revision was created (its `created_at`), when read. */
  revisionCreatedAt?: string;
  /** When the service says that revision last changed status (its `updated_at`), when read. */
  revisionUpdatedAt?: string;
}

/** The service's times of a revision read (either may be missing: an older service, a listing). */
export interface RevisionTimes {
  createdAt?: string | null | undefined;
  updatedAt?: string | null | undefined;
}

const FAILED: Readonly<Record<string, RevisionFailureReason>> = {
  CREATE_FAILED: 'RevisionCreateFailed',
  BUILD_FAILED: 'RevisionBuildFailed',
  DEPLOY_FAILED: 'RevisionDeployFailed',
};

/** Whether a revision status is a failure for good (docs/against-the-real-service.md §4: CREATE_FAILED, BUILD_FAILED, DEPLOY_FAILED). */
export function revisionFailed(status: string): boolean {
  return FAILED[status] !== undefined;
}

/**
 * The health a revision status gives: DEPLOYED and SKIPPED are healthy (done), CREATE_FAILED, BUILD_FAILED and
 * DEPLOY_FAILED degraded (failed), every other status progressing (INTERRUPTED and UNKNOWN are transient, and a
 * status a newer service adds is not taken for a failure).
 */
export function healthOfRevision(revisionId: string, status: string, times: RevisionTimes = {}): HealthCondition {
  const about: Pick<HealthCondition, 'revisionId' | 'revisionStatus' | 'revisionCreatedAt' | 'revisionUpdatedAt'> = {
    revisionId,
    revisionStatus: status,
  };
  if (times.createdAt) about.revisionCreatedAt = times.createdAt;
  if (times.updatedAt) about.revisionUpdatedAt = times.updatedAt;
  if (status === 'DEPLOYED')
    return { status: 'healthy', reason: 'RevisionDeployed', message: `revision ${revisionId} is deployed`, ...about };
  if (status === 'SKIPPED')
    return {
      status: 'healthy',
      reason: 'RevisionSkipped',
      message: `revision ${revisionId} was skipped (a newer one superseded it)`,
      ...about,
    };
  const failed = FAILED[status];
  if (failed)
    return {
      status: 'degraded',
      reason: failed,
      message: `revision ${revisionId} ended ${status}; the active revision stays the last good one`,
      ...about,
    };
  return {
    status: 'progressing',
    reason: 'RevisionBuilding',
    message: `revision ${revisionId} is ${status}`,
    ...about,
  };
}

/** What health reads of a live deployment (the spec's fields). */
export interface DeploymentRollout {
  status: string;
  latest_revision_id?: string | null | undefined;
  active_revision_id?: string | null | undefined;
}

/** Whether a deployment's latest revision is active and the deployment READY: nothing to follow. */
export function rolloutDone(d: DeploymentRollout): boolean {
  return d.status === 'READY' && (d.latest_revision_id ?? null) === (d.active_revision_id ?? null);
}

/**
 * Health from the spec's fields alone (the list): healthy when the latest revision is active and READY; a deployment
 * without any revision waits for its artifact; otherwise progressing, or degraded with ProgressDeadlineExceeded once
 * `building` (since when it is known to build, ms) passed `deadlineMs`, as Kubernetes marks a stuck rollout.
 */
export function healthOfDeployment(
  d: DeploymentRollout,
  now: number,
  buildingSince: number | undefined,
  deadlineMs: number,
): HealthCondition {
  const latest = d.latest_revision_id ?? null;
  if (latest === null && (d.active_revision_id ?? null) === null) {
    return {
      status: 'unknown',
      reason: 'NoRevision',
      message: 'the deployment has no revision yet (it waits for its artifact)',
    };
  }
  const about = latest ? { revisionId: latest } : {};
  if (rolloutDone(d))
    return {
      status: 'healthy',
      reason: 'RevisionDeployed',
      message: latest ? `revision ${latest} is active` : 'the deployment is ready',
      ...about,
    };
  return progressDeadline(
    {
      status: 'progressing',
      reason: 'RevisionBuilding',
      message: latest ? `revision ${latest} is not active yet (deployment ${d.status})` : `deployment ${d.status}`,
      ...about,
    },
    now,
    buildingSince,
    deadlineMs,
  );
}

/** A progressing health past the deadline becomes degraded (ProgressDeadlineExceeded); any other health is kept. */
export function progressDeadline(
  health: HealthCondition,
  now: number,
  since: number | undefined,
  deadlineMs: number,
): HealthCondition {
  if (health.status !== 'progressing' || since === undefined || now - since < deadlineMs) return health;
  return {
    ...health,
    status: 'degraded',
    reason: 'ProgressDeadlineExceeded',
    message: `${health.revisionId ? `revision ${health.revisionId}` : 'the rollout'} is not active after ${formatElapsed(now - since)} (progress_deadline ${formatElapsed(deadlineMs)})`,
  };
}

/** "1m20s", "45s", "2h3m": an elapsed time for a progress line or a message. */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
