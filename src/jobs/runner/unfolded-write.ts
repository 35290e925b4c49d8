// A former leader's write recorded in the applied state and never folded: its job's result, from the record alone.
import type { LostWritePort, ServicePort } from '../../core/kinds/ports.js';
import type { ResourceState } from '../../core/resource-state-model.js';
import type { AppliedStateStore } from '../../store/applied-state.js';
import type { ResourceFolds } from '../../store/resource-folds.js';
import type { ReconcileJobData, ReconcileJobResult } from '../../store/schema.js';
import { settleLostWrite } from '../../sync/sync.js';

/** The result message of a write the former leader recorded and did not fold. */
export const UNFOLDED_WRITE =
  'its write was recorded by the former leader, which died before folding it; folded by this worker';

/** Whether the state shows the result of `jobId` (completed or failed): then there is nothing left to fold. */
export function showsResultOf(state: ResourceState | undefined, jobId: string): boolean {
  return state?.job?.id === jobId && state.job.state !== 'queued';
}

/** A job's result to fold, and the check (asked inside the fold, at each read) that it was not folded meanwhile. */
export interface UnfoldedWrite {
  answer: ReconcileJobResult;
  /** The time of the applied record that names the job's write (Redis' clock). */
  appliedAt?: string;
  unless?: (state: ResourceState | undefined) => boolean;
}

/**
 * The result of the job `jobId` whose write the applied record names (stamped with its id) while nothing of it is
 * pending and its resource's state does not show its result: its leader got the answer, recorded it and died before
 * folding it. The result is what the record says that answer said (its `answer`, recorded with the write by the kind's
 * sync), read from Redis alone: nothing is asked of the service, nothing guessed. Undefined when there is nothing to
 * fold (another job's record, a pending write, already folded) or the record says nothing of the answer (an older
 * converge's, or a kind whose sync records none: the next reconcile reads the record).
 */
export async function unfoldedWrite(
  ports: { store: Pick<AppliedStateStore, 'read'>; folds: Pick<ResourceFolds, 'read'> },
  data: ReconcileJobData,
  jobId: string,
): Promise<UnfoldedWrite | undefined> {
  const { applied, pending } = await ports.store.read(data.key);
  if (pending || applied?.jobId !== jobId || !applied.answer) return undefined;
  const state = (await ports.folds.read([data.key])).get(data.key)?.state;
  if (showsResultOf(state, jobId)) return undefined;
  const answer: ReconcileJobResult = { ...applied.answer, message: UNFOLDED_WRITE };
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
  return ports.folds ? unfoldedWrite({ store: ports.store, folds: ports.folds }, data, jobId) : undefined;
}
