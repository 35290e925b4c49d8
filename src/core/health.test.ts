// Health from a revision status and from the spec's fields, the progress deadline, elapsed times.
import { describe, expect, it } from 'vitest';
import { formatElapsed, healthOfDeployment, healthOfRevision, progressDeadline, revisionFailed } from './health.js';

describe('healthOfRevision', () => {
  it.each([
    ['DEPLOYED', 'healthy', 'RevisionDeployed'],
    ['SKIPPED', 'healthy', 'RevisionSkipped'],
    ['CREATE_FAILED', 'degraded', 'RevisionCreateFailed'],
    ['BUILD_FAILED', 'degraded', 'RevisionBuildFailed'],
    ['DEPLOY_FAILED', 'degraded', 'RevisionDeployFailed'],
    ['CREATING', 'progressing', 'RevisionBuilding'],
    ['QUEUED', 'progressing', 'RevisionBuilding'],
    ['AWAITING_BUILD', 'progressing', 'RevisionBuilding'],
    ['BUILDING', 'progressing', 'RevisionBuilding'],
    ['AWAITING_DEPLOY', 'progressing', 'RevisionBuilding'],
    ['DEPLOYING', 'progressing', 'RevisionBuilding'],
    ['INTERRUPTED', 'progressing', 'RevisionBuilding'],
    ['UNKNOWN', 'progressing', 'RevisionBuilding'],
    ['SOMETHING_NEW', 'progressing', 'RevisionBuilding'],
  ])('%s is %s (%s)', (status, health, reason) => {
    expect(healthOfRevision('r1', status)).toMatchObject({
      status: health,
      reason,
      revisionId: 'r1',
      revisionStatus: status,
    });
    expect(revisionFailed(status)).toBe(health === 'degraded');
  });
});

describe('healthOfDeployment (the spec fields alone)', () => {
  const ready = { status: 'READY', latest_revision_id: 'r2', active_revision_id: 'r2' };
  it('is healthy when the latest revision is active and READY, unknown without any revision', () => {
    expect(healthOfDeployment(ready, 0, undefined, 1000)).toMatchObject({ status: 'healthy', revisionId: 'r2' });
    expect(
      healthOfDeployment(
        { status: 'AWAITING_DATABASE', latest_revision_id: null, active_revision_id: null },
        0,
        undefined,
        1000,
      ),
    ).toMatchObject({ status: 'unknown', reason: 'NoRevision' });
  });
  it('is progressing while the latest revision is not active, and degraded (ProgressDeadlineExceeded) from the deadline on', () => {
    const building = { status: 'READY', latest_revision_id: 'r3', active_revision_id: 'r2' };
    expect(healthOfDeployment(building, 10_999, 10_000, 1000)).toMatchObject({
      status: 'progressing',
      reason: 'RevisionBuilding',
      revisionId: 'r3',
    });
    expect(healthOfDeployment(building, 11_000, 10_000, 1000)).toMatchObject({
      status: 'degraded',
      reason: 'ProgressDeadlineExceeded',
      revisionId: 'r3',
    });
    expect(
      healthOfDeployment({ ...building, status: 'AWAITING_DATABASE', active_revision_id: 'r3' }, 0, 0, 1000),
    ).toMatchObject({ status: 'progressing' });
  });
});

describe('progressDeadline', () => {
  it('turns only a progressing health degraded, and names the deadline', () => {
    const failed = healthOfRevision('r1', 'BUILD_FAILED');
    expect(progressDeadline(failed, 10_000, 0, 1000)).toBe(failed);
    expect(progressDeadline(healthOfRevision('r1', 'DEPLOYED'), 10_000, 0, 1000).status).toBe('healthy');
    const stuck = progressDeadline(healthOfRevision('r1', 'BUILDING'), 90_000, 0, 60_000);
    expect(stuck).toMatchObject({ status: 'degraded', reason: 'ProgressDeadlineExceeded', revisionStatus: 'BUILDING' });
    expect(stuck.message).toBe('revision r1 is not active after 1m30s (progress_deadline 1m0s)');
    expect(progressDeadline(healthOfRevision('r1', 'BUILDING'), 90_000, undefined, 60_000).status).toBe('progressing');
  });
});

describe('formatElapsed', () => {
  it.each([
    [0, '0s'],
    [45_400, '45s'],
    [80_000, '1m20s'],
    [7_380_000, '2h3m'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatElapsed(ms)).toBe(text);
  });
});
