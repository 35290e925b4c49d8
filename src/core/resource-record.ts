// The history entries of a resource (the event log's records): what one folded ResourceEvent changed, read from the fold's before and after, with the manifests' version, the job, the revision and who recorded it.
import type { ManifestVersion } from './manifest-version.js';
import type { ResourceEvent, ResourceState } from './resource-state.js';

/** The types of a history entry (docs/daemon.md, "The event log"). */
export const HISTORY_TYPES = [
  'decided',
  'write_enqueued',
  'write_done',
  'write_failed',
  'revision',
  'held',
  'released',
  'conflict',
  'drift_detected',
  'drift_healed',
  'pruned',
] as const;
export type HistoryType = (typeof HISTORY_TYPES)[number];

/** One entry of a resource's history, as the log keeps it and `converge history --output json` prints it (with `resource`). */
export interface RecordedEvent {
  /** The resource's key (`Kind/name`). */
  key: string;
  at: string;
  type: HistoryType;
  /** A stable word (a condition's reason, a job's outcome). */
  reason: string;
  /** One line for humans. Never a secret. */
  message: string;
  manifests: ManifestRef | null;
  job: { id: string } | null;
  revision: { id: string; status: string } | null;
  /** The process that recorded it (the daemon's replica id, or `apply@host:pid`). */
  by: string;
}

/** `converge history --output json` and `GET /history/KIND/NAME`: the resource and its entries, newest first. */
export interface HistoryDocument {
  resource: string;
  events: Array<Omit<RecordedEvent, 'key'>>;
}

/** The history document of `key` from its entries (each without its key, which is the document's `resource`). */
export function historyDocument(key: string, events: readonly RecordedEvent[]): HistoryDocument {
  return { resource: key, events: events.map(({ at, type, reason, message, manifests, job, revision, by }) => ({ at, type, reason, message, manifests, job, revision, by })) };
}

/** What the recorder knows besides the event: when, who, and the manifests the state came from (when known). */
export interface RecordMeta {
  at: string;
  by: string;
  manifests?: ManifestRef | undefined;
}

/** Which manifests an entry names: kind, id and whether edits not committed were read (no read time). */
type ManifestRef = Pick<ManifestVersion, 'kind' | 'id' | 'uncommitted'>;

function refOf(version: ManifestRef | undefined): ManifestRef | null {
  return version ? { kind: version.kind, id: version.id, ...(version.uncommitted ? { uncommitted: true } : {}) } : null;
}

function revisionOf(state: ResourceState | undefined): RecordedEvent['revision'] {
  const health = state?.health;
  return health?.revisionId ? { id: health.revisionId, status: health.revisionStatus ?? 'UNKNOWN' } : null;
}

function driftFields(state: ResourceState | undefined): string[] {
  return state?.drift?.fields ?? [];
}

/** The outcome of a decision as compared for "changed" (the sync condition and the action; not its message, which names times). */
function decisionOf(state: ResourceState | undefined): string {
  return state ? `${state.action}|${state.sync.status}|${state.sync.reason}|${state.health.status}|${state.health.reason}` : '';
}

/**
 * The history entries of one fold: none when the event changed nothing worth keeping (a resync that decided the
 * same outcome again, a poll that read the same revision). Pure; `before` and `after` are the fold's states.
 */
export function recordsOf(event: ResourceEvent, before: ResourceState | undefined, after: ResourceState, meta: RecordMeta): RecordedEvent[] {
  const manifests = refOf(meta.manifests ?? after.appliedFrom);
  const jobId = event.type === 'job-completed' || event.type === 'job-failed' ? event.jobId : after.job?.id;
  const base = { key: after.key, at: meta.at, by: meta.by, manifests, job: jobId ? { id: jobId } : null, revision: revisionOf(after) };
  const out: RecordedEvent[] = [];
  const add = (type: HistoryType, reason: string, message: string): void => {
    out.push({ ...base, type, reason, message });
  };
  switch (event.type) {
    case 'decided': {
      if (decisionOf(before) !== decisionOf(after)) add('decided', after.sync.reason, `${after.action}: ${after.sync.message ?? after.sync.reason}`);
      if (after.job?.state === 'queued' && after.job.id !== before?.job?.id) add('write_enqueued', after.job.operation, `job ${after.job.id} enqueued (${after.job.operation})`);
      const was = driftFields(before);
      const now = driftFields(after);
      if (now.length > 0 && now.join(',') !== was.join(',')) add('drift_detected', after.drift?.policy ?? 'drift', `live differs from the manifest: ${now.join(', ')}`);
      if (was.length > 0 && now.length === 0) add('drift_healed', 'InSync', `live matches the manifest again (was: ${was.join(', ')})`);
      if (rolloutEnded(before, after)) add('revision', after.health.reason, after.health.message);
      pushHold(before, after, add);
      break;
    }
    case 'job-completed':
      // The job's own entry (write_done, pruned) is the worker's that ran it (jobRecord); here what its result made.
      if (after.sync.reason === 'Conflict' && before?.sync.reason !== 'Conflict') add('conflict', after.conflict?.reason ?? 'Conflict', after.conflict?.message ?? after.sync.message);
      if (after.health.revisionId && after.health.revisionId !== before?.health.revisionId) add('revision', after.health.reason, after.health.message);
      break;
    case 'job-failed':
      // write_failed is the worker's entry (jobRecord); here the hold its refusal made.
      pushHold(before, after, add);
      break;
    case 'interrupted':
      add('write_failed', 'Interrupted', event.message);
      break;
    case 'revision': {
      const h = after.health;
      const b = before?.health;
      if (!b || b.status !== h.status || b.reason !== h.reason || b.revisionId !== h.revisionId || b.revisionStatus !== h.revisionStatus) add('revision', h.reason, h.message ?? h.reason);
      break;
    }
    case 'hold':
      pushHold(before, after, add);
      break;
    case 'conflict':
      if (before?.conflict?.message !== after.conflict?.message || before?.sync.reason !== 'Conflict') add('conflict', event.conflict.reason, event.conflict.message);
      break;
    case 'conflict-released':
      if (before?.sync.reason === 'Conflict') add('released', 'ConflictReleased', 'conflict released on request');
      break;
  }
  return out;
}

/**
 * A reconcile that read a rollout's end (the listing: the latest revision active, or past its deadline) before the
 * revision poll did: the revision's end is recorded from the decision, since the poll no longer follows it.
 */
function rolloutEnded(before: ResourceState | undefined, after: ResourceState): boolean {
  const b = before?.health;
  const h = after.health;
  if (!b || !h.revisionId || (h.status !== 'healthy' && h.status !== 'degraded')) return false;
  return b.status !== h.status || b.reason !== h.reason || b.revisionId !== h.revisionId;
}

function pushHold(before: ResourceState | undefined, after: ResourceState, add: (type: HistoryType, reason: string, message: string) => void): void {
  const was = before?.hold;
  const now = after.hold;
  if (now && (was?.revisionId !== now.revisionId || was?.reason !== now.reason || was?.desired !== now.desired)) add('held', now.reason, now.message);
  else if (was && !now) add('released', 'HoldReleased', `hold released (${was.reason}${was.revisionId ? `, revision ${was.revisionId}` : ''})`);
}

/** What a job's run answered, as the worker that ran it has it (src/store/schema.ts ReconcileJobResult, read structurally). */
export interface JobAnswer {
  outcome: string;
  new_revision: boolean;
  latestRevisionId?: string | null | undefined;
  message?: string | undefined;
  notRun?: string | undefined;
}

/**
 * The entry of a job's raw result, written by the worker that ran it (for apply and the daemon alike): write_done with
 * its outcome, pruned for a delete, write_failed for a failure no attempt is left for.
 */
export function jobRecord(input: { key: string; jobId: string; meta: RecordMeta; answer: JobAnswer } | { key: string; jobId: string; meta: RecordMeta; failure: string }): RecordedEvent {
  const { key, jobId, meta } = input;
  const base = { key, at: meta.at, by: meta.by, manifests: refOf(meta.manifests), job: { id: jobId } };
  if ('failure' in input) return { ...base, type: 'write_failed', reason: 'JobFailed', message: input.failure, revision: null };
  const { answer } = input;
  const revision = answer.new_revision && answer.latestRevisionId ? { id: answer.latestRevisionId, status: 'STARTED' } : null;
  if (answer.outcome === 'deleted') return { ...base, type: 'pruned', reason: 'deleted', message: answer.message ?? `job ${jobId} deleted it`, revision: null };
  // The reason of a job that sent nothing is why (superseded, former_leader, live_changed).
  if (answer.notRun) return { ...base, type: 'write_done', reason: answer.notRun, message: answer.message ?? `job ${jobId} sent nothing (${answer.notRun})`, revision: null };
  const message = answer.message ?? `job ${jobId} ${answer.outcome}${answer.new_revision ? '; a new revision started' : ''}`;
  return { ...base, type: 'write_done', reason: answer.outcome, message, revision };
}
