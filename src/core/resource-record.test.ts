// History entries from folded events and from the worker's job results: a decision recorded when its outcome changes (not on every resync), a job's result, a revision, a hold and its release, a conflict, drift found and healed, a prune.
import { describe, expect, it } from 'vitest';
import { applying, decide, type DecisionInput, type Outcome } from './decide.js';
import type { ResourceHold } from './holds.js';
import type { LiveDeployment, PlanChange } from './model.js';
import { jobRecord, recordsOf, type RecordMeta } from './resource-record.js';
import { foldResource } from './resource-state.js';
import type { DecisionContext, ResourceEvent, ResourceState } from './resource-state-model.js';

const FP = 'a'.repeat(64);
const AT = '2026-01-01T00:01:00.000Z';
const META: RecordMeta = { at: AT, by: 'replica-a', manifests: { kind: 'git', id: 'c1'.repeat(20) } };
const CONTEXT: DecisionContext = {
  file: 'web.yaml',
  planReason: null,
  drift: null,
  heldAtLastGood: false,
  deploymentId: 'd1',
};

function change(action: PlanChange['action']): PlanChange {
  const fields =
    action === 'update'
      ? [{ path: 'source_config.resource_spec.max_scale', before: 1, after: 2, sensitive: false }]
      : [];
  return { kind: 'Deployment', name: 'web', action, new_revision: false, fields, reason: null };
}

function live(): LiveDeployment {
  return {
    id: 'd1',
    name: 'web',
    status: 'READY',
    latest_revision_id: 'r1',
    active_revision_id: 'r1',
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
}

function decided(action: PlanChange['action'], extra: Partial<DecisionInput> = {}): Outcome {
  return decide({
    change: change(action),
    desired: { suspend: false },
    fingerprint: FP,
    live: live(),
    settings: { mode: 'daemon', driftPolicy: 'heal' },
    remembered: 'b'.repeat(64),
    ...extra,
  });
}

/** Folds `event` into `state` and returns the entries it makes and the state after. */
function step(
  state: ResourceState | undefined,
  event: ResourceEvent,
): { after: ResourceState; types: string[]; records: ReturnType<typeof recordsOf> } {
  const after =
    state === undefined
      ? foldResource(undefined, event as Extract<ResourceEvent, { type: 'decided' }>)
      : foldResource(state, event);
  const records = recordsOf(event, state, after, META);
  return { after, types: records.map((r) => r.type), records };
}

const HOLD: ResourceHold = {
  reason: 'RevisionFailed',
  desired: FP,
  message: 'revision r2 of this desired state ended BUILD_FAILED',
  since: AT,
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
};

describe('recordsOf', () => {
  it('records a decision when its outcome changes, not when a resync decides the same again', () => {
    const first = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    expect(first.types).toEqual(['decided']);
    const again = step(first.after, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    expect(again.types).toEqual([]);
  });

  it('a wave hold: one decision entry per hold (the wave waited for, the failed resource), none per resync', () => {
    const gated = (reason: 'WaveHeld' | 'WaveWaiting', message: string): Outcome => ({
      ...decided('update'),
      sync: { status: 'out_of_sync', reason, message },
      write: null,
      skip: { code: reason, message },
      drift: null,
    });
    const waiting =
      'wave 2 waits until wave 1 is written and healthy (every new revision DEPLOYED); it is written at the reconcile after that';
    const behind =
      'wave 2 waits behind wave 1, where Deployment/eu-2 failed (revision r-9 ended BUILD_FAILED); fix its manifest and commit';
    const first = step(undefined, { type: 'decided', outcome: gated('WaveWaiting', waiting), context: CONTEXT });
    expect(first.records).toMatchObject([{ type: 'decided', reason: 'WaveWaiting', message: `update: ${waiting}` }]);
    expect(
      step(first.after, { type: 'decided', outcome: gated('WaveWaiting', waiting), context: CONTEXT }).types,
    ).toEqual([]);
    const held = step(first.after, { type: 'decided', outcome: gated('WaveHeld', behind), context: CONTEXT });
    expect(held.records).toMatchObject([{ type: 'decided', reason: 'WaveHeld', message: `update: ${behind}` }]);
    expect(step(held.after, { type: 'decided', outcome: gated('WaveHeld', behind), context: CONTEXT }).types).toEqual(
      [],
    );
  });

  it('records the write enqueued, its result with the job id and manifests, and the revision it started', () => {
    const noop = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT }).after;
    const queued = step(noop, {
      type: 'decided',
      outcome: applying(decided('update'), { jobId: 'j1', operation: 'patch-deployment' }),
      context: CONTEXT,
    });
    expect(queued.types).toEqual(['decided', 'write_enqueued']);
    expect(queued.records[1]!.job).toEqual({ id: 'j1' });
    const ended = '2026-01-01T00:00:42.000Z';
    const done = step(queued.after, {
      type: 'job-completed',
      jobId: 'j1',
      at: ended,
      result: { outcome: 'updated', new_revision: true, latestRevisionId: 'r2' },
    });
    // The job's own entry is the worker's (jobRecord); the fold adds the revision it started, when the job ended, as
    // STARTED (its status not read yet), never UNKNOWN (a status the service itself may report).
    expect(done.types).toEqual(['revision']);
    expect(done.records[0]!).toMatchObject({
      at: ended,
      job: { id: 'j1' },
      manifests: META.manifests,
      by: 'replica-a',
      revision: { id: 'r2', status: 'STARTED' },
    });
    expect(
      jobRecord({
        key: 'Deployment/web',
        jobId: 'j1',
        meta: META,
        answer: { outcome: 'updated', new_revision: true, latestRevisionId: 'r2' },
      }),
    ).toMatchObject({
      type: 'write_done',
      reason: 'updated',
      job: { id: 'j1' },
      manifests: META.manifests,
      revision: { id: 'r2', status: 'STARTED' },
    });
    const failed = step(done.after, {
      type: 'revision',
      health: {
        status: 'degraded',
        reason: 'RevisionBuildFailed',
        message: 'r2 BUILD_FAILED',
        revisionId: 'r2',
        revisionStatus: 'BUILD_FAILED',
      },
    });
    expect(failed.records).toMatchObject([
      { type: 'revision', reason: 'RevisionBuildFailed', revision: { id: 'r2', status: 'BUILD_FAILED' } },
    ]);
    // The same reading again is no news.
    expect(step(failed.after, { type: 'revision', health: failed.after.health }).types).toEqual([]);
  });

  it('records a rollout that a reconcile saw end before the revision poll did, but not a first look at a healthy one', () => {
    // The first look: healthy from the listing; a decision, no revision entry (no rollout_succeeded from it).
    const first = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    expect(first.types).toEqual(['decided']);
    const building = step(first.after, {
      type: 'revision',
      health: {
        status: 'progressing',
        reason: 'RevisionBuilding',
        message: 'r2 BUILDING',
        revisionId: 'r2',
        revisionStatus: 'BUILDING',
      },
    }).after;
    // The listing reads r1 active again while r2 was followed: the end of that rollout is recorded from the decision.
    const ended = step(building, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    expect(ended.records).toMatchObject([
      { type: 'decided' },
      { type: 'revision', reason: 'RevisionDeployed', revision: { id: 'r1' } },
    ]);
  });

  it('records a hold and its release once each', () => {
    const noop = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT }).after;
    const held = step(noop, { type: 'hold', hold: HOLD });
    expect(held.records).toMatchObject([{ type: 'held', reason: 'RevisionFailed' }]);
    expect(step(held.after, { type: 'hold', hold: HOLD }).types).toEqual([]);
    expect(step(held.after, { type: 'hold', hold: undefined }).types).toEqual(['released']);
  });

  it('records a job failure, a conflict and its release, and a prune', () => {
    const queued = step(undefined, {
      type: 'decided',
      outcome: applying(decided('update'), { jobId: 'j1', operation: 'patch-deployment' }),
      context: CONTEXT,
    }).after;
    expect(jobRecord({ key: queued.key, jobId: 'j1', meta: META, failure: 'PATCH answered 422' })).toMatchObject({
      type: 'write_failed',
      reason: 'JobFailed',
      message: 'PATCH answered 422',
      job: { id: 'j1' },
    });
    expect(step(queued, { type: 'interrupted', message: 'stopped' }).types).toEqual(['write_failed']);
    const conflicted = step(queued, {
      type: 'conflict',
      conflict: { reason: 'changed_outside', message: 'changed outside converge 3 times', since: AT },
    });
    expect(conflicted.types).toEqual(['conflict']);
    expect(step(conflicted.after, { type: 'conflict-released' }).types).toEqual(['released']);
    expect(
      jobRecord({ key: queued.key, jobId: 'j2', meta: META, answer: { outcome: 'deleted', new_revision: false } }).type,
    ).toBe('pruned');
  });

  it("times a revision's entries as the service reports them, and says DEPLOYED where the listing shows it active", () => {
    const created = '2026-01-01T00:00:05.000Z';
    const deployedAt = '2026-01-01T00:00:50.000Z';
    const noop = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    // The first look at a healthy deployment (the listing: r1 active): its revision is DEPLOYED, not UNKNOWN.
    expect(noop.records[0]!.revision).toEqual({ id: 'r1', status: 'DEPLOYED' });
    const times = { revisionCreatedAt: created };
    const building = step(noop.after, {
      type: 'revision',
      health: {
        status: 'progressing',
        reason: 'RevisionBuilding',
        message: 'r2 BUILDING',
        revisionId: 'r2',
        revisionStatus: 'BUILDING',
        ...times,
        revisionUpdatedAt: '2026-01-01T00:00:20.000Z',
      },
    });
    expect(building.records).toMatchObject([
      {
        type: 'revision',
        at: '2026-01-01T00:00:20.000Z',
        revision: { id: 'r2', status: 'BUILDING', createdAt: created },
      },
    ]);
    const health = {
      status: 'healthy' as const,
      reason: 'RevisionDeployed' as const,
      message: 'r2 deployed',
      revisionId: 'r2',
      revisionStatus: 'DEPLOYED',
      ...times,
      revisionUpdatedAt: deployedAt,
    };
    const deployed = step(building.after, { type: 'revision', health });
    expect(deployed.records).toEqual([
      expect.objectContaining({
        type: 'revision',
        at: deployedAt,
        revision: { id: 'r2', status: 'DEPLOYED', createdAt: created, updatedAt: deployedAt },
      }),
    ]);
  });

  it('write_done lists the fields the job wrote: paths, a secret by its name, never a value', () => {
    const fields = [
      { path: 'source_config.resource_spec.max_scale', before: 1, after: 2, sensitive: false },
      { path: 'secrets.API_KEY', before: null, after: 'hunter2-value', sensitive: true },
    ];
    const answer = { outcome: 'updated', new_revision: true, latestRevisionId: 'r2', fields };
    const done = jobRecord({ key: 'Deployment/web', jobId: 'j1', meta: META, answer });
    expect(done.message).toBe(
      'job j1 updated; wrote source_config.resource_spec.max_scale, secrets.API_KEY; a new revision started',
    );
    expect(done.fields).toEqual(['source_config.resource_spec.max_scale', 'secrets.API_KEY']);
    expect(JSON.stringify(done)).not.toContain('hunter2');
    // A job that wrote nothing names no field.
    expect(
      jobRecord({
        key: 'Deployment/web',
        jobId: 'j2',
        meta: META,
        answer: { outcome: 'unchanged', new_revision: false },
      }),
    ).not.toHaveProperty('fields');
  });

  it('names the command and the replica that asked for a release, a retry, an override and a confirmed delete', () => {
    const noop = step(undefined, { type: 'decided', outcome: decided('noop'), context: CONTEXT }).after;
    const held = step(noop, { type: 'hold', hold: HOLD }).after;
    const asked = 'converge reconcile --retry-failed';
    const released = step(held, { type: 'hold', hold: undefined, released: 'r2', request: asked });
    expect(released.records).toMatchObject([
      {
        type: 'released',
        reason: 'HoldReleased',
        message:
          'hold released by converge reconcile --retry-failed on replica replica-a (RevisionFailed, revision r2)',
      },
    ]);
    // The retry: a rebuild of the same input, its job queued; the entry says so, not "noop: job … is queued".
    const rebuild = applying(decided('noop', { requests: { rebuild: true } }), {
      jobId: 'j9',
      operation: 'patch-deployment',
    });
    const retried = step(released.after, { type: 'decided', outcome: rebuild, context: CONTEXT });
    expect(retried.types).toEqual(['decided', 'write_enqueued']);
    expect(retried.records[0]!.message).toBe(
      'rebuild: a rebuild was asked for (--retry-failed): a new revision of the same input; asked by converge reconcile --retry-failed on replica replica-a',
    );
    const conflicted = step(noop, {
      type: 'conflict',
      conflict: { reason: 'changed_outside', message: 'changed outside converge 3 times', since: AT },
    }).after;
    expect(step(conflicted, { type: 'conflict-released', request: asked }).records[0]!.message).toBe(
      'conflict released by converge reconcile --retry-failed on replica replica-a',
    );
    // The override: secrets the service hides, written once on request.
    const hidden = {
      ...change('update'),
      fields: [
        { path: 'secrets.TOKEN', before: null, after: '(sensitive)', sensitive: true, uncompared: true as const },
      ],
    };
    const override = decide({
      change: hidden,
      desired: { suspend: false },
      fingerprint: FP,
      live: live(),
      settings: { mode: 'daemon', driftPolicy: 'heal' },
      remembered: FP,
      requests: { writeSecrets: true },
    });
    const written = step(noop, {
      type: 'decided',
      outcome: applying(override, { jobId: 'j10', operation: 'patch-deployment' }),
      context: CONTEXT,
    });
    expect(written.records[0]!.message).toMatch(
      /^update: secrets the service hides are written once, on request \(--write-secrets\); asked by converge reconcile --write-secrets on replica replica-a$/,
    );
    // The confirmation: a delete that waited for a person, now written.
    const pending = { since: AT, due: null, confirm: true };
    const gone = { ...change('delete'), id: 'd1', reason: 'owned by converge, no longer declared' };
    const waiting = step(undefined, {
      type: 'decided',
      outcome: decide({
        change: { ...gone, pending_delete: pending },
        settings: { mode: 'daemon', driftPolicy: 'heal' },
      }),
      context: { ...CONTEXT, pendingDelete: pending },
    }).after;
    const confirmed = applying(decide({ change: gone, settings: { mode: 'daemon', driftPolicy: 'heal' } }), {
      jobId: 'j11',
      operation: 'delete-deployment',
    });
    expect(step(waiting, { type: 'decided', outcome: confirmed, context: CONTEXT }).records[0]!.message).toBe(
      'delete: owned by converge, no longer declared; asked by converge reconcile --confirm-delete on replica replica-a',
    );
  });

  it('records drift found and healed', () => {
    const found = step(undefined, {
      type: 'decided',
      outcome: decided('noop'),
      context: { ...CONTEXT, drift: { policy: 'heal', fields: ['secrets.X'] } },
    });
    expect(found.types).toContain('drift_detected');
    const healed = step(found.after, { type: 'decided', outcome: decided('noop'), context: CONTEXT });
    expect(healed.types).toEqual(['drift_healed']);
  });
});
