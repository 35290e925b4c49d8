// The holds of failed revisions after a reconcile: a released revision is never held again, a newer failure replaces an older hold.
import { describe, expect, it } from 'vitest';
import type { ResourceHold } from '../../core/holds.js';
import type { LiveDeployment, Plan, PlanChange } from '../../core/model.js';
import { applying, decide, type DecisionInput } from '../../core/decide.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import { ResourceTracker } from './resource-tracker.js';
import { holdFailedRevisions } from './rollout.js';

const KEY = 'Deployment/web';

/** The live deployment whose latest revision `latest` is not active (it failed, or builds). */
function live(latest: string): LiveDeployment {
  return {
    id: 'id-web',
    name: 'web',
    tenant_id: 't',
    source: 'internal_docker',
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    status: 'READY',
    latest_revision_id: latest,
    active_revision_id: 'r1',
  };
}

/** One reconcile's outcome for `web` (no change to write), its latest revision read as `status`, with what else it knew. */
function reconciled(
  latest: string,
  status: string,
  more: Partial<DecisionInput> & { jobId?: string } = {},
): ReconcileOutcome {
  const change: PlanChange = {
    kind: 'Deployment',
    name: 'web',
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
  const { jobId, ...known } = more;
  const decided = decide({
    change,
    live: live(latest),
    revision: { id: latest, status },
    fingerprint: 'fp',
    remembered: 'fp',
    settings: { mode: 'daemon', driftPolicy: 'report' },
    ...known,
  });
  const outcome = jobId && decided.write ? applying(decided, { jobId, operation: 'patch-deployment' }) : decided;
  const resources = new Map([
    [
      KEY,
      {
        kind: 'Deployment' as const,
        name: 'web',
        location: { file: 'web.yaml', line: 1, column: 1 },
        suspend: false,
        spec: { source: 'internal_docker' as const },
      },
    ],
  ]);
  return {
    plan,
    resources,
    live: [live(latest)],
    files: 1,
    outcomes: new Map([[KEY, outcome]]),
    held: [],
    drift: [],
    enqueued: 0,
    fingerprints: new Map([[KEY, 'fp']]),
    ...(known.hold ? { holds: new Map([[KEY, known.hold]]) } : {}),
  };
}

/**
 * The tracker's sink (StateFolds in the daemon, which folds each change in Redis, fenced): the holds it was handed, by
 * key, and the flush the hold's writer awaits.
 */
function store(t: ResourceTracker): { flushed: () => Promise<void>; kept: Map<string, ResourceHold>; flushes: number } {
  const kept = new Map<string, ResourceHold>();
  const out = { kept, flushes: 0, flushed: () => Promise.resolve(void (out.flushes += 1)) };
  t.record({
    changed: (change) => {
      for (const event of change.events) if (event.type === 'hold' && event.hold) kept.set(change.key, event.hold);
    },
    removed: () => undefined,
  });
  return out;
}

describe('holdFailedRevisions', () => {
  it('holds a failed revision a reconcile read; once released, that revision is not held again, while its rebuild is queued or after', async () => {
    const t = new ResourceTracker();
    const holds = store(t);
    t.update(reconciled('r2', 'BUILD_FAILED'));
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.get(KEY)).toMatchObject({ reason: 'RevisionFailed', revisionId: 'r2', desired: 'fp' });
    expect(holds.flushes).toBe(1);
    expect(t.heldKeys()).toEqual([KEY]);

    // The operator releases it (converge reconcile --retry-failed); the reconcile that enqueues the rebuild still reads r2.
    holds.kept.clear();
    t.releaseHold(KEY);
    t.update(reconciled('r2', 'BUILD_FAILED', { requests: { rebuild: true }, jobId: 'j9' }));
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.size).toBe(0);
    // A reconcile that read the stored hold before the release ended after it: the hold does not come back.
    const stale = {
      reason: 'RevisionFailed' as const,
      desired: 'fp',
      message: 'revision r2 failed',
      since: '2026-01-01T00:00:00Z',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    };
    t.update(reconciled('r2', 'BUILD_FAILED', { hold: stale }));
    expect(t.heldKeys()).toEqual([]);
    // Nor once its job is gone (a reconcile that ran before the rebuild was sent).
    t.update(reconciled('r2', 'BUILD_FAILED'));
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.size).toBe(0);
    expect(t.heldKeys()).toEqual([]);
    // The release is part of the resource's state: a leader that takes up the projection (a failover) knows it too.
    const successor = new ResourceTracker();
    successor.restore(new Map(t.states().map((state) => [state.key, state])));
    expect(successor.mayHold(KEY, 'r2')).toBe(false);
    expect(successor.mayHold(KEY, 'r3')).toBe(true);

    // The rebuild's revision r3 fails: held, as any failed revision.
    t.update(reconciled('r3', 'BUILD_FAILED'));
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.get(KEY)).toMatchObject({ revisionId: 'r3' });
    expect(t.resources()[0]!.hold).toMatchObject({ revisionId: 'r3' });
  });

  it('a newer failed revision replaces the hold of an older one (a reconcile that read the old hold, then the new failure)', async () => {
    const t = new ResourceTracker();
    const holds = store(t);
    const old = {
      reason: 'RevisionFailed' as const,
      desired: 'fp',
      message: 'revision r2 failed',
      since: '2026-01-01T00:00:00Z',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    };
    t.update(reconciled('r3', 'BUILD_FAILED', { hold: old }));
    expect(t.resources()[0]).toMatchObject({
      health: { status: 'degraded', revisionId: 'r3' },
      hold: { revisionId: 'r2' },
    });
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.get(KEY)).toMatchObject({ revisionId: 'r3' });
    expect(t.resources()[0]!.hold).toMatchObject({ revisionId: 'r3' });
    // Held already: nothing written again.
    holds.kept.clear();
    await holdFailedRevisions(t, holds.flushed);
    expect(holds.kept.size).toBe(0);
  });
});
