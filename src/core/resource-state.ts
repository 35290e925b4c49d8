// The one owner of a resource's state after the decision: the pure fold of its events (a decision outcome, a job result, a revision reading, a conflict, an operator release) into its conditions; its model is src/core/resource-state-model.ts, a job's steps src/core/job-result-state.ts.
import type { Outcome } from './decide.js';
import { legacyState } from './legacy-state.js';
import type { Action, ResourceKind } from './model.js';
import type { ResourceState, DecisionContext, ResourceEvent } from './resource-state-model.js';
import { conflicted, jobCompleted, jobFailed } from './job-result-state.js';

/** The state a reconcile's outcome gives; `previous` is kept where a job of it finished or is still news. */
function decided(previous: ResourceState | undefined, outcome: Outcome, context: DecisionContext): ResourceState {
  const next: ResourceState = {
    key: outcome.key,
    kind: outcome.kind,
    name: outcome.name,
    file: context.file,
    action: outcome.action,
    sync: outcome.sync,
    health: outcome.health,
    reason: context.planReason,
    error: outcome.action === 'blocked' ? context.planReason : null,
    drift: context.drift,
    heldAtLastGood: context.heldAtLastGood,
    job: null,
  };
  if (context.hold) next.hold = context.hold;
  const deploymentId = context.deploymentId ?? previous?.deploymentId;
  if (deploymentId) next.deploymentId = deploymentId;
  const appliedFrom = laterWrite(previous?.appliedFrom, context.appliedFrom);
  if (appliedFrom) next.appliedFrom = appliedFrom;
  if (context.pendingDelete) next.pendingDelete = { ...context.pendingDelete };
  if (context.pruneKept) next.pruneKept = true;
  // An operator's release outlives the decisions after it (and a failover: the projection keeps it).
  if (previous?.releasedRevision !== undefined) next.releasedRevision = previous.releasedRevision;
  if (context.desired !== undefined) next.desired = context.desired;
  if (previous?.revisionDesired) next.revisionDesired = previous.revisionDesired;
  const reason = outcome.sync.reason;
  if (reason === 'SecretsUnknown') {
    next.secretsUnknown = outcome.secretsUnknown ?? [];
    next.reason = `SecretsUnknown: ${outcome.sync.message}`;
  } else if (reason === 'Applied') {
    // The job finished during the reconcile: keep what its completion showed (the live state read predates it).
    next.job = previous?.job ?? null;
    if (previous) next.health = previous.health;
    // The applied state this reconcile read predates that job too: the manifests its write came from stay shown.
    if (previous?.appliedFrom) next.appliedFrom = previous.appliedFrom;
  } else if (
    reason === 'Applying' &&
    outcome.job &&
    previous?.job?.id === outcome.job.jobId &&
    previous.job.state !== 'queued'
  ) {
    // Its job ended (folded where it ran) before this decision was written: what the job's result made stays.
    return {
      ...next,
      job: previous.job,
      sync: previous.sync,
      health: previous.health,
      error: previous.error,
      reason: previous.reason,
      ...keptOfJob(previous, next),
    };
  } else if (reason === 'Applying' && outcome.job) {
    next.job = { id: outcome.job.jobId, state: 'queued', operation: outcome.job.operation };
    // A job that failed before keeps its error visible while the new one runs.
    if (previous && legacyState(previous) === 'failed') next.error = previous.error;
  } else if (previous?.job && (outcome.action !== 'noop' || previous.job.state !== 'queued')) {
    // The resource's last job stays once it ended (also when the plan has nothing left to write): what it did is
    // still the news (`converge status`, and the notifier, which may read the state after this reconcile).
    next.job = previous.job;
  }
  return next;
}

/**
 * The manifests of converge's last write, of the two a decision knows: the applied record it read, or the state's,
 * which a job's result folded after that read may have set (its write recorded after the read): the later write's.
 * Both times are Redis' clock at the write: the script that stored each record stamped it, and a job's fold carries
 * its record's time (src/store/applied-state-scripts.ts, src/jobs/runner/job-fold.ts), so no two replicas' clocks are
 * compared. None read: none (the record is gone); the same manifests: the record's.
 */
type AppliedFrom = ResourceState['appliedFrom'];
function laterWrite(state: AppliedFrom, read: AppliedFrom): AppliedFrom {
  if (!read || !state || (state.kind === read.kind && state.id === read.id)) return read;
  return Date.parse(state.appliedAt) > Date.parse(read.appliedAt) ? state : read;
}

/** What a job's result set that a decision read before the result does not know: appliedFrom, a hold, a conflict. */
function keptOfJob(previous: ResourceState, next: ResourceState): Partial<ResourceState> {
  const kept: Partial<ResourceState> = {};
  if (previous.appliedFrom) kept.appliedFrom = previous.appliedFrom;
  if (previous.hold && !next.hold) kept.hold = previous.hold;
  if (previous.conflict) kept.conflict = previous.conflict;
  return kept;
}

/**
 * The state a leader's job result is folded onto when the leader's decision that enqueued it is not written yet (the
 * worker was faster than the decision's fold): the resource as the job names it, its write applying. The decision,
 * folded next, keeps what the job's result made (`decided`: its job ended before the decision was written).
 */
export function stateOfJob(key: string, operation: string): ResourceState {
  const at = key.indexOf('/');
  const action: Action = operation.startsWith('create') ? 'create' : 'update';
  const message = `job of ${operation} enqueued; the decision is being written`;
  return {
    key,
    kind: key.slice(0, at) as ResourceKind,
    name: key.slice(at + 1),
    file: null,
    action,
    sync: { status: 'out_of_sync', reason: 'Applying', message },
    health: { status: 'unknown', reason: 'AwaitingCreate', message: 'not read yet' },
    reason: null,
    error: null,
    drift: null,
    heldAtLastGood: false,
    job: null,
  };
}

/** The one fold: the state after `event`. A decision starts from its outcome; every other event needs the state it changes. */
export function foldResource(
  state: ResourceState | undefined,
  event: Extract<ResourceEvent, { type: 'decided' }>,
): ResourceState;
export function foldResource(state: ResourceState, event: ResourceEvent): ResourceState;
export function foldResource(state: ResourceState | undefined, event: ResourceEvent): ResourceState {
  if (event.type === 'decided') return decided(state, event.outcome, event.context);
  const current = state!;
  switch (event.type) {
    case 'job-completed':
      return jobCompleted(current, event);
    case 'job-failed':
      return jobFailed(current, event);
    case 'interrupted':
      return {
        ...current,
        error: event.message,
        sync: { status: 'out_of_sync', reason: 'Interrupted', message: event.message },
      };
    case 'revision':
      return { ...current, health: event.health };
    case 'hold': {
      const { hold: _hold, ...rest } = current;
      if (event.released !== undefined) rest.releasedRevision = event.released;
      return event.hold ? { ...rest, hold: event.hold } : rest;
    }
    case 'conflict':
      return conflicted(current, event.conflict);
    case 'conflict-released': {
      if (current.sync.reason !== 'Conflict') return current;
      const { conflict: _conflict, ...rest } = current;
      const message = 'Conflict released on request; written again at the next reconcile where the plan differs';
      return { ...rest, reason: null, sync: { status: 'out_of_sync', reason: 'OutOfSync', message } };
    }
  }
}

/** The state after a decision and the events since, in turn. */
export function foldEvents(
  previous: ResourceState | undefined,
  first: Extract<ResourceEvent, { type: 'decided' }>,
  rest: readonly ResourceEvent[],
): ResourceState {
  return rest.reduce<ResourceState>((state, event) => foldResource(state, event), foldResource(previous, first));
}
