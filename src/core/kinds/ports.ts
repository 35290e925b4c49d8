// What a kind's sync needs from outside, injected (the service, the applied-state store, secrets, the clock), and the records it exchanges.
import { z } from 'zod';
import type {
  AppliedRecord,
  DeploymentResource,
  DesiredResource,
  FieldHashes,
  LiveDeployment,
  LiveProvider,
  Ownership,
  SecretSourceName,
  WriteAnswer,
} from '../model.js';
import { ManifestVersion } from '../manifest-version.js';
import { SecretSourceChange } from './job.js';
import type {
  CreateDeploymentRequest,
  CreateProviderRequest,
  McpDiscoverRequest,
  PatchDeploymentRequest,
  PatchProviderRequest,
} from '../wire/schema.js';

/**
 * Whether the service reads and updates OAuth providers (GET/PATCH /v2/auth/providers…, beyond the spec), found by
 * one probe per client: `readable: false` when it answered 404 or 405, with the note a plan shows once.
 */
export type ProviderReads = { readable: true } | { readable: false; note: string };

/** The service operations the kinds use; src/service's ServiceClient has them. Failures are thrown as ServiceError (src/core/errors.ts) and the like. */
export interface ServicePort {
  listDeploymentPages(query: { deployment_ids?: string[]; name_contains?: string }): AsyncIterable<LiveDeployment[]>;
  /** One deployment by id (GET by id where the service has it, else the list filtered by deployment_ids); undefined: none of that id. */
  readDeployment(id: string): Promise<LiveDeployment | undefined>;
  createDeployment(body: CreateDeploymentRequest): Promise<LiveDeployment>;
  patchDeployment(id: string, body: PatchDeploymentRequest): Promise<LiveDeployment>;
  createProvider(body: CreateProviderRequest): Promise<unknown>;
  discoverProvider(body: McpDiscoverRequest): Promise<unknown>;
  /** Probes (once) whether the service reads and updates providers. */
  providerReads(): Promise<ProviderReads>;
  /** GET /v2/auth/providers/{provider_id}; undefined when the service has no such provider. Only after providerReads() said readable. */
  getProvider(providerId: string): Promise<LiveProvider | undefined>;
  /** PATCH /v2/auth/providers/{provider_id}. */
  patchProvider(providerId: string, body: PatchProviderRequest): Promise<LiveProvider>;
  /** DELETE /v2/deployments/{id} (beyond the spec): `deleted` (204), or `gone` when the service has no such id any more. */
  deleteDeployment(id: string, options: { deleteTracingProject: boolean }): Promise<'deleted' | 'gone'>;
  /** DELETE /v2/auth/providers/{provider_id} (beyond the spec): `deleted` (204), or `gone` when the service has none of that provider_id. */
  deleteProvider(providerId: string): Promise<'deleted' | 'gone'>;
}

/**
 * A write whose answer may be lost (timeout, dropped connection): recorded just before it is sent, so a retry
 * can tell "my write landed" from "someone else's resource" without writing again. Hashes only.
 */
export const PendingWrite = z.strictObject({
  op: z.enum(['create', 'patch', 'create-provider', 'discover-provider', 'patch-provider', 'delete']),
  /** delete only: the live id the DELETE is sent to (a retry re-reads this id; never a name). */
  id: z.string().optional(),
  /** secret name -> hash of the value being written. */
  secrets: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  definitionHash: z.string().optional(),
  /** Deployments: declared field path -> fieldHash() of the value being written (see AppliedRecord.fields). */
  fields: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)).optional(),
  /** ISO time just before the first send of this write. */
  sentAt: z.string(),
  /** PATCH only: the deployment's latest_revision_id before the write. */
  revisionBefore: z.string().nullable().optional(),
  /** PATCH only: whether the write starts a new revision (then a changed latest_revision_id shows it landed). */
  startsRevision: z.boolean().optional(),
  /**
   * The job whose attempt sent it (absent: sent by an older converge). A former leader's job, dropped, settles only
   * its own pending write (src/sync/deployment/settle.ts), never one a newer job marked since.
   */
  jobId: z.string().optional(),
});
export type PendingWrite = z.infer<typeof PendingWrite>;

/** What one write sent and the service answered, as the applied-state store records it: hashes only. */
export interface WrittenState {
  /** secret name -> secretHash() of each value sent; merged over the recorded ones by name. */
  secrets: Record<string, string>;
  /** The write carried the complete declared set of secrets: `secrets` replaces the recorded hashes instead. */
  replaceSecrets?: boolean;
  /** secret name -> where each value sent came from (names only); recorded like `secrets` (absent: none known). */
  secretSources?: Record<string, SecretSourceName>;
  definitionHash?: string;
  /** Field path -> hashes sent and answered, for the fields this write carried; merged over the recorded ones. */
  fields?: Record<string, FieldHashes>;
  /** How converge came to own the resource (its first write, or a create); absent keeps the recorded ownership. */
  ownership?: Ownership;
  /**
   * What the service's answer to this write said, as the job's result states it (recorded with the write, replacing the
   * recorded one; absent: none recorded): the job's result is rebuilt from it should its fold be lost.
   */
  answer?: WriteAnswer;
}

/** The applied-state store operations a sync uses; src/store's AppliedStateStore has them. */
export interface AppliedStatePort {
  /** The applied record and the pending write of one resource, read together. */
  read(resourceKey: string): Promise<{ applied: AppliedRecord | undefined; pending: PendingWrite | undefined }>;
  setPending(resourceKey: string, pending: PendingWrite): Promise<void>;
  clearPending(resourceKey: string): Promise<void>;
  /**
   * Records a write (merged over `known`, the record read during this job; undefined: read it) and removes its
   * pending write, at once; the store stamps its time (Redis' clock, one for every replica). See WrittenState.
   */
  recordWrite(resourceKey: string, written: WrittenState, known?: AppliedRecord | null): Promise<AppliedRecord>;
  /** Forgets the resource (its record and pending write, at once): it was deleted. */
  forget(resourceKey: string): Promise<void>;
}

/**
 * The applied-state operations of a settle that only reads the service (src/sync/deployment/settle.ts): each acts only
 * while the resource's pending write is still the one the settle read (the same job and send time), at once.
 */
export interface LostWritePort {
  read: AppliedStatePort['read'];
  /** recordWrite, while `pending` is still the resource's pending write; undefined (nothing written) when it is not. */
  recordSettled(
    resourceKey: string,
    pending: PendingWrite,
    written: WrittenState,
    known: AppliedRecord | null,
  ): Promise<AppliedRecord | undefined>;
  /** Removes the pending write while it is still `pending` (a write that did not land); false when it is not. */
  clearSettled(resourceKey: string, pending: PendingWrite): Promise<boolean>;
}

/** A resource's secrets as its sync sees them: hashes to diff with, values only on demand, right before a write. */
export interface DesiredSecrets {
  /** secret name (CLIENT_SECRET for a provider) -> secretHash of the desired value. */
  hashes: Record<string, string>;
  /** Messages (never values) of secrets that could not be resolved. */
  errors: string[];
  /** The values of `names`; they live only in memory for the request that sends them. */
  values(names: readonly string[]): Promise<Record<string, string>>;
}

/** Everything a kind's sync reaches outside itself through. */
export interface SyncPorts {
  service: ServicePort;
  appliedState: AppliedStatePort;
  /** The desired secrets of a resource, resolved in this process's environment. */
  desiredSecrets(resource: DesiredResource): Promise<DesiredSecrets>;
  /**
   * A deployment with spec.repository (owner/name) resolved into source_config as the plan resolves it, or why it
   * could not be (the reason blocks the resource). Lists the service's integrations and repositories.
   */
  resolveRepository(resource: DeploymentResource): Promise<{ resource: DeploymentResource; error?: string }>;
  now(): Date;
  /**
   * The job's intent (src/core/job-intent.ts) and the flap guard (src/jobs/runner/flap-gate.ts), asked right before the
   * first write or a DELETE is marked pending and sent: undefined, it may go; a result, it must not, and the sync returns
   * that result (nothing sent). Absent: no gate.
   */
  writeGate?(): Promise<SyncResult | undefined>;
}

/** What a delete job names: the resource, the live id the plan saw (never a name alone), and whether its tracing project goes too. */
export const Deletion = z.strictObject({
  kind: z.enum(['Deployment', 'OAuthProvider']),
  name: z.string().min(1),
  id: z.string().min(1),
  deleteTracingProject: z.boolean(),
});
export type Deletion = z.infer<typeof Deletion>;

/**
 * The write the decision made (src/core/decide.ts), as a job carries it to its kind's sync step (docs/decision.md, "The
 * write step"): the operation, and the paths of the fields the decision found differing. The step sends only what of it
 * is still missing on the live state it reads; a field the decision did not see differ is never written by it.
 * Paths only: never a value.
 */
export const JobWrite = z.strictObject({
  op: z.enum(['create', 'update', 'rebuild']),
  fields: z.array(z.string().min(1)),
});
export type JobWrite = z.infer<typeof JobWrite>;

export const SyncOutcome = z.enum(['created', 'updated', 'unchanged', 'adopted', 'deleted']);
export type SyncOutcome = z.infer<typeof SyncOutcome>;

/** What one sync of one resource did (a job's return value). */
export const SyncResult = z.strictObject({
  outcome: SyncOutcome,
  /** True when this sync's write started a new revision of the deployment. */
  new_revision: z.boolean(),
  deploymentId: z.string().optional(),
  latestRevisionId: z.string().nullable().optional(),
  /** One line for humans, e.g. what adoption found. Never a secret. */
  message: z.string().optional(),
  /** The fields this sync's write sent, as the plan shows them: a secret's value is "(sensitive)", never the value. */
  fields: z
    .array(
      z.strictObject({
        path: z.string(),
        before: z.unknown(),
        after: z.unknown(),
        sensitive: z.boolean(),
        uncompared: z.literal(true).optional(),
        source: SecretSourceChange.optional(),
      }),
    )
    .optional(),
  /**
   * The flap guard refused the write (src/core/flap-guard.ts): the reason, its one line, and whether this job found the
   * conflict (declared) or met one already standing. Set by the job runner, not by a kind.
   */
  conflict: z
    .strictObject({
      reason: z.enum(['desired_alternates', 'changed_outside']),
      message: z.string(),
      declared: z.boolean(),
      /** desired_alternates: the two versions (git commit or content hash) that alternate. */
      versions: z.array(ManifestVersion).optional(),
      /** changed_outside: the fields converge kept putting back. */
      fields: z.array(z.string()).optional(),
    })
    .optional(),
  /**
   * The job sent nothing, and why: a newer desired state of its resource was enqueued since, or a former leader enqueued
   * it (the job runner's stale check), or the live state the kind's step read no longer fits the decided write
   * (`live_changed`: another field differs, the resource is gone or another one took its name, the plan would block it
   * now). A delete the daemon decided is dropped too when, as it runs, its resource is declared again
   * (`declared_again`), its absence changed (`not_due`: the grace started again) or the confirmation it was decided on is
   * gone (`not_confirmed`): src/core/job-intent.ts. Such a job did not bring its state about: the next reconcile decides again.
   */
  notRun: z
    .enum(['superseded', 'former_leader', 'live_changed', 'declared_again', 'not_due', 'not_confirmed'])
    .optional(),
});
export type SyncResult = z.infer<typeof SyncResult>;
