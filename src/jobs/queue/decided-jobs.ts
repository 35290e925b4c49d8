// From decided outcomes to job data, the one step apply and the daemon share: which outcome becomes a job, and that job's data.
import type { Outcome } from '../../core/decide.js';
import type { DeleteIntent } from '../../core/job-intent.js';
import { kindOf, type JobWrite } from '../../core/kinds/index.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import type { DesiredResource, PlanChange } from '../../core/model.js';
import { jobWriteOf } from '../../core/write-premise.js';
import type { ReconcileJobData } from '../../store/schema.js';
import { buildDeleteJobData, buildJobData, operationFor } from './jobs.js';

/** One decided write that becomes a job: a write (create, update, adopt, rebuild) of `resource`, or a delete (no resource). */
export interface DecidedJob {
  /** The desired resource; absent on a delete, whose manifest is gone. */
  resource?: DesiredResource;
  change: PlanChange;
  /** The live resource's id, when it exists (the worker reads it by id; a delete is sent to it). */
  deploymentId?: string;
  /** The fingerprint of the desired state (its kind's). */
  desired?: string;
  /** The decided write (a write, not a delete): what the job's step may send. */
  write?: JobWrite;
}

/** What is known of one decided resource besides its outcome. */
export interface DecidedResource {
  change: PlanChange;
  /** Its manifest's resource (absent: no valid manifest declares it). */
  resource: DesiredResource | undefined;
  /** The live resource paired with it (kinds whose live side is listed). */
  liveId: string | undefined;
  /** The fingerprint of its desired state when already known; else computed from `secretHashes` when given. */
  fingerprint?: string | undefined;
  /** The hashes of its desired secret values (the plan input's). */
  secretHashes?: Readonly<Record<string, string>> | undefined;
}

/**
 * The job of an outcome (src/core/decide.ts) whose decision is a write, else undefined: creates, updates, adopts,
 * rebuilds and deletes; never a noop, orphan, blocked or suspended one. A delete goes to the change's live id (none:
 * no job); a write needs the resource's manifest.
 */
export function decidedJob(outcome: Pick<Outcome, 'write'>, known: DecidedResource): DecidedJob | undefined {
  const { write } = outcome;
  const { change, resource } = known;
  if (!write) return undefined;
  if (write.op === 'delete') return change.id ? { change, deploymentId: change.id } : undefined;
  if (!resource) return undefined;
  const job: DecidedJob = { resource, change, write: jobWriteOf(write, change) };
  if (known.liveId) job.deploymentId = known.liveId;
  const desired =
    known.fingerprint ??
    (known.secretHashes ? kindOf(resource.kind).fingerprint(resource, known.secretHashes) : undefined);
  if (desired) job.desired = desired;
  return job;
}

/** Where a job comes from, how its deletes go (the setting prune_tracing_projects), and the manifests it was planned from. */
export interface JobDataOptions {
  origin: string;
  deleteTracingProjects?: boolean;
  /** The manifests the change was planned from (git commit or content hash): stamped on every write job. */
  manifestVersion?: ManifestVersion | undefined;
  /** A delete the daemon decided: why, and the absence it was decided on (checked again when the job runs). */
  intent?: DeleteIntent | undefined;
}

/** The job data of a decided job (the resource with secret references, never a value: src/jobs/queue/jobs.ts). */
export function jobDataOf(job: DecidedJob, options: JobDataOptions): ReconcileJobData {
  const { resource, change, deploymentId, desired, write } = job;
  if (!resource) {
    const deletion = {
      kind: change.kind,
      name: change.name,
      id: deploymentId!,
      deleteTracingProject: options.deleteTracingProjects === true,
    };
    return buildDeleteJobData(deletion, {
      origin: options.origin,
      ...(options.intent ? { intent: options.intent } : {}),
    });
  }
  if (!write) throw new TypeError(`${change.kind}/${change.name}: a change to write carries its decided write`);
  return buildJobData(resource, operationFor(resource, write.op === 'create' ? 'create' : 'update'), {
    origin: options.origin,
    write,
    ...(deploymentId ? { deploymentId } : {}),
    ...(desired ? { desired } : {}),
    ...(options.manifestVersion ? { manifestVersion: options.manifestVersion } : {}),
  });
}
