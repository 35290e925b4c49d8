// One row of the /status document (a managed resource), built from a reconcile's decided outcome.
import type { HealthCondition, SyncCondition } from '../../core/health.js';
import type { ResourceHold } from '../../core/holds.js';
import { liveOf } from '../../core/kinds/index.js';
import type { Outcome } from '../../core/decide.js';
import type { Action, DriftPolicy, PlanChange, ResourceKind } from '../../core/model.js';
import type { SyncState } from '../telemetry/metrics.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import type { Conflict } from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';

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

export interface ResourceStatus {
  key: string;
  kind: ResourceKind;
  name: string;
  /** Manifest file (relative) that declares it. */
  file: string | null;
  /** Action of the last plan. */
  action: Action;
  /** Legacy: one word mixing sync and rollout (see `sync` and `health`). */
  state: SyncState;
  /** Whether live state matches the manifest, why not, and whether converge writes it. */
  sync: SyncCondition;
  /** Whether what was written runs: the latest revision deployed, building, failed (degraded) or unknown. */
  health: HealthCondition;
  /** Why converge does not write this resource although its plan differs (a failed revision of this desired state). */
  hold?: ResourceHold;
  /** The plan's reason (why blocked, a note). */
  reason: string | null;
  /** The last failure (a failed job, a blocked manifest). */
  error: string | null;
  /** Drift found at the last reconcile: live left an unchanged manifest. */
  drift: { policy: DriftPolicy; fields: string[]; reason?: string } | null;
  /** The manifest file has errors; the last good version of the resource stays in force. */
  heldAtLastGood: boolean;
  /**
   * Why an out_of_sync resource is not being written. SecretsUnknown: its only difference is secrets whose values
   * the service hides and converge holds no record of; they are not rewritten blind (see `secretsUnknown`) until the
   * desired state changes or an operator runs `converge reconcile --write-secrets NAME`.
   */
  syncReason?: 'SecretsUnknown' | 'Conflict';
  /** With SecretsUnknown: the secrets (names only) that would be written. */
  secretsUnknown?: string[];
  /**
   * Conflict (the flap guard, src/core/flap-guard.ts): converge stopped writing to the resource because its desired
   * state alternates between two versions, or something outside converge keeps changing a field it puts back.
   */
  conflict?: Pick<Conflict, 'reason' | 'message' | 'since'> & { versions?: ManifestVersion[]; fields?: string[] };
  /** The manifests converge's last write to the resource came from ("applied from 3f2a9c1"), and when it wrote. */
  appliedFrom?: ManifestVersion & { appliedAt: string };
  job: JobView | null;
  /** The live deployment's id, when known (to follow a revision that builds). */
  deploymentId?: string;
}

/** The legacy one-word state of a row, from its outcome (sync first, then health). */
function stateOf(outcome: Outcome): SyncState {
  if (outcome.sync.status === 'blocked') return 'blocked';
  if (outcome.sync.status === 'suspended') return 'suspended';
  if (outcome.health.status === 'degraded') return 'failed';
  if (outcome.sync.reason === 'Applying') return 'progressing';
  if (outcome.sync.status === 'synced') return outcome.health.status === 'progressing' ? 'progressing' : 'synced';
  return 'out_of_sync';
}

/** Marks a row as held by the flap guard: reason Conflict, with its one line. */
export function markConflict(row: ResourceStatus, conflict: Pick<Conflict, 'reason' | 'message' | 'since'> & Partial<Pick<Conflict, 'versions' | 'fields'>>): void {
  row.syncReason = 'Conflict';
  row.conflict = { reason: conflict.reason, message: conflict.message, since: conflict.since };
  if (conflict.versions) row.conflict.versions = conflict.versions;
  if (conflict.fields) row.conflict.fields = conflict.fields;
  row.reason = `Conflict: ${conflict.message}`;
  row.sync = { status: 'out_of_sync', reason: 'Conflict', message: conflict.message };
}

/** What every row of one reconcile reads: the live deployments by name, the files kept at their last good version, the drift found. */
interface RowSources {
  liveByName: Map<string, ReconcileOutcome['live'][number]>;
  held: Map<string, ReconcileOutcome['held'][number]>;
  drift: Map<string, ReconcileOutcome['drift'][number]>;
}

/** The lookups of one reconcile's outcome that rowOf reads, built once per reconcile. */
export function rowSources(outcome: ReconcileOutcome): RowSources {
  return {
    liveByName: new Map(outcome.live.map((d) => [d.name, d])),
    held: new Map(outcome.held.map((h) => [h.key, h])),
    drift: new Map(outcome.drift.map((d) => [d.key, d])),
  };
}

/**
 * The row of one planned resource after a reconcile: its outcome's sync and health, its hold, drift and Conflict; a
 * job that finished during the reconcile, or one still queued, is kept from `previous` (the row before).
 */
export function rowOf(change: PlanChange, decided: Outcome, outcome: ReconcileOutcome, sources: RowSources, previous: ResourceStatus | undefined): ResourceStatus {
  const { liveByName, held, drift } = sources;
  const key = decided.key;
  const resource = outcome.resources.get(key);
  const live = liveOf(change.kind, change.name, liveByName);
  const hold = held.get(key);
  const found = drift.get(key);
  const resourceHold = outcome.holds?.get(key);
  const row: ResourceStatus = {
    key,
    kind: change.kind,
    name: change.name,
    file: resource?.location.file ?? hold?.file ?? null,
    action: change.action,
    state: stateOf(decided),
    sync: decided.sync,
    health: decided.health,
    reason: change.reason,
    error: change.action === 'blocked' ? change.reason : null,
    drift: found ? { policy: found.policy, fields: found.fields, reason: found.reason } : null,
    heldAtLastGood: hold !== undefined,
    job: null,
  };
  if (resourceHold) row.hold = resourceHold;
  const deploymentId = live?.id ?? previous?.deploymentId;
  if (deploymentId) row.deploymentId = deploymentId;
  const applied = outcome.applied?.get(key);
  if (applied?.manifestVersion) row.appliedFrom = { ...applied.manifestVersion, appliedAt: applied.appliedAt };
  const conflict = outcome.conflicts?.get(key);
  if (conflict) markConflict(row, conflict);
  const reason = decided.sync.reason;
  if (reason === 'SecretsUnknown') {
    row.syncReason = 'SecretsUnknown';
    row.secretsUnknown = decided.secretsUnknown ?? [];
    row.reason = `SecretsUnknown: ${decided.sync.message}`;
  } else if (reason === 'Applied') {
    // The job finished during the reconcile: keep what its completion showed (the live state read predates it).
    row.job = previous?.job ?? null;
    row.state = previous?.state === 'synced' ? 'synced' : 'progressing';
    if (previous) row.health = previous.health;
    // The applied state this reconcile read predates that job too: the manifests its write came from stay shown.
    if (previous?.appliedFrom) row.appliedFrom = previous.appliedFrom;
  } else if (reason === 'Applying' && decided.job) {
    row.job = { id: decided.job.jobId, state: 'queued', operation: decided.job.operation };
    // A job that failed before keeps its error visible while the new one runs.
    if (previous?.state === 'failed') row.error = previous.error;
  } else if (previous?.job && (change.action !== 'noop' || previous.job.state !== 'queued')) {
    // The resource's last job stays on its row once it ended (also when the plan has nothing left to write): what
    // it did is still the news (`converge status`, and the notifier, which may read the rows after this reconcile).
    row.job = previous.job;
  }
  if (row.health.status === 'degraded' && row.state !== 'blocked' && row.state !== 'suspended') row.state = 'failed';
  return row;
}
