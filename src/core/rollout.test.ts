// The pure half of following a rollout, table-tested: each reading a poll can bring gives the health its kind's health() gives, holds and the progress deadline read as a reconcile reads them.
import { describe, expect, it } from 'vitest';
import { decide } from './decide.js';
import type { HealthCondition } from './health.js';
import type { ResourceHold } from './holds.js';
import type { LiveDeployment } from './model.js';
import { followedHealth, readingRevision, type FollowedContext, type RolloutReading } from './rollout.js';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const DEADLINE = 10 * 60_000;
const TARGET = { kind: 'Deployment' as const };

function live(latest: string | null, active: string | null, status = 'DEPLOYING'): LiveDeployment {
  return {
    id: 'd1',
    name: 'web',
    status,
    latest_revision_id: latest,
    active_revision_id: active,
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
}

const HOLD: ResourceHold = {
  reason: 'RevisionFailed',
  desired: 'f'.repeat(64),
  message: 'revision r2 of this desired state ended BUILD_FAILED',
  since: '2026-01-01T00:00:00Z',
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
};

type Row = [string, RolloutReading, Partial<FollowedContext>, Partial<HealthCondition>];

const RECENT = NOW - 60_000;
const LONG_AGO = NOW - 2 * DEADLINE;

const TABLE: Row[] = [
  [
    'a revision still building is progressing',
    { revision: { id: 'r2', status: 'BUILDING' } },
    { since: RECENT },
    { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r2', revisionStatus: 'BUILDING' },
  ],
  [
    'a deployed revision is healthy',
    { revision: { id: 'r2', status: 'DEPLOYED' } },
    { since: RECENT },
    { status: 'healthy', reason: 'RevisionDeployed', revisionId: 'r2' },
  ],
  [
    'a skipped revision is healthy',
    { revision: { id: 'r2', status: 'SKIPPED' } },
    {},
    { status: 'healthy', reason: 'RevisionSkipped' },
  ],
  [
    'a failed build is degraded, with its status',
    { revision: { id: 'r2', status: 'BUILD_FAILED' } },
    { since: RECENT },
    { status: 'degraded', reason: 'RevisionBuildFailed', revisionStatus: 'BUILD_FAILED' },
  ],
  [
    'a failed deploy is degraded',
    { revision: { id: 'r2', status: 'DEPLOY_FAILED' } },
    {},
    { status: 'degraded', reason: 'RevisionDeployFailed' },
  ],
  [
    'a build past the deadline is degraded',
    { revision: { id: 'r2', status: 'BUILDING' } },
    { since: LONG_AGO },
    { status: 'degraded', reason: 'ProgressDeadlineExceeded', revisionId: 'r2' },
  ],
  [
    'the deadline counts from the revision created_at when earlier',
    { revision: { id: 'r2', status: 'BUILDING', createdAt: '2026-01-01T00:00:00Z' } },
    { since: RECENT },
    { status: 'degraded', reason: 'ProgressDeadlineExceeded' },
  ],
  [
    'a created_at later than since does not delay the deadline',
    { revision: { id: 'r2', status: 'BUILDING', createdAt: '2026-01-01T00:59:00Z' } },
    { since: LONG_AGO },
    { status: 'degraded', reason: 'ProgressDeadlineExceeded' },
  ],
  [
    'a failed revision read beats the hold of another',
    { revision: { id: 'r3', status: 'DEPLOY_FAILED' } },
    { hold: HOLD },
    { status: 'degraded', reason: 'RevisionDeployFailed', revisionId: 'r3' },
  ],
  [
    'listed: latest active and READY is healthy',
    { live: live('r2', 'r2', 'READY') },
    { since: LONG_AGO },
    { status: 'healthy', reason: 'RevisionDeployed', revisionId: 'r2' },
  ],
  [
    'listed: latest not active is progressing',
    { live: live('r2', 'r1') },
    { since: RECENT },
    { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r2' },
  ],
  [
    'listed: latest not active past the deadline is degraded',
    { live: live('r2', 'r1') },
    { since: LONG_AGO },
    { status: 'degraded', reason: 'ProgressDeadlineExceeded' },
  ],
  [
    'listed: no revision at all waits for its artifact',
    { live: live(null, null) },
    {},
    { status: 'unknown', reason: 'NoRevision' },
  ],
  [
    'listed: the hold of the latest revision tells its failure',
    { live: live('r2', 'r1') },
    { since: RECENT, hold: HOLD },
    { status: 'degraded', reason: 'RevisionBuildFailed', revisionId: 'r2', message: HOLD.message },
  ],
  [
    'listed: the hold of an earlier revision says nothing of the latest',
    { live: live('r3', 'r1') },
    { since: RECENT, hold: HOLD },
    { status: 'progressing', reason: 'RevisionBuilding', revisionId: 'r3' },
  ],
];

describe('followedHealth', () => {
  it.each(TABLE)('%s', (_name, reading, context, expected) => {
    expect(
      followedHealth(TARGET, reading, { now: NOW, since: undefined, deadlineMs: DEADLINE, ...context }),
    ).toMatchObject(expected);
  });

  it('gives, from a listing, the health a reconcile decides from the same listing, hold and clock', () => {
    for (const [, reading, context] of TABLE) {
      if (!('live' in reading)) continue;
      const followed = followedHealth(TARGET, reading, {
        now: NOW,
        since: undefined,
        deadlineMs: DEADLINE,
        ...context,
      });
      const decided = decide({
        change: { kind: 'Deployment', name: 'web', action: 'noop', new_revision: false, fields: [], reason: null },
        desired: { suspend: false },
        live: reading.live,
        hold: context.hold,
        settings: { mode: 'daemon', driftPolicy: 'heal' },
        clock: { now: NOW, since: context.since, deadlineMs: DEADLINE },
      });
      expect(followed).toEqual(decided.health);
    }
  });

  it('a kind without a rollout is healthy whatever the poll read', () => {
    expect(
      followedHealth(
        { kind: 'OAuthProvider' },
        { live: live('r2', 'r1') },
        { now: NOW, since: undefined, deadlineMs: DEADLINE },
      ),
    ).toMatchObject({ status: 'healthy', reason: 'NoRollout' });
  });
});

describe('readingRevision', () => {
  it('is the revision read, else the listing latest, else null', () => {
    expect(readingRevision({ revision: { id: 'r2', status: 'BUILDING' } })).toBe('r2');
    expect(readingRevision({ live: live('r3', 'r1') })).toBe('r3');
    expect(readingRevision({ live: live(null, null) })).toBeNull();
  });
});
