// The revision poller: reads the rollout of each deployment still building (one request each, none for healthy ones), sets its health, and holds a failed desired state.
import { revisionFailed, type HealthCondition } from '../../core/health.js';
import { revisionFailedHold } from '../../core/holds.js';
import { followedHealth, readingRevision } from '../../core/rollout.js';
import { pollRollouts } from '../../observe/rollouts.js';
import type { RevisionReads } from '../../service/client.js';
import type { ResourceTracker } from './resource-tracker.js';

export interface FollowOptions {
  tracker: ResourceTracker;
  client: RevisionReads;
  /**
   * Resolves when the tracker's changes are folded in Redis (the daemon's StateFolds.flushed): a hold is written there
   * by the fold, fenced by the leader's token, like every decision, and is in Redis when the poll ends.
   */
  flushed?: (() => Promise<void>) | undefined;
  /** Deployments followed per poll at most. */
  limit?: number;
  /** Revision reads in flight at once. */
  parallel?: number;
  now?: () => Date;
  stopped?: () => boolean;
}

/** What one poll did. */
export interface FollowResult {
  /** Requests sent: one revision read per deployment followed through the endpoint, one list per 100 otherwise. */
  requests: number;
  followed: number;
  /** Revisions found failed in this poll (each once: at its health transition), for the log of why they failed. */
  failed: Array<{ key: string; deploymentId: string; revisionId: string }>;
}

/**
 * One poll: every deployment the tracker follows (progressing, or past the progress deadline) is read once
 * (src/observe/rollouts.ts), and its health is its kind's of that reading, with its hold and the progress deadline
 * counted from when the tracker first knew the revision build (src/core/rollout.ts). A revision found failed holds its
 * desired state (src/core/holds.ts) when that state is known.
 */
export async function followRollouts(options: FollowOptions): Promise<FollowResult> {
  const { tracker } = options;
  const now = options.now ?? (() => new Date());
  const follow = tracker.toFollow(options.limit ?? 500);
  const poll = await pollRollouts(options.client, follow, {
    ...(options.parallel ? { parallel: options.parallel } : {}),
    ...(options.stopped ? { stopped: options.stopped } : {}),
  });
  const failed: Array<{ key: string; deploymentId: string; health: HealthCondition }> = [];
  for (const f of follow) {
    const reading = poll.readings.get(f.key);
    if (!reading) continue;
    const latest = readingRevision(reading);
    const since = latest === null ? undefined : tracker.rolloutSince(f.key, latest);
    const health = followedHealth(f, reading, {
      hold: f.hold,
      now: tracker.now(),
      since,
      deadlineMs: tracker.deadlineMs,
    });
    if (tracker.setHealth(f.key, health) && 'revision' in reading && revisionFailed(reading.revision.status))
      failed.push({ key: f.key, deploymentId: f.deploymentId, health });
  }
  for (const { key, health } of failed) holdFailed(tracker, key, health, now());
  if (failed.length > 0) await options.flushed?.();
  return {
    requests: poll.requests,
    followed: follow.length,
    failed: failed.map((f) => ({ key: f.key, deploymentId: f.deploymentId, revisionId: f.health.revisionId! })),
  };
}

/**
 * Holds the desired state a failed revision was built from, when that state is known (src/core/holds.ts): a fold of the
 * tracker, which its sink folds in Redis (fenced), the one writer of a hold.
 */
function holdFailed(tracker: ResourceTracker, key: string, health: HealthCondition, now: Date): void {
  const desired = tracker.desiredOfRevision(key, health.revisionId!);
  if (!desired || !tracker.mayHold(key, health.revisionId!)) return;
  const name = key.slice(key.indexOf('/') + 1);
  tracker.setHold(key, revisionFailedHold(desired, health.revisionId!, health.revisionStatus!, name, now));
}

/**
 * After a reconcile: a failed revision its decision read (a daemon started after the failure) is held like one the
 * poller found, so its desired state is not sent again. Not when that revision is held already, when a job of the
 * resource is queued (its write replaces the revision: a rebuild asked for after a release), or when an operator
 * released that very revision's hold; a hold of an older revision gives way to the newer failed one.
 */
export async function holdFailedRevisions(
  tracker: ResourceTracker,
  flushed: FollowOptions['flushed'],
  now = new Date(),
): Promise<void> {
  let held = false;
  for (const row of tracker.states()) {
    const health = row.health;
    if (
      health.status !== 'degraded' ||
      !health.revisionId ||
      !health.revisionStatus ||
      !revisionFailed(health.revisionStatus)
    )
      continue;
    if (row.hold?.revisionId === health.revisionId || row.job?.state === 'queued') continue;
    holdFailed(tracker, row.key, health, now);
    held = true;
  }
  if (held) await flushed?.();
}
