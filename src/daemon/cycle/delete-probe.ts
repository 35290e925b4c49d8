// The daemon's DELETE probe when a delete falls due: a probe the service did not answer is unknown, so the due deletes wait and the reconcile goes on.
import type { Plan, PlanChange } from '../../core/model.js';
import { resourceKey } from '../../core/model.js';
import { markPendingDeletes, type PruneGraceResult } from '../../core/prune-grace.js';
import type { DeploymentDeletes } from '../../service/deployments.js';
import type { ServiceClient } from '../../service/client.js';

/** How soon a reconcile asks the DELETE probe again after the service did not answer it (ms). */
export const PROBE_RECHECK_MS = 30_000;

/** What the probe found, or `unknown` with the note the plan and each due delete show. */
export type ProbeAnswer = DeploymentDeletes | { deletes: 'unknown'; note: string };

/**
 * The DELETE probe (ServiceClient.deploymentDeletes: sent once per client until it is answered), or `unknown` when the
 * service did not answer it (network, 429 or 5xx after the transport's retries): never the reconcile's failure.
 */
export async function probeDeletes(client: Pick<ServiceClient, 'deploymentDeletes'>): Promise<ProbeAnswer> {
  try {
    return await client.deploymentDeletes();
  } catch (error) {
    const line = error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
    return {
      deletes: 'unknown',
      note: `delete due, not sent: the service did not answer converge's DELETE probe (${line}); the delete waits, and a reconcile asks again within ${PROBE_RECHECK_MS / 1000}s`,
    };
  }
}

/**
 * The plan when the probe went unanswered: the deletes waiting for their grace as before, the due ones pending too
 * (DeletePending: nothing sent) with the probe's note, the note in the plan's notes, and a reconcile asked for within
 * PROBE_RECHECK_MS (or when a waiting delete falls due, if sooner).
 */
export function deletesWaitingForProbe(
  result: Plan,
  graced: PruneGraceResult,
  note: string,
  now: number,
): { plan: Plan; recheckAt: number } {
  const changes = markPendingDeletes(result.changes, graced.waiting).map((change) =>
    dueAndWaiting(change, graced, note, now),
  );
  return {
    plan: { ...result, changes, notes: [...(result.notes ?? []), note] },
    recheckAt: Math.min(graced.recheckAt ?? Infinity, now + PROBE_RECHECK_MS),
  };
}

function dueAndWaiting(change: PlanChange, graced: PruneGraceResult, note: string, now: number): PlanChange {
  const key = resourceKey(change.kind, change.name);
  const absence = change.action === 'delete' && graced.due.has(key) ? graced.absent.get(key) : undefined;
  if (!absence) return change;
  return {
    ...change,
    reason: note,
    pending_delete: { since: new Date(absence.since).toISOString(), due: new Date(now).toISOString(), confirm: false },
  };
}
