// What a job's result or final failure makes of a resource's state: the job-completed and job-failed steps of the fold (src/core/resource-state.ts).
import type { HealthCondition } from './health.js';
import { holdOfFailure } from './holds.js';
import { kindOf } from './kinds/index.js';
import type { SyncResult } from './kinds/ports.js';
import type { JobView, ConflictView, ResourceState, ResourceEvent } from './resource-state-model.js';

/** Job outcomes that wrote the desired state (its applied record carries the job's manifest version). */
const WROTE: ReadonlySet<string> = new Set(['created', 'updated', 'adopted']);

export function conflicted(state: ResourceState, conflict: ConflictView): ResourceState {
  const view: ConflictView = { reason: conflict.reason, message: conflict.message, since: conflict.since };
  if (conflict.versions) view.versions = conflict.versions;
  if (conflict.fields) view.fields = conflict.fields;
  return {
    ...state,
    conflict: view,
    reason: `Conflict: ${conflict.message}`,
    sync: { status: 'out_of_sync', reason: 'Conflict', message: conflict.message },
  };
}

/** The health after a completed job: a revision it started builds; a create with none to follow has its kind's health. */
function healthAfterJob(state: ResourceState, result: SyncResult, unfollowed: boolean): HealthCondition {
  if (result.new_revision) {
    const id = result.latestRevisionId ?? undefined;
    // A result folded after a reading of that revision's end (a late one: a former leader's job, a settled lost
    // answer): the reading stands.
    const ended = state.health.status === 'healthy' || state.health.status === 'degraded';
    if (id !== undefined && id === state.health.revisionId && ended) return state.health;
    const message = `${id ? `revision ${id}` : 'a new revision'} started${unfollowed ? ' (not waited for: --wait follows it)' : ''}`;
    return { status: 'progressing', reason: 'RevisionBuilding', message, ...(id ? { revisionId: id } : {}) };
  }
  if (state.action === 'create' && result.outcome !== 'unchanged')
    return kindOf(state.kind).health({ action: 'noop', live: undefined });
  // It sent nothing, having read the deployment's latest revision right before: another than the state shows (a
  // decision read the listing before an earlier job's write landed) is the one to follow now (the poll reads it).
  const latest = result.latestRevisionId;
  if (latest && state.health.revisionId && latest !== state.health.revisionId) {
    const message = `revision ${latest} is the latest; its status is read next`;
    return { status: 'progressing', reason: 'RevisionBuilding', message, revisionId: latest };
  }
  return state.health;
}

/**
 * The job a result is about, as the state shows it: the state's own job, or (a job of `converge apply`, of a former
 * leader) one made from the event; undefined when the state shows another job still queued, which the result does not
 * replace (it is news of an older job).
 */
function jobOfResult(
  state: ResourceState,
  event: { jobId: string; operation?: string | undefined },
): JobView | null | undefined {
  if (state.job?.id === event.jobId) return state.job;
  if (state.job?.state === 'queued') return undefined;
  return event.operation === undefined ? state.job : { id: event.jobId, state: 'queued', operation: event.operation };
}

/**
 * A result of a job the state does not show while another of its jobs is queued: what it wrote is kept (its manifests,
 * and the revision it started, the service's latest: the queued job has sent nothing yet), nothing else.
 */
function olderJobCompleted(
  state: ResourceState,
  event: Extract<ResourceEvent, { type: 'job-completed' }>,
): ResourceState {
  const result = event.result;
  if (!result || result.notRun || !WROTE.has(result.outcome)) return state;
  const next = { ...state };
  if (event.version) next.appliedFrom = { ...event.version, appliedAt: event.appliedAt ?? event.at };
  if (result.new_revision && result.latestRevisionId) {
    next.health = healthAfterJob(state, result, event.unfollowed === true);
    if (event.desired) next.revisionDesired = { revisionId: result.latestRevisionId, desired: event.desired };
  }
  return next;
}

export function jobCompleted(
  state: ResourceState,
  event: Extract<ResourceEvent, { type: 'job-completed' }>,
): ResourceState {
  const result = event.result;
  const shown = jobOfResult(state, event);
  if (shown === undefined) return olderJobCompleted(state, event);
  const next: ResourceState = { ...state, error: null };
  if (shown) {
    const job: JobView = { ...shown, state: 'completed', finishedAt: event.at };
    if (result) {
      job.outcome = result.outcome;
      job.new_revision = result.new_revision;
      if (result.message) job.message = result.message;
    }
    next.job = job;
  }
  if (result?.deploymentId) next.deploymentId = result.deploymentId;
  // A job that sent nothing (superseded, a former leader's, live changed since its decision) applied nothing: the next reconcile decides.
  if (result?.notRun)
    return {
      ...next,
      sync: {
        status: 'out_of_sync',
        reason: 'OutOfSync',
        message: result.message ?? `job ${event.jobId} sent nothing`,
      },
    };
  next.sync = {
    status: 'synced',
    reason: 'Applied',
    message: `job ${event.jobId} ${result ? result.outcome : 'finished'}`,
  };
  if (!result) return next;
  if (event.version && WROTE.has(result.outcome))
    next.appliedFrom = { ...event.version, appliedAt: event.appliedAt ?? event.at };
  next.health = healthAfterJob(state, result, event.unfollowed === true);
  if (result.new_revision && result.latestRevisionId && event.desired)
    next.revisionDesired = { revisionId: result.latestRevisionId, desired: event.desired };
  if (!result.conflict) return next;
  const { declared: _declared, ...found } = result.conflict;
  return conflicted(next, { ...found, since: state.conflict?.since ?? event.at });
}

/**
 * A job failed for good: the state shows the failure; a refusal the same write would get again (or a name taken)
 * holds the desired state the job carried (src/core/holds.ts holdOfFailure), the one place a failure becomes a hold.
 */
export function jobFailed(state: ResourceState, event: Extract<ResourceEvent, { type: 'job-failed' }>): ResourceState {
  const shown = jobOfResult(state, event);
  if (shown === undefined) return state;
  const job: JobView | null = shown
    ? { ...shown, state: 'failed', message: event.message, finishedAt: event.at }
    : null;
  const next: ResourceState = {
    ...state,
    job,
    error: event.message,
    sync: { status: 'out_of_sync', reason: 'JobFailed', message: event.message },
  };
  const hold =
    event.failure && event.desired
      ? holdOfFailure(event.failure, event.desired, event.message, state.name, new Date(event.at))
      : undefined;
  if (hold && !(state.hold?.reason === hold.reason && state.hold.desired === hold.desired)) next.hold = hold;
  return next;
}
