// The table of the kinds' I/O steps (sync and remove), keyed by kind like the pure table in src/core/kinds/index.ts.
import type { DeploymentResource, DesiredResource, ProviderResource, ResourceKind } from '../core/model.js';
import type { Deletion, JobWrite, LostWritePort, ServicePort, SyncPorts, SyncResult } from '../core/kinds/ports.js';
import { deleteOwnedDeployment } from './deployment/delete.js';
import { settleLostDeploymentWrite, type LostWriteSettle } from './deployment/settle.js';
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
   * Sends the decided `write`, level-triggered: reads the live resource right before it writes, settles a write of an
   * earlier attempt whose answer was lost, sends what of the decided write live state still lacks (nothing when none),
   * records it. It decides nothing: live state that no longer fits the write (another field differs, the resource is
   * gone or another took its name, the plan would block it now) is a result with notRun: live_changed, nothing sent.
   * `liveId`: the live resource's id the decision paired.
   */
  sync(resource: R, write: JobWrite, ports: SyncPorts, liveId?: string): Promise<SyncResult>;
  /**
   * Deletes the live resource `deletion.id` converge owns (--prune), by id only, settling an earlier delete whose answer
   * was lost. Absent: converge cannot delete resources of this kind.
   */
  remove?(deletion: Deletion, ports: SyncPorts): Promise<SyncResult>;
  /**
   * Settles the write the job `jobId` marked pending and never recorded (it died before the answer), reading only:
   * landed, it is recorded and the job's result returned; not landed, the pending write is removed. Never writes to the
   * service. Absent: the kind's lost writes are settled only by its next sync.
   */
  settleLost?(
    key: string,
    name: string,
    jobId: string,
    ports: LostWritePorts,
    liveId?: string,
  ): Promise<LostWriteSettle>;
}

/** What a settle that only reads reaches: the service's reads, the applied state's compare-and-settle. */
export interface LostWritePorts {
  service: ServicePort;
  appliedState: LostWritePort;
}

const syncSteps = {
  Deployment: {
    sync: syncDeployment,
    remove: deleteOwnedDeployment,
    settleLost: settleLostDeploymentWrite,
  } satisfies KindSyncSteps<DeploymentResource>,
  OAuthProvider: {
    sync(resource, write, ports) {
      return syncProvider(resource, write, ports);
    },
    remove: deleteOwnedProvider,
  } satisfies KindSyncSteps<ProviderResource>,
} satisfies Record<ResourceKind, KindSyncSteps<never>>;

/** The I/O steps of one kind (typed for any resource: the caller passes a resource of that kind). */
export function syncStepsOf(kind: ResourceKind): KindSyncSteps {
  return syncSteps[kind];
}
