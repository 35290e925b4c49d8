// The fold of a resource's events into its state, table-tested: each event after a decision, what it leaves, and the legacy fields derived from it.
import { describe, expect, it } from 'vitest';
import { applying, decide, type DecisionInput, type Outcome } from './decide.js';
import type { HealthCondition } from './health.js';
import type { ResourceHold } from './holds.js';
import type { SyncResult } from './kinds/ports.js';
import type { LiveDeployment, PlanChange } from './model.js';
import { foldEvents, foldResource } from './resource-state.js';
import type { ConflictView, DecisionContext, ResourceEvent, ResourceState } from './resource-state-model.js';
import { legacyFields, SYNC_STATES } from './legacy-state.js';

const FP = 'a'.repeat(64);
const AT = '2026-01-01T00:01:00.000Z';
const V1 = { kind: 'git' as const, id: 'c1'.repeat(20), readAt: '2026-01-01T00:00:00.000Z' };

function change(action: PlanChange['action'], extra: Partial<PlanChange> = {}): PlanChange {
  const fields =
    action === 'update'
      ? [{ path: 'source_config.resource_spec.max_scale', before: 1, after: 2, sensitive: false }]
      : [];
  return { kind: 'Deployment', name: 'web', action, new_revision: false, fields, reason: null, ...extra };
}

function live(latest: string | null, active: string | null): LiveDeployment {
  return {
    id: 'd1',
    name: 'web',
    status: 'READY',
    latest_revision_id: latest,
    active_revision_id: active,
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
}

/** The daemon's decision of `change` (a live deployment at r1 unless said otherwise). */
function decided(action: PlanChange['action'], extra: Partial<DecisionInput> = {}): Outcome {
  return decide({
    change: change(action),
    desired: { suspend: false },
    fingerprint: FP,
    live: live('r1', 'r1'),
    settings: { mode: 'daemon', driftPolicy: 'heal' },
    remembered: 'b'.repeat(64),
    ...extra,
  });
}

const QUEUED = applying(decided('update'), { jobId: 'j1', operation: 'patch-deployment' });
const CONTEXT: DecisionContext = {
  file: 'web.yaml',
  planReason: null,
  drift: null,
  heldAtLastGood: false,
  deploymentId: 'd1',
};

function decision(
  outcome: Outcome,
  context: Partial<DecisionContext> = {},
): Extract<ResourceEvent, { type: 'decided' }> {
  return { type: 'decided', outcome, context: { ...CONTEXT, ...context } };
}

function completed(
  result: Partial<SyncResult> | undefined,
  extra: Partial<Extract<ResourceEvent, { type: 'job-completed' }>> = {},
): ResourceEvent {
  return {
    type: 'job-completed',
    jobId: 'j1',
    at: AT,
    result: result ? { outcome: 'updated', new_revision: false, ...result } : undefined,
    ...extra,
  };
}

const FAILED: ResourceEvent = { type: 'job-failed', jobId: 'j1', at: AT, message: 'PATCH answered 422: bad' };
const DEGRADED: HealthCondition = {
  status: 'degraded',
  reason: 'RevisionBuildFailed',
  message: 'revision r2 ended BUILD_FAILED',
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
};
const HEALTHY: HealthCondition = {
  status: 'healthy',
  reason: 'RevisionDeployed',
  message: 'revision r2 is active',
  revisionId: 'r2',
};
const CONFLICT: ConflictView = {
  reason: 'changed_outside',
  message: 'changed outside converge 3 times',
  since: '2026-01-01T00:00:30.000Z',
  fields: ['x'],
};
const HOLD: ResourceHold = {
  reason: 'RevisionFailed',
  desired: FP,
  message: 'revision r2 of this desired state ended BUILD_FAILED',
  since: AT,
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
};

/** The state before: a decision and the events after it. */
const before = (outcome: Outcome, ...events: ResourceEvent[]): ResourceState =>
  foldEvents(undefined, decision(outcome), events);

interface Expected {
  sync: string;
  health: string;
  state: string;
  syncReason?: string;
  job?: string | null;
  error?: string | null;
  reason?: string | null;
}

type Row = [
  string,
  ResourceState | undefined,
  [Extract<ResourceEvent, { type: 'decided' }>, ...ResourceEvent[]] | ResourceEvent[],
  Expected,
];

const TABLE: Row[] = [
  // a decision: its outcome, and what of the state before stays
  [
    'a decision in sync',
    undefined,
    [decision(decided('noop'))],
    { sync: 'Synced', health: 'healthy', state: 'synced', job: null, error: null },
  ],
  [
    'a decided write, enqueued',
    undefined,
    [decision(QUEUED)],
    { sync: 'Applying', health: 'healthy', state: 'progressing', job: 'queued' },
  ],
  [
    'a blocked manifest: its reason is the error',
    undefined,
    [
      decision(decided('blocked', { change: change('blocked', { reason: 'a.yaml:3:1: bad' }) }), {
        planReason: 'a.yaml:3:1: bad',
      }),
    ],
    { sync: 'PlanBlocked', health: 'healthy', state: 'blocked', error: 'a.yaml:3:1: bad' },
  ],
  [
    'suspended',
    undefined,
    [decision(decided('update', { desired: { suspend: true } }))],
    { sync: 'Suspended', health: 'healthy', state: 'suspended' },
  ],
  [
    'drift reported',
    undefined,
    [decision(decided('update', { remembered: FP, settings: { mode: 'daemon', driftPolicy: 'report' } }))],
    { sync: 'DriftReported', health: 'healthy', state: 'out_of_sync' },
  ],
  [
    'secrets that cannot be compared: the row says which',
    undefined,
    [
      decision(
        decided('update', {
          change: change('update', {
            fields: [
              { path: 'secrets.K', before: '(sensitive)', after: '(sensitive)', sensitive: true, uncompared: true },
            ],
          }),
          remembered: undefined,
        }),
      ),
    ],
    {
      sync: 'SecretsUnknown',
      health: 'healthy',
      state: 'out_of_sync',
      syncReason: 'SecretsUnknown',
      reason: expect.stringMatching(/^SecretsUnknown: the service hides K/),
    },
  ],
  [
    'a failed revision: failed beside its sync',
    undefined,
    [decision(decided('noop', { live: live('r2', 'r1'), revision: { id: 'r2', status: 'BUILD_FAILED' } }))],
    { sync: 'Synced', health: 'degraded', state: 'failed' },
  ],
  [
    'a job that finished during the reconcile keeps what its completion showed',
    before(QUEUED, completed({ new_revision: true, latestRevisionId: 'r2' })),
    [decision(decided('update', { write: { state: 'finished' } }))],
    { sync: 'Applied', health: 'progressing', state: 'progressing', job: 'completed' },
  ],
  [
    'the last job stays on the row once it ended',
    before(QUEUED, completed({})),
    [decision(decided('noop'))],
    { sync: 'Synced', health: 'healthy', state: 'synced', job: 'completed' },
  ],
  [
    'a job still queued is not kept once nothing is left to write',
    before(QUEUED),
    [decision(decided('noop'))],
    { sync: 'Synced', health: 'healthy', state: 'synced', job: null },
  ],
  [
    'a failed job keeps its error while the next one runs',
    before(QUEUED, FAILED),
    [decision(applying(decided('update'), { jobId: 'j2', operation: 'patch-deployment' }))],
    { sync: 'Applying', health: 'healthy', state: 'progressing', job: 'queued', error: 'PATCH answered 422: bad' },
  ],
  [
    'a standing conflict marks the row over the decision (also over Synced)',
    undefined,
    [decision(decided('noop')), { type: 'conflict', conflict: CONFLICT }],
    {
      sync: 'Conflict',
      health: 'healthy',
      state: 'out_of_sync',
      syncReason: 'Conflict',
      reason: 'Conflict: changed outside converge 3 times',
    },
  ],
  // a job's result
  [
    'a job that wrote, no revision: Applied, synced',
    before(QUEUED),
    [completed({})],
    { sync: 'Applied', health: 'healthy', state: 'synced', job: 'completed', error: null },
  ],
  [
    'a job that started a revision: progressing',
    before(QUEUED),
    [completed({ new_revision: true, latestRevisionId: 'r2' })],
    { sync: 'Applied', health: 'progressing', state: 'progressing', job: 'completed' },
  ],
  [
    'a job that sent nothing: out of sync, the next reconcile decides',
    before(QUEUED),
    [completed({ outcome: 'unchanged', notRun: 'live_changed', message: 'not written: live state changed' })],
    { sync: 'OutOfSync', health: 'healthy', state: 'out_of_sync', job: 'completed' },
  ],
  [
    'a result this converge cannot read: finished',
    before(QUEUED),
    [completed(undefined)],
    { sync: 'Applied', health: 'healthy', state: 'synced', job: 'completed' },
  ],
  [
    'a job the flap guard refused: Conflict',
    before(QUEUED),
    [
      completed({
        outcome: 'unchanged',
        conflict: { reason: 'changed_outside', message: 'm', declared: true, fields: ['x'] },
      }),
    ],
    { sync: 'Conflict', health: 'healthy', state: 'out_of_sync', syncReason: 'Conflict', reason: 'Conflict: m' },
  ],
  [
    'a job failed for good',
    before(QUEUED),
    [FAILED],
    { sync: 'JobFailed', health: 'healthy', state: 'failed', job: 'failed', error: 'PATCH answered 422: bad' },
  ],
  [
    'an apply interrupted while its job ran',
    before(decided('update')),
    [{ type: 'interrupted', message: 'the apply was interrupted' }],
    { sync: 'Interrupted', health: 'healthy', state: 'out_of_sync' },
  ],
  // a revision reading
  [
    'the revision it started fails',
    before(QUEUED, completed({ new_revision: true, latestRevisionId: 'r2' })),
    [{ type: 'revision', health: DEGRADED }],
    { sync: 'Applied', health: 'degraded', state: 'failed' },
  ],
  [
    'the revision it started is active',
    before(QUEUED, completed({ new_revision: true, latestRevisionId: 'r2' })),
    [{ type: 'revision', health: HEALTHY }],
    { sync: 'Applied', health: 'healthy', state: 'synced' },
  ],
  [
    'active, after a failed job: still failed',
    before(QUEUED, FAILED),
    [{ type: 'revision', health: HEALTHY }],
    { sync: 'JobFailed', health: 'healthy', state: 'failed' },
  ],
  [
    'healthy again while drift is reported: out of sync, not synced',
    before(decided('update', { remembered: FP, settings: { mode: 'daemon', driftPolicy: 'report' } })),
    [
      { type: 'revision', health: DEGRADED },
      { type: 'revision', health: HEALTHY },
    ],
    { sync: 'DriftReported', health: 'healthy', state: 'out_of_sync' },
  ],
  [
    'a degraded blocked resource stays blocked',
    before(decided('blocked', { change: change('blocked', { reason: 'bad' }) })),
    [{ type: 'revision', health: DEGRADED }],
    { sync: 'PlanBlocked', health: 'degraded', state: 'blocked' },
  ],
  // an operator's release
  [
    'a conflict released on request',
    before(decided('noop'), { type: 'conflict', conflict: CONFLICT }),
    [{ type: 'conflict-released' }],
    { sync: 'OutOfSync', health: 'healthy', state: 'out_of_sync', reason: null },
  ],
  [
    'a release without a conflict changes nothing',
    before(decided('noop')),
    [{ type: 'conflict-released' }],
    { sync: 'Synced', health: 'healthy', state: 'synced' },
  ],
];

describe('foldResource: the state after each event', () => {
  it.each(TABLE)('%s', (_name, previous, events, expected) => {
    const [first, ...rest] = events;
    const state =
      first.type === 'decided'
        ? foldEvents(previous, first, rest)
        : events.reduce<ResourceState>((s, e) => foldResource(s, e), previous!);
    expect(state.sync.reason).toBe(expected.sync);
    expect(state.health.status).toBe(expected.health);
    // The legacy fields are derived from the conditions, in one place.
    const legacy = legacyFields(state);
    expect(legacy.state).toBe(expected.state);
    expect(legacy.syncReason).toBe(expected.syncReason);
    if (expected.job !== undefined) expect(state.job?.state ?? null).toBe(expected.job);
    if (expected.error !== undefined) expect(state.error).toBe(expected.error);
    if (expected.reason !== undefined) expect(state.reason).toEqual(expected.reason);
  });

  it('gives every legacy state', () => {
    const reached = new Set(TABLE.map(([, , , e]) => e.state));
    expect(SYNC_STATES.filter((s) => !reached.has(s))).toEqual([]);
  });

  it('a completed job records what it did: outcome, revision, live id, the manifests it wrote from (not when it sent nothing)', () => {
    const state = foldResource(
      before(QUEUED),
      completed(
        { outcome: 'created', new_revision: true, latestRevisionId: 'r2', deploymentId: 'd9', message: 'note' },
        { version: V1 },
      ),
    );
    expect(state.job).toEqual({
      id: 'j1',
      state: 'completed',
      operation: 'patch-deployment',
      outcome: 'created',
      new_revision: true,
      message: 'note',
      finishedAt: AT,
    });
    expect(state.health).toEqual({
      status: 'progressing',
      reason: 'RevisionBuilding',
      message: 'revision r2 started',
      revisionId: 'r2',
    });
    expect(state).toMatchObject({
      deploymentId: 'd9',
      appliedFrom: { ...V1, appliedAt: AT },
      sync: { message: 'job j1 created' },
    });
    expect(
      foldResource(before(QUEUED), completed({ outcome: 'unchanged', notRun: 'superseded' }, { version: V1 }))
        .appliedFrom,
    ).toBeUndefined();
    // apply without --wait: nothing follows the revision, and its health says so
    expect(
      foldResource(before(decided('update')), completed({ new_revision: true }, { unfollowed: true })).health.message,
    ).toBe('a new revision started (not waited for: --wait follows it)');
  });

  it('a created resource with no rollout to follow has its kind health at once', () => {
    const provider = decide({
      change: { ...change('create'), kind: 'OAuthProvider' },
      settings: { mode: 'daemon', driftPolicy: 'heal' },
    });
    expect(provider.health.reason).toBe('AwaitingCreate');
    expect(foldResource(before(provider), completed({ outcome: 'created' })).health).toMatchObject({
      status: 'healthy',
      reason: 'NoRollout',
    });
    expect(foldResource(before(provider), completed({ outcome: 'unchanged' })).health.reason).toBe('AwaitingCreate');
  });

  it('a conflict met again keeps when it began; its view names the versions or fields, never the desired states', () => {
    const marked = before(QUEUED, { type: 'conflict', conflict: { ...CONFLICT, desired: [FP] } as ConflictView });
    expect(marked.conflict).toEqual(CONFLICT);
    const again = foldResource(
      marked,
      completed({
        outcome: 'unchanged',
        conflict: { reason: 'changed_outside', message: 'again', declared: false, fields: ['x'] },
      }),
    );
    expect(again.conflict).toEqual({
      reason: 'changed_outside',
      message: 'again',
      since: CONFLICT.since,
      fields: ['x'],
    });
    expect(foldResource(again, { type: 'conflict-released' }).conflict).toBeUndefined();
  });

  it('a hold is stored and released; the context of a decision carries the file, live id and applied record, and keeps a known live id', () => {
    const held = foldResource(before(decided('noop')), { type: 'hold', hold: HOLD });
    expect(held.hold).toEqual(HOLD);
    expect(foldResource(held, { type: 'hold', hold: undefined })).not.toHaveProperty('hold');
    const first = before(decided('noop'));
    expect(first).toMatchObject({ file: 'web.yaml', deploymentId: 'd1' });
    expect(foldResource(first, decision(decided('noop'), { deploymentId: undefined })).deploymentId).toBe('d1');
  });

  it('a job failure carries what the service answered as data: the fold alone makes a refusal for good a hold of the desired state the job carried', () => {
    const refused: ResourceEvent = { ...FAILED, failure: { status: 422 }, desired: 'c'.repeat(64) };
    const held = foldResource(before(QUEUED), refused);
    expect(held).toMatchObject({
      sync: { reason: 'JobFailed' },
      job: { id: 'j1', state: 'failed' },
      hold: { reason: 'WriteRefused', desired: 'c'.repeat(64) },
    });
    expect(held.hold!.message).toContain('PATCH answered 422: bad');
    // A message that reads like a refusal is not one: only the data counts; a 400 about a deployment being deleted is not held.
    expect(foldResource(before(QUEUED), FAILED).hold).toBeUndefined();
    expect(foldResource(before(QUEUED), { ...refused, failure: { status: 400, deleting: true } }).hold).toBeUndefined();
    expect(foldResource(before(QUEUED), { ...refused, failure: { status: 503 } }).hold).toBeUndefined();
    expect(
      foldResource(before(QUEUED), {
        ...FAILED,
        message: 'blocked: the name is taken on the service: x',
        failure: { nameTaken: true },
        desired: FP,
      }).hold?.reason,
    ).toBe('NameTaken');
  });

  it("the result of a job the state does not show (converge apply's, a former leader's) is shown with its own id, appliedFrom and hold", () => {
    const synced = before(decided('noop'));
    const done = foldResource(
      synced,
      completed({ outcome: 'updated' }, { jobId: 'apply-1', operation: 'patch-deployment', version: V1 }),
    );
    expect(done).toMatchObject({
      job: { id: 'apply-1', state: 'completed', operation: 'patch-deployment' },
      appliedFrom: { ...V1, appliedAt: AT },
      sync: { reason: 'Applied' },
    });
    const refused = foldResource(synced, {
      ...FAILED,
      jobId: 'apply-2',
      operation: 'patch-deployment',
      failure: { status: 413 },
      desired: 'd'.repeat(64),
    });
    expect(refused).toMatchObject({
      job: { id: 'apply-2', state: 'failed' },
      hold: { reason: 'WriteRefused', desired: 'd'.repeat(64) },
    });
    // While another job of the state is queued, an older job's result does not replace it: what it wrote is kept.
    const queued = before(QUEUED);
    const older = foldResource(
      queued,
      completed({ outcome: 'updated' }, { jobId: 'j0', operation: 'patch-deployment', version: V1 }),
    );
    expect(older).toMatchObject({
      job: { id: 'j1', state: 'queued' },
      sync: { reason: 'Applying' },
      appliedFrom: { ...V1, appliedAt: AT },
    });
    expect(foldResource(queued, { ...FAILED, jobId: 'j0' })).toEqual(queued);
  });

  it("a decision written after its job's result was folded (the worker was faster) keeps what the result made", () => {
    const ended = foldResource(
      before(QUEUED),
      completed({ outcome: 'updated', new_revision: true, latestRevisionId: 'r2' }, { version: V1 }),
    );
    const late = foldResource(ended, decision(QUEUED));
    expect(late).toMatchObject({
      job: { id: 'j1', state: 'completed' },
      sync: { reason: 'Applied' },
      health: { status: 'progressing', revisionId: 'r2' },
      appliedFrom: { ...V1, appliedAt: AT },
    });
  });

  describe('a failover mid-burst: a decision that read the listing and applied record before a write landed', () => {
    const V2 = { kind: 'content' as const, id: 'c2'.repeat(6), readAt: '2026-01-01T00:00:50.000Z' };
    const OLD_RECORD = { ...V1, appliedAt: '2026-01-01T00:00:10.000Z' };
    /** The former leader's job j0 started revision r2 from V2 (the new leader's listing still shows r1, active). */
    const wrote = completed(
      { outcome: 'updated', new_revision: true, latestRevisionId: 'r2' },
      { jobId: 'j0', operation: 'patch-deployment', version: V2, desired: FP },
    );
    const newLeader = applying(decided('update'), { jobId: 'j1', operation: 'patch-deployment' });
    const progressing = { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r2' };

    it('folded after the decision (another job queued): its revision is followed and its manifests shown', () => {
      const queued = foldResource(before(decided('noop')), decision(newLeader, { appliedFrom: OLD_RECORD }));
      const after = foldResource(queued, wrote);
      expect(after).toMatchObject({ job: { id: 'j1', state: 'queued' }, health: progressing });
      expect(after.appliedFrom).toEqual({ ...V2, appliedAt: AT });
      expect(after.revisionDesired).toEqual({ revisionId: 'r2', desired: FP });
    });

    it('folded before: the decision keeps the later manifests; its job, sending nothing, follows the revision', () => {
      const written = foldResource(before(decided('noop')), wrote);
      const queued = foldResource(written, decision(newLeader, { appliedFrom: OLD_RECORD }));
      expect(queued.appliedFrom).toEqual({ ...V2, appliedAt: AT });
      expect(queued.health.revisionId).toBe('r1');
      const done = foldResource(queued, completed({ outcome: 'unchanged', latestRevisionId: 'r2' }));
      expect(done).toMatchObject({ job: { id: 'j1', state: 'completed' }, health: progressing });
      expect(done.appliedFrom).toEqual({ ...V2, appliedAt: AT });
      // The same latest revision as the state shows: its health stays as it was.
      const same = foldResource(queued, completed({ outcome: 'unchanged', latestRevisionId: 'r1' }));
      expect(same.health).toEqual(queued.health);
    });

    it("a result folded after a reading of its revision's end (a settled lost answer) leaves that reading", () => {
      const read: HealthCondition = { ...HEALTHY, revisionId: 'r2' };
      const synced = foldResource(before(decided('noop')), { type: 'revision', health: read });
      expect(foldResource(synced, wrote).health).toEqual(read);
      const failed = foldResource(synced, { type: 'revision', health: DEGRADED });
      expect(foldResource(failed, wrote).health).toEqual(DEGRADED);
      // Another revision than the one read: the job's starts, and is followed.
      const other = foldResource(synced, { type: 'revision', health: { ...HEALTHY, revisionId: 'r1' } });
      expect(foldResource(other, wrote).health).toMatchObject(progressing);
    });

    it("an applied record written after the state's write (its fold lost) is the later one; none read, none", () => {
      const written = foldResource(before(decided('noop')), wrote);
      const newer = { ...V1, appliedAt: '2026-01-01T00:02:00.000Z' };
      expect(foldResource(written, decision(decided('noop'), { appliedFrom: newer })).appliedFrom).toEqual(newer);
      expect(foldResource(written, decision(decided('noop'), { appliedFrom: undefined })).appliedFrom).toBeUndefined();
    });
  });
});
