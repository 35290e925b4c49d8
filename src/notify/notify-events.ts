// Notification events as transitions of what the daemon publishes (the /status rows): pure, so any replica derives the same ids.
import { REVISION_FAILURE_REASONS, type HealthCondition } from '../core/health.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { DAEMON_RESOURCE_KIND, eventId, type NotifyEvent, type NotifyEventType } from '../core/notify/events.js';
import type { ResourceKind } from '../core/model.js';

type Version = Pick<ManifestVersion, 'kind' | 'id' | 'uncommitted'>;

/** What a row says that events are derived from: a copy of the fields they read, with the row's write version carried. */
interface RowSnapshot {
  key: string;
  kind: ResourceKind;
  name: string;
  sync: { status: string; reason: string; message: string };
  health: HealthCondition;
  hold?: { reason: string; message: string; since: string; revisionId?: string };
  drift: { policy: string; fields: string[] } | null;
  heldAtLastGood: boolean;
  error: string | null;
  syncReason?: string;
  secretsUnknown?: string[];
  conflict?: { reason: string; message: string; since: string };
  job: { id: string; state: string; operation: string; outcome?: string; new_revision?: boolean; message?: string } | null;
  deploymentId?: string;
  /** Its delete waits (DeletePending): since when, until when (null: for a person). */
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
  /** The manifests the row's last write (its job) was enqueued from: the version read by the reconcile that added it. */
  writeVersion: Version | null;
}

/**
 * The fields of a published /status row that events are derived from (src/daemon/status/status-row.ts ResourceStatus
 * has them): notifications read what the daemon publishes, and the daemon does not know who reads it.
 */
export type PublishedRow = Omit<RowSnapshot, 'writeVersion'> & { appliedFrom?: Version | undefined };

/** Everything the events are derived from, as published at one moment. */
export interface PublishedState {
  rows: ReadonlyMap<string, RowSnapshot>;
  /** The manifests the last reconcile read. */
  manifestVersion: Version | null;
  /** /status appliedState: whether (and when, last) Redis lost converge's records while the daemon ran. */
  appliedState: { lost: boolean; lostAt: string | null };
}

function versionOf(version: Version | null | undefined): Version | null {
  return version ? { kind: version.kind, id: version.id, ...(version.uncommitted ? { uncommitted: true } : {}) } : null;
}

/** The row's write version: a job new since the last snapshot carries the current reconcile's; else what was known. */
function writeVersionOf(row: PublishedRow, before: RowSnapshot | undefined, current: Version | null): Version | null {
  if (row.job && before?.job?.id !== row.job.id) return current;
  if (before) return before.writeVersion;
  return versionOf(row.appliedFrom) ?? current;
}

/** A copy of the published rows (only the fields events read), with each row's write version carried forward. */
export function snapshotOf(rows: readonly PublishedRow[], previous: PublishedState | undefined, manifestVersion: Version | null | undefined, appliedState: PublishedState['appliedState']): PublishedState {
  const current = versionOf(manifestVersion);
  const out = new Map<string, RowSnapshot>();
  for (const row of rows) {
    const before = previous?.rows.get(row.key);
    const snapshot: RowSnapshot = {
      key: row.key,
      kind: row.kind,
      name: row.name,
      sync: { ...row.sync },
      health: { ...row.health },
      drift: row.drift ? { policy: row.drift.policy, fields: [...row.drift.fields] } : null,
      heldAtLastGood: row.heldAtLastGood,
      error: row.error,
      job: row.job ? { ...row.job } : null,
      writeVersion: writeVersionOf(row, before, current),
    };
    if (row.hold) snapshot.hold = { reason: row.hold.reason, message: row.hold.message, since: row.hold.since, ...(row.hold.revisionId ? { revisionId: row.hold.revisionId } : {}) };
    if (row.syncReason) snapshot.syncReason = row.syncReason;
    if (row.secretsUnknown) snapshot.secretsUnknown = [...row.secretsUnknown];
    if (row.conflict) snapshot.conflict = { reason: row.conflict.reason, message: row.conflict.message, since: row.conflict.since };
    if (row.deploymentId) snapshot.deploymentId = row.deploymentId;
    if (row.pendingDelete) snapshot.pendingDelete = { ...row.pendingDelete };
    out.set(row.key, snapshot);
  }
  return { rows: out, manifestVersion: current, appliedState: { ...appliedState } };
}

const FAILURES: readonly string[] = REVISION_FAILURE_REASONS;

function failed(health: HealthCondition | undefined): boolean {
  return health?.status === 'degraded' && FAILURES.includes(health.reason);
}

/** Builds one event of a row. */
function rowEvent(row: RowSnapshot, type: NotifyEventType, occurrence: string, fields: { reason: string; message: string; version: Version | null; time: string; revision?: boolean; rollout?: boolean }): NotifyEvent {
  const resource = { kind: row.kind, name: row.name };
  const event: NotifyEvent = { id: eventId(resource, type, occurrence), type, resource, reason: fields.reason, message: fields.message, manifestVersion: fields.version, time: fields.time };
  if (fields.revision && row.health.revisionId) event.revisionId = row.health.revisionId;
  if (fields.revision && row.health.revisionStatus) event.revisionStatus = row.health.revisionStatus;
  if (row.deploymentId) event.deploymentId = row.deploymentId;
  if (fields.rollout !== undefined) event.rollout = fields.rollout;
  return event;
}

/** A job's end: write_sent (a write done), pruned (a delete done) or write_failed (out of attempts). */
function jobEvents(p: RowSnapshot | undefined, n: RowSnapshot, time: string): NotifyEvent[] {
  const job = n.job;
  if (!job || (p?.job?.id === job.id && p.job.state === job.state)) return [];
  const version = n.writeVersion;
  if (job.state === 'failed') {
    return [rowEvent(n, 'write_failed', job.id, { reason: 'JobFailed', message: `job ${job.id} (${job.operation}) failed: ${job.message ?? 'no attempt left'}`, version, time })];
  }
  if (job.state !== 'completed') return [];
  if (job.outcome === 'deleted' || job.operation === 'delete') {
    return [rowEvent(n, 'pruned', job.id, { reason: 'Pruned', message: `deleted: its manifest is gone and converge owned it (job ${job.id})`, version, time })];
  }
  if (job.outcome === 'created' || job.outcome === 'updated' || job.outcome === 'adopted') {
    const rollout = job.new_revision === true;
    const message = rollout ? `${job.outcome}; a new revision builds${n.health.revisionId ? ` (${n.health.revisionId})` : ''}` : `${job.outcome}; no rollout to wait for`;
    return [rowEvent(n, 'write_sent', job.id, { reason: rollout ? 'RevisionBuilding' : 'Applied', message, version, time, revision: rollout, rollout })];
  }
  return [];
}

/** rollout_failed once per failed revision; rollout_succeeded when a followed revision (or a new one) becomes healthy. */
function rolloutEvents(p: RowSnapshot | undefined, n: RowSnapshot, time: string): NotifyEvent[] {
  const h = n.health;
  const occurrence = h.revisionId ?? `version:${n.writeVersion?.id ?? 'unknown'}`;
  if (failed(h) && !(failed(p?.health) && p?.health.revisionId === h.revisionId)) {
    return [rowEvent(n, 'rollout_failed', occurrence, { reason: h.reason, message: h.message, version: n.writeVersion, time, revision: true })];
  }
  if (h.status !== 'healthy' || h.reason === 'NoRollout' || !p) return [];
  const wasBuilding = p.health.status === 'progressing' || p.health.status === 'degraded';
  const newRevision = p.health.status === 'healthy' && h.revisionId !== undefined && p.health.revisionId !== undefined && p.health.revisionId !== h.revisionId;
  if (!wasBuilding && !newRevision) return [];
  return [rowEvent(n, 'rollout_succeeded', occurrence, { reason: h.reason, message: h.message, version: n.writeVersion, time, revision: true })];
}

/** What tells one drift of a resource from another: the manifests, the live revision and the fields. */
function driftOccurrence(row: RowSnapshot, current: Version | null): string {
  return `${current?.id ?? ''}|${row.health.revisionId ?? ''}|${row.drift?.fields.join(',') ?? ''}`;
}

function driftEvents(p: RowSnapshot | undefined, n: RowSnapshot, before: Version | null, current: Version | null, time: string): NotifyEvent[] {
  if (n.drift && !p?.drift) {
    const report = n.drift.policy === 'report';
    const message = `live state drifted from the unchanged manifest (${n.drift.fields.join(', ')}); ${report ? 'reported, not reverted (drift policy report)' : 'reverting it'}`;
    return [rowEvent(n, 'drift_detected', driftOccurrence(n, current), { reason: report ? 'DriftReported' : 'DriftHealing', message, version: current, time })];
  }
  if (p?.drift && !n.drift && n.sync.status === 'synced') {
    return [rowEvent(n, 'drift_healed', driftOccurrence(p, before), { reason: 'Synced', message: `live state matches the manifest again (${p.drift.fields.join(', ')})`, version: current, time })];
  }
  return [];
}

/**
 * The holds standing on a row. `standing` is what makes it the same hold at the next publication (a failed revision's
 * hold is another one for another revision; SecretsUnknown and manifest errors stay one hold across commits);
 * `occurrence` feeds the delivery id.
 */
interface StandingHold {
  standing: string;
  occurrence: string;
  reason: string;
  message: string;
}

function holdsOf(row: RowSnapshot | undefined, version: Version | null): StandingHold[] {
  if (!row) return [];
  const out: StandingHold[] = [];
  if (row.hold) {
    const occurrence = `${row.hold.reason}|${row.hold.revisionId ?? ''}|${row.hold.since}`;
    out.push({ standing: occurrence, occurrence, reason: row.hold.reason, message: row.hold.message });
  }
  if (row.syncReason === 'SecretsUnknown') {
    const secrets = row.secretsUnknown ?? [];
    const message = `secrets ${secrets.join(', ')} cannot be compared (the service hides them, no applied state records them); not rewritten blind`;
    out.push({ standing: 'SecretsUnknown', occurrence: `SecretsUnknown|${secrets.join(',')}|${version?.id ?? ''}`, reason: 'SecretsUnknown', message });
  }
  if (row.heldAtLastGood) {
    const message = `the manifest file has errors; the last good version stays in force${row.error ? `: ${row.error}` : ''}`;
    out.push({ standing: 'ManifestErrors', occurrence: `ManifestErrors|${version?.id ?? ''}`, reason: 'ManifestErrors', message });
  }
  return out;
}

function holdEvents(p: RowSnapshot | undefined, n: RowSnapshot, before: Version | null, current: Version | null, time: string): NotifyEvent[] {
  const had = new Set(holdsOf(p, before).map((h) => h.standing));
  const out: NotifyEvent[] = [];
  for (const hold of holdsOf(n, current)) {
    if (!had.has(hold.standing)) out.push(rowEvent(n, 'held', hold.occurrence, { reason: hold.reason, message: hold.message, version: current, time }));
  }
  if (n.syncReason === 'Conflict' && n.conflict && p?.syncReason !== 'Conflict') {
    out.push(rowEvent(n, 'conflict', `${n.conflict.reason}|${n.conflict.since}`, { reason: n.conflict.reason, message: n.conflict.message, version: current, time }));
  }
  return out;
}

/** delete_pending once per absence (its `since`): prune plans the delete and waits for prune_grace or a person. */
function deletePendingEvents(p: RowSnapshot | undefined, n: RowSnapshot, current: Version | null, time: string): NotifyEvent[] {
  const pending = n.pendingDelete;
  if (!pending || p?.pendingDelete?.since === pending.since) return [];
  const message = pending.confirm
    ? `delete pending: converge owns it and no manifest declares it since ${pending.since}; nothing is deleted until "converge reconcile --confirm-delete ${n.name}"`
    : `delete pending: converge owns it and no manifest declares it since ${pending.since}; deleted at ${pending.due ?? 'the end of prune_grace'} unless a manifest declares it again`;
  return [rowEvent(n, 'delete_pending', pending.since, { reason: 'DeletePending', message, version: current, time })];
}

/**
 * The events between two publications of the daemon's status. `previous` undefined (a daemon or a term that just
 * started) yields what stands (failed rollouts, holds, drift) but no success: the delivery id makes a repeat of an
 * event already sent (by this replica earlier, or another) a no-op.
 */
export function eventsFrom(previous: PublishedState | undefined, next: PublishedState, time: string): NotifyEvent[] {
  const out: NotifyEvent[] = [];
  const before = previous?.manifestVersion ?? null;
  const current = next.manifestVersion;
  for (const n of next.rows.values()) {
    const p = previous?.rows.get(n.key);
    out.push(...jobEvents(p, n, time), ...rolloutEvents(p, n, time), ...driftEvents(p, n, before, current, time), ...holdEvents(p, n, before, current, time), ...deletePendingEvents(p, n, current, time));
  }
  const lost = next.appliedState;
  if (lost.lost && lost.lostAt && lost.lostAt !== previous?.appliedState.lostAt) {
    const resource = { kind: DAEMON_RESOURCE_KIND, name: 'applied-state' };
    out.push({
      id: eventId(resource, 'applied_state_lost', lost.lostAt),
      type: 'applied_state_lost',
      resource,
      reason: 'AppliedStateLost',
      message: "Redis lost converge's records (applied state, desired-state memory, jobs): secrets that cannot be compared are held (SecretsUnknown), drift under report is not healed",
      manifestVersion: current,
      time,
    });
  }
  return out;
}
