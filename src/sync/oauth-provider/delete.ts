// Deletes one OAuth provider converge owns (--prune): the service deletes by provider_id, so the provider's id decides
// whether the one there is still converge's, before the send and again on a retry after a lost answer.
import { liveChanged } from '../../core/write-premise.js';
import { resourceKey } from '../../core/model.js';
import { ownershipOf } from '../../core/ownership.js';
import type { Deletion, SyncPorts, SyncResult } from '../../core/kinds/ports.js';

const LOST_ANSWER = 'the answer to an earlier attempt was lost; the service shows its delete landed';
const TAKEN = 'another provider holds this provider_id now (another id); nothing deleted';

function result(outcome: SyncResult['outcome'], message?: string): SyncResult {
  return { outcome, new_revision: false, ...(message ? { message } : {}) };
}

async function sendDelete(key: string, deletion: Deletion, ports: SyncPorts): Promise<SyncResult> {
  // The job's intent, asked again right before the DELETE (src/core/job-intent.ts): one that no longer holds sends nothing.
  const refused = await ports.writeGate?.();
  if (refused) {
    // A retry's earlier DELETE did not land (the read still finds the provider): no write is pending any more.
    await ports.appliedState.clearPending(key);
    return refused;
  }
  await ports.appliedState.setPending(key, {
    op: 'delete',
    id: deletion.id,
    secrets: {},
    sentAt: ports.now().toISOString(),
  });
  const answer = await ports.service.deleteProvider(deletion.name);
  await ports.appliedState.forget(key);
  return answer === 'deleted' ? result('deleted') : result('unchanged', 'the service had no such provider any more');
}

/**
 * Deletes provider `deletion.name` when the one the service holds is converge's (its id is `deletion.id`). A retry after
 * a lost answer reads the provider again: gone means the delete landed; another id means someone else's provider
 * took the provider_id since, which is never deleted.
 */
export async function deleteOwnedProvider(deletion: Deletion, ports: SyncPorts): Promise<SyncResult> {
  const key = resourceKey('OAuthProvider', deletion.name);
  const { applied, pending } = await ports.appliedState.read(key);
  const live = await ports.service.getProvider(deletion.name);
  if (pending?.op === 'delete' && pending.id) {
    if (!live) {
      await ports.appliedState.forget(key);
      return result('deleted', LOST_ANSWER);
    }
    if (live.id !== pending.id) {
      await ports.appliedState.forget(key);
      return result('unchanged', TAKEN);
    }
    return sendDelete(key, { ...deletion, id: pending.id }, ports);
  }
  if (!applied) return result('unchanged', 'converge owns no provider of this provider_id any more; nothing deleted');
  if (ownershipOf(applied, deletion.id) !== 'owned')
    return liveChanged(
      `converge's record of OAuthProvider/${deletion.name} names another provider than id ${deletion.id} now; nothing deleted`,
    );
  if (!live) {
    await ports.appliedState.forget(key);
    return result('unchanged', 'the provider is gone already; nothing deleted');
  }
  if (live.id !== deletion.id) return result('unchanged', TAKEN);
  return sendDelete(key, deletion, ports);
}
