// The table of the kinds' I/O steps (sync and remove), keyed by kind like the pure table in src/core/kinds/index.ts.
import type { DeploymentResource, DesiredResource, ProviderResource, ResourceKind } from '../core/model.js';
import type { SyncOptions } from '../core/kinds/kind.js';
import type { Deletion, SyncPorts, SyncResult } from '../core/kinds/ports.js';
import { deleteOwnedDeployment } from './deployment/delete.js';
import { syncDeployment } from './deployment/sync.js';
import { deleteOwnedProvider } from './oauth-provider/delete.js';
import { syncProvider } from './oauth-provider/sync.js';

/**
 * The steps of one kind that talk to the service and the applied-state store, every I/O injected through its ports
 * (src/core/kinds/ports.ts). Methods (not function properties), so a kind of one resource type stands in the table
 * for the kind of any.
 */
export interface KindSyncSteps<R extends DesiredResource = DesiredResource> {
  /**
   * Brings the live resource to the manifest, level-triggered: reads what it can right before it writes, settles a
   * write of an earlier attempt whose answer was lost, sends the minimal change, records it. `liveId`: the live
   * resource's id when the plan knew it. Throws BlockedError when it cannot succeed as things stand.
   */
  sync(resource: R, ports: SyncPorts, liveId?: string, options?: SyncOptions): Promise<SyncResult>;
  /**
   * Deletes the live resource `deletion.id` converge owns (--prune), by id only, settling an earlier delete whose answer
   * was lost. Absent: converge cannot delete resources of this kind.
   */
  remove?(deletion: Deletion, ports: SyncPorts): Promise<SyncResult>;
}

const syncSteps = {
  Deployment: {
    sync: syncDeployment,
    remove: deleteOwnedDeployment,
  } satisfies KindSyncSteps<DeploymentResource>,
  OAuthProvider: {
    sync(resource, ports) {
      return syncProvider(resource, ports);
    },
    remove: deleteOwnedProvider,
  } satisfies KindSyncSteps<ProviderResource>,
} satisfies Record<ResourceKind, KindSyncSteps<never>>;

/** The I/O steps of one kind (typed for any resource: the caller passes a resource of that kind). */
export function syncStepsOf(kind: ResourceKind): KindSyncSteps {
  return syncSteps[kind];
}
