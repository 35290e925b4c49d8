// apply's fold of a job's raw result against the daemon's: the same result gives the same sync and health (reason, status, message) in `apply --output json` and in /status.
import { describe, expect, it } from 'vitest';
import { applying, decide } from '../../src/core/decide.js';
import type { DeploymentResource, LiveDeployment, Plan, PlanChange } from '../../src/core/model.js';
import { applyStates, jobResults, stateAfterJob } from '../../src/apply/apply-state.js';
import type { JobEnd, JobEvent } from '../../src/apply/wait-jobs.js';
import { ResourceTracker } from '../../src/daemon/status/resource-tracker.js';
import type { ReconcileOutcome } from '../../src/daemon/cycle/cycle.js';
import type { SyncResult } from '../../src/core/kinds/ports.js';
import type { HealthCondition } from '../../src/core/health.js';
import { writeRefusedHold } from '../../src/core/holds.js';

const AT = '2026-01-01T00:00:00.000Z';
const KEY = 'Deployment/web';

function live(): LiveDeployment {
  return {
    id: 'id-web',
    name: 'web',
    tenant_id: 't',
    source: 'internal_docker',
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: AT,
    updated_at: AT,
    status: 'READY',
    latest_revision_id: 'r1',
    active_revision_id: 'r1',
  };
}

const CHANGE: PlanChange = {
  kind: 'Deployment',
  name: 'web',
  action: 'update',
  new_revision: true,
  fields: [],
  reason: null,
};
const RESOURCE: DeploymentResource = {
  kind: 'Deployment',
  name: 'web',
  location: { file: 'web.yaml', line: 1, column: 1 },
  suspend: false,
  spec: { source: 'internal_docker' },
};

/** The daemon's row after its reconcile enqueued job j1 and the job ended with `event` (src/daemon/status/resource-tracker.ts). */
function daemonRow(event: JobEvent): { sync: unknown; health: unknown } {
  const t = new ResourceTracker();
  const decided = decide({
    change: CHANGE,
    live: live(),
    fingerprint: 'fp',
    remembered: 'other',
    settings: { mode: 'daemon', driftPolicy: 'heal' },
  });
  const plan: Plan = {
    format_version: '1',
    summary: { create: 0, update: 1, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
    changes: [CHANGE],
    diagnostics: [],
  };
  const outcome: ReconcileOutcome = {
    plan,
    resources: new Map([[KEY, RESOURCE]]),
    live: [live()],
    files: 1,
    outcomes: new Map([[KEY, applying(decided, { jobId: 'j1', operation: 'patch-deployment' })]]),
    held: [],
    drift: [],
    enqueued: 1,
  };
  t.update(outcome);
  if (event.type === 'job-completed') t.completed('j1', event.result, AT);
  else if (event.type === 'job-failed') t.failed('j1', event.message, AT);
  const row = t.resources()[0]!;
  return { sync: row.sync, health: row.health };
}

/** apply's state of the same job's end (src/apply/apply-state.ts), from apply's own decision. */
function applyEnd(event: JobEvent): JobEnd {
  return { kind: 'Deployment', name: 'web', key: KEY, jobId: 'j1', operation: 'patch-deployment', event };
}

const outcomes = () =>
  new Map([[KEY, decide({ change: CHANGE, live: live(), settings: { mode: 'apply', driftPolicy: 'heal' } })]]);
const completed = (result: SyncResult | undefined): JobEvent => ({
  type: 'job-completed',
  jobId: 'j1',
  at: AT,
  result,
});

const CASES: Array<[string, JobEvent, string, string]> = [
  [
    'written, a new revision started',
    completed({ outcome: 'updated', new_revision: true, latestRevisionId: 'r2' }),
    'Applied',
    'done',
  ],
  ['nothing left to change', completed({ outcome: 'unchanged', new_revision: false }), 'Applied', 'unchanged'],
  [
    'refused by the service (422): the job failed',
    {
      type: 'job-failed',
      jobId: 'j1',
      at: AT,
      message: 'PATCH /v2/deployments/{deployment_id} answered 422: image_uri is required',
    },
    'JobFailed',
    'failed',
  ],
  [
    'the flap guard refused the write (a Conflict)',
    completed({
      outcome: 'unchanged',
      new_revision: false,
      message: 'Conflict: changed outside converge: x put back 2 times; nothing sent',
      conflict: {
        reason: 'changed_outside',
        message: 'changed outside converge: x put back 2 times',
        declared: false,
        fields: ['x'],
      },
    }),
    'Conflict',
    'failed',
  ],
  [
    'live state changed since the decision (a create answered 409): nothing sent',
    completed({
      outcome: 'unchanged',
      new_revision: false,
      notRun: 'live_changed',
      message: 'not written: live state changed since the decision; the next reconcile decides again',
    }),
    'OutOfSync',
    'failed',
  ],
  [
    'superseded by a newer desired state: nothing sent',
    completed({
      outcome: 'unchanged',
      new_revision: false,
      notRun: 'superseded',
      message: 'a newer desired state was enqueued; nothing sent',
    }),
    'OutOfSync',
    'failed',
  ],
  [
    'a result this converge cannot read',
    { type: 'job-completed', jobId: 'j1', at: AT, result: undefined },
    'Applied',
    'done',
  ],
];

describe('apply folds a job result as the daemon does', () => {
  it.each(CASES)('%s: the same sync and health as /status', (_name, event, reason, status) => {
    const state = stateAfterJob(outcomes().get(KEY)!, applyEnd(event));
    const row = daemonRow(event);
    expect(state.sync.reason).toBe(reason);
    expect({ sync: state.sync, health: state.health }).toEqual(row);
    // `results[].status` and the JSON `resources` read that same state.
    expect(jobResults(outcomes(), [applyEnd(event)])[0]!.status).toBe(status);
    const { resources, states } = applyStates(outcomes(), [applyEnd(event)], []);
    expect(resources[0]).toMatchObject({ key: KEY, sync: state.sync, health: state.health });
    expect(states[0]!.sync).toEqual(state.sync);
  });

  it('an apply stopped before the job had a result is Interrupted, with the way it was left', () => {
    const end = applyEnd({
      type: 'interrupted',
      message: 'not started: withdrawn from the queue when the apply was interrupted',
    });
    expect(stateAfterJob(outcomes().get(KEY)!, end).sync).toMatchObject({
      reason: 'Interrupted',
      message: end.event.type === 'interrupted' ? end.event.message : '',
    });
    expect(jobResults(outcomes(), [end])[0]).toMatchObject({
      status: 'interrupted',
      message: 'not started: withdrawn from the queue when the apply was interrupted',
    });
  });

  it("a Conflict keeps its line in `results` (the runner's message), and a written job shows the manifests it came from", () => {
    const conflict = CASES[3]![1];
    expect(jobResults(outcomes(), [applyEnd(conflict)])[0]!.message).toBe(
      'Conflict: changed outside converge: x put back 2 times; nothing sent',
    );
    const version = { kind: 'content' as const, id: 'abcdef012345', readAt: AT };
    expect(stateAfterJob(outcomes().get(KEY)!, applyEnd(CASES[0]![1]), version).appliedFrom).toMatchObject({
      kind: 'content',
      id: 'abcdef012345',
      appliedAt: AT,
    });
  });

  it("a refusal its job's fold held in Redis (WriteRefused): apply shows the hold as /status does, and leaves its record to the worker", () => {
    const refused = CASES[2]![1];
    const hold = writeRefusedHold(
      'fp',
      'PATCH /v2/deployments/{deployment_id} answered 422: image_uri is required',
      'web',
      new Date(AT),
    );
    const end: JobEnd = { ...applyEnd(refused), hold };
    const meta = { at: AT, by: 'apply@host:1' };
    const { resources, states, records } = applyStates(outcomes(), [end], [], { meta });
    expect(resources[0]!.sync).toEqual({ status: 'out_of_sync', reason: 'WriteRefused', message: hold.message });
    expect(states[0]!.hold).toEqual(hold);
    expect(records).toEqual([]);
    expect(jobResults(outcomes(), [end])[0]).toMatchObject({ status: 'failed', message: hold.message });
    expect(hold.message).toContain('converge reconcile --retry-failed web');
    // Without the fold's hold (a failure that holds nothing), the job's failure as before.
    expect(applyStates(outcomes(), [applyEnd(refused)], []).resources[0]!.sync.reason).toBe('JobFailed');
  });

  it('records what followed each decision: the Conflict its job met, the revision --wait read; not the decision, not the job (the worker records it)', () => {
    const meta = { at: AT, by: 'apply@host:1', manifests: { kind: 'content' as const, id: 'abcdef012345' } };
    const conflict = applyStates(outcomes(), [applyEnd(CASES[3]![1])], [], { meta }).records;
    expect(conflict).toEqual([
      expect.objectContaining({
        key: KEY,
        type: 'conflict',
        reason: 'changed_outside',
        job: { id: 'j1' },
        manifests: { kind: 'content', id: 'abcdef012345' },
        by: 'apply@host:1',
      }),
    ]);
    // The wait read r2's end: its start is timed at its created_at, its failure at its updated_at (the service's
    // times), not both at the moment apply wrote them.
    const [created, ended] = ['2025-12-31T23:59:58.000Z', '2026-01-01T00:03:00.000Z'];
    const failed: HealthCondition = {
      status: 'degraded',
      reason: 'RevisionBuildFailed',
      message: 'revision r2 ended BUILD_FAILED',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
      revisionCreatedAt: created,
      revisionUpdatedAt: ended,
    };
    const later = { ...meta, at: '2026-01-01T00:09:00.000Z' };
    const waited = applyStates(
      outcomes(),
      [applyEnd(CASES[0]![1])],
      [{ kind: 'Deployment', name: 'web', key: KEY, status: 'done', new_revision: true, health: failed }],
      { meta: later },
    ).records;
    expect(waited.map((r) => [r.type, r.reason, r.at, r.revision])).toEqual([
      ['revision', 'RevisionBuilding', created, { id: 'r2', status: 'STARTED', createdAt: created }],
      [
        'revision',
        'RevisionBuildFailed',
        ended,
        { id: 'r2', status: 'BUILD_FAILED', createdAt: created, updatedAt: ended },
      ],
    ]);
    expect(applyStates(outcomes(), [applyEnd(CASES[1]![1])], [], { meta }).records).toEqual([]);
    const interrupted = applyStates(
      outcomes(),
      [
        applyEnd({
          type: 'interrupted',
          message: 'not started: withdrawn from the queue when the apply was interrupted',
        }),
      ],
      [],
      { meta },
    ).records;
    expect(interrupted).toEqual([
      expect.objectContaining({ type: 'write_failed', reason: 'Interrupted', job: { id: 'j1' } }),
    ]);
    expect(applyStates(outcomes(), [applyEnd(CASES[3]![1])], []).records).toEqual([]);
  });
});
