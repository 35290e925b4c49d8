// The decision about one resource, table-tested over its inputs: every sync reason it gives is reached, and health is read through the kinds table.
import { describe, expect, it } from 'vitest';
import {
  applying,
  decide,
  decideDrift,
  healthLine,
  skipLine,
  SYNC_REASONS,
  withWriteInFlight,
  type DecisionInput,
  type Outcome,
  type SyncReason,
  type WriteInFlight,
} from './decide.js';
import type { Conflict } from './flap-guard.js';
import type { ResourceHold } from './holds.js';
import type { FieldChange, LiveDeployment, PlanChange } from './model.js';

const FP = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);

function change(action: PlanChange['action'], extra: Partial<PlanChange> = {}): PlanChange {
  const fields: FieldChange[] =
    action === 'update'
      ? [{ path: 'source_config.resource_spec.max_scale', before: 1, after: 2, sensitive: false }]
      : [];
  return { kind: 'Deployment', name: 'web', action, new_revision: false, fields, reason: null, ...extra };
}

function live(latest: string | null, active: string | null, status = 'READY'): LiveDeployment {
  return {
    id: 'd1',
    name: 'web',
    status,
    latest_revision_id: latest,
    active_revision_id: active,
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
}

const SECRET_ONLY: FieldChange[] = [
  { path: 'secrets.OPENAI_API_KEY', before: '(sensitive)', after: '(sensitive)', sensitive: true, uncompared: true },
];
const HOLD: ResourceHold = {
  reason: 'RevisionFailed',
  desired: FP,
  message: 'revision r2 of this desired state ended BUILD_FAILED',
  since: '2026-01-01T00:00:00Z',
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
};
const CONFLICT: Conflict = {
  reason: 'changed_outside',
  message: 'changed outside converge 3 times',
  since: '2026-01-01T00:00:00Z',
  desired: [FP],
  fields: ['x'],
};

function daemon(extra: Partial<DecisionInput> = {}): DecisionInput {
  return {
    change: change('update'),
    desired: { suspend: false },
    fingerprint: FP,
    live: live('r1', 'r1'),
    settings: { mode: 'daemon', driftPolicy: 'heal' },
    remembered: OTHER,
    ...extra,
  };
}

type Row = [
  string,
  DecisionInput,
  { reason: SyncReason; status: string; write: string | null; drift?: string | null; remember?: string },
];

const TABLE: Row[] = [
  [
    'a manifest change is written',
    daemon(),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update', drift: null },
  ],
  [
    'a first create is written, not drift, even under report',
    daemon({
      change: change('create'),
      remembered: undefined,
      live: undefined,
      settings: { mode: 'daemon', driftPolicy: 'report' },
    }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'create', drift: null },
  ],
  [
    'a create of a state once in sync (deleted outside converge) is healed drift',
    daemon({ change: change('create'), remembered: FP, live: undefined }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'create', drift: 'heal' },
  ],
  [
    'an adopt is an update',
    daemon({ change: change('adopt') }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
  [
    'live matching the manifest is synced and remembered',
    daemon({ change: change('noop') }),
    { reason: 'Synced', status: 'synced', write: null, remember: FP },
  ],
  [
    'synced, already remembered: nothing to remember',
    daemon({ change: change('noop'), remembered: FP }),
    { reason: 'Synced', status: 'synced', write: null },
  ],
  [
    'a rebuild asked for (--retry-failed) of a synced one',
    daemon({ change: change('noop'), requests: { rebuild: true } }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'rebuild' },
  ],
  [
    'a rebuild whose job is queued',
    daemon({
      change: change('noop'),
      requests: { rebuild: true },
      write: { state: 'queued', jobId: 'j1', operation: 'patch-deployment' },
    }),
    { reason: 'Applying', status: 'out_of_sync', write: null },
  ],
  [
    'a blocked manifest',
    daemon({ change: change('blocked', { reason: 'a.yaml:3:1: bad' }) }),
    { reason: 'PlanBlocked', status: 'blocked', write: null },
  ],
  [
    'a file with errors, held at its last good version',
    daemon({ change: change('blocked', { reason: 'a.yaml:3:1: bad' }), heldAtLastGood: true }),
    { reason: 'ManifestErrors', status: 'blocked', write: null },
  ],
  [
    'unknown: applied, declared by no file that loads, while a file fails to load',
    daemon({ change: change('blocked', { reason: 'unknown: …', unknown: true }), desired: undefined }),
    { reason: 'ManifestErrors', status: 'blocked', write: null },
  ],
  [
    'suspended (converge/suspend)',
    daemon({ desired: { suspend: true } }),
    { reason: 'Suspended', status: 'suspended', write: null },
  ],
  [
    'a suspended change of the plan',
    daemon({ change: change('update', { suspended: true }) }),
    { reason: 'Suspended', status: 'suspended', write: null },
  ],
  [
    'an orphan is never written',
    daemon({ change: change('orphan'), desired: undefined }),
    { reason: 'Orphan', status: 'out_of_sync', write: null },
  ],
  [
    'a delete (--prune)',
    daemon({ change: change('delete', { id: 'd1' }), desired: undefined }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'delete' },
  ],
  [
    'a delete that waits (prune_grace, or a person under prune_mode confirm): nothing sent',
    daemon({
      change: change('delete', {
        id: 'd1',
        pending_delete: { since: '2026-01-01T00:00:00.000Z', due: null, confirm: true },
      }),
      desired: undefined,
    }),
    { reason: 'DeletePending', status: 'out_of_sync', write: null },
  ],
  [
    'a Conflict of the flap guard',
    daemon({ conflict: CONFLICT }),
    { reason: 'Conflict', status: 'out_of_sync', write: null },
  ],
  [
    'a write of this desired state queued: not drift',
    daemon({ remembered: FP, write: { state: 'queued', jobId: 'j1', operation: 'patch-deployment' } }),
    { reason: 'Applying', status: 'out_of_sync', write: null, drift: null },
  ],
  [
    'a write of this desired state just finished: not drift',
    daemon({ remembered: FP, write: { state: 'finished' } }),
    { reason: 'Applied', status: 'synced', write: null, drift: null },
  ],
  [
    'drift under heal is reverted',
    daemon({ remembered: FP }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update', drift: 'heal' },
  ],
  [
    'drift under report is reported',
    daemon({ remembered: FP, settings: { mode: 'daemon', driftPolicy: 'report' } }),
    { reason: 'DriftReported', status: 'out_of_sync', write: null, drift: 'report' },
  ],
  [
    'the annotation beats the setting',
    daemon({ remembered: FP, desired: { suspend: false, driftPolicy: 'report' } }),
    { reason: 'DriftReported', status: 'out_of_sync', write: null, drift: 'report' },
  ],
  [
    'no memory under report: reported and remembered',
    daemon({ remembered: undefined, settings: { mode: 'daemon', driftPolicy: 'report' } }),
    { reason: 'DriftReported', status: 'out_of_sync', write: null, drift: 'report', remember: FP },
  ],
  [
    'the held desired state of a failed revision',
    daemon({ hold: HOLD }),
    { reason: 'RevisionFailed', status: 'out_of_sync', write: null, drift: 'report' },
  ],
  [
    'a create the service refused for good (413): held, no drift (nothing live)',
    daemon({
      change: change('create'),
      live: undefined,
      hold: { reason: 'WriteRefused', desired: FP, message: 'refused', since: '2026-01-01T00:00:00Z' },
    }),
    { reason: 'WriteRefused', status: 'out_of_sync', write: null, drift: null },
  ],
  [
    'a create whose name is taken on the service (409, no deployment listed): held, no POST, no drift',
    daemon({
      change: change('create'),
      live: undefined,
      hold: { reason: 'NameTaken', desired: FP, message: 'the name is taken', since: '2026-01-01T00:00:00Z' },
    }),
    { reason: 'NameTaken', status: 'out_of_sync', write: null, drift: null },
  ],
  [
    'an update waiting behind a failed wave (WaveHeld): held, no PATCH, drift only reported',
    daemon({
      change: change('update'),
      hold: { reason: 'WaveHeld', desired: FP, message: 'wave 2 waits behind wave 1', since: '2026-01-01T00:00:00Z' },
    }),
    { reason: 'WaveHeld', status: 'out_of_sync', write: null },
  ],
  [
    'a taken name held for another desired state (the manifest changed): created again',
    daemon({
      change: change('create'),
      live: undefined,
      hold: { reason: 'NameTaken', desired: OTHER, message: 'the name is taken', since: '2026-01-01T00:00:00Z' },
    }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'create' },
  ],
  [
    'a hold about another desired state does not hold',
    daemon({ hold: { ...HOLD, desired: OTHER } }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
  [
    'only secrets that cannot be compared',
    daemon({ change: change('update', { fields: SECRET_ONLY }), remembered: undefined }),
    { reason: 'SecretsUnknown', status: 'out_of_sync', write: null, remember: FP },
  ],
  [
    '... written once on request (--write-secrets)',
    daemon({ change: change('update', { fields: SECRET_ONLY }), requests: { writeSecrets: true } }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
  [
    '... with a lost answer pending: its job settles it',
    daemon({ change: change('update', { fields: SECRET_ONLY }), remembered: undefined, pendingWrite: true }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
  [
    '... of a changed desired state: written',
    daemon({ change: change('update', { fields: SECRET_ONLY }), remembered: OTHER }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
  [
    'apply writes what the plan changes (no memory, no hold of blind secrets)',
    daemon({
      change: change('update', { fields: SECRET_ONLY }),
      remembered: undefined,
      settings: { mode: 'apply', driftPolicy: 'report' },
    }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update', drift: null },
  ],
  [
    'a kind whose live side is not listed: no fingerprint, written',
    daemon({ change: change('update', { kind: 'OAuthProvider' }), fingerprint: undefined, live: undefined }),
    { reason: 'OutOfSync', status: 'out_of_sync', write: 'update' },
  ],
];

describe('decide: sync, and the write or why none', () => {
  it.each(TABLE)('%s', (_name, input, expected) => {
    const outcome = decide(input);
    expect(outcome.sync).toMatchObject({ status: expected.status, reason: expected.reason });
    expect(outcome.write?.op ?? null).toBe(expected.write);
    // "Why nothing was written" is one answer: the sync reason, with its message.
    if (expected.write === null) expect(outcome.skip).toEqual({ code: expected.reason, message: outcome.sync.message });
    else expect(outcome.skip).toBeNull();
    if (expected.drift !== undefined) expect(outcome.drift?.policy ?? null).toBe(expected.drift);
    expect(outcome.remember).toBe(expected.remember);
    expect(outcome.key).toBe(`${input.change.kind}/web`);
  });

  it('reaches every sync reason it can give (JobFailed and Interrupted come from a job result, WaveWaiting and WindowHeld from the daemon gates, not a decision)', () => {
    const reached = new Set<SyncReason>([
      ...TABLE.map(([, , e]) => e.reason),
      applying(decide(daemon()), { jobId: 'j', operation: 'patch-deployment' }).sync.reason,
    ]);
    expect(SYNC_REASONS.filter((r) => !reached.has(r))).toEqual([
      'JobFailed',
      'Interrupted',
      'WaveWaiting',
      'WindowHeld',
    ]);
  });

  it('a decided write, once enqueued, is Applying and keeps its drift (it reverts it)', () => {
    const healed = applying(decide(daemon({ remembered: FP })), { jobId: 'j9', operation: 'patch-deployment' });
    expect(healed).toMatchObject({
      sync: { reason: 'Applying', message: 'job j9 (patch-deployment) is queued' },
      write: { op: 'update', drift: true },
      drift: { policy: 'heal' },
      job: { jobId: 'j9' },
    });
  });

  it('says why nothing was written in one line, the same everywhere', () => {
    expect(skipLine(decide(daemon({ conflict: CONFLICT })))).toBe(
      'not written: Conflict: changed outside converge 3 times',
    );
    expect(skipLine(decide(daemon({ change: change('noop') })))).toBeUndefined();
    expect(skipLine(decide(daemon()))).toBeUndefined();
  });
});

const QUEUED: WriteInFlight = { state: 'queued', jobId: 'j7', operation: 'patch-deployment' };
const FINISHED: WriteInFlight = { state: 'finished' };
const SECRETS = daemon({ change: change('update', { fields: SECRET_ONLY }), remembered: undefined });

type InFlightRow = [string, DecisionInput, WriteInFlight, { reason: SyncReason; write: string | null }];

const REPORT = daemon({ remembered: FP, settings: { mode: 'daemon', driftPolicy: 'report' } });
const DELETE = daemon({ change: change('delete', { id: 'd1' }), desired: undefined });
const ORPHAN = daemon({ change: change('orphan'), desired: undefined });
const REBUILD = daemon({ change: change('noop'), requests: { rebuild: true } });
const applyingNow = { reason: 'Applying', write: null } as const;
const appliedNow = { reason: 'Applied', write: null } as const;

const IN_FLIGHT: InFlightRow[] = [
  ['a decided update, its job queued: Applying, no second job', daemon(), QUEUED, applyingNow],
  ['drift healed, its job finished: Applied, no drift', daemon({ remembered: FP }), FINISHED, appliedNow],
  ['a rebuild, its job queued', REBUILD, QUEUED, applyingNow],
  ['a held desired state whose job is queued', daemon({ hold: HOLD }), QUEUED, applyingNow],
  ['drift reported, a job of this desired state queued', REPORT, QUEUED, applyingNow],
  ['secrets unknown, a job of this desired state finished', SECRETS, FINISHED, appliedNow],
  ['a delete stands (its job is keyed by the live id)', DELETE, QUEUED, { reason: 'OutOfSync', write: 'delete' }],
  ['a Conflict stands', daemon({ conflict: CONFLICT }), QUEUED, { reason: 'Conflict', write: null }],
  ['suspended stands', daemon({ desired: { suspend: true } }), FINISHED, { reason: 'Suspended', write: null }],
  ['in sync stands', daemon({ change: change('noop') }), QUEUED, { reason: 'Synced', write: null }],
  ['an orphan stands', ORPHAN, QUEUED, { reason: 'Orphan', write: null }],
];

describe("withWriteInFlight: the queue's answer on a decided outcome (the daemon's act), no second decision", () => {
  it.each(IN_FLIGHT)('%s', (_name, input, write, expected) => {
    const updated = withWriteInFlight(decide(input), write);
    expect(updated.sync.reason).toBe(expected.reason);
    expect(updated.write?.op ?? null).toBe(expected.write);
    if (expected.reason === 'Applying' || expected.reason === 'Applied') {
      // The job stands for the decided write: no drift, nothing to remember, no secrets named.
      expect(updated).toMatchObject({ drift: null, skip: { code: expected.reason } });
      expect([updated.remember, updated.secretsUnknown]).toEqual([undefined, undefined]);
      const job = write.state === 'queued' ? { jobId: 'j7', operation: 'patch-deployment' } : undefined;
      expect(updated.job).toEqual(job);
    }
    // Health is the decided one: a job in flight says nothing of the live revision.
    expect(updated.health).toEqual(decide(input).health);
  });

  it('is the step decide() takes for a write it is given: the same outcome either way, for every row', () => {
    for (const [, input] of [...TABLE, ...IN_FLIGHT]) {
      for (const write of [QUEUED, FINISHED]) {
        expect(withWriteInFlight(decide({ ...input, write: undefined }), write)).toEqual(decide({ ...input, write }));
      }
    }
  });
});

describe('decide: health is read, not guessed', () => {
  const health = (extra: Partial<DecisionInput>): Outcome['health'] =>
    decide(daemon({ change: change('noop'), ...extra })).health;

  it('a failed build read from its revision is degraded, though the listing looks like a build', () => {
    const building = live('r2', 'r1');
    expect(health({ live: building })).toMatchObject({ status: 'progressing', reason: 'RevisionBuilding' });
    expect(health({ live: building, revision: { id: 'r2', status: 'BUILD_FAILED' } })).toMatchObject({
      status: 'degraded',
      reason: 'RevisionBuildFailed',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    });
    expect(health({ live: building, revision: { id: 'r2', status: 'DEPLOY_FAILED' } })).toMatchObject({
      status: 'degraded',
      reason: 'RevisionDeployFailed',
    });
    expect(health({ live: building, revision: { id: 'r2', status: 'CREATE_FAILED' } })).toMatchObject({
      status: 'degraded',
      reason: 'RevisionCreateFailed',
    });
    expect(health({ live: building, revision: { id: 'r2', status: 'SKIPPED' } })).toMatchObject({
      status: 'healthy',
      reason: 'RevisionSkipped',
    });
    // A reading of another revision says nothing of the latest.
    expect(health({ live: building, revision: { id: 'r1', status: 'BUILD_FAILED' } })).toMatchObject({
      status: 'progressing',
    });
    // The hold of that very revision tells it too.
    expect(health({ live: building, hold: HOLD })).toMatchObject({
      status: 'degraded',
      reason: 'RevisionBuildFailed',
      message: HOLD.message,
    });
  });

  it('past the progress deadline a build is degraded (from the revision created_at when read)', () => {
    const clock = { now: Date.parse('2026-01-01T01:00:00Z'), deadlineMs: 10 * 60_000 };
    expect(
      health({
        live: live('r2', 'r1'),
        revision: { id: 'r2', status: 'BUILDING', createdAt: '2026-01-01T00:00:00Z' },
        clock,
      }),
    ).toMatchObject({ status: 'degraded', reason: 'ProgressDeadlineExceeded' });
    expect(health({ live: live('r2', 'r1'), clock: { ...clock, since: clock.now - 60_000 } })).toMatchObject({
      status: 'progressing',
      reason: 'RevisionBuilding',
    });
  });

  it('healthy, waiting for its create or its first revision, and a kind without a rollout', () => {
    expect(health({ live: live('r1', 'r1') })).toMatchObject({ status: 'healthy', reason: 'RevisionDeployed' });
    expect(health({ live: live(null, null) })).toMatchObject({ status: 'unknown', reason: 'NoRevision' });
    expect(decide(daemon({ change: change('create'), live: undefined })).health).toMatchObject({
      status: 'unknown',
      reason: 'AwaitingCreate',
      message: 'not created yet',
    });
    expect(health({ live: undefined })).toMatchObject({ status: 'unknown', reason: 'AwaitingCreate' });
    expect(decide(daemon({ change: change('noop', { kind: 'OAuthProvider' }), live: undefined })).health).toMatchObject(
      { status: 'healthy', reason: 'NoRollout' },
    );
    expect(
      decide(daemon({ change: change('create', { kind: 'OAuthProvider' }), live: undefined })).health,
    ).toMatchObject({ status: 'unknown', reason: 'AwaitingCreate' });
    expect(healthLine(health({ live: live('r1', 'r1') }))).toBe(
      'health healthy (RevisionDeployed): revision r1 is active',
    );
  });
});

describe('decideDrift', () => {
  it.each([
    [undefined, FP, 'heal', 'update', 'apply'],
    [undefined, FP, 'report', 'update', 'report'],
    [undefined, FP, 'report', 'create', 'apply'],
    [OTHER, FP, 'report', 'update', 'apply'],
    [FP, FP, 'heal', 'update', 'heal'],
    [FP, FP, 'report', 'update', 'report'],
  ] as const)('remembered %s, desired %s, %s, %s: %s', (remembered, fingerprint, policy, action, kind) => {
    expect(decideDrift(remembered, fingerprint, policy, action)).toEqual({ kind });
  });
});
