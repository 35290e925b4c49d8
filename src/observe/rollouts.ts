// Following rollouts, the I/O half: one poll reads each followed resource once (its latest revision, else the listing by id), for apply --wait and the daemon's poller alike.
import { mapBounded } from '../core/map-bounded.js';
import type { RolloutReading, RolloutTarget } from '../core/rollout.js';
import type { RevisionReads } from '../service/client.js';

/** Ids per list request by deployment_ids (the spec's page). */
const LIST_BATCH = 100;

/** What one poll read: a reading per resource key (none for a resource the service no longer has), and the requests sent. */
export interface RolloutPoll {
  readings: Map<string, RolloutReading>;
  /** One per revision read that reached the service, one per list request. */
  requests: number;
}

export interface PollOptions {
  /** Revision reads in flight at once (default 8). */
  parallel?: number;
  /** The poll stops early once this says so (the daemon stopping). */
  stopped?: () => boolean;
}

/**
 * One poll of `targets`: GET …/revisions/{latest} for each whose latest revision is known, while the service has the
 * endpoint (a service without it is asked once: the client remembers); every other one, and each whose revision is
 * gone, through the list by deployment_ids, 100 per request. The health of each reading is the kind's
 * (src/core/rollout.ts). A failed request fails the poll.
 */
export async function pollRollouts(
  client: RevisionReads,
  targets: readonly RolloutTarget[],
  options: PollOptions = {},
): Promise<RolloutPoll> {
  const readings = new Map<string, RolloutReading>();
  const byList: RolloutTarget[] = [];
  const byRevision: Array<RolloutTarget & { revisionId: string }> = [];
  for (const t of targets) {
    if (t.revisionId && client.revisionReads !== false) byRevision.push({ ...t, revisionId: t.revisionId });
    else byList.push(t);
  }
  let requests = 0;
  await mapBounded(byRevision, options.parallel ?? 8, async (t) => {
    if (options.stopped?.()) return;
    // A read that finds the endpoint missing sends one request; later ones send none (the client remembers).
    const probing = client.revisionReads !== false;
    const answer = await client.readRevision(t.deploymentId, t.revisionId);
    if (probing) requests += 1;
    if (answer.outcome === 'found') {
      const { status, created_at: createdAt, updated_at: updatedAt } = answer.revision;
      readings.set(t.key, {
        revision: { id: t.revisionId, status, createdAt: createdAt ?? null, updatedAt: updatedAt ?? null },
      });
    } else byList.push(t);
  });
  for (let i = 0; i < byList.length && !options.stopped?.(); i += LIST_BATCH) {
    const batch = byList.slice(i, i + LIST_BATCH);
    const live = await client.listDeploymentsById(batch.map((t) => t.deploymentId));
    requests += 1;
    const byId = new Map(live.map((d) => [d.id, d]));
    for (const t of batch) {
      const d = byId.get(t.deploymentId);
      if (d) readings.set(t.key, { live: d });
    }
  }
  return { readings, requests };
}
