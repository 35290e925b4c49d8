// Which rollouts apply --wait follows: the revisions its jobs started, and those already in progress before it.
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../core/decide.js';
import type { HealthCondition } from '../core/health.js';
import type { LiveDeployment } from '../core/model.js';
import { rolloutsToFollow } from './rollouts-to-follow.js';
import type { ResourceResult as JobResult } from './apply-state.js';

const BUILDING: HealthCondition = {
  status: 'progressing',
  reason: 'RevisionBuilding',
  message: 'revision r-2 is BUILDING',
  revisionId: 'r-2',
  revisionStatus: 'BUILDING',
};
const HEALTHY: HealthCondition = {
  status: 'healthy',
  reason: 'RevisionDeployed',
  message: 'revision r-1 is active',
  revisionId: 'r-1',
};
const FAILED: HealthCondition = {
  status: 'degraded',
  reason: 'RevisionBuildFailed',
  message: 'revision r-2 ended BUILD_FAILED',
  revisionId: 'r-2',
  revisionStatus: 'BUILD_FAILED',
};

function outcome(
  name: string,
  health: HealthCondition,
  action: Outcome['action'] = 'noop',
  kind: Outcome['kind'] = 'Deployment',
): Outcome {
  return {
    key: `${kind}/${name}`,
    kind,
    name,
    action,
    sync: { status: 'synced', reason: 'Synced', message: 'live state matches the manifest' },
    health,
    write: null,
    skip: { code: 'Synced', message: 'live state matches the manifest' },
    drift: null,
  };
}

function live(name: string): LiveDeployment {
  return {
    id: `id-${name}`,
    name,
    status: 'READY',
    latest_revision_id: 'r-2',
    active_revision_id: 'r-1',
  } as LiveDeployment;
}

function job(name: string, extra: Partial<JobResult>): JobResult {
  return {
    kind: 'Deployment',
    name,
    key: `Deployment/${name}`,
    status: 'done',
    new_revision: false,
    jobId: `job-${name}`,
    deploymentId: `id-${name}`,
    ...extra,
  };
}

const outcomesOf = (...list: Outcome[]): Map<string, Outcome> => new Map(list.map((o) => [o.key, o]));

describe('rolloutsToFollow', () => {
  it('follows a rollout already in progress that nothing of this apply writes: a result of its own, no job', () => {
    const followed = rolloutsToFollow([], outcomesOf(outcome('web', BUILDING)), [live('web')]);
    expect(followed).toEqual([
      {
        kind: 'Deployment',
        name: 'web',
        key: 'Deployment/web',
        status: 'unchanged',
        new_revision: false,
        deploymentId: 'id-web',
        latestRevisionId: 'r-2',
        startedBy: 'earlier',
      },
    ]);
  });

  it('marks a job that started a revision as started by the apply, and adds no entry for it', () => {
    const results = [job('web', { new_revision: true, latestRevisionId: 'r-3', outcome: 'updated' })];
    const followed = rolloutsToFollow(results, outcomesOf(outcome('web', BUILDING, 'update')), [live('web')]);
    expect(followed).toHaveLength(1);
    expect(followed[0]).toMatchObject({ startedBy: 'apply', latestRevisionId: 'r-3', jobId: 'job-web' });
  });

  it('follows the earlier rollout of a job that started no revision, at the revision the job read last', () => {
    const results = [job('web', { status: 'unchanged', latestRevisionId: 'r-2b' })];
    const followed = rolloutsToFollow(results, outcomesOf(outcome('web', BUILDING, 'update')), [live('web')]);
    expect(followed).toHaveLength(1);
    expect(followed[0]).toMatchObject({ startedBy: 'earlier', latestRevisionId: 'r-2b', jobId: 'job-web' });
  });

  it('leaves out healthy, failed, orphaned and unlisted resources, and jobs that failed or were interrupted', () => {
    const results = [job('broken', { status: 'failed', message: 'boom' }), job('stopped', { status: 'interrupted' })];
    const outcomes = outcomesOf(
      outcome('fine', HEALTHY),
      outcome('failed', FAILED),
      outcome('stray', BUILDING, 'orphan'),
      outcome('broken', BUILDING, 'update'),
      outcome('stopped', BUILDING, 'update'),
      outcome('gone', BUILDING),
    );
    const followed = rolloutsToFollow(results, outcomes, ['fine', 'failed', 'stray', 'broken', 'stopped'].map(live));
    expect(followed).toEqual(results);
    expect(followed.map((r) => r.startedBy)).toEqual([undefined, undefined]);
  });
});
