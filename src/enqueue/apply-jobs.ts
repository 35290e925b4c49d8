// Plan to jobs: which planned changes become jobs, and the job data of each.
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource, type LiveDeployment, type PlanChange } from '../core/model.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { buildJobData, operationFor } from './jobs.js';
import type { ReconcileJobData } from './schema.js';

export interface ApplyChange {
  resource: DesiredResource;
  change: PlanChange;
  /** The live deployment's id, when it exists (the worker reads it by id). */
  deploymentId?: string;
  /** The fingerprint of the desired state (its kind's; set when the plan's secret hashes are given). */
  desired?: string;
}

/** Which planned changes become jobs: creates and updates, never noop, orphan, blocked or suspended ones. */
export function changesToApply(
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly LiveDeployment[] = [],
  /** Per resource, the hashes of its desired secret values (the plan input's): each change then carries its fingerprint. */
  secretHashes?: ReadonlyMap<string, Record<string, string>>,
): ApplyChange[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: ApplyChange[] = [];
  for (const change of changes) {
    if ((change.action !== 'create' && change.action !== 'update') || change.suspended) continue;
    const key = resourceKey(change.kind, change.name);
    const resource = resources.get(key);
    if (!resource || resource.suspend) continue;
    const found = kindOf(change.kind).listed ? byName.get(change.name) : undefined;
    const item: ApplyChange = found ? { resource, change, deploymentId: found.id } : { resource, change };
    if (secretHashes) item.desired = kindOf(resource.kind).fingerprint(resource, secretHashes.get(key) ?? {});
    out.push(item);
  }
  return out;
}

/** The job data of each change, in order; `manifestVersion`: the manifests the plan read (stamped on every job). */
export function applyJobData(changes: readonly ApplyChange[], manifestVersion?: ManifestVersion): ReconcileJobData[] {
  return changes.map((change) =>
    buildJobData(change.resource, operationFor(change.resource, change.change.action === 'create' ? 'create' : 'update'), {
      origin: 'apply',
      ...(change.deploymentId ? { deploymentId: change.deploymentId } : {}),
      ...(change.desired ? { desired: change.desired } : {}),
      ...(manifestVersion ? { manifestVersion } : {}),
    }),
  );
}
