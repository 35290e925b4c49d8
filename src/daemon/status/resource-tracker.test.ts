// ResourceTracker: states from a reconcile's outcome, job results (also ones that arrive early), revisions.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource, LiveDeployment, Plan, PlanChange } from '../../core/model.js';
import { applying, decide, type DecisionInput } from '../../core/decide.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import { summarize } from './projection.js';
import { ResourceTracker } from './resource-tracker.js';
import { healthChanged } from './tracked-change.js';

function resource(name: string, suspend = false): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: `${name}.yaml`, line: 1, column: 1 },
    suspend,
    spec: { source: 'internal_docker' },
  };
}

function live(name: string, building = false): LiveDeployment {
  return {
    id: `id-${name}`,
    name,
    tenant_id: 't',
    source: 'internal_docker',
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    status: building ? 'AWAITING_DATABASE' : 'READY',
    latest_revision_id: building ? 'r2' : 'r1',
    active_revision_id: 'r1',
  };
}

function change(name: string, action: PlanChange['action'], extra: Partial<PlanChange> = {}): PlanChange {
  return { kind: 'Deployment', name, action, new_revision: false, fields: [], reason: null, ...extra };
}

/** What the cycle would decide about each change, given per resource what else it knew (a job enqueued, a hold, ...). */
type Known = Partial<DecisionInput> & { jobId?: string };

function outcome(
  changes: PlanChange[],
  lives: LiveDeployment[],
  known: Array<[string, Known]>,
  extra: Partial<ReconcileOutcome> = {},
): ReconcileOutcome {
  const plan: Plan = {
    format_version: '1',
    summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
    changes,
    diagnostics: [],
  };
  const resources = new Map(
    changes
      .filter((c) => c.action !== 'orphan')
      .map((c) => [`Deployment/${c.name}`, resource(c.name, c.suspended === true)]),
  );
  const byKey = new Map(known);
  const outcomes = new Map(
    changes.map((c) => {
      const key = `Deployment/${c.name}`;
      const { jobId, ...more } = byKey.get(key) ?? {};
      const decided = decide({
        change: c,
        live: lives.find((d) => d.name === c.name),
        fingerprint: 'fp',
        remembered: 'other',
        settings: { mode: 'daemon', driftPolicy: 'heal' },
        ...more,
      });
      return [
        key,
        jobId && decided.write ? applying(decided, { jobId, operation: 'patch-deployment' }) : decided,
      ] as const;
    }),
  );
  return { plan, resources, live: lives, files: resources.size, outcomes, held: [], drift: [], enqueued: 0, ...extra };
}

const job = (_key: string, jobId: string): Known => ({ jobId });

describe('ResourceTracker', () => {
  it('derives each state from the plan, the decisions and live state', () => {
    const t = new ResourceTracker();
    t.update(
      outcome(
        [
          change('ok', 'noop'),
          change('building', 'noop'),
          change('queued', 'update'),
          change('drifted', 'update'),
          change('paused', 'update', { suspended: true }),
          change('broken', 'blocked', { reason: 'a.yaml:3:1: bad' }),
          change('stray', 'orphan'),
        ],
        [live('ok'), live('building', true), live('queued'), live('drifted'), live('paused'), live('stray')],
        [
          ['Deployment/queued', job('Deployment/queued', 'j1')],
          ['Deployment/drifted', { remembered: 'fp', settings: { mode: 'daemon', driftPolicy: 'report' } }],
        ],
        {
          drift: [
            {
              key: 'Deployment/drifted',
              policy: 'report',
              fields: ['source_config.resource_spec.max_scale'],
              reason: 'changed outside converge',
            },
          ],
        },
      ),
    );
    const states = Object.fromEntries(t.resources().map((r) => [r.name, r.state]));
    expect(states).toEqual({
      ok: 'synced',
      building: 'progressing',
      queued: 'progressing',
      drifted: 'out_of_sync',
      paused: 'suspended',
      broken: 'blocked',
    });
    expect(t.orphans()).toEqual(['Deployment/stray']);
    expect(t.resources().find((r) => r.name === 'broken')!.error).toBe('a.yaml:3:1: bad');
    expect(t.resources().find((r) => r.name === 'drifted')!.drift).toEqual({
      policy: 'report',
      fields: ['source_config.resource_spec.max_scale'],
      reason: 'changed outside converge',
    });
    expect(summarize(t.states()).counts.get('Deployment')!.get('progressing')).toBe(2);
  });

  it('applies a job result that arrived before the reconcile that enqueued the job ended', () => {
    const t = new ResourceTracker();
    expect(t.completed('j1', { outcome: 'updated', new_revision: false, deploymentId: 'id-web' })).toBeUndefined();
    t.update(outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j1')]]));
    const row = t.resources()[0]!;
    expect(row.state).toBe('synced');
    expect(row.job).toMatchObject({ id: 'j1', state: 'completed', outcome: 'updated' });
  });

  it('shows a failed job, and keeps its error visible while the next job runs', () => {
    const t = new ResourceTracker();
    t.update(outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j1')]]));
    expect(t.failed('j1', 'PATCH /v2/deployments/{deployment_id} answered 422: bad')).toBe('Deployment/web');
    expect(t.resources()[0]).toMatchObject({
      state: 'failed',
      error: 'PATCH /v2/deployments/{deployment_id} answered 422: bad',
    });
    t.update(outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j2')]]));
    expect(t.resources()[0]).toMatchObject({
      state: 'progressing',
      error: 'PATCH /v2/deployments/{deployment_id} answered 422: bad',
    });
    t.completed('j2', { outcome: 'updated', new_revision: false });
    expect(t.resources()[0]).toMatchObject({ state: 'synced', error: null });
  });

  it('a job that sent nothing (live changed since its decision) leaves the resource out_of_sync with its line, never Applied', () => {
    const t = new ResourceTracker();
    t.update(outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j1')]]));
    const message =
      'not written: live state changed since the decision: the deployment is gone; the next reconcile decides again';
    expect(t.completed('j1', { outcome: 'unchanged', new_revision: false, notRun: 'live_changed', message })).toBe(
      'Deployment/web',
    );
    expect(t.resources()[0]).toMatchObject({
      state: 'out_of_sync',
      job: { id: 'j1', state: 'completed', outcome: 'unchanged' },
    });
    expect(t.resources()[0]!.syncReason).not.toBe('Applied');
    expect(JSON.stringify(t.resources()[0])).toContain(message);
  });

  it('marks a resource held by a Conflict out_of_sync with its reason, and shows which manifests it was last applied from', () => {
    const t = new ResourceTracker();
    const version = {
      kind: 'git' as const,
      id: '3f2a9c1e5b7d9f0a1c2e3b4d5f6a7b8c9d0e1f2a',
      readAt: '2026-01-01T00:00:00.000Z',
    };
    const conflict = {
      reason: 'changed_outside' as const,
      message: 'changed outside converge: x put back 3 times',
      since: '2026-01-01T00:01:00.000Z',
      desired: ['a'.repeat(64)],
      fields: ['x'],
    };
    t.update(
      outcome(
        [change('held', 'update'), change('fine', 'noop')],
        [live('held'), live('fine')],
        [['Deployment/held', { conflict }]],
        {
          conflicts: new Map([['Deployment/held', conflict]]),
          applied: new Map([
            ['Deployment/fine', { secrets: {}, manifestVersion: version, appliedAt: '2026-01-01T00:00:05.000Z' }],
          ]),
        },
      ),
    );
    const [held, fine] = t.resources();
    expect(held).toMatchObject({
      state: 'out_of_sync',
      syncReason: 'Conflict',
      reason: 'Conflict: changed outside converge: x put back 3 times',
      conflict: { reason: 'changed_outside', fields: ['x'] },
    });
    expect(fine).toMatchObject({ state: 'synced', appliedFrom: { ...version, appliedAt: '2026-01-01T00:00:05.000Z' } });
    expect(fine!.syncReason).toBeUndefined();
    expect(t.conflicts()).toEqual(['Deployment/held']);

    // a job that meets a conflict (found by another replica's worker, say) marks the row as soon as it ends
    t.update(outcome([change('fine', 'update')], [live('fine')], [['Deployment/fine', job('Deployment/fine', 'j1')]]));
    t.completed('j1', {
      outcome: 'unchanged',
      new_revision: false,
      message: 'Conflict: m; nothing sent',
      conflict: { reason: 'desired_alternates', message: 'm', declared: true, versions: [version] },
    });
    expect(t.resources()[0]).toMatchObject({
      state: 'out_of_sync',
      syncReason: 'Conflict',
      conflict: { reason: 'desired_alternates', versions: [version] },
    });
  });

  it('appliedFrom follows the job: the manifests of a write show as soon as its job ends, not at the next reconcile', () => {
    const t = new ResourceTracker();
    const v1 = {
      kind: 'git' as const,
      id: '1111111111111111111111111111111111111111',
      readAt: '2026-01-01T00:00:00.000Z',
    };
    const v2 = {
      kind: 'git' as const,
      id: '2222222222222222222222222222222222222222',
      readAt: '2026-01-01T00:01:00.000Z',
    };
    const recordOf = (version: typeof v1, appliedAt: string) =>
      new Map([['Deployment/web', { secrets: {}, manifestVersion: version, appliedAt }]]);
    t.update(
      outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j1')]], {
        applied: recordOf(v1, '2026-01-01T00:00:05.000Z'),
      }),
    );
    expect(t.resources()[0]!.appliedFrom).toMatchObject({ id: v1.id });
    t.completed('j1', { outcome: 'updated', new_revision: false }, '2026-01-01T00:01:02.000Z', 'fp', v2);
    expect(t.resources()[0]!.appliedFrom).toEqual({ ...v2, appliedAt: '2026-01-01T00:01:02.000Z' });
    // A reconcile that read the applied state before the job recorded its write (the job finished during it) keeps it.
    t.update(
      outcome([change('web', 'update')], [live('web')], [['Deployment/web', { write: { state: 'finished' } }]], {
        applied: recordOf(v1, '2026-01-01T00:00:05.000Z'),
      }),
    );
    expect(t.resources()[0]!.appliedFrom).toMatchObject({ id: v2.id });
    // The next one reads the record the job wrote.
    t.update(
      outcome([change('web', 'noop')], [live('web')], [], { applied: recordOf(v2, '2026-01-01T00:01:01.000Z') }),
    );
    expect(t.resources()[0]!.appliedFrom).toEqual({ ...v2, appliedAt: '2026-01-01T00:01:01.000Z' });
    // A job that sent nothing wrote nothing: appliedFrom stays.
    t.update(
      outcome([change('web', 'update')], [live('web')], [['Deployment/web', job('Deployment/web', 'j2')]], {
        applied: recordOf(v2, '2026-01-01T00:01:01.000Z'),
      }),
    );
    t.completed(
      'j2',
      { outcome: 'unchanged', new_revision: false, notRun: 'superseded' },
      '2026-01-01T00:02:00.000Z',
      'fp',
      v1,
    );
    expect(t.resources()[0]!.appliedFrom).toMatchObject({ id: v2.id });
  });

  it('follows a new revision: progressing once its job started it, then the health the poller reads', () => {
    const t = new ResourceTracker({ progressDeadlineMs: 60_000 });
    t.update(outcome([change('web', 'create')], [], [['Deployment/web', job('Deployment/web', 'j1')]]));
    expect(t.toFollow(10)).toEqual([]);
    expect(t.resources()[0]!.health).toMatchObject({ status: 'unknown', reason: 'AwaitingCreate' });
    t.completed(
      'j1',
      { outcome: 'created', new_revision: true, deploymentId: 'id-web', latestRevisionId: 'r2' },
      undefined,
      'fp-1',
    );
    expect(t.resources()[0]).toMatchObject({
      state: 'progressing',
      sync: { status: 'synced', reason: 'Applied' },
      health: { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r2' },
    });
    expect(t.toFollow(10)).toEqual([
      { key: 'Deployment/web', kind: 'Deployment', deploymentId: 'id-web', revisionId: 'r2' },
    ]);
    expect(t.desiredOfRevision('Deployment/web', 'r2')).toBe('fp-1');
    expect(t.desiredOfRevision('Deployment/web', 'r9')).toBeUndefined();
    // It is part of the state: a leader that takes up the projection knows which desired state a failure would hold.
    const successor = new ResourceTracker();
    successor.restore(new Map(t.states().map((state) => [state.key, state])));
    expect(successor.desiredOfRevision('Deployment/web', 'r2')).toBe('fp-1');
    const folds: Array<[string | undefined, string]> = [];
    t.record({
      changed: (c) => void folds.push([c.before?.health.status, c.after.health.status]),
      removed: () => undefined,
    });
    expect(
      t.setHealth('Deployment/web', {
        status: 'degraded',
        reason: 'RevisionBuildFailed',
        message: 'failed',
        revisionId: 'r2',
        revisionStatus: 'BUILD_FAILED',
      }),
    ).toBe(true);
    expect(folds).toEqual([['progressing', 'degraded']]);
    // The same reading again is no transition (logged and counted once): the fold's before and after are alike.
    expect(
      t.setHealth('Deployment/web', {
        status: 'degraded',
        reason: 'RevisionBuildFailed',
        message: 'failed',
        revisionId: 'r2',
        revisionStatus: 'BUILD_FAILED',
      }),
    ).toBe(false);
    expect(t.resources()[0]!.state).toBe('failed');
    expect(t.toFollow(10)).toEqual([]);
  });

  it('keeps a failed revision degraded across reconciles (the cycle hands its reading to the decision), synced beside it, and marks a stuck one past the progress deadline', () => {
    let now = 1_000_000;
    const t = new ResourceTracker({ progressDeadlineMs: 60_000, now: () => now });
    const building = { ...live('web', true), status: 'READY' } as LiveDeployment;
    const lives = [building, { ...building, id: 'id-api', name: 'api' } as LiveDeployment];
    // What reconcileDirectory gives the decision from the tracker (RolloutView): the reading it has, and the clock.
    const known = (): Array<[string, Known]> =>
      ['web', 'api'].map((name) => {
        const key = `Deployment/${name}`;
        return [
          key,
          {
            revision: t.reading(key, 'r2'),
            clock: { now: t.now(), since: t.rolloutSince(key, 'r2'), deadlineMs: t.deadlineMs },
          },
        ];
      });
    t.update(outcome([change('web', 'noop'), change('api', 'noop')], lives, known()));
    expect(t.resources().map((r) => [r.name, r.sync.status, r.health.status])).toEqual([
      ['web', 'synced', 'progressing'],
      ['api', 'synced', 'progressing'],
    ]);
    t.setHealth('Deployment/web', {
      status: 'degraded',
      reason: 'RevisionBuildFailed',
      message: 'failed',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    });
    expect(t.reading('Deployment/web', 'r2')).toEqual({ id: 'r2', status: 'BUILD_FAILED' });
    expect(t.reading('Deployment/web', 'r3')).toBeUndefined();
    // The transitions are the folds' before and after, as a sink of the tracker sees them.
    const transitions: string[] = [];
    t.record({
      changed: (c) => void (healthChanged(c.before?.health, c.after.health) && transitions.push(c.key)),
      removed: () => undefined,
    });
    now += 61_000;
    t.update(outcome([change('web', 'noop'), change('api', 'noop')], lives, known()));
    const [web, api] = t.resources();
    expect(web).toMatchObject({
      sync: { status: 'synced' },
      health: { status: 'degraded', reason: 'RevisionBuildFailed' },
    });
    expect(api).toMatchObject({ health: { status: 'degraded', reason: 'ProgressDeadlineExceeded', revisionId: 'r2' } });
    expect(transitions).toEqual(['Deployment/api']);
  });

  it('shows a held resource as out_of_sync with the hold, and drops the hold when released', () => {
    const t = new ResourceTracker();
    const hold = {
      reason: 'RevisionFailed' as const,
      desired: 'fp',
      message: 'revision r2 failed',
      since: '2026-01-01T00:00:00Z',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    };
    t.update(
      outcome([change('web', 'update')], [live('web', true)], [['Deployment/web', { hold }]], {
        holds: new Map([['Deployment/web', hold]]),
      }),
    );
    expect(t.resources()[0]).toMatchObject({
      sync: { status: 'out_of_sync', reason: 'RevisionFailed' },
      health: { status: 'degraded', reason: 'RevisionBuildFailed', revisionId: 'r2' },
      hold,
    });
    expect(t.heldKeys()).toEqual(['Deployment/web']);
    t.setHold('Deployment/web', undefined);
    expect(t.heldKeys()).toEqual([]);
  });
  it('folds a targeted outcome into the rows it decided only, as a full update of the same outcome would leave them', () => {
    const names = ['a', 'b', 'c', 'd'];
    const first = outcome(
      names.map((n) => change(n, 'noop')),
      names.map((n) => live(n)),
      [],
    );
    const edited = outcome(
      names.map((n) => change(n, n === 'c' ? 'update' : 'noop')),
      names.map((n) => live(n)),
      [['Deployment/c', job('Deployment/c', 'j7')]],
    );
    const targeted: ReconcileOutcome = {
      ...edited,
      targeted: { keys: new Set(['Deployment/c']), files: new Set(['c.yaml']) },
    };
    const partial = new ResourceTracker({ progressDeadlineMs: 60_000, now: () => 1000 });
    const whole = new ResourceTracker({ progressDeadlineMs: 60_000, now: () => 1000 });
    const reported: string[] = [];
    partial.record({ changed: ({ key }) => void reported.push(key), removed: () => undefined });
    partial.update(first);
    whole.update(first);
    reported.length = 0;
    partial.update(targeted);
    whole.update(edited);
    expect(reported).toEqual(['Deployment/c']);
    expect(partial.states()).toEqual(whole.states());
    expect(partial.states().map((s) => s.key)).toEqual(names.map((n) => `Deployment/${n}`));
    expect(partial.resources().find((r) => r.name === 'c')!.job).toMatchObject({ id: 'j7', state: 'queued' });
  });

  it('rebuilds every row when a targeted outcome decides a resource it has no row for', () => {
    const t = new ResourceTracker();
    t.update(outcome([change('a', 'noop')], [live('a')], []));
    const next = outcome([change('new', 'create'), change('a', 'noop')], [live('a')], []);
    t.update({ ...next, targeted: { keys: new Set(['Deployment/new']), files: new Set(['new.yaml']) } });
    expect(t.states().map((s) => s.key)).toEqual(['Deployment/new', 'Deployment/a']);
  });
  it("keeps a row's object and tells no sink when a reconcile decides what it had decided", () => {
    const t = new ResourceTracker();
    const reported: string[] = [];
    t.record({ changed: ({ key }) => void reported.push(key), removed: () => undefined });
    const first = outcome([change('a', 'noop'), change('b', 'noop')], [live('a'), live('b')], []);
    t.update(first);
    const [a, b] = t.states();
    reported.length = 0;
    t.update(
      outcome(
        [change('a', 'noop'), change('b', 'update')],
        [live('a'), live('b')],
        [['Deployment/b', job('Deployment/b', 'j9')]],
      ),
    );
    expect(reported).toEqual(['Deployment/b']);
    expect(t.states()[0]).toBe(a);
    expect(t.states()[1]).not.toBe(b);
  });
});
