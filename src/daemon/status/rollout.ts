// The revision poller: reads the rollout of each deployment still building (one request each, none for healthy ones), sets its health, and holds a failed desired state.
import { healthOfRevision, progressDeadline, revisionFailed, type HealthCondition } from '../../core/health.js';
import { revisionFailedHold, type ResourceHold } from '../../core/holds.js';
import type { RevisionReads } from '../../service/client.js';
import type { ResourceTracker, RolloutToFollow } from './resource-tracker.js';

export interface FollowOptions {
  tracker: ResourceTracker;
  client: RevisionReads;
  /** Where a hold is written (Redis: a restarted daemon keeps it). */
  holds?: { set(key: string, hold: ResourceHold): Promise<void> } | undefined;
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

/** When the service says the revision began; else since when converge knows it builds. */
function startedAt(created: string | null | undefined, fallback: number): number {
  const at = created ? Date.parse(created) : Number.NaN;
  return Number.isFinite(at) ? Math.min(at, fallback) : fallback;
}

/**
 * One poll: every deployment the tracker follows (progressing, or past the progress deadline) is read once, through
 * GET …/revisions/{latest} when the service has it, else through the list by deployment_ids (100 per request) and
 * the progress deadline. A revision found failed holds its desired state (src/core/holds.ts) when that state is known.
 */
export async function followRollouts(options: FollowOptions): Promise<FollowResult> {
  const { tracker, client } = options;
  const now = options.now ?? (() => new Date());
  const follow = tracker.toFollow(options.limit ?? 500);
  const byList: RolloutToFollow[] = [];
  const byRevision: Array<RolloutToFollow & { revisionId: string }> = [];
  for (const f of follow) {
    if (f.revisionId && client.revisionReads !== false) byRevision.push({ ...f, revisionId: f.revisionId });
    else byList.push(f);
  }
  let requests = 0;
  const failed: Array<{ key: string; deploymentId: string; health: HealthCondition }> = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < byRevision.length && !options.stopped?.()) {
      const f = byRevision[next++]!;
      // A read that finds the endpoint missing sends one request; later ones send none (the client remembers).
      const probing = client.revisionReads !== false;
      const answer = await client.readRevision(f.deploymentId, f.revisionId);
      if (probing) requests += 1;
      if (answer.outcome !== 'found') {
        byList.push(f);
        continue;
      }
      const since = startedAt(answer.revision.created_at, tracker.rolloutSince(f.key, f.revisionId));
      const health = progressDeadline(healthOfRevision(f.revisionId, answer.revision.status), now().getTime(), since, tracker.deadlineMs);
      if (tracker.setHealth(f.key, health) && revisionFailed(answer.revision.status)) failed.push({ key: f.key, deploymentId: f.deploymentId, health });
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.parallel ?? 8, byRevision.length) }, () => worker()));
  for (let i = 0; i < byList.length && !options.stopped?.(); i += 100) {
    const batch = byList.slice(i, i + 100);
    const live = await client.listDeploymentsById(batch.map((f) => f.deploymentId));
    requests += 1;
    const byId = new Map(live.map((d) => [d.id, d]));
    for (const f of batch) {
      const d = byId.get(f.deploymentId);
      if (d) tracker.setHealth(f.key, tracker.healthFromLive(f.key, d));
    }
  }
  for (const { key, health } of failed) await holdFailed(tracker, options.holds, key, health, now());
  return { requests, followed: follow.length, failed: failed.map((f) => ({ key: f.key, deploymentId: f.deploymentId, revisionId: f.health.revisionId! })) };
}

/** Holds the desired state a failed revision was built from, when that state is known (src/core/holds.ts). */
async function holdFailed(tracker: ResourceTracker, holds: FollowOptions['holds'], key: string, health: HealthCondition, now: Date): Promise<void> {
  const desired = tracker.desiredOfRevision(key, health.revisionId!);
  if (!desired) return;
  const name = key.slice(key.indexOf('/') + 1);
  const hold = revisionFailedHold(desired, health.revisionId!, health.revisionStatus!, name, now);
  await holds?.set(key, hold);
  tracker.setHold(key, hold);
}

/**
 * After a reconcile: a failed revision its decision read (a daemon started after the failure) is held like one the
 * poller found, so its desired state is not sent again.
 */
export async function holdFailedRevisions(tracker: ResourceTracker, holds: FollowOptions['holds'], now = new Date()): Promise<void> {
  for (const row of tracker.resources()) {
    const health = row.health;
    if (row.hold || health.status !== 'degraded' || !health.revisionId || !health.revisionStatus || !revisionFailed(health.revisionStatus)) continue;
    await holdFailed(tracker, holds, row.key, health, now);
  }
}
