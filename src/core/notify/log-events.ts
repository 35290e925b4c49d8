// Notification events from the event log's entries (docs/notifications.md "Where events come from"): pure, one entry in, its events out, each with a delivery id derived from what it is about, so every replica and every term derives the same ids.
import { REVISION_FAILURE_REASONS } from '../health.js';
import type { RecordedEvent } from '../resource-record.js';
import { DAEMON_RESOURCE_KIND, eventId, type NotifyEvent, type NotifyEventType } from './events.js';

/** One entry of the prefix's log (`{prefix}:record:log`) with its stream id. */
export interface LogEntry {
  /** The stream id Redis gave the entry: fixed once written, the same for every reader. */
  id: string;
  event: RecordedEvent;
}

/** What the projection (`{prefix}:record:state`) knows of the entry's resource that the entry does not carry. */
export interface EntryContext {
  /** The live deployment's id: the sender reads a failed revision's build log lines with it. */
  deploymentId?: string | undefined;
  /** Since when its delete waits (DeletePending): one delete_pending per absence. */
  pendingDeleteSince?: string | undefined;
}

/** Job outcomes that wrote the desired state: their write_done entries are write_sent. */
const WROTE: ReadonlySet<string> = new Set(['created', 'updated', 'adopted']);
const FAILURES: ReadonlySet<string> = new Set(REVISION_FAILURE_REASONS);
const HEALTHY: ReadonlySet<string> = new Set(['RevisionDeployed', 'RevisionSkipped']);
/** Decisions that are holds without a hold entry (no write is decided while they stand). */
const DECIDED_HOLDS: ReadonlySet<string> = new Set(['SecretsUnknown', 'ManifestErrors']);

function resourceOf(key: string): { kind: string; name: string } {
  const slash = key.indexOf('/');
  return { kind: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** What one entry becomes, before its id: the type, what tells this occurrence from another, and its words. */
interface Derived {
  type: NotifyEventType;
  occurrence: string;
  reason: string;
  message: string;
  revision?: boolean;
  rollout?: boolean;
}

function fromJob(e: RecordedEvent): Derived | undefined {
  const job = e.job?.id ?? 'unknown';
  if (e.type === 'pruned')
    return {
      type: 'pruned',
      occurrence: job,
      reason: 'Pruned',
      message: `deleted: its manifest is gone and converge owned it (job ${job})`,
    };
  if (e.type === 'write_failed') {
    // Interrupted is an apply that stopped waiting, not a job out of attempts.
    return e.reason === 'JobFailed'
      ? { type: 'write_failed', occurrence: job, reason: 'JobFailed', message: `job ${job} failed: ${e.message}` }
      : undefined;
  }
  if (!WROTE.has(e.reason)) return undefined;
  const rollout = e.revision !== null;
  const message = rollout
    ? `${e.reason}; a new revision builds (${e.revision!.id})`
    : `${e.reason}; no rollout to wait for`;
  return {
    type: 'write_sent',
    occurrence: job,
    reason: rollout ? 'RevisionBuilding' : 'Applied',
    message,
    revision: rollout,
    rollout,
  };
}

function fromRevision(e: RecordedEvent, logId: string): Derived | undefined {
  const occurrence = e.revision?.id ?? `log:${logId}`;
  if (FAILURES.has(e.reason))
    return { type: 'rollout_failed', occurrence, reason: e.reason, message: e.message, revision: true };
  if (HEALTHY.has(e.reason))
    return { type: 'rollout_succeeded', occurrence, reason: e.reason, message: e.message, revision: true };
  return undefined;
}

function fromDecision(e: RecordedEvent, logId: string, context: EntryContext): Derived | undefined {
  const message = e.message.slice(e.message.indexOf(': ') + 2);
  // The same hold decided again (its health changed meanwhile) under the same manifests is the same hold.
  if (DECIDED_HOLDS.has(e.reason))
    return { type: 'held', occurrence: `${e.reason}|${e.manifests?.id ?? ''}`, reason: e.reason, message };
  // Held behind a failed wave: one event per hold (the wave and the failed resource it names), not per reconcile.
  if (e.reason === 'WaveHeld')
    return { type: 'held', occurrence: `WaveHeld|${e.manifests?.id ?? ''}|${message}`, reason: 'WaveHeld', message };
  if (e.reason === 'DeletePending')
    return {
      type: 'delete_pending',
      occurrence: context.pendingDeleteSince ?? `log:${logId}`,
      reason: 'DeletePending',
      message,
    };
  return undefined;
}

function derive(e: RecordedEvent, logId: string, context: EntryContext): Derived | undefined {
  switch (e.type) {
    case 'write_done':
    case 'write_failed':
    case 'pruned':
      return fromJob(e);
    case 'revision':
      return fromRevision(e, logId);
    case 'decided':
      return fromDecision(e, logId, context);
    case 'held': {
      // A failed revision's hold is about that revision; any other hold is the entry that recorded it.
      const occurrence =
        e.reason === 'RevisionFailed' && e.revision ? `RevisionFailed|${e.revision.id}` : `log:${logId}`;
      return { type: 'held', occurrence, reason: e.reason, message: e.message };
    }
    case 'conflict':
      return { type: 'conflict', occurrence: `log:${logId}`, reason: e.reason, message: e.message };
    case 'drift_detected': {
      const report = e.reason === 'report';
      return {
        type: 'drift_detected',
        occurrence: `log:${logId}`,
        reason: report ? 'DriftReported' : 'DriftHealing',
        message: `${e.message}; ${report ? 'reported, not reverted (drift policy report)' : 'reverting it'}`,
      };
    }
    case 'drift_healed':
      return { type: 'drift_healed', occurrence: `log:${logId}`, reason: 'Synced', message: e.message };
    case 'write_enqueued':
    case 'released':
      return undefined;
  }
}

/**
 * The notification events of one log entry (none for most). The delivery id is a hash of the resource, the type and
 * the occurrence: the revision (rollouts, a failed revision's hold), the job (write_sent, write_failed, pruned), the
 * hold and the manifests (SecretsUnknown, ManifestErrors), the absence (delete_pending), else the entry's stream id.
 */
export function notifyEventsOf(entry: LogEntry, context: EntryContext = {}): NotifyEvent[] {
  const e = entry.event;
  const derived = derive(e, entry.id, context);
  if (!derived) return [];
  const resource = resourceOf(e.key);
  const event: NotifyEvent = {
    id: eventId(resource, derived.type, derived.occurrence),
    type: derived.type,
    resource,
    reason: derived.reason,
    message: derived.message,
    manifestVersion: e.manifests,
    time: e.at,
  };
  if (derived.revision && e.revision) {
    event.revisionId = e.revision.id;
    event.revisionStatus = e.revision.status;
  }
  if (context.deploymentId) event.deploymentId = context.deploymentId;
  if (derived.rollout !== undefined) event.rollout = derived.rollout;
  return [event];
}

/** applied_state_lost: about the daemon, once per loss (its time), whichever replica leads when it is seen. */
export function appliedStateLostEvent(
  lostAt: string,
  manifestVersion: NotifyEvent['manifestVersion'],
  time: string,
): NotifyEvent {
  const resource = { kind: DAEMON_RESOURCE_KIND, name: 'applied-state' };
  return {
    id: eventId(resource, 'applied_state_lost', lostAt),
    type: 'applied_state_lost',
    resource,
    reason: 'AppliedStateLost',
    message:
      "Redis lost converge's records (applied state, desired-state memory, jobs): secrets that cannot be compared are held (SecretsUnknown), drift under report is not healed",
    manifestVersion,
    time,
  };
}
