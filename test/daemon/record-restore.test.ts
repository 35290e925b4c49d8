// The leader's rows as a cache of the states in Redis, on the real Redis: a fold that changes nothing writes nothing; a new leader takes the states the workers folded with no leader, as they are; a replica whose term ended cannot write its old state over the newer leader's; rows Redis lost are said to be rebuilt.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { jobRecord } from '../../src/core/resource-record.js';
import type { ResourceEvent, ResourceState } from '../../src/core/resource-state-model.js';
import { StateFolds } from '../../src/daemon/status/event-recorder.js';
import { ResourceTracker } from '../../src/daemon/status/resource-tracker.js';
import { leaseKey } from '../../src/leader/lease.js';
import { recordKeys, type StoredBuildLog } from '../../src/store/event-log.js';
import { FailedBuilds } from '../../src/daemon/status/failed-builds.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { eventLogStoreOnTestPrefix, seedStates } from '../helpers/event-log-store.js';
import { decide } from '../../src/core/decide.js';
import type { Plan, PlanChange } from '../../src/core/model.js';
import type { ReconcileOutcome } from '../../src/daemon/cycle/cycle.js';
import { holdFailedRevisions } from '../../src/daemon/status/rollout.js';
import { holdsKey } from '../../src/store/holds-store.js';

const VERSION = { kind: 'git' as const, id: 'ab12'.repeat(10), readAt: '2026-01-01T00:00:00.000Z' };
const log = pino({ level: 'silent' });
const buildLogs = async (): Promise<Map<string, StoredBuildLog>> => new Map();
const failedBuilds = (tracker: ResourceTracker): FailedBuilds =>
  new FailedBuilds(tracker, log, () => ({ desired: new Map(), env: {} }));

/** A row as the last leader wrote it: its job enqueued, no result yet. */
function queuedRow(name: string, jobId: string): ResourceState {
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `${name}.yaml`,
    action: 'update',
    sync: { status: 'out_of_sync', reason: 'Applying', message: `job ${jobId} queued` },
    health: { status: 'healthy', reason: 'RevisionDeployed', message: 'revision r0 deployed', revisionId: 'r0' },
    reason: null,
    error: null,
    drift: null,
    heldAtLastGood: false,
    job: { id: jobId, state: 'queued', operation: 'patch-deployment' },
    deploymentId: `d-${name}`,
  };
}

/** A reconcile's outcome for `name`, nothing to write, its latest revision r2 failed (BUILD_FAILED). */
function failedRevisionOutcome(name: string): ReconcileOutcome {
  const at = '2026-01-01T00:00:00Z';
  const live = {
    id: `d-${name}`,
    name,
    tenant_id: 't',
    source: 'internal_docker' as const,
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: at,
    updated_at: at,
    status: 'READY',
    latest_revision_id: 'r2',
    active_revision_id: 'r1',
  };
  const change: PlanChange = {
    kind: 'Deployment',
    name,
    action: 'noop',
    new_revision: false,
    fields: [],
    reason: null,
  };
  const plan: Plan = {
    format_version: '1',
    summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 1, orphan: 0, blocked: 0, suspended: 0 },
    changes: [change],
    diagnostics: [],
  };
  const outcome = decide({
    change,
    live,
    revision: { id: 'r2', status: 'BUILD_FAILED' },
    fingerprint: 'fp',
    remembered: 'fp',
    settings: { mode: 'daemon', driftPolicy: 'report' },
  });
  const key = `Deployment/${name}`;
  const resources = new Map([
    [
      key,
      {
        kind: 'Deployment' as const,
        name,
        location: { file: `${name}.yaml`, line: 1, column: 1 },
        suspend: false,
        spec: { source: 'internal_docker' as const },
      },
    ],
  ]);
  return {
    plan,
    resources,
    live: [live],
    files: 1,
    outcomes: new Map([[key, outcome]]),
    held: [],
    drift: [],
    enqueued: 0,
    fingerprints: new Map([[key, 'fp']]),
  };
}

describe("the leader's rows over the states in Redis", () => {
  const fixture = eventLogStoreOnTestPrefix('restore');
  const folds = (): ResourceFolds => new ResourceFolds(fixture.redis(), fixture.prefix, leaseKey(fixture.prefix));

  it('writes a row only when its state changes; rows Redis lost stay shown and are said to be rebuilt', async () => {
    const tracker = new ResourceTracker();
    const row = queuedRow('steady', 'j-steady');
    await seedStates(fixture.redis(), fixture.prefix, [row]);
    const states = new StateFolds(folds(), { by: 'replica-c', log, leading: () => true, buildLogs }, tracker);
    expect(await states.restore(failedBuilds(tracker))).toBe(1);
    const version = await fixture.redis().get(recordKeys(fixture.prefix).stateVersion);
    // A fold into the same state (a poll that read the same): no write, the projection's version does not move.
    expect(tracker.setHealth(row.key, { ...row.health })).toBe(false);
    await states.flushed();
    expect(await fixture.redis().get(recordKeys(fixture.prefix).stateVersion)).toBe(version);
    // A change is folded in Redis.
    tracker.setHealth(row.key, {
      status: 'progressing',
      reason: 'RevisionBuilding',
      message: 'building r2',
      revisionId: 'r2',
    });
    await states.flushed();
    expect((await fixture.store().statesOf([row.key])).get(row.key)?.health.revisionId).toBe('r2');
    // Redis lost it (as after a FLUSHALL): the row stays shown, said to be rebuilt by the next reconcile; nothing is copied back.
    await fixture.redis().del(recordKeys(fixture.prefix).state, `${fixture.prefix}:record:state-versions`);
    await states.refresh([row.key]);
    expect(tracker.rebuilding()).toBe(true);
    expect(tracker.states().map((s) => s.key)).toEqual([row.key]);
    expect((await fixture.store().statesOf([row.key])).has(row.key)).toBe(false);
  });

  it('a new leader takes the states the workers folded while no replica led, as they are', async () => {
    // The last leader's states: three jobs queued. Then, with no leader, the workers ran them and folded their results.
    await seedStates(fixture.redis(), fixture.prefix, [
      queuedRow('web', 'j-web'),
      queuedRow('api', 'j-api'),
      queuedRow('idle', 'j-idle'),
    ]);
    const worker = folds();
    const meta = { at: '2026-01-01T00:01:00.000Z', by: 'worker@host:1', manifests: VERSION };
    const done = (
      key: string,
      jobId: string,
      event: ResourceEvent,
      answer?: Parameters<typeof jobRecord>[0],
    ): Promise<unknown> => worker.fold([{ key, events: [event], entries: answer ? [jobRecord(answer)] : [], meta }]);
    const web = { outcome: 'updated' as const, new_revision: true, latestRevisionId: 'r1' };
    await done(
      'Deployment/web',
      'j-web',
      { type: 'job-completed', jobId: 'j-web', at: meta.at, result: web, version: VERSION },
      { key: 'Deployment/web', jobId: 'j-web', meta, answer: web },
    );
    await done('Deployment/api', 'j-api', {
      type: 'job-failed',
      jobId: 'j-api',
      at: meta.at,
      message: 'PATCH answered 422: max_scale too large',
      failure: { status: 422 },
      desired: 'f'.repeat(64),
    });
    // An older job of idle's: not the one its state shows queued.
    await done('Deployment/idle', 'j-older', {
      type: 'job-completed',
      jobId: 'j-older',
      at: meta.at,
      result: { outcome: 'updated', new_revision: false },
    });

    const tracker = new ResourceTracker();
    const states = new StateFolds(folds(), { by: 'replica-b', log, leading: () => true, buildLogs }, tracker);
    expect(await states.restore(failedBuilds(tracker))).toBeGreaterThanOrEqual(3);
    const rows = new Map(tracker.resources().map((r) => [r.key, r]));
    expect(rows.get('Deployment/web')).toMatchObject({
      job: { id: 'j-web', state: 'completed', outcome: 'updated', new_revision: true },
      sync: { status: 'synced', reason: 'Applied' },
      health: { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r1' },
      appliedFrom: { kind: 'git', id: VERSION.id },
    });
    // The refusal held the desired state the job carried: the fold made the hold, from the job's data.
    expect(rows.get('Deployment/api')).toMatchObject({
      job: { id: 'j-api', state: 'failed' },
      sync: { reason: 'JobFailed' },
      error: 'PATCH answered 422: max_scale too large',
      hold: { reason: 'WriteRefused' },
    });
    expect(rows.get('Deployment/idle')?.job).toMatchObject({ id: 'j-idle', state: 'queued' });
    // The worker's entries are in the history: write_done, and the revision its result started.
    expect((await fixture.store().history('Deployment/web', { limit: 2 })).map((e) => `${e.type} ${e.by}`)).toEqual([
      'revision worker@host:1',
      'write_done worker@host:1',
    ]);
  });

  it('a replica whose term ended cannot write its old state over the one the newer leader wrote', async () => {
    const key = 'Deployment/fenced';
    await seedStates(fixture.redis(), fixture.prefix, [queuedRow('fenced', 'j-a')]);
    // A leads with token 5 and takes the state up; B takes the lease (token 6) and folds a newer state.
    await fixture.redis().set(leaseKey(fixture.prefix), 'replica-a|5|2026-01-01T00:00:00Z');
    const trackerA = new ResourceTracker();
    const a = new StateFolds(
      folds(),
      { by: 'replica-a', log, leading: () => true, fence: () => 5, buildLogs },
      trackerA,
    );
    await a.restore(failedBuilds(trackerA));
    await fixture.redis().set(leaseKey(fixture.prefix), 'replica-b|6|2026-01-01T00:01:00Z');
    const hold = {
      reason: 'WriteRefused' as const,
      desired: 'e'.repeat(64),
      message: 'B held it',
      since: '2026-01-01T00:01:00Z',
    };
    const [byB] = await folds().fold(
      [{ key, events: [{ type: 'hold', hold }], meta: { at: '2026-01-01T00:01:00Z', by: 'replica-b' } }],
      { fence: 6 },
    );
    expect(byB).toMatchObject({ status: 'written' });
    const entries = await fixture.redis().xlen(recordKeys(fixture.prefix).log);

    // A, still believing it leads (its lease check has not run yet), releases the hold it does not know about: refused.
    trackerA.releaseHold(key);
    await a.flushed();
    expect((await fixture.store().statesOf([key])).get(key)?.hold).toMatchObject({ message: 'B held it' });
    expect(await fixture.redis().xlen(recordKeys(fixture.prefix).log)).toBe(entries);
  });
  it("a failed revision's hold folded in the batch of the decision that made the state: both in Redis, through the fenced fold", async () => {
    const tracker = new ResourceTracker();
    const states = new StateFolds(folds(), { by: 'replica-d', log, leading: () => true, buildLogs }, tracker);
    // A first reconcile decides a resource Redis has no state of; its revision failed. Its decision and the hold are
    // noted together and folded in one batch.
    tracker.update(failedRevisionOutcome('held-web'));
    await holdFailedRevisions(tracker, () => states.flushed());
    const stored = (await fixture.store().statesOf(['Deployment/held-web'])).get('Deployment/held-web');
    expect(stored?.hold).toMatchObject({ reason: 'RevisionFailed', revisionId: 'r2', desired: 'fp' });
    expect(JSON.parse((await fixture.redis().hget(holdsKey(fixture.prefix), 'Deployment/held-web'))!)).toMatchObject({
      reason: 'RevisionFailed',
      revisionId: 'r2',
    });
  });
});
