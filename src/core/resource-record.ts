// The history entries of a resource (the event log's records): what one folded ResourceEvent changed, read from the fold's before and after, with the manifests' version, the job, the revision and who recorded it.
import type { DecidedWrite, Outcome } from './decide.js';
import type { HealthCondition } from './health.js';
import type { ManifestVersion } from './manifest-version.js';
import type { JobView, ResourceEvent, ResourceState } from './resource-state-model.js';

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
  /** The job it is about; `operation` on the entry of the job's end (jobRecord): the last job shown from the record. */
  job: { id: string; operation?: string } | null;
  revision: RevisionRef | null;
  /** The process that recorded it (the daemon's replica id, or `apply@host:pid`). */
  by: string;
  /** write_done: the fields the job's write sent (paths; a secret by its name, `secrets.NAME`, never its value). */
  fields?: string[];
}

/**
 * The revision an entry is about: its status as the service reported it (`STARTED`: it exists, its status not read
 * yet; `DEPLOYED` also when the listing shows it active), and the service's times of it when read.
 */
export interface RevisionRef {
  id: string;
  status: string;
  /** The revision's `created_at`, as the service reported it. */
  createdAt?: string;
  /** The revision's `updated_at`: when the service says it reached `status`. */
  updatedAt?: string;
}

/** `converge history --output json` and `GET /history/KIND/NAME`: the resource and its entries, newest first. */
export interface HistoryDocument {
  resource: string;
  events: Array<Omit<RecordedEvent, 'key'>>;
}

/** The history document of `key` from its entries (each without its key, which is the document's `resource`). */
export function historyDocument(key: string, events: readonly RecordedEvent[]): HistoryDocument {
  return {
    resource: key,
    events: events.map(({ at, type, reason, message, manifests, job, revision, by, fields }) => ({
      at,
      type,
      reason,
      message,
      manifests,
      job,
      revision,
      by,
      ...(fields ? { fields } : {}),
    })),
  };
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

/**
 * The status of the revision a health is about: the service's, when read; DEPLOYED when the listing shows it active
 * (the deployment READY with it as its active revision); otherwise STARTED (it exists, its status not read yet).
 */
function revisionStatusOf(health: HealthCondition): string {
  if (health.revisionStatus) return health.revisionStatus;
  return health.reason === 'RevisionDeployed' ? 'DEPLOYED' : 'STARTED';
}

function revisionOf(state: ResourceState | undefined): RevisionRef | null {
  const health = state?.health;
  if (!health?.revisionId) return null;
  const ref: RevisionRef = { id: health.revisionId, status: revisionStatusOf(health) };
  if (health.revisionCreatedAt) ref.createdAt = health.revisionCreatedAt;
  if (health.revisionUpdatedAt) ref.updatedAt = health.revisionUpdatedAt;
  return ref;
}

/**
 * When a revision entry happened: when the service says the revision reached its status (`updated_at`), else when it
 * was created, else `fallback` (a start the job's result reported, or a reading with no times).
 */
function revisionAt(revision: RevisionRef | null, fallback: string): string {
  return revision?.updatedAt ?? revision?.createdAt ?? fallback;
}

/** The operator's command that asked for a decided write, when one did (the retry, the override, the confirmation). */
function askedBy(write: DecidedWrite, before: ResourceState | undefined): string | undefined {
  if (write.op === 'rebuild') return 'converge reconcile --retry-failed';
  if (write.secretsApproved) return 'converge reconcile --write-secrets';
  if (write.windowOverride) return write.windowOverride;
  // A delete that waited for a person (prune_mode confirm) is written only once one confirmed it.
  if (write.op === 'delete' && before?.pendingDelete?.confirm === true) return 'converge reconcile --confirm-delete';
  return undefined;
}

/**
 * A decision's one line: the write decided and why (a job then carries it: the sync's own line only says it is
 * queued), with the command and the replica that asked for it; else the action and the sync's line.
 */
function decidedMessage(outcome: Outcome, before: ResourceState | undefined, after: ResourceState, by: string): string {
  const write = outcome.write;
  if (!write) return `${after.action}: ${after.sync.message ?? after.sync.reason}`;
  const asked = askedBy(write, before);
  const why = write.message ?? after.sync.message;
  return `${write.op}: ${why}${asked ? `; asked by ${asked} on replica ${by}` : ''}`;
}

function driftFields(state: ResourceState | undefined): string[] {
  return state?.drift?.fields ?? [];
}

/**
 * The outcome of a decision as compared for "changed" (the sync condition and the action; not its message, which names
 * times). A wave's gate is told by its message too (which wave it waits for, which resource failed): one entry per hold.
 */
function decisionOf(state: ResourceState | undefined): string {
  if (!state) return '';
  const hold =
    state.sync.reason === 'WaveHeld' || state.sync.reason === 'WaveWaiting' ? `|${state.sync.message ?? ''}` : '';
  return `${state.action}|${state.sync.status}|${state.sync.reason}|${state.health.status}|${state.health.reason}${hold}`;
}

/**
 * The history entries of one fold: none when the event changed nothing worth keeping (a resync that decided the
 * same outcome again, a poll that read the same revision). Pure; `before` and `after` are the fold's states.
 */
export function recordsOf(
  event: ResourceEvent,
  before: ResourceState | undefined,
  after: ResourceState,
  meta: RecordMeta,
): RecordedEvent[] {
  const manifests = refOf(meta.manifests ?? after.appliedFrom);
  const jobId = event.type === 'job-completed' || event.type === 'job-failed' ? event.jobId : after.job?.id;
  const revision = revisionOf(after);
  const base = { key: after.key, at: meta.at, by: meta.by, manifests, job: jobId ? { id: jobId } : null, revision };
  const out: RecordedEvent[] = [];
  const add = (type: HistoryType, reason: string, message: string): void => {
    // A revision's entry is timed as the service tells it; a start that a job reported, when the job ended.
    const at =
      type !== 'revision' ? meta.at : revisionAt(revision, event.type === 'job-completed' ? event.at : meta.at);
    out.push({ ...base, at, type, reason, message });
  };
  switch (event.type) {
    case 'decided': {
      if (decisionOf(before) !== decisionOf(after))
        add('decided', after.sync.reason, decidedMessage(event.outcome, before, after, meta.by));
      if (after.job?.state === 'queued' && after.job.id !== before?.job?.id)
        add('write_enqueued', after.job.operation, `job ${after.job.id} enqueued (${after.job.operation})`);
      const was = driftFields(before);
      const now = driftFields(after);
      if (now.length > 0 && now.join(',') !== was.join(','))
        add('drift_detected', after.drift?.policy ?? 'drift', `live differs from the manifest: ${now.join(', ')}`);
      if (was.length > 0 && now.length === 0)
        add('drift_healed', 'InSync', `live matches the manifest again (was: ${was.join(', ')})`);
      if (rolloutEnded(before, after)) add('revision', after.health.reason, after.health.message);
      pushHold(before, after, add);
      break;
    }
    case 'job-completed':
      // The job's own entry (write_done, pruned) is the worker's that ran it (jobRecord); here what its result made.
      if (after.sync.reason === 'Conflict' && before?.sync.reason !== 'Conflict')
        add('conflict', after.conflict?.reason ?? 'Conflict', after.conflict?.message ?? after.sync.message);
      if (after.health.revisionId && after.health.revisionId !== before?.health.revisionId)
        add('revision', after.health.reason, after.health.message);
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
      if (
        !b ||
        b.status !== h.status ||
        b.reason !== h.reason ||
        b.revisionId !== h.revisionId ||
        b.revisionStatus !== h.revisionStatus
      )
        add('revision', h.reason, h.message ?? h.reason);
      break;
    }
    case 'hold':
      pushHold(before, after, add, event.request ? ` by ${event.request} on replica ${meta.by}` : '');
      break;
    case 'conflict':
      if (before?.conflict?.message !== after.conflict?.message || before?.sync.reason !== 'Conflict')
        add('conflict', event.conflict.reason, event.conflict.message);
      break;
    case 'conflict-released':
      if (before?.sync.reason === 'Conflict') {
        add(
          'released',
          'ConflictReleased',
          `conflict released${event.request ? ` by ${event.request} on replica ${meta.by}` : ' on request'}`,
        );
      }
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

/** A hold stored or changed (held), or ended (released; `asked`: " by COMMAND on replica X" when an operator asked). */
function pushHold(
  before: ResourceState | undefined,
  after: ResourceState,
  add: (type: HistoryType, reason: string, message: string) => void,
  asked = '',
): void {
  const was = before?.hold;
  const now = after.hold;
  if (now && (was?.revisionId !== now.revisionId || was?.reason !== now.reason || was?.desired !== now.desired))
    add('held', now.reason, now.message);
  else if (was && !now)
    add(
      'released',
      'HoldReleased',
      `hold released${asked} (${was.reason}${was.revisionId ? `, revision ${was.revisionId}` : ''})`,
    );
}

/** What a job's run answered, as the worker that ran it has it (src/store/schema.ts ReconcileJobResult, read structurally). */
export interface JobAnswer {
  outcome: string;
  new_revision: boolean;
  latestRevisionId?: string | null | undefined;
  message?: string | undefined;
  notRun?: string | undefined;
  /** The fields its write sent (only the paths are read: a secret's path is `secrets.NAME`). */
  fields?: ReadonlyArray<{ path: string }> | undefined;
}

/**
 * The entry of a job's raw result, written by the worker that ran it (for apply and the daemon alike): write_done with
 * its outcome, pruned for a delete, write_failed for a failure no attempt is left for.
 */
export function jobRecord(
  input: ({ answer: JobAnswer } | { failure: string }) & {
    key: string;
    jobId: string;
    meta: RecordMeta;
    operation?: string | undefined;
  },
): RecordedEvent {
  const { key, jobId, meta } = input;
  const job = input.operation === undefined ? { id: jobId } : { id: jobId, operation: input.operation };
  const base = { key, at: meta.at, by: meta.by, manifests: refOf(meta.manifests), job };
  if ('failure' in input)
    return { ...base, type: 'write_failed', reason: 'JobFailed', message: input.failure, revision: null };
  const { answer } = input;
  const revision =
    answer.new_revision && answer.latestRevisionId ? { id: answer.latestRevisionId, status: 'STARTED' } : null;
  if (answer.outcome === 'deleted')
    return {
      ...base,
      type: 'pruned',
      reason: 'deleted',
      message: answer.message ?? `job ${jobId} deleted it`,
      revision: null,
    };
  // The reason of a job that sent nothing is why (superseded, former_leader, live_changed).
  if (answer.notRun)
    return {
      ...base,
      type: 'write_done',
      reason: answer.notRun,
      message: answer.message ?? `job ${jobId} sent nothing (${answer.notRun})`,
      revision: null,
    };
  const fields = [...new Set((answer.fields ?? []).map((f) => f.path))];
  const wrote = fields.length > 0 ? `; wrote ${fields.join(', ')}` : '';
  const message = `${answer.message ?? `job ${jobId} ${answer.outcome}`}${wrote}${answer.new_revision ? '; a new revision started' : ''}`;
  return {
    ...base,
    type: 'write_done',
    reason: answer.outcome,
    message,
    revision,
    ...(fields.length > 0 ? { fields } : {}),
  };
}

/** The entries that end a job: what it wrote (or sent nothing), deleted, or its failure for good. */
const JOB_ENDS: ReadonlySet<HistoryType> = new Set(['write_done', 'write_failed', 'pruned']);

/**
 * The last job of a resource as its record has it (entries newest first): the newest entry that ends a job, as the
 * state shows a job. A state made by a decision with no state before it (the daemon's first reconcile of a resource
 * `converge apply` wrote) takes it, so its Last job is the one its history lists; null when none ended.
 */
export function lastJobOfRecord(entries: readonly RecordedEvent[]): JobView | null {
  const end = entries.find((e) => JOB_ENDS.has(e.type) && e.job !== null);
  if (!end?.job) return null;
  const view: JobView = {
    id: end.job.id,
    state: end.type === 'write_failed' ? 'failed' : 'completed',
    operation: end.job.operation ?? 'job',
    finishedAt: end.at,
  };
  if (end.type === 'write_failed') return { ...view, message: end.message };
  return { ...view, outcome: end.reason, new_revision: end.revision !== null };
}
