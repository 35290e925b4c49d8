// The one owner of a resource's state after the decision: a pure fold of its events (a decision outcome, a job result, a revision reading, a conflict, an operator release) into its conditions, and the JSON contract's legacy fields derived from them.
import type { Outcome, SyncReason } from './decide.js';
import type { Conflict } from './flap-guard.js';
import type { HealthCondition, SyncCondition } from './health.js';
import { holdOfFailure, type JobFailure, type ResourceHold } from './holds.js';
import { kindOf } from './kinds/index.js';
import type { SyncResult } from './kinds/ports.js';
import type { ManifestVersion } from './manifest-version.js';
import type { Action, DriftPolicy, ResourceKind } from './model.js';

/** The legacy one-word states of a resource (`state` of a /status row; converge_resources counts by it). */
export const SYNC_STATES = ['synced', 'out_of_sync', 'progressing', 'failed', 'suspended', 'blocked'] as const;
export type SyncState = (typeof SYNC_STATES)[number];

/** The resource's last job, as the daemon shows it. */
export interface JobView {
  id: string;
  state: 'queued' | 'completed' | 'failed';
  operation: string;
  outcome?: string;
  new_revision?: boolean;
  /** The service's message on failure, or a note. Never a secret. */
  message?: string;
  finishedAt?: string;
}

/** A standing conflict as a resource shows it (src/core/flap-guard.ts). */
export type ConflictView = Pick<Conflict, 'reason' | 'message' | 'since'> & Partial<Pick<Conflict, 'versions' | 'fields'>>;

/** What is known of one resource after its decision and the events since: the fold's result, read by every output. */
export interface ResourceState {
  key: string;
  kind: ResourceKind;
  name: string;
  /** Manifest file (relative) that declares it. */
  file: string | null;
  /** Action of the last plan. */
  action: Action;
  /** Whether live state matches the manifest, why not, and whether converge writes it. */
  sync: SyncCondition & { reason: SyncReason };
  /** Whether what was written runs: the latest revision deployed, building, failed (degraded) or unknown. */
  health: HealthCondition;
  /** Why converge does not write this resource although its plan differs (a failed revision of this desired state). */
  hold?: ResourceHold;
  /** The one line of the row: the plan's reason (why blocked, a note), or what holds it (SecretsUnknown, Conflict). */
  reason: string | null;
  /** The last failure (a failed job, a blocked manifest). */
  error: string | null;
  /** Drift found at the last reconcile: live left an unchanged manifest. */
  drift: { policy: DriftPolicy; fields: string[]; reason?: string } | null;
  /** The manifest file has errors; the last good version of the resource stays in force. */
  heldAtLastGood: boolean;
  /** With SecretsUnknown: the secrets (names only) that would be written. */
  secretsUnknown?: string[];
  /** The flap guard's conflict, once marked (kept until the next decision or an operator's release). */
  conflict?: ConflictView;
  /** The manifests converge's last write to the resource came from, and when it wrote. */
  appliedFrom?: ManifestVersion & { appliedAt: string };
  job: JobView | null;
  /** The live deployment's id, when known (to follow a revision that builds). */
  deploymentId?: string;
  /** Its delete waits (DeletePending): since when it is undeclared, when the grace ends (null: for a person). */
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
  /** converge/prune: "false" keeps it: never deleted by prune (its manifest says so, or last said so before it went). */
  pruneKept?: true;
  /** The failed revision whose hold an operator released (converge reconcile --retry-failed): never held again. */
  releasedRevision?: string;
  /** The fingerprint of its desired state at the last decision (a hash: what a failed revision's hold names). */
  desired?: string;
  /** The revision a job of ours started, and the fingerprint of the desired state that job carried. */
  revisionDesired?: { revisionId: string; desired: string };
}

/** What a reconcile knows of the resource besides its outcome (the row's context). */
export interface DecisionContext {
  file: string | null;
  /** The plan's reason (why blocked, a note). */
  planReason: string | null;
  drift: ResourceState['drift'];
  heldAtLastGood: boolean;
  hold?: ResourceHold | undefined;
  /** The live side's id, when listed. */
  deploymentId?: string | undefined;
  /** What the applied state records of converge's last write. */
  appliedFrom?: ResourceState['appliedFrom'] | undefined;
  /** The delete that waits (the plan change's pending_delete). */
  pendingDelete?: ResourceState['pendingDelete'] | undefined;
  /** Kept by converge/prune: "false". */
  pruneKept?: boolean | undefined;
  /** The fingerprint of the desired state decided. */
  desired?: string | undefined;
}

/** The events that change a resource's state, each from one source. */
export type ResourceEvent =
  /** A reconcile decided it (src/core/decide.ts); what the state held before stays only where the outcome says so. */
  | { type: 'decided'; outcome: Outcome; context: DecisionContext }
  /**
   * Its job completed with `result` (undefined: a result this converge cannot read). `version`: the manifests its
   * desired state came from. `unfollowed`: nothing follows the revision it started (apply without --wait).
   */
  | {
      type: 'job-completed';
      jobId: string;
      at: string;
      result: SyncResult | undefined;
      version?: ManifestVersion | undefined;
      unfollowed?: true;
      desired?: string | undefined;
      /** The job's operation: shown when the state names another job (one `converge apply` or a former leader enqueued). */
      operation?: string | undefined;
    }
  /**
   * Its job failed for good (no attempt left, or a failure that retrying cannot fix). `failure`: what the service
   * answered, as data (a refusal's status, a name taken); `desired`: the fingerprint the job carried, which a hold names.
   */
  | { type: 'job-failed'; jobId: string; at: string; message: string; failure?: JobFailure | undefined; desired?: string | undefined; operation?: string | undefined }
  /** The apply waiting for its job was stopped before the job had a result. */
  | { type: 'interrupted'; message: string }
  /** A reading of its rollout (the revision endpoint, the listing, or apply --wait). */
  | { type: 'revision'; health: HealthCondition }
  /**
   * A hold was stored for it, or released (undefined). `request`: the operator's command that released it
   * (`converge reconcile --retry-failed`), which its history entry names.
   */
  | { type: 'hold'; hold: ResourceHold | undefined; released?: string | undefined; request?: string | undefined }
  /** The flap guard holds it: a standing conflict, or the one its job met. */
  | { type: 'conflict'; conflict: ConflictView }
  /** An operator released its conflict (`request`: the command): no longer shown; the next reconcile says what holds. */
  | { type: 'conflict-released'; request?: string | undefined };

/** Job outcomes that wrote the desired state (its applied record carries the job's manifest version). */
const WROTE: ReadonlySet<string> = new Set(['created', 'updated', 'adopted']);

/** The legacy one-word state, from sync first, then health (docs/daemon.md: `failed` when degraded). */
export function legacyState(state: Pick<ResourceState, 'sync' | 'health'>): SyncState {
  if (state.sync.status === 'blocked') return 'blocked';
  if (state.sync.status === 'suspended') return 'suspended';
  if (state.health.status === 'degraded' || state.sync.reason === 'JobFailed') return 'failed';
  if (state.sync.reason === 'Applying') return 'progressing';
  if (state.sync.status === 'synced') return state.health.status === 'progressing' ? 'progressing' : 'synced';
  return 'out_of_sync';
}

/** The fields kept only for the JSON contract, derived from the conditions in this one place. */
export interface LegacyFields {
  /** One word mixing sync and rollout (see `sync` and `health`). */
  state: SyncState;
  /** SecretsUnknown or Conflict: why an out_of_sync resource is not written (the same as `sync.reason`). */
  syncReason?: 'SecretsUnknown' | 'Conflict';
}

export function legacyFields(state: Pick<ResourceState, 'sync' | 'health'>): LegacyFields {
  const reason = state.sync.reason;
  return { state: legacyState(state), ...(reason === 'SecretsUnknown' || reason === 'Conflict' ? { syncReason: reason } : {}) };
}

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
  } else if (reason === 'Applying' && outcome.job && previous?.job?.id === outcome.job.jobId && previous.job.state !== 'queued') {
    // Its job ended (folded where it ran) before this decision was written: what the job's result made stays.
    return { ...next, job: previous.job, sync: previous.sync, health: previous.health, error: previous.error, reason: previous.reason, ...keptOfJob(previous, next) };
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
 * Both times are the writing worker's clock (docs/daemon.md, "The event log"). None read: none (the record is gone);
 * the same manifests: the record's (its time is the write's, the state's that of the fold).
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

function conflicted(state: ResourceState, conflict: ConflictView): ResourceState {
  const view: ConflictView = { reason: conflict.reason, message: conflict.message, since: conflict.since };
  if (conflict.versions) view.versions = conflict.versions;
  if (conflict.fields) view.fields = conflict.fields;
  return { ...state, conflict: view, reason: `Conflict: ${conflict.message}`, sync: { status: 'out_of_sync', reason: 'Conflict', message: conflict.message } };
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
  if (state.action === 'create' && result.outcome !== 'unchanged') return kindOf(state.kind).health({ action: 'noop', live: undefined });
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
function jobOfResult(state: ResourceState, event: { jobId: string; operation?: string | undefined }): JobView | null | undefined {
  if (state.job?.id === event.jobId) return state.job;
  if (state.job?.state === 'queued') return undefined;
  return event.operation === undefined ? state.job : { id: event.jobId, state: 'queued', operation: event.operation };
}

/**
 * A result of a job the state does not show while another of its jobs is queued: what it wrote is kept (its manifests,
 * and the revision it started, the service's latest: the queued job has sent nothing yet), nothing else.
 */
function olderJobCompleted(state: ResourceState, event: Extract<ResourceEvent, { type: 'job-completed' }>): ResourceState {
  const result = event.result;
  if (!result || result.notRun || !WROTE.has(result.outcome)) return state;
  const next = { ...state };
  if (event.version) next.appliedFrom = { ...event.version, appliedAt: event.at };
  if (result.new_revision && result.latestRevisionId) {
    next.health = healthAfterJob(state, result, event.unfollowed === true);
    if (event.desired) next.revisionDesired = { revisionId: result.latestRevisionId, desired: event.desired };
  }
  return next;
}

function jobCompleted(state: ResourceState, event: Extract<ResourceEvent, { type: 'job-completed' }>): ResourceState {
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
  if (result?.notRun) return { ...next, sync: { status: 'out_of_sync', reason: 'OutOfSync', message: result.message ?? `job ${event.jobId} sent nothing` } };
  next.sync = { status: 'synced', reason: 'Applied', message: `job ${event.jobId} ${result ? result.outcome : 'finished'}` };
  if (!result) return next;
  if (event.version && WROTE.has(result.outcome)) next.appliedFrom = { ...event.version, appliedAt: event.at };
  next.health = healthAfterJob(state, result, event.unfollowed === true);
  if (result.new_revision && result.latestRevisionId && event.desired) next.revisionDesired = { revisionId: result.latestRevisionId, desired: event.desired };
  if (!result.conflict) return next;
  const { declared: _declared, ...found } = result.conflict;
  return conflicted(next, { ...found, since: state.conflict?.since ?? event.at });
}

/**
 * A job failed for good: the state shows the failure; a refusal the same write would get again (or a name taken)
 * holds the desired state the job carried (src/core/holds.ts holdOfFailure), the one place a failure becomes a hold.
 */
function jobFailed(state: ResourceState, event: Extract<ResourceEvent, { type: 'job-failed' }>): ResourceState {
  const shown = jobOfResult(state, event);
  if (shown === undefined) return state;
  const job: JobView | null = shown ? { ...shown, state: 'failed', message: event.message, finishedAt: event.at } : null;
  const next: ResourceState = { ...state, job, error: event.message, sync: { status: 'out_of_sync', reason: 'JobFailed', message: event.message } };
  const hold = event.failure && event.desired ? holdOfFailure(event.failure, event.desired, event.message, state.name, new Date(event.at)) : undefined;
  if (hold && !(state.hold?.reason === hold.reason && state.hold.desired === hold.desired)) next.hold = hold;
  return next;
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
export function foldResource(state: ResourceState | undefined, event: Extract<ResourceEvent, { type: 'decided' }>): ResourceState;
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
      return { ...current, error: event.message, sync: { status: 'out_of_sync', reason: 'Interrupted', message: event.message } };
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
export function foldEvents(previous: ResourceState | undefined, first: Extract<ResourceEvent, { type: 'decided' }>, rest: readonly ResourceEvent[]): ResourceState {
  return rest.reduce<ResourceState>((state, event) => foldResource(state, event), foldResource(previous, first));
}
