// Deletes one Deployment converge owns (--prune), by id only, with lost-answer safety: a retry re-reads the id it sent to.
import { liveChanged } from '../../core/write-premise.js';
import { resourceKey } from '../../core/model.js';
import { ownershipOf } from '../../core/ownership.js';
import type { Deletion, SyncPorts, SyncResult } from '../../core/kinds/ports.js';

const LOST_ANSWER = 'the answer to an earlier attempt was lost; the service shows its delete landed';

function result(outcome: SyncResult['outcome'], id: string, message?: string): SyncResult {
  return { outcome, new_revision: false, deploymentId: id, ...(message ? { message } : {}) };
}

/** Sends the DELETE of `id`, marked pending first (with the id), and forgets the resource once the service took it. */
async function sendDelete(key: string, deletion: Deletion, id: string, ports: SyncPorts): Promise<SyncResult> {
  // The job's intent, asked again right before the DELETE (src/core/job-intent.ts): one that no longer holds sends nothing.
  const refused = await ports.writeGate?.();
  if (refused) {
    // A retry's earlier DELETE did not land (the read still finds the deployment): no write is pending any more.
    await ports.appliedState.clearPending(key);
    return { ...refused, deploymentId: id };
  }
  await ports.appliedState.setPending(key, { op: 'delete', id, secrets: {}, sentAt: ports.now().toISOString() });
  const answer = await ports.service.deleteDeployment(id, { deleteTracingProject: deletion.deleteTracingProject });
  await ports.appliedState.forget(key);
  return answer === 'deleted'
    ? result('deleted', id)
    : result('unchanged', id, 'the service had no deployment of this id any more, or was deleting it already');
}

/**
 * Deletes the deployment of `deletion.id` when converge owns it. An earlier attempt whose answer was lost is settled by
 * re-reading the id it recorded: gone or being deleted means it landed; still there, the same id is sent again. A
 * deployment that took the name since has another id and is never touched.
 */
export async function deleteOwnedDeployment(deletion: Deletion, ports: SyncPorts): Promise<SyncResult> {
  const key = resourceKey('Deployment', deletion.name);
  const { applied, pending } = await ports.appliedState.read(key);
  if (pending?.op === 'delete' && pending.id) {
    const live = await ports.service.readDeployment(pending.id);
    if (!live || live.status === 'AWAITING_DELETE') {
      await ports.appliedState.forget(key);
      return result('deleted', pending.id, LOST_ANSWER);
    }
    return sendDelete(key, deletion, pending.id, ports);
  }
  if (!applied)
    return result('unchanged', deletion.id, 'converge owns no deployment of this name any more; nothing deleted');
  if (ownershipOf(applied, deletion.id) !== 'owned') {
    return liveChanged(
      `converge's record of Deployment/${deletion.name} names another deployment than id ${deletion.id} now; nothing deleted`,
    );
  }
  const live = await ports.service.readDeployment(deletion.id);
  if (!live || live.name !== deletion.name) {
    await ports.appliedState.forget(key);
    return result('unchanged', deletion.id, 'the deployment is gone already; nothing deleted');
  }
  if (live.status === 'AWAITING_DELETE') {
    await ports.appliedState.forget(key);
    return result('unchanged', deletion.id, 'the service is deleting it already');
  }
  return sendDelete(key, deletion, deletion.id, ports);
}
