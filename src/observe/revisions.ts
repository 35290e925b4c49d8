// Health is read, not guessed: the latest revision of each planned resource whose latest is not its active one, one request each, none for healthy ones.
import { mapBounded } from '../core/map-bounded.js';
import { kindOf, liveOf, type RevisionReading } from '../core/kinds/index.js';
import { resourceKey, type ListedDeployment, type PlanChange } from '../core/model.js';
import type { ServiceClient } from '../service/client.js';

/** What was read: the latest revision of each resource (by resourceKey) whose latest was not active, and the requests sent. */
export interface LatestRevisions {
  readings: Map<string, RevisionReading>;
  requests: number;
}

export interface ReadRevisionsOptions {
  /** A revision already known (read by the poller, or the hold of its failure): not read again. */
  known?: (key: string, revisionId: string) => boolean;
  /** Reads in flight at once (default 8). */
  parallel?: number;
}

/**
 * Reads GET …/revisions/{latest} for each planned resource (orphans left out) whose kind says its latest revision is
 * not active. A service without the endpoint is asked once (the client remembers, and says so once): health then
 * falls back to the listing and the progress deadline. A revision gone meanwhile is left unread.
 */
export async function readLatestRevisions(
  client: Pick<ServiceClient, 'readRevision'>,
  changes: readonly PlanChange[],
  live: readonly ListedDeployment[],
  options: ReadRevisionsOptions = {},
): Promise<LatestRevisions> {
  const liveByName = new Map(live.map((d) => [d.name, d]));
  const targets: Array<{ key: string; deploymentId: string; revisionId: string }> = [];
  for (const change of changes) {
    if (change.action === 'orphan' || change.action === 'delete') continue;
    const found = liveOf(change.kind, change.name, liveByName);
    const revisionId = kindOf(change.kind).revisionToRead(found);
    const key = resourceKey(change.kind, change.name);
    if (found && revisionId && options.known?.(key, revisionId) !== true)
      targets.push({ key, deploymentId: found.id, revisionId });
  }
  const readings = new Map<string, RevisionReading>();
  let requests = 0;
  await mapBounded(targets, options.parallel ?? 8, async (target) => {
    // A failed read leaves health to the listing: health is a report, never a reason to fail the plan.
    const answer = await client.readRevision(target.deploymentId, target.revisionId).catch(() => undefined);
    // Once the client knows the endpoint is missing it answers no-endpoint with status 0, without a request.
    if (!answer || answer.outcome !== 'no-endpoint' || answer.status !== 0) requests += 1;
    if (answer?.outcome === 'found')
      readings.set(target.key, {
        id: target.revisionId,
        status: answer.revision.status,
        createdAt: answer.revision.created_at ?? null,
        updatedAt: answer.revision.updated_at ?? null,
      });
  });
  return { readings, requests };
}
