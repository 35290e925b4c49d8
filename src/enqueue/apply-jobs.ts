// Plan to jobs: which planned changes become jobs, and the job data of each.
import { resourceKey, type DesiredResource, type LiveDeployment, type PlanChange } from '../core/model.js';
import { buildJobData, operationFor } from './jobs.js';
import type { ReconcileJobData } from './schema.js';
import type { LiveSnapshot } from './snapshots.js';

export interface ApplyChange {
  resource: DesiredResource;
  change: PlanChange;
  /** The live deployment's id, when it exists (the worker reads it by id). */
  deploymentId?: string;
  /** The live deployment as the plan listed it: the in-process worker may use it instead of a re-read while fresh. */
  snapshot?: LiveSnapshot;
}

/**
 * Which planned changes become jobs: creates and updates, never noop, orphan, blocked or suspended ones.
 * `liveReadAt` (when the listing of `live` began) lets the jobs of updates carry their live deployment as a
 * snapshot for the in-process workers; without it they read live state themselves.
 */
export function changesToApply(
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly LiveDeployment[] = [],
  liveReadAt?: number,
): ApplyChange[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: ApplyChange[] = [];
  for (const change of changes) {
    if ((change.action !== 'create' && change.action !== 'update') || change.suspended) continue;
    const resource = resources.get(resourceKey(change.kind, change.name));
    if (!resource || resource.suspend) continue;
    const found = change.kind === 'Deployment' ? byName.get(change.name) : undefined;
    if (!found) {
      out.push({ resource, change });
      continue;
    }
    const item: ApplyChange = { resource, change, deploymentId: found.id };
    if (liveReadAt !== undefined && change.action === 'update') item.snapshot = { deployment: found, readAt: liveReadAt };
    out.push(item);
  }
  return out;
}

/** The job data of each change, in order (`manifestDir`: where a literal secret is read back from, see jobs.ts). */
export function applyJobData(changes: readonly ApplyChange[], manifestDir: string): ReconcileJobData[] {
  return changes.map((change) =>
    buildJobData(change.resource, operationFor(change.resource, change.change.action === 'create' ? 'create' : 'update'), {
      origin: 'apply',
      manifestDir,
      ...(change.deploymentId ? { deploymentId: change.deploymentId } : {}),
    }),
  );
}
