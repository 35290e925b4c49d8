// eventsFrom: notification events as transitions of the published status rows, once each, with ids every replica agrees on.
import { describe, expect, it } from 'vitest';
import type { HealthCondition } from '../core/health.js';
import { eventsFrom, snapshotOf, type PublishedState } from './notify-events.js';
import type { ResourceStatus } from '../daemon/status/status-row.js';

const V1 = { kind: 'git' as const, id: 'a'.repeat(40), readAt: '2026-11-26T10:00:00Z' };
const V2 = { kind: 'git' as const, id: 'b'.repeat(40), readAt: '2026-11-26T11:00:00Z' };
const KEPT = { lost: false, lostAt: null };
const T = '2026-11-26T12:00:00.000Z';

const healthy = (revisionId = 'r1'): HealthCondition => ({ status: 'healthy', reason: 'RevisionDeployed', message: `revision ${revisionId} is deployed`, revisionId, revisionStatus: 'DEPLOYED' });
const building = (revisionId = 'r2'): HealthCondition => ({ status: 'progressing', reason: 'RevisionBuilding', message: `revision ${revisionId} started`, revisionId });
const buildFailed = (revisionId = 'r2'): HealthCondition => ({ status: 'degraded', reason: 'RevisionBuildFailed', message: `revision ${revisionId} ended BUILD_FAILED`, revisionId, revisionStatus: 'BUILD_FAILED' });

function row(name: string, patch: Partial<ResourceStatus> = {}): ResourceStatus {
  return {
    key: `Deployment/${name}`, kind: 'Deployment', name, file: `${name}.yaml`, action: 'noop', state: 'synced',
    sync: { status: 'synced', reason: 'Synced', message: 'live state matches the manifest' }, health: healthy(), reason: null, error: null,
    drift: null, heldAtLastGood: false, job: null, deploymentId: `id-${name}`, ...patch,
  };
}

/** Publishes `rows` after `previous` and returns the events and the new state. */
function step(previous: PublishedState | undefined, rows: ResourceStatus[], version = V1, appliedState: PublishedState['appliedState'] = KEPT) {
  const next = snapshotOf(rows, previous, version, appliedState);
  return { next, events: eventsFrom(previous, next, T) };
}

describe('eventsFrom', () => {
  it('a write, its rollout and its failure: write_sent (rollout), then one rollout_failed per revision, on the version the job was enqueued from', () => {
    let s = step(undefined, [row('a')]);
    expect(s.events).toEqual([]);
    s = step(s.next, [row('a', { action: 'update', job: { id: 'j1', state: 'queued', operation: 'patch-deployment' } })]);
    expect(s.events).toEqual([]);
    // The manifests move on to V2 while the job of V1 runs: its events stay on V1.
    s = step(s.next, [row('a', { job: { id: 'j1', state: 'completed', operation: 'patch-deployment', outcome: 'updated', new_revision: true }, health: building() })], V2);
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ type: 'write_sent', rollout: true, revisionId: 'r2', manifestVersion: { kind: 'git', id: V1.id }, resource: { kind: 'Deployment', name: 'a' } });
    const failedRows = [row('a', { job: { id: 'j1', state: 'completed', operation: 'patch-deployment', outcome: 'updated', new_revision: true }, health: buildFailed() })];
    s = step(s.next, failedRows, V2);
    expect(s.events.map((e) => e.type)).toEqual(['rollout_failed']);
    expect(s.events[0]).toMatchObject({ reason: 'RevisionBuildFailed', revisionId: 'r2', revisionStatus: 'BUILD_FAILED', deploymentId: 'id-a', manifestVersion: { id: V1.id } });
    const first = s.events[0]!;
    // Published again unchanged: nothing. A replica (or a restart) that sees the same failure first: the same id.
    expect(step(s.next, failedRows, V2).events).toEqual([]);
    const fresh = step(undefined, failedRows, V2).events.find((e) => e.type === 'rollout_failed')!;
    expect(fresh.id).toBe(first.id);
    // The progress deadline then BUILD_FAILED of the same revision is one failure, not two.
    const deadline: HealthCondition = { status: 'degraded', reason: 'ProgressDeadlineExceeded', message: 'late', revisionId: 'r3' };
    s = step(step(s.next, [row('a', { health: building('r3') })], V2).next, [row('a', { health: deadline })], V2);
    expect(s.events.map((e) => e.type)).toEqual(['rollout_failed']);
    expect(step(s.next, [row('a', { health: buildFailed('r3') })], V2).events).toEqual([]);
  });

  it('rollout_succeeded when a followed revision becomes healthy; nothing for what is healthy at the first look', () => {
    expect(step(undefined, [row('a', { health: healthy('r9') })]).events).toEqual([]);
    const s = step(step(undefined, [row('a', { health: building('r2') })]).next, [row('a', { health: healthy('r2') })]);
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ type: 'rollout_succeeded', revisionId: 'r2', reason: 'RevisionDeployed' });
    const provider = row('p', { kind: 'OAuthProvider', key: 'OAuthProvider/p', health: { status: 'healthy', reason: 'NoRollout', message: 'no rollout' } });
    expect(step(step(undefined, [{ ...provider, health: { status: 'unknown', reason: 'AwaitingCreate', message: '' } }]).next, [provider]).events).toEqual([]);
  });

  it('write_failed when a job runs out of attempts, pruned when a delete job is done', () => {
    const queued = step(undefined, [row('a', { job: { id: 'j1', state: 'queued', operation: 'patch-deployment' } }), row('gone', { action: 'delete', job: { id: 'j2', state: 'queued', operation: 'delete' } })]);
    const s = step(queued.next, [
      row('a', { job: { id: 'j1', state: 'failed', operation: 'patch-deployment', message: 'the service answered 500' }, sync: { status: 'out_of_sync', reason: 'JobFailed', message: 'x' } }),
      row('gone', { action: 'delete', job: { id: 'j2', state: 'completed', operation: 'delete', outcome: 'deleted', new_revision: false } }),
    ]);
    expect(s.events.map((e) => [e.type, e.resource.name, e.reason])).toEqual([['write_failed', 'a', 'JobFailed'], ['pruned', 'gone', 'Pruned']]);
    expect(s.events[0]!.message).toContain('the service answered 500');
  });

  it('delete_pending once per absence, saying what sends it (prune_grace, or a person under prune_mode confirm)', () => {
    const waiting = (since: string, confirm: boolean) => row('b', { action: 'delete', sync: { status: 'out_of_sync', reason: 'DeletePending', message: 'delete pending' }, pendingDelete: { since, due: confirm ? null : '2026-11-26T12:01:00.000Z', confirm } });
    let s = step(undefined, [row('b')]);
    s = step(s.next, [waiting('2026-11-26T12:00:00.000Z', true)]);
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ type: 'delete_pending', reason: 'DeletePending', resource: { kind: 'Deployment', name: 'b' } });
    expect(s.events[0]!.message).toContain('converge reconcile --confirm-delete b');
    const first = s.events[0]!.id;
    // Still pending: nothing new. Declared again, then undeclared anew: another event.
    s = step(s.next, [waiting('2026-11-26T12:00:00.000Z', true)]);
    expect(s.events).toEqual([]);
    s = step(s.next, [row('b')]);
    s = step(s.next, [waiting('2026-11-26T12:05:00.000Z', false)]);
    expect(s.events).toHaveLength(1);
    expect(s.events[0]!.id).not.toBe(first);
    expect(s.events[0]!.message).toContain('deleted at 2026-11-26T12:01:00.000Z unless a manifest declares it again');
  });

  it('drift_detected once, drift_healed when live matches again', () => {
    let s = step(undefined, [row('a')]);
    s = step(s.next, [row('a', { drift: { policy: 'report', fields: ['source_config.resource_spec.max_scale'] }, sync: { status: 'out_of_sync', reason: 'DriftReported', message: '' } })]);
    expect(s.events.map((e) => [e.type, e.reason])).toEqual([['drift_detected', 'DriftReported']]);
    expect(s.events[0]!.message).toContain('source_config.resource_spec.max_scale');
    expect(step(s.next, [row('a', { drift: { policy: 'report', fields: ['source_config.resource_spec.max_scale'] } })]).events).toEqual([]);
    s = step(s.next, [row('a')]);
    expect(s.events.map((e) => e.type)).toEqual(['drift_healed']);
  });

  it('held for a failed revision, for SecretsUnknown (once across commits) and for manifest errors; conflict once', () => {
    let s = step(undefined, [row('a')]);
    const hold = { reason: 'RevisionFailed' as const, desired: 'd'.repeat(64), message: 'revision r2 failed', since: T, revisionId: 'r2', revisionStatus: 'BUILD_FAILED' };
    s = step(s.next, [row('a', { hold }), row('b', { syncReason: 'SecretsUnknown', secretsUnknown: ['API_TOKEN'] })]);
    expect(s.events.map((e) => [e.type, e.resource.name, e.reason])).toEqual([['held', 'a', 'RevisionFailed'], ['held', 'b', 'SecretsUnknown']]);
    expect(step(s.next, [row('a', { hold }), row('b', { syncReason: 'SecretsUnknown', secretsUnknown: ['API_TOKEN'] })], V2).events).toEqual([]);
    s = step(s.next, [row('a', { heldAtLastGood: true, error: 'a.yaml:3:1: bad' })]);
    expect(s.events.map((e) => [e.type, e.reason])).toEqual([['held', 'ManifestErrors']]);
    const conflict = { reason: 'desired_alternates' as const, message: 'the desired state alternates', since: T };
    s = step(s.next, [row('a', { syncReason: 'Conflict', conflict })]);
    expect(s.events.map((e) => [e.type, e.reason])).toEqual([['conflict', 'desired_alternates']]);
    expect(step(s.next, [row('a', { syncReason: 'Conflict', conflict })]).events).toEqual([]);
  });

  it('applied_state_lost once per loss, about the daemon', () => {
    let s = step(undefined, [row('a')]);
    s = step(s.next, [row('a')], V1, { lost: true, lostAt: T });
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ type: 'applied_state_lost', resource: { kind: 'Daemon', name: 'applied-state' } });
    expect(step(s.next, [row('a')], V1, { lost: true, lostAt: T }).events).toEqual([]);
    expect(step(s.next, [row('a')], V1, { lost: true, lostAt: '2026-11-26T13:00:00.000Z' }).events).toHaveLength(1);
  });

  it('snapshots are copies: a row changed in place later does not change what was published', () => {
    const live = row('a', { health: building() });
    const s = step(undefined, [live]);
    live.health = healthy('r2');
    expect(s.next.rows.get('Deployment/a')!.health.status).toBe('progressing');
    expect(step(s.next, [live]).events.map((e) => e.type)).toEqual(['rollout_succeeded']);
  });
});
