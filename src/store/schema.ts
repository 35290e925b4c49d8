// zod schemas of what converge keeps in Redis: job payloads (secret references only), results, applied and pending records.
import { z } from 'zod';
import {
  Deletion,
  JOB_OPERATIONS,
  JobResource,
  JobWrite,
  SecretSourceNameSchema,
  SyncResult,
} from '../core/kinds/index.js';
import { ManifestVersion } from '../core/manifest-version.js';

export { PendingWrite } from '../core/kinds/index.js';

/** The operation the plan expected when the job was enqueued (its kind's, see src/core/kinds); the worker recomputes it (level-triggered). */
export const JobOperation = z.enum(JOB_OPERATIONS);
export type JobOperation = z.infer<typeof JobOperation>;

/** A delete's intent as a job carries it (src/core/job-intent.ts DeleteIntent): times, a content id, a live id. */
export const StoredDeleteIntent = z.strictObject({
  by: z.enum(['grace', 'confirmed']),
  since: z.number().int().nonnegative(),
  manifests: z.string().min(1).max(200),
  id: z.string().min(1).max(200),
});

/** Data of one reconcile-resource job. Holds no secret value (see JobSecretSource). */
export const ReconcileJobData = z
  .strictObject({
    version: z.literal(1),
    /** resourceKey(kind, name), also the BullMQ deduplication id. */
    key: z.string().min(1),
    operation: JobOperation,
    /** The desired resource (create, update, adopt). Absent on a delete job, which names its deletion instead. */
    resource: JobResource.optional(),
    /** A delete (--prune): the resource converge owns and its live id; never a name alone. */
    remove: Deletion.optional(),
    /**
     * The write the decision made (src/core/write-premise.ts): the kind's step sends only what of it live state still
     * lacks, and nothing when live state no longer fits it. Absent on a delete, and on jobs of older versions (such a job
     * is not run: the next reconcile decides again).
     */
    write: JobWrite.optional(),
    /** Older versions' adopt setting: ignored (the decision applies adopt: explicit before a job exists). */
    adoptPolicy: z.enum(['auto', 'explicit']).optional(),
    /** The live deployment's id when the plan knew it: read by deployment_ids (one small page) instead of name_contains. */
    deploymentId: z.string().optional(),
    /**
     * The fingerprint of the desired state the job carries (src/core/kinds: a hash over the resource and the hashes of
     * its secret values, never a value): a resync skips a resource whose waiting or active job carries the same one.
     */
    desired: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    /** Older versions' rebuild request: ignored (`write.op` is `rebuild`). */
    rebuild: z.literal(true).optional(),
    /** The manifests the desired state was read from (git commit or content hash, and when): recorded with each write. */
    manifestVersion: ManifestVersion.optional(),
    /** The W3C traceparent of the reconcile that enqueued the job (tracing on only): the job's span links to it. Nothing else of a trace. */
    traceparent: z
      .string()
      .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
      .optional(),
    /** Who enqueued: "apply", "daemon", ... (for status and logs). */
    origin: z.string(),
    enqueuedAt: z.string(),
    /**
     * The fencing token of the leader lease the daemon held when it enqueued (src/leader/lease.ts); absent for `apply`,
     * which takes no lease. A worker drops a job whose token is older than the newest one handed out.
     */
    fence: z.number().int().positive().optional(),
    /** The resource's desired-state sequence (a Redis counter, set by the enqueuer): a job with an older one is superseded. */
    seq: z.number().int().positive().optional(),
    /**
     * A delete the daemon decided: why (its grace passed, or a person confirmed it) and the absence it was decided on; the
     * worker checks it again right before the DELETE (src/core/job-intent.ts). Absent on `apply --prune`'s deletes.
     */
    intent: StoredDeleteIntent.optional(),
  })
  .refine((data) => (data.resource === undefined) !== (data.remove === undefined), {
    error: 'a job holds either a resource or a deletion',
  });
export type ReconcileJobData = z.infer<typeof ReconcileJobData>;

/** What a job did: the sync result of its resource (src/core/kinds/ports.ts). */
export const ReconcileJobResult = SyncResult;
export type ReconcileJobResult = SyncResult;

/** AppliedRecord (src/core/model.ts) as stored: hashes only. */
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

export const StoredAppliedRecord = z.strictObject({
  secrets: z.record(z.string(), Sha256Hex),
  /** Secret name -> where the value last written came from (names only); absent in older records. */
  secretSources: z.record(z.string(), SecretSourceNameSchema).optional(),
  definitionHash: Sha256Hex.optional(),
  /** Field path -> hashes of what was sent and answered (three-way comparison); absent in older records. */
  fields: z.record(z.string(), z.strictObject({ sent: Sha256Hex, answered: Sha256Hex })).optional(),
  /** The fingerprint of the desired state the last write came from (the job's `desired`). */
  desired: Sha256Hex.optional(),
  /** The manifests the last write came from ("applied from 3f2a9c1"). */
  manifestVersion: ManifestVersion.optional(),
  appliedAt: z.string(),
  /** Which live resource converge owns under this key (created or adopted) and its id; absent in older records. */
  ownership: z.strictObject({ origin: z.enum(['created', 'adopted']), id: z.string().min(1) }).optional(),
  /** The job whose write this is (absent: a write of no job, or of an older converge). */
  jobId: z.string().min(1).optional(),
  /** What the answer to that write said (WriteAnswer, src/core/model.ts); absent in older records. */
  answer: z
    .strictObject({
      outcome: z.enum(['created', 'updated', 'adopted']),
      new_revision: z.boolean(),
      deploymentId: z.string().min(1).optional(),
      latestRevisionId: z.string().nullable().optional(),
    })
    .optional(),
});
export type StoredAppliedRecord = z.infer<typeof StoredAppliedRecord>;

/** The daemon's memory of an owned resource no manifest declares (src/core/prune-grace.ts Absence): times, a content id, a live id. */
export const StoredAbsence = z.strictObject({
  since: z.number().int().nonnegative(),
  manifests: z.string().min(1).max(200),
  seen: z.number().int().positive(),
  id: z.string().min(1).max(200),
});

/** A person's confirmation of a pending delete (src/core/job-intent.ts DeleteConfirmation): the live id and the absence's since. */
export const StoredConfirmation = z.strictObject({
  id: z.string().min(1).max(200),
  since: z.number().int().nonnegative(),
});

/** A JSON value kept in Redis, read through its schema: undefined when absent, not JSON, or not of that shape (not ours to read). */
export function parseStored<T>(schema: z.ZodType<T>, text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** A Redis hash of JSON values (HGETALL's answer), each read through its schema; an entry this converge cannot read is left out. */
export function parseStoredHash<T>(schema: z.ZodType<T>, entries: Record<string, string>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [key, text] of Object.entries(entries)) {
    const value = parseStored(schema, text);
    if (value !== undefined) out.set(key, value);
  }
  return out;
}
