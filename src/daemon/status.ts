// What the daemon knows about each resource (the /status document): plan action, sync state, job, drift, errors.
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type Action, type DriftPolicy, type LiveDeployment, type Plan, type ResourceKind } from '../core/model.js';
import { ReconcileJobResult } from '../enqueue/schema.js';
import type { SyncState } from './metrics.js';
import type { Decision, ReconcileOutcome } from './cycle.js';
import type { Conflict } from '../core/flap-guard.js';
import type { ManifestVersion } from '../core/manifest-version.js';

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
  state: SyncState;
  /** The plan's reason (why blocked, a note). */
  reason: string | null;
  /** The last failure (a failed job, a blocked manifest). */
  error: string | null;
  /** Drift found at the last reconcile: live left an unchanged manifest. */
  drift: { policy: DriftPolicy; fields: string[] } | null;
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

export interface ReconcileRecord {
  id: number;
  trigger: string;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  ok: boolean;
  error: string | null;
  summary: Plan['summary'] | null;
  files: number;
  live: number;
  enqueued: number;
  drifted: number;
  held: number;
  /** Resync cycle (BullMQ job id) this reconcile ran for. */
  cycle?: string;
  /** The manifests this reconcile read (git commit or content hash). */
  manifestVersion?: ManifestVersion;
}

/** A live deployment building a revision (not active yet) is still progressing. */
function building(live: LiveDeployment | undefined): boolean {
  if (!live) return false;
  return live.status === 'AWAITING_DATABASE' || (live.latest_revision_id ?? null) !== (live.active_revision_id ?? null);
}

function stateFor(action: Action, decision: Decision | undefined, live: LiveDeployment | undefined, suspended: boolean): SyncState {
  if (action === 'blocked') return 'blocked';
  if (suspended) return 'suspended';
  if (action === 'noop') return building(live) ? 'progressing' : 'synced';
  if (decision?.kind === 'enqueued') return 'progressing';
  return 'out_of_sync';
}

/** Marks a row as held by the flap guard: reason Conflict, with its one line. */
function markConflict(row: ResourceStatus, conflict: Pick<Conflict, 'reason' | 'message' | 'since'> & Partial<Pick<Conflict, 'versions' | 'fields'>>): void {
  row.syncReason = 'Conflict';
  row.conflict = { reason: conflict.reason, message: conflict.message, since: conflict.since };
  if (conflict.versions) row.conflict.versions = conflict.versions;
  if (conflict.fields) row.conflict.fields = conflict.fields;
  row.reason = `Conflict: ${conflict.message}`;
}

/**
 * Resource statuses, rebuilt from each reconcile and updated as jobs finish. Job results that arrive before the
 * reconcile that enqueued them has ended are kept and applied when it ends.
 */
export class ResourceTracker {
  private rows = new Map<string, ResourceStatus>();
  private orphanKeys: string[] = [];
  private readonly jobKeys = new Map<string, string>();
  private readonly early = new Map<string, { ok: true; result: unknown; at: string } | { ok: false; reason: string; at: string }>();

  /** Remembers which resource a job belongs to (call as soon as it is enqueued). */
  trackJob(jobId: string, key: string): void {
    this.jobKeys.set(jobId, key);
    // A job whose end was never seen (an event lost in a Redis outage) must not be remembered forever.
    if (this.jobKeys.size > 100_000) this.jobKeys.delete(this.jobKeys.keys().next().value!);
  }

  /** Rebuilds every row from a reconcile's outcome. */
  update(outcome: ReconcileOutcome): void {
    const liveByName = new Map(outcome.live.map((d) => [d.name, d]));
    const held = new Map(outcome.held.map((h) => [h.key, h]));
    const drift = new Map(outcome.drift.map((d) => [d.key, d]));
    const rows = new Map<string, ResourceStatus>();
    const orphans: string[] = [];
    for (const change of outcome.plan.changes) {
      const key = resourceKey(change.kind, change.name);
      if (change.action === 'orphan') {
        orphans.push(key);
        continue;
      }
      const resource = outcome.resources.get(key);
      const decision = outcome.decisions.get(key);
      const live = kindOf(change.kind).listed ? liveByName.get(change.name) : undefined;
      const previous = this.rows.get(key);
      const hold = held.get(key);
      const found = drift.get(key);
      const row: ResourceStatus = {
        key,
        kind: change.kind,
        name: change.name,
        file: resource?.location.file ?? hold?.file ?? null,
        action: change.action,
        state: stateFor(change.action, decision, live, change.suspended === true || resource?.suspend === true),
        reason: change.reason,
        error: change.action === 'blocked' ? change.reason : null,
        drift: found ? { policy: found.policy, fields: found.fields } : null,
        heldAtLastGood: hold !== undefined,
        job: null,
      };
      const deploymentId = live?.id ?? previous?.deploymentId;
      if (deploymentId) row.deploymentId = deploymentId;
      const applied = outcome.applied?.get(key);
      if (applied?.manifestVersion) row.appliedFrom = { ...applied.manifestVersion, appliedAt: applied.appliedAt };
      const conflict = outcome.conflicts?.get(key);
      if (conflict) markConflict(row, conflict);
      if (decision?.kind === 'secrets-unknown') {
        row.syncReason = 'SecretsUnknown';
        row.secretsUnknown = decision.secrets;
        row.reason = `SecretsUnknown: the service hides ${decision.secrets.join(', ')} and no applied state records them; not rewritten blind. Run "converge reconcile --write-secrets ${change.name}" to write them once`;
      } else if (decision?.kind === 'conflict') {
        row.state = 'out_of_sync';
      } else if (decision?.kind === 'settled') {
        // The job finished during the reconcile: keep what its completion showed.
        row.job = previous?.job ?? null;
        row.state = previous?.state === 'synced' ? 'synced' : 'progressing';
      } else if (decision?.kind === 'enqueued') {
        row.job = { id: decision.job.jobId, state: 'queued', operation: decision.job.operation };
        // A job that failed before keeps its error visible while the new one runs.
        if (previous?.state === 'failed') row.error = previous.error;
      } else if (change.action !== 'noop' && previous?.job) {
        row.job = previous.job;
      }
      rows.set(key, row);
    }
    this.rows = rows;
    this.orphanKeys = orphans;
    for (const [jobId, early] of [...this.early]) {
      const key = this.jobKeys.get(jobId);
      if (key && this.rows.get(key)?.job?.id === jobId) {
        this.early.delete(jobId);
        if (early.ok) this.completed(jobId, early.result, early.at);
        else this.failed(jobId, early.reason, early.at);
      }
    }
    if (this.early.size > 1000) this.early.clear();
  }

  /** A job finished (from any replica's worker). Returns the resource key when a row changed. */
  completed(jobId: string, value: unknown, at = new Date().toISOString()): string | undefined {
    const key = this.jobKeys.get(jobId);
    if (!key) return undefined;
    const row = this.rows.get(key);
    if (!row || row.job?.id !== jobId) {
      this.early.set(jobId, { ok: true, result: value, at });
      return undefined;
    }
    this.jobKeys.delete(jobId);
    const parsed = ReconcileJobResult.safeParse(value);
    row.job = { ...row.job, state: 'completed', finishedAt: at };
    if (parsed.success) {
      row.job.outcome = parsed.data.outcome;
      row.job.new_revision = parsed.data.new_revision;
      if (parsed.data.message) row.job.message = parsed.data.message;
    }
    if (parsed.success && parsed.data.deploymentId) row.deploymentId = parsed.data.deploymentId;
    row.error = null;
    row.state = parsed.success && parsed.data.new_revision ? 'progressing' : 'synced';
    const conflict = parsed.success ? parsed.data.conflict : undefined;
    if (conflict) {
      const { declared: _declared, ...found } = conflict;
      markConflict(row, { ...found, since: row.conflict?.since ?? at });
      row.state = 'out_of_sync';
    }
    return key;
  }

  /** Ids of deployments whose row is progressing because a revision builds (the job, if any, finished). */
  building(limit: number): string[] {
    const ids: string[] = [];
    for (const row of this.rows.values()) {
      if (ids.length >= limit) break;
      if (row.state === 'progressing' && row.deploymentId && (!row.job || row.job.state === 'completed')) ids.push(row.deploymentId);
    }
    return ids;
  }

  /** Marks progressing rows synced whose live deployment finished building. Returns how many changed. */
  revisionsSettled(live: readonly LiveDeployment[]): number {
    const done = new Set(live.filter((d) => !building(d)).map((d) => d.id));
    let changed = 0;
    for (const row of this.rows.values()) {
      if (row.state === 'progressing' && row.deploymentId && done.has(row.deploymentId) && (!row.job || row.job.state === 'completed')) {
        row.state = 'synced';
        changed += 1;
      }
    }
    return changed;
  }

  /** A job failed for good (no attempt left, or a failure that retrying cannot fix). */
  failed(jobId: string, reason: string, at = new Date().toISOString()): string | undefined {
    const key = this.jobKeys.get(jobId);
    if (!key) return undefined;
    const row = this.rows.get(key);
    if (!row || row.job?.id !== jobId) {
      this.early.set(jobId, { ok: false, reason, at });
      return undefined;
    }
    this.jobKeys.delete(jobId);
    row.job = { ...row.job, state: 'failed', message: reason, finishedAt: at };
    row.error = reason;
    row.state = 'failed';
    return key;
  }

  resources(): ResourceStatus[] {
    return [...this.rows.values()];
  }

  orphans(): string[] {
    return [...this.orphanKeys];
  }

  /** Resources held as SecretsUnknown (their keys). */
  secretsUnknown(): string[] {
    return [...this.rows.values()].filter((r) => r.syncReason === 'SecretsUnknown').map((r) => r.key);
  }

  /** Resources under a Conflict (their keys). */
  conflicts(): string[] {
    return [...this.rows.values()].filter((r) => r.syncReason === 'Conflict').map((r) => r.key);
  }

  /** Counts by kind and state, for the converge_resources gauge. */
  counts(): Map<ResourceKind, Map<SyncState, number>> {
    const out = new Map<ResourceKind, Map<SyncState, number>>();
    for (const row of this.rows.values()) {
      let byState = out.get(row.kind);
      if (!byState) out.set(row.kind, (byState = new Map()));
      byState.set(row.state, (byState.get(row.state) ?? 0) + 1);
    }
    return out;
  }
}
