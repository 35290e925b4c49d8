// Taking up the projection on the real Redis: a job result the worker recorded after the last leader wrote the row (between its release and the next leader's start) shows on the restored row, not `queued`.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { jobRecord } from '../../src/core/resource-record.js';
import type { ResourceState } from '../../src/core/resource-state.js';
import { EventRecorder } from '../../src/daemon/status/event-recorder.js';
import { FailedBuilds } from '../../src/daemon/status/failed-builds.js';
import { ResourceTracker } from '../../src/daemon/status/resource-tracker.js';
import { eventLogStoreOnTestPrefix } from '../helpers/event-log-store.js';

const VERSION = { kind: 'git' as const, id: 'ab12'.repeat(10), readAt: '2026-01-01T00:00:00.000Z' };

/** A row as the last leader wrote it: its job enqueued, no result yet. */
function queuedRow(name: string, jobId: string): ResourceState {
  return {
    key: `Deployment/${name}`, kind: 'Deployment', name, file: `${name}.yaml`, action: 'update',
    sync: { status: 'out_of_sync', reason: 'Applying', message: `job ${jobId} queued` },
    health: { status: 'healthy', reason: 'RevisionDeployed', message: 'revision r0 deployed', revisionId: 'r0' },
    reason: null, error: null, drift: null, heldAtLastGood: false,
    job: { id: jobId, state: 'queued', operation: 'patch-deployment' }, deploymentId: `d-${name}`,
  };
}

describe('restoring the projection', () => {
  const fixture = eventLogStoreOnTestPrefix('restore');

  it('writes a row only when its state changes, and every row again when Redis lost the projection', async () => {
    const log = pino({ level: 'silent' });
    const tracker = new ResourceTracker();
    const recorder = new EventRecorder(fixture.store(), { by: 'replica-c', log, leading: () => true }, tracker);
    const row = queuedRow('steady', 'j-steady');
    tracker.restore(new Map([[row.key, row]]));
    await fixture.store().write({ events: [], states: [row] });
    const version = await fixture.store().stateVersion();
    // A fold into the same state (a resync that changed nothing): no write, the projection's version does not move.
    expect(tracker.setHealth(row.key, { ...row.health })).toBe(false);
    await recorder.flushed();
    expect(await fixture.store().stateVersion()).toBe(version);
    // A change is written.
    tracker.setHealth(row.key, { status: 'progressing', reason: 'RevisionBuilding', message: 'building r2', revisionId: 'r2' });
    await recorder.flushed();
    expect((await fixture.store().states()).get(row.key)?.health.revisionId).toBe('r2');
    // Redis lost it (as after a FLUSHALL): rewriteAll writes every row again.
    await fixture.store().write({ events: [], states: [], removed: [row.key] });
    expect((await fixture.store().states()).has(row.key)).toBe(false);
    recorder.rewriteAll();
    await recorder.flushed();
    expect((await fixture.store().states()).get(row.key)?.health.revisionId).toBe('r2');
    await fixture.store().write({ events: [], states: [], removed: [row.key] }); // the next test's projection starts empty
  });

  it('folds the results the workers recorded since the projection was written', async () => {
    // The last leader's projection: three jobs queued. Then, with no leader, the workers ran them.
    await fixture.store().write({ events: [], states: [queuedRow('web', 'j-web'), queuedRow('api', 'j-api'), queuedRow('idle', 'j-idle')] });
    const meta = { at: '2026-01-01T00:01:00.000Z', by: 'worker@host:1', manifests: VERSION };
    await fixture.store().write({
      events: [
        jobRecord({ key: 'Deployment/web', jobId: 'j-web', meta, answer: { outcome: 'updated', new_revision: true, latestRevisionId: 'r1' } }),
        jobRecord({ key: 'Deployment/api', jobId: 'j-api', meta, failure: 'PATCH answered 422: max_scale too large' }),
        // An older job of idle's: not the one its row shows queued.
        jobRecord({ key: 'Deployment/idle', jobId: 'j-older', meta, answer: { outcome: 'updated', new_revision: false } }),
      ],
      states: [],
    });

    const log = pino({ level: 'silent' });
    const tracker = new ResourceTracker();
    const recorder = new EventRecorder(fixture.store(), { by: 'replica-b', log, leading: () => true }, tracker);
    expect(await recorder.restore(new FailedBuilds(tracker, log, () => ({ desired: new Map(), env: {} })))).toBe(3);
    await recorder.flushed();

    const rows = new Map(tracker.resources().map((r) => [r.key, r]));
    expect(rows.get('Deployment/web')).toMatchObject({
      job: { id: 'j-web', state: 'completed', outcome: 'updated', new_revision: true },
      sync: { status: 'synced', reason: 'Applied' },
      health: { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r1' },
      appliedFrom: { kind: 'git', id: VERSION.id },
    });
    expect(rows.get('Deployment/api')).toMatchObject({ job: { id: 'j-api', state: 'failed' }, sync: { reason: 'JobFailed' }, error: 'PATCH answered 422: max_scale too large' });
    expect(rows.get('Deployment/idle')?.job).toMatchObject({ id: 'j-idle', state: 'queued' });
    // The folded rows are the projection now: a later restore (another failover) reads them as they are.
    const projected = await fixture.store().states();
    expect(projected.get('Deployment/web')?.job?.state).toBe('completed');
    expect(projected.get('Deployment/api')?.job?.state).toBe('failed');
    // And the result made its entry: the revision web's job started.
    expect((await fixture.store().history('Deployment/web', { limit: 1 }))[0]).toMatchObject({ type: 'revision', revision: { id: 'r1' }, by: 'replica-b' });
  });
});
