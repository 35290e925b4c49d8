// zod schemas of what converge keeps in Redis: job payloads (secret references only), results, applied and pending records.
import { z } from 'zod';
import { JOB_OPERATIONS, JobResource, SyncOutcome, SyncResult } from '../core/kinds/index.js';

export { JobResource, JobSecretRef, JobSecretSource, PendingWrite } from '../core/kinds/index.js';

/** The operation the plan expected when the job was enqueued (its kind's, see src/core/kinds); the worker recomputes it (level-triggered). */
export const JobOperation = z.enum(JOB_OPERATIONS);
export type JobOperation = z.infer<typeof JobOperation>;

/** Data of one reconcile-resource job. Holds no secret value (see JobSecretSource). */
export const ReconcileJobData = z.strictObject({
  version: z.literal(1),
  /** resourceKey(kind, name), also the BullMQ deduplication id. */
  key: z.string().min(1),
  operation: JobOperation,
  resource: JobResource,
  /** The live deployment's id when the plan knew it: read by deployment_ids (one small page) instead of name_contains. */
  deploymentId: z.string().optional(),
  /**
   * The fingerprint of the desired state the job carries (src/core/kinds: a hash over the resource and the hashes of
   * its secret values, never a value): a resync skips a resource whose waiting or active job carries the same one.
   */
  desired: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  /** Who enqueued: "apply", "daemon", ... (for status and logs). */
  origin: z.string(),
  enqueuedAt: z.string(),
  /**
   * The fencing token of the leader lease the daemon held when it enqueued (src/enqueue/lease.ts); absent for `apply`,
   * which takes no lease. A worker drops a job whose token is older than the newest one handed out.
   */
  fence: z.number().int().positive().optional(),
  /** The resource's desired-state sequence (a Redis counter, set by the enqueuer): a job with an older one is superseded. */
  seq: z.number().int().positive().optional(),
});
export type ReconcileJobData = z.infer<typeof ReconcileJobData>;

/** What a job did: the sync result of its resource (src/core/kinds/ports.ts). */
export const JobOutcome = SyncOutcome;
export type JobOutcome = SyncOutcome;
export const ReconcileJobResult = SyncResult;
export type ReconcileJobResult = SyncResult;

/** AppliedRecord (src/core/model.ts) as stored: hashes only. */
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

export const StoredAppliedRecord = z.strictObject({
  secrets: z.record(z.string(), Sha256Hex),
  definitionHash: Sha256Hex.optional(),
  /** Field path -> hashes of what was sent and answered (three-way comparison); absent in older records. */
  fields: z.record(z.string(), z.strictObject({ sent: Sha256Hex, answered: Sha256Hex })).optional(),
  appliedAt: z.string(),
});
export type StoredAppliedRecord = z.infer<typeof StoredAppliedRecord>;
