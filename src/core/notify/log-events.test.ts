// notifyEventsOf: each event type of docs/notifications.md from the log entry that records it, with a delivery id that depends on what the event is about (the revision, the job, the hold, the entry), never on who read it or when.
import { describe, expect, it } from 'vitest';
import { jobRecord, type RecordedEvent } from '../resource-record.js';
import { eventId } from './events.js';
import { appliedStateLostEvent, notifyEventsOf, type LogEntry } from './log-events.js';

const GIT = { kind: 'git' as const, id: 'a'.repeat(40) };
const META = { at: '2026-11-28T10:00:00.000Z', by: 'one', manifests: GIT };
const WEB = { kind: 'Deployment', name: 'support-agent' };

function entry(id: string, event: Partial<RecordedEvent> & Pick<RecordedEvent, 'type' | 'reason'>): LogEntry {
  return {
    id,
    event: {
      key: 'Deployment/support-agent',
      at: META.at,
      by: 'one',
      message: `${event.reason} happened`,
      manifests: GIT,
      job: null,
      revision: null,
      ...event,
    },
  };
}

function only(e: LogEntry, context = {}) {
  const events = notifyEventsOf(e, context);
  expect(events).toHaveLength(1);
  return events[0]!;
}

describe('notifyEventsOf', () => {
  it('a job that wrote: write_sent with the job as its occurrence, rollout when a revision started', () => {
    const built = {
      id: '1-0',
      event: jobRecord({
        key: 'Deployment/support-agent',
        jobId: 'j1',
        meta: META,
        answer: { outcome: 'updated', new_revision: true, latestRevisionId: 'r2' },
      }),
    };
    expect(only(built)).toEqual({
      id: eventId(WEB, 'write_sent', 'j1'),
      type: 'write_sent',
      resource: WEB,
      reason: 'RevisionBuilding',
      message: 'updated; a new revision builds (r2)',
      revisionId: 'r2',
      revisionStatus: 'STARTED',
      manifestVersion: GIT,
      rollout: true,
      time: META.at,
    });
    const provider = {
      id: '2-0',
      event: jobRecord({
        key: 'OAuthProvider/idp',
        jobId: 'j2',
        meta: META,
        answer: { outcome: 'created', new_revision: false },
      }),
    };
    expect(only(provider)).toMatchObject({
      type: 'write_sent',
      resource: { kind: 'OAuthProvider', name: 'idp' },
      reason: 'Applied',
      rollout: false,
    });
    // The same job's entry read again (a restart, another leader): the same id, whatever the stream id.
    expect(only({ ...built, id: '9-9' }).id).toBe(only(built).id);
  });

  it('a write from edits not committed carries the mark from the job record to the event (issue 42, item 5)', () => {
    const dirty = { ...GIT, uncommitted: true as const, readAt: META.at };
    const record = jobRecord({
      key: 'Deployment/support-agent',
      jobId: 'j3',
      meta: { ...META, manifests: dirty },
      answer: { outcome: 'updated', new_revision: false },
    });
    expect(record.manifests).toEqual({ ...GIT, uncommitted: true });
    expect(only({ id: '3-0', event: record }).manifestVersion).toEqual({ ...GIT, uncommitted: true });
    expect(
      jobRecord({
        key: 'Deployment/support-agent',
        jobId: 'j4',
        meta: META,
        answer: { outcome: 'updated', new_revision: false },
      }).manifests,
    ).toEqual(GIT);
  });

  it('a job that sent nothing, or was unchanged, is no event; a delete is pruned; a job out of attempts is write_failed', () => {
    const notRun = jobRecord({
      key: 'Deployment/support-agent',
      jobId: 'j3',
      meta: META,
      answer: { outcome: 'unchanged', new_revision: false, notRun: 'superseded' },
    });
    expect(notifyEventsOf({ id: '1-0', event: notRun })).toEqual([]);
    expect(
      notifyEventsOf({
        id: '1-1',
        event: jobRecord({
          key: 'Deployment/support-agent',
          jobId: 'j4',
          meta: META,
          answer: { outcome: 'unchanged', new_revision: false },
        }),
      }),
    ).toEqual([]);
    const deleted = jobRecord({
      key: 'Deployment/support-agent',
      jobId: 'j5',
      meta: META,
      answer: { outcome: 'deleted', new_revision: false },
    });
    expect(only({ id: '1-2', event: deleted })).toMatchObject({
      id: eventId(WEB, 'pruned', 'j5'),
      type: 'pruned',
      reason: 'Pruned',
    });
    const failed = jobRecord({
      key: 'Deployment/support-agent',
      jobId: 'j6',
      meta: META,
      failure: 'HTTP 500 three times',
    });
    expect(only({ id: '1-3', event: failed })).toMatchObject({
      id: eventId(WEB, 'write_failed', 'j6'),
      type: 'write_failed',
      reason: 'JobFailed',
      message: 'job j6 failed: HTTP 500 three times',
    });
    // An apply that stopped waiting is not a failed job.
    expect(notifyEventsOf(entry('1-4', { type: 'write_failed', reason: 'Interrupted' }))).toEqual([]);
  });

  it('a revision entry: rollout_failed or rollout_succeeded once per revision, with the build log context; building is no event', () => {
    const failed = entry('5-0', {
      type: 'revision',
      reason: 'RevisionBuildFailed',
      message: 'revision r2 ended BUILD_FAILED',
      revision: { id: 'r2', status: 'BUILD_FAILED' },
    });
    expect(only(failed, { deploymentId: 'd1' })).toEqual({
      id: eventId(WEB, 'rollout_failed', 'r2'),
      type: 'rollout_failed',
      resource: WEB,
      reason: 'RevisionBuildFailed',
      message: 'revision r2 ended BUILD_FAILED',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
      deploymentId: 'd1',
      manifestVersion: GIT,
      time: META.at,
    });
    // The same revision's failure recorded twice (by two leaders): one id.
    expect(only({ ...failed, id: '6-0' }).id).toBe(only(failed).id);
    const deadline = entry('5-1', {
      type: 'revision',
      reason: 'ProgressDeadlineExceeded',
      revision: { id: 'r3', status: 'BUILDING' },
    });
    expect(only(deadline)).toMatchObject({
      type: 'rollout_failed',
      reason: 'ProgressDeadlineExceeded',
      revisionId: 'r3',
    });
    const deployed = entry('5-2', {
      type: 'revision',
      reason: 'RevisionDeployed',
      revision: { id: 'r4', status: 'DEPLOYED' },
    });
    expect(only(deployed)).toMatchObject({
      id: eventId(WEB, 'rollout_succeeded', 'r4'),
      type: 'rollout_succeeded',
      revisionId: 'r4',
    });
    expect(
      notifyEventsOf(
        entry('5-3', { type: 'revision', reason: 'RevisionBuilding', revision: { id: 'r5', status: 'BUILDING' } }),
      ),
    ).toEqual([]);
    expect(notifyEventsOf(entry('5-4', { type: 'revision', reason: 'NoRollout' }))).toEqual([]);
  });

  it('holds: a failed revision is held once per revision, another hold once per entry; SecretsUnknown and manifest errors from the decision', () => {
    const held = entry('7-0', {
      type: 'held',
      reason: 'RevisionFailed',
      message: 'held: revision r2 failed',
      revision: { id: 'r2', status: 'BUILD_FAILED' },
    });
    expect(only(held)).toMatchObject({
      id: eventId(WEB, 'held', 'RevisionFailed|r2'),
      type: 'held',
      reason: 'RevisionFailed',
      message: 'held: revision r2 failed',
    });
    expect(only({ ...held, id: '8-0' }).id).toBe(only(held).id);
    const refused = entry('7-1', { type: 'held', reason: 'WriteRefused' });
    expect(only(refused).id).toBe(eventId(WEB, 'held', 'log:7-1'));
    const secrets = entry('7-2', {
      type: 'decided',
      reason: 'SecretsUnknown',
      message: 'update: secrets API_KEY cannot be compared',
    });
    expect(only(secrets)).toMatchObject({
      id: eventId(WEB, 'held', `SecretsUnknown|${GIT.id}`),
      type: 'held',
      reason: 'SecretsUnknown',
      message: 'secrets API_KEY cannot be compared',
    });
    // Decided again under the same manifests (its health moved meanwhile): the same hold, the same id.
    expect(only({ ...secrets, id: '9-0' }).id).toBe(only(secrets).id);
    expect(only(entry('7-3', { type: 'decided', reason: 'ManifestErrors' }))).toMatchObject({
      type: 'held',
      reason: 'ManifestErrors',
    });
    expect(notifyEventsOf(entry('7-4', { type: 'decided', reason: 'Synced' }))).toEqual([]);
    expect(notifyEventsOf(entry('7-5', { type: 'released', reason: 'HoldReleased' }))).toEqual([]);
    expect(notifyEventsOf(entry('7-6', { type: 'write_enqueued', reason: 'patch-deployment' }))).toEqual([]);
  });

  it('a wave held behind a failed one: held once per hold, naming the wave, the failed resource and what to do; a wave that only waits (WaveWaiting) is no event', () => {
    const said =
      'wave 2 waits behind wave 1, where Deployment/eu-2 failed (revision r-9 ended BUILD_FAILED); fix its manifest and commit (a new change starts from the first wave), or after a fix outside git run "converge reconcile --retry-failed eu-2" (or "converge apply --wait" again)';
    const held = entry('7-7', { type: 'decided', reason: 'WaveHeld', message: `update: ${said}` });
    expect(only(held)).toMatchObject({
      id: eventId(WEB, 'held', `WaveHeld|${GIT.id}|${said}`),
      type: 'held',
      reason: 'WaveHeld',
      message: said,
    });
    expect(only({ ...held, id: '9-1' }).id).toBe(only(held).id);
    const other = entry('7-8', {
      type: 'decided',
      reason: 'WaveHeld',
      message: `update: ${said.replace('r-9', 'r-10')}`,
    });
    expect(only(other).id).not.toBe(only(held).id);
    const waiting = entry('7-9', {
      type: 'decided',
      reason: 'WaveWaiting',
      message:
        'update: wave 2 waits until wave 1 is written and healthy (every new revision DEPLOYED); it is written at the reconcile after that',
    });
    expect(notifyEventsOf(waiting)).toEqual([]);
  });

  it('conflict, drift and a delete that waits', () => {
    expect(
      only(entry('3-0', { type: 'conflict', reason: 'desired_alternates', message: 'versions a and b alternate' })),
    ).toMatchObject({ id: eventId(WEB, 'conflict', 'log:3-0'), type: 'conflict', reason: 'desired_alternates' });
    expect(
      only(
        entry('3-1', {
          type: 'drift_detected',
          reason: 'report',
          message: 'live differs from the manifest: max_scale',
        }),
      ),
    ).toMatchObject({
      type: 'drift_detected',
      reason: 'DriftReported',
      message: 'live differs from the manifest: max_scale; reported, not reverted (drift policy report)',
    });
    expect(only(entry('3-2', { type: 'drift_detected', reason: 'heal' }))).toMatchObject({ reason: 'DriftHealing' });
    expect(only(entry('3-3', { type: 'drift_healed', reason: 'InSync' }))).toMatchObject({
      id: eventId(WEB, 'drift_healed', 'log:3-3'),
      reason: 'Synced',
    });
    const pending = entry('3-4', {
      type: 'decided',
      reason: 'DeletePending',
      message: 'delete: delete pending until 10:05',
    });
    expect(only(pending, { pendingDeleteSince: '2026-11-28T09:00:00.000Z' })).toMatchObject({
      id: eventId(WEB, 'delete_pending', '2026-11-28T09:00:00.000Z'),
      type: 'delete_pending',
      message: 'delete pending until 10:05',
    });
    expect(only(pending).id).toBe(eventId(WEB, 'delete_pending', 'log:3-4'));
  });

  it('applied_state_lost is about the daemon, once per loss', () => {
    const lost = appliedStateLostEvent('2026-11-28T09:00:00.000Z', GIT, META.at);
    expect(lost).toMatchObject({
      type: 'applied_state_lost',
      resource: { kind: 'Daemon', name: 'applied-state' },
      reason: 'AppliedStateLost',
    });
    expect(appliedStateLostEvent('2026-11-28T09:00:00.000Z', null, 'later').id).toBe(lost.id);
    expect(appliedStateLostEvent('2026-11-28T09:30:00.000Z', GIT, META.at).id).not.toBe(lost.id);
  });
});
