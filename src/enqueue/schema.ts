// zod schemas of what converge keeps in Redis: job payloads (secret references only), results, applied and pending records.
import { z } from 'zod';

/**
 * Where a secret's value comes from, as a job carries it. `env` and `file` are references the worker resolves
 * in its own environment. A literal manifest value (--allow-literal-secrets) never enters Redis: it travels as
 * `manifest`, a pointer to the manifest file and position, and the worker reads the value back from that file.
 */
export const JobSecretSource = z.union([
  z.strictObject({ env: z.string().min(1) }),
  z.strictObject({ file: z.string().min(1) }),
  z.strictObject({ manifest: z.strictObject({ file: z.string(), line: z.number().int(), column: z.number().int() }) }),
]);
export type JobSecretSource = z.infer<typeof JobSecretSource>;

export const JobSecretRef = z.strictObject({ name: z.string().min(1), from: JobSecretSource });
export type JobSecretRef = z.infer<typeof JobSecretRef>;

const Location = z.strictObject({ file: z.string(), line: z.number().int(), column: z.number().int() });

/** Non-secret spec fields are passed through as the loader produced them (already validated there). */
const DeploymentSpecPayload = z.looseObject({
  source: z.string(),
  secrets: z.array(JobSecretRef).optional(),
});

const ProviderSpecPayload = z.looseObject({
  mode: z.enum(['manual', 'mcp']),
  name: z.string(),
  client_secret: JobSecretSource.optional(),
});

const ResourceBase = {
  name: z.string().min(1),
  location: Location,
  suspend: z.boolean(),
  driftPolicy: z.enum(['heal', 'report']).optional(),
  secretLocations: z.record(z.string(), Location).optional(),
};

/** Fields other than the secret sources pass through (strictness is where a value could hide: the sources). */
export const JobResource = z.discriminatedUnion('kind', [
  z.looseObject({ kind: z.literal('Deployment'), ...ResourceBase, spec: DeploymentSpecPayload }),
  z.looseObject({ kind: z.literal('OAuthProvider'), ...ResourceBase, spec: ProviderSpecPayload }),
]);
export type JobResource = z.infer<typeof JobResource>;

/** The operation the plan expected when the job was enqueued; the worker recomputes it (level-triggered). */
export const JobOperation = z.enum(['create-deployment', 'patch-deployment', 'create-provider', 'discover-provider']);
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
  /** Absolute manifest directory; needed only to read back literal secret values (`manifest` sources). */
  manifestDir: z.string().optional(),
  /** Who enqueued: "apply", "daemon", ... (for status and logs). */
  origin: z.string(),
  enqueuedAt: z.string(),
});
export type ReconcileJobData = z.infer<typeof ReconcileJobData>;

export const JobOutcome = z.enum(['created', 'updated', 'unchanged', 'adopted']);
export type JobOutcome = z.infer<typeof JobOutcome>;

/** Return value of a completed job. */
export const ReconcileJobResult = z.strictObject({
  outcome: JobOutcome,
  /** True when this job's write started a new revision of the deployment. */
  new_revision: z.boolean(),
  deploymentId: z.string().optional(),
  latestRevisionId: z.string().nullable().optional(),
  /** One line for humans, e.g. what adoption found. Never a secret. */
  message: z.string().optional(),
});
export type ReconcileJobResult = z.infer<typeof ReconcileJobResult>;

/** AppliedRecord (src/core/model.ts) as stored: hashes only. */
export const StoredAppliedRecord = z.strictObject({
  secrets: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  definitionHash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  appliedAt: z.string(),
});
export type StoredAppliedRecord = z.infer<typeof StoredAppliedRecord>;

/**
 * A write whose answer may be lost (timeout, dropped connection): recorded just before it is sent, so a retry
 * can tell "my write landed" from "someone else's resource" without writing again. Hashes only.
 */
export const PendingWrite = z.strictObject({
  op: z.enum(['create', 'patch', 'create-provider', 'discover-provider']),
  /** secret name -> hash of the value being written. */
  secrets: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  definitionHash: z.string().optional(),
  /** ISO time just before the first send of this write. */
  sentAt: z.string(),
  /** PATCH only: the deployment's latest_revision_id before the write. */
  revisionBefore: z.string().nullable().optional(),
  /** PATCH only: whether the write starts a new revision (then a changed latest_revision_id shows it landed). */
  startsRevision: z.boolean().optional(),
});
export type PendingWrite = z.infer<typeof PendingWrite>;
