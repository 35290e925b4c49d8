// Plan to jobs: which planned changes become jobs, and the job data of each.
import { kindOf, liveOf, type JobWrite } from '../core/kinds/index.js';
import { jobWriteOf } from '../core/write-premise.js';
import type { Outcome } from '../core/decide.js';
import { resourceKey, type DesiredResource, type LiveDeployment, type PlanChange } from '../core/model.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { buildDeleteJobData, buildJobData, operationFor } from '../jobs/queue/jobs.js';
import type { ReconcileJobData } from '../store/schema.js';

/** One planned change that becomes a job: a write (create, update, adopt) of `resource`, or a delete (no resource). */
export interface ApplyChange {
  /** The desired resource; absent on a delete, whose manifest is gone. */
  resource?: DesiredResource;
  change: PlanChange;
  /** The live deployment's id, when it exists (the worker reads it by id; a delete is sent to it). */
  deploymentId?: string;
  /** The fingerprint of the desired state (its kind's; set when the plan's secret hashes are given). */
  desired?: string;
  /** The decided write (a write, not a delete): what the job's step may send. */
  write?: JobWrite;
}

/** How apply's jobs delete (the setting prune_tracing_projects) and where they come from. */
export interface ApplyJobOptions {
  deleteTracingProjects?: boolean;
  origin?: string;
  /** The manifests the changes were planned from (git commit or content hash): stamped on every write job. */
  manifestVersion?: ManifestVersion;
}

/**
 * Which planned changes become jobs: those whose outcome (src/core/decide.ts) decided a write: creates, updates,
 * adopts and deletes; never noop, orphan, blocked or suspended ones.
 */
export function changesToApply(
  outcomes: ReadonlyMap<string, Pick<Outcome, 'write'>>,
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly LiveDeployment[] = [],
  /** Per resource, the hashes of its desired secret values (the plan input's): each change then carries its fingerprint. */
  secretHashes?: ReadonlyMap<string, Record<string, string>>,
): ApplyChange[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: ApplyChange[] = [];
  for (const change of changes) {
    const key = resourceKey(change.kind, change.name);
    const write = outcomes.get(key)?.write;
    if (!write) continue;
    if (write.op === 'delete') {
      if (change.id) out.push({ change, deploymentId: change.id });
      continue;
    }
    const resource = resources.get(key);
    if (!resource) continue;
    const found = liveOf(change.kind, change.name, byName);
    const item: ApplyChange = { resource, change, write: jobWriteOf(write, change), ...(found ? { deploymentId: found.id } : {}) };
    if (secretHashes) item.desired = kindOf(resource.kind).fingerprint(resource, secretHashes.get(key) ?? {});
    out.push(item);
  }
  return out;
}

/** The job data of each change, in order; every job carries the manifests the plan read (`manifestVersion`). */
export function applyJobData(changes: readonly ApplyChange[], options: ApplyJobOptions = {}): ReconcileJobData[] {
  const origin = options.origin ?? 'apply';
  const stamp = options.manifestVersion ? { manifestVersion: options.manifestVersion } : {};
  return changes.map(({ resource, change, deploymentId, desired, write }) => {
    if (!resource) {
      const deletion = { kind: change.kind, name: change.name, id: deploymentId!, deleteTracingProject: options.deleteTracingProjects === true };
      return buildDeleteJobData(deletion, { origin });
    }
    if (!write) throw new TypeError(`${change.kind}/${change.name}: a change to write carries its decided write`);
    return buildJobData(resource, operationFor(resource, write.op === 'create' ? 'create' : 'update'), {
      origin,
      write,
      ...(deploymentId ? { deploymentId } : {}),
      ...(desired ? { desired } : {}),
      ...stamp,
    });
  });
}
