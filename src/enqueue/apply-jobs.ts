// Plan to jobs: which planned changes become jobs, and the job data of each.
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource, type LiveDeployment, type PlanChange } from '../core/model.js';
import { buildJobData, operationFor } from './jobs.js';
import type { ReconcileJobData } from './schema.js';

export interface ApplyChange {
  resource: DesiredResource;
  change: PlanChange;
  /** The live deployment's id, when it exists (the worker reads it by id). */
  deploymentId?: string;
}

/** Which planned changes become jobs: creates and updates, never noop, orphan, blocked or suspended ones. */
export function changesToApply(
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly LiveDeployment[] = [],
): ApplyChange[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: ApplyChange[] = [];
  for (const change of changes) {
    if ((change.action !== 'create' && change.action !== 'update') || change.suspended) continue;
    const resource = resources.get(resourceKey(change.kind, change.name));
    if (!resource || resource.suspend) continue;
    const found = kindOf(change.kind).listed ? byName.get(change.name) : undefined;
    out.push(found ? { resource, change, deploymentId: found.id } : { resource, change });
  }
  return out;
}

/** The job data of each change, in order. */
export function applyJobData(changes: readonly ApplyChange[]): ReconcileJobData[] {
  return changes.map((change) =>
    buildJobData(change.resource, operationFor(change.resource, change.change.action === 'create' ? 'create' : 'update'), {
      origin: 'apply',
      ...(change.deploymentId ? { deploymentId: change.deploymentId } : {}),
    }),
  );
}
