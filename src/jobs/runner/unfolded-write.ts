// A former leader's write recorded in the applied state and never folded: its job's result, from the record, read only.
import type { LostWritePort, ServicePort } from '../../core/kinds/ports.js';
import type { ResourceState } from '../../core/resource-state-model.js';
import type { AppliedStateStore } from '../../store/applied-state.js';
import type { ResourceFolds } from '../../store/resource-folds.js';
import type { ReconcileJobData, ReconcileJobResult } from '../../store/schema.js';
import { settleLostWrite, settlesLostWrites } from '../../sync/sync.js';

/** The result message of a write the former leader recorded and did not fold. */
export const UNFOLDED_WRITE =
  'its write was recorded by the former leader, which died before folding it; folded by this worker';

/** Whether the state shows the result of `jobId` (completed or failed): then there is nothing left to fold. */
export function showsResultOf(state: ResourceState | undefined, jobId: string): boolean {
  return state?.job?.id === jobId && state.job.state !== 'queued';
}

/** The last revision a folded job of the resource started (else the one its health follows), as the state knows it. */
function knownRevision(state: ResourceState | undefined): string | undefined {
  return state?.revisionDesired?.revisionId ?? state?.health.revisionId;
}

/** A job's result to fold, and the check (asked inside the fold, at each read) that it was not folded meanwhile. */
export interface UnfoldedWrite {
  answer: ReconcileJobResult;
  /** The time of the applied record that names the job's write (Redis' clock). */
  appliedAt?: string;
  unless?: (state: ResourceState | undefined) => boolean;
}

/**
 * The result of the Deployment job `jobId` whose write the applied record names (stamped with its id) while nothing of
 * it is pending and its resource's state does not show its result: its leader got the answer, recorded it and died
 * before folding it. Created when its decided write was a create and the record says converge created it, else
 * updated; whether a revision started is read from the service (GET by id only): its latest revision is not the one
 * the state knows. Undefined when there is nothing to fold (another job's record, a pending write, already folded).
 */
export async function unfoldedWrite(
  ports: {
    store: Pick<AppliedStateStore, 'read'>;
    folds: Pick<ResourceFolds, 'read'>;
    service: Pick<ServicePort, 'readDeployment'>;
  },
  data: ReconcileJobData,
  jobId: string,
): Promise<UnfoldedWrite | undefined> {
  // The kinds whose lost writes are settled by reading (src/sync/kinds.ts settleLost): their writes are folded so too.
  if (!data.resource || !settlesLostWrites(data.resource.kind) || !data.write) return undefined;
  const { applied, pending } = await ports.store.read(data.key);
  if (pending || applied?.jobId !== jobId) return undefined;
  const state = (await ports.folds.read([data.key])).get(data.key)?.state;
  if (showsResultOf(state, jobId)) return undefined;
  const liveId = applied.ownership?.id ?? data.deploymentId;
  const live = liveId === undefined ? undefined : await ports.service.readDeployment(liveId);
  const created = data.write.op === 'create' && applied.ownership?.origin === 'created';
  const latest = live?.latest_revision_id ?? null;
  const answer: ReconcileJobResult = {
    outcome: created ? 'created' : 'updated',
    new_revision: created || (latest !== null && latest !== knownRevision(state)),
    message: UNFOLDED_WRITE,
  };
  if (live) {
    answer.deploymentId = live.id;
    answer.latestRevisionId = latest;
  }
  return { answer, appliedAt: applied.appliedAt, unless: (now) => showsResultOf(now, jobId) };
}

/**
 * What a former leader's job (dropped, never run) wrote, found reading only: its write still pending, settled from
 * live state (src/sync/sync.ts settleLostWrite: recorded when it landed), else its write recorded and never folded
 * (unfoldedWrite; needs the folds). Undefined when it wrote nothing to record or fold.
 */
export async function settleFormerLeaderJob(
  ports: {
    service: ServicePort;
    appliedState: LostWritePort;
    store: Pick<AppliedStateStore, 'read'>;
    folds?: Pick<ResourceFolds, 'read'>;
  },
  data: ReconcileJobData,
  jobId: string,
): Promise<UnfoldedWrite | undefined> {
  if (!data.resource) return undefined;
  const resource = { kind: data.resource.kind, name: data.resource.name, key: data.key };
  const settled = await settleLostWrite(resource, jobId, ports, data.deploymentId);
  if (settled !== undefined) return settled.landed ? { answer: settled.landed } : undefined;
  return ports.folds
    ? unfoldedWrite({ store: ports.store, folds: ports.folds, service: ports.service }, data, jobId)
    : undefined;
}
