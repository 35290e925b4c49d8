// Job payloads and options: one reconcile job per resource, its id, its data, its retry and deduplication options.
import { randomBytes } from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import { inListing, kindOf, type Deletion, type JobWrite } from '../../core/kinds/index.js';
import { objectHash } from '../../core/hash.js';
import type { DeleteIntent } from '../../core/job-intent.js';
import { resourceKey, type DesiredResource } from '../../core/model.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import { JobOperation, ReconcileJobData } from '../../store/schema.js';

/** The one queue every converge process (apply, daemon, worker processes) shares on a Redis prefix. */
export const QUEUE_NAME = 'converge-apply';

/** Name of the custom backoff strategy (exponential with full jitter) every converge worker registers. */
export const BACKOFF_TYPE = 'converge-jitter';

/** Retry settings of a job (src/cli/settings.ts Settings satisfies it). */
export interface JobSettings {
  /** Attempts before the job fails (rate-limit pauses do not count). */
  attempts: number;
  /** First retry delay in ms; doubles per attempt, with full jitter. */
  backoff: number;
}

/** How long finished jobs are kept for `apply` to read their result and for status views. */
const KEEP_COMPLETED = { age: 24 * 3600, count: 10_000 };
const KEEP_FAILED = { age: 7 * 24 * 3600, count: 10_000 };

/** Random bytes for job ids, drawn a block at a time (one randomBytes call per 1,024 ids, not one per id). */
const idRandom = { bytes: Buffer.alloc(0), used: 0 };

function randomHex8(): string {
  if (idRandom.used + 4 > idRandom.bytes.length) {
    idRandom.bytes = randomBytes(4_096);
    idRandom.used = 0;
  }
  idRandom.used += 4;
  return idRandom.bytes.toString('hex', idRandom.used - 4, idRandom.used);
}

/** BullMQ job ids may not contain ':'; resource names normally hold none, but a provider id might. */
export function jobIdFor(key: string): string {
  return `${key.replace(/%/g, '%25').replace(/:/g, '%3A')}@${Date.now().toString(36)}-${randomHex8()}`;
}

/** The operation a plan's create/update of a resource maps to (its kind's). */
export function operationFor(resource: DesiredResource, action: 'create' | 'update'): JobOperation {
  return JobOperation.parse(kindOf(resource.kind).operation(resource, action));
}

export function buildJobData(
  resource: DesiredResource,
  operation: JobOperation,
  context: {
    origin: string;
    write: JobWrite;
    deploymentId?: string;
    now?: Date;
    desired?: string;
    manifestVersion?: ManifestVersion;
  },
): ReconcileJobData {
  const kind = kindOf(resource.kind);
  const data: Record<string, unknown> = {
    version: 1,
    key: resourceKey(resource.kind, resource.name),
    operation,
    resource: kind.jobPayload(resource),
    write: context.write,
    origin: context.origin,
    enqueuedAt: (context.now ?? new Date()).toISOString(),
  };
  if (context.deploymentId && inListing(resource.kind)) data.deploymentId = context.deploymentId;
  if (context.desired) data.desired = context.desired;
  if (context.manifestVersion) data.manifestVersion = context.manifestVersion;
  return ReconcileJobData.parse(data);
}

/**
 * The job data of a delete (--prune): the deletion with its live id, no resource. Its `desired` fingerprint (a hash of
 * the deletion) lets a resync skip a delete already waiting or running.
 */
export function buildDeleteJobData(
  deletion: Deletion,
  context: { origin: string; now?: Date; desired?: string; intent?: DeleteIntent },
): ReconcileJobData {
  const { intent } = context;
  return ReconcileJobData.parse({
    version: 1,
    key: resourceKey(deletion.kind, deletion.name),
    operation: kindOf(deletion.kind).operations.find((op) => op.startsWith('delete-')) ?? 'delete-deployment',
    remove: deletion,
    deploymentId: deletion.id,
    // Another intent is another delete decided: a waiting job of the older one is not taken for it.
    desired: context.desired ?? objectHash(intent ? { delete: deletion, intent } : { delete: deletion }),
    origin: context.origin,
    enqueuedAt: (context.now ?? new Date()).toISOString(),
    ...(intent ? { intent } : {}),
  });
}

export function jobOptions(settings: JobSettings, key: string, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: Math.max(1, settings.attempts),
    backoff: { type: BACKOFF_TYPE, delay: settings.backoff },
    // keepLastIfActive: a job added while this resource's job runs is kept (newest data only) and started when
    // the running one finishes, so at most one job per resource is active. replace: a job waiting out a delay
    // (a retry backoff) is replaced by the newer one.
    deduplication: { id: key, keepLastIfActive: true, replace: true },
    removeOnComplete: KEEP_COMPLETED,
    removeOnFail: KEEP_FAILED,
    stackTraceLimit: 0,
  };
}
