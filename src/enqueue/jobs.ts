// Job payloads and options: one reconcile job per resource, its id, its data, its retry and deduplication options.
import { randomBytes } from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import { ConvergeError } from '../core/errors.js';
import { resourceKey, type DesiredResource, type SecretSource } from '../core/model.js';
import { JobResource, ReconcileJobData, type JobOperation, type JobSecretSource } from './schema.js';

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

/** The resourceKey a job id was made from. */
export function keyOfJobId(jobId: string): string {
  return jobId.slice(0, jobId.lastIndexOf('@')).replace(/%3A/g, ':').replace(/%25/g, '%');
}

function jobSecret(source: SecretSource, resource: DesiredResource, name: string): JobSecretSource {
  if ('env' in source) return { env: source.env };
  if ('file' in source) return { file: source.file };
  const at = resource.secretLocations?.[name] ?? resource.location;
  return { manifest: { file: at.file, line: at.line, column: at.column } };
}

/**
 * The job form of a desired resource: identical except that literal secret values are replaced by a pointer to
 * the manifest (the worker reads the value back from there). The result is checked against the schema, which
 * has no place for a value.
 */
export function toJobResource(resource: DesiredResource): JobResource {
  return JobResource.parse(jobResourcePayload(resource));
}

/** toJobResource before the schema check (buildJobData checks the whole job data, the resource with it, once). */
function jobResourcePayload(resource: DesiredResource): unknown {
  if (resource.kind === 'Deployment') {
    const { secrets, ...spec } = resource.spec;
    return {
      ...resource,
      spec: { ...spec, ...(secrets ? { secrets: secrets.map((s) => ({ name: s.name, from: jobSecret(s.from, resource, s.name) })) } : {}) },
    };
  }
  const spec = resource.spec;
  if (spec.mode === 'manual' && spec.client_secret !== undefined) {
    return { ...resource, spec: { ...spec, client_secret: jobSecret(spec.client_secret, resource, 'client_secret') } };
  }
  return resource;
}

/** Whether a desired resource holds a literal secret value (its job then points at the manifest, see jobSecret). */
function hasLiteralSecrets(resource: DesiredResource): boolean {
  if (resource.kind === 'Deployment') return (resource.spec.secrets ?? []).some((s) => 'value' in s.from);
  return resource.spec.mode === 'manual' && resource.spec.client_secret !== undefined && 'value' in resource.spec.client_secret;
}

/** True when a job resource needs the manifest directory to read a literal secret back. */
export function hasManifestSecrets(resource: JobResource): boolean {
  if (resource.kind === 'Deployment') return (resource.spec.secrets ?? []).some((s) => 'manifest' in s.from);
  return resource.spec.client_secret !== undefined && 'manifest' in resource.spec.client_secret;
}

/** The operation a plan's create/update of a resource maps to. */
export function operationFor(resource: DesiredResource, action: 'create' | 'update'): JobOperation {
  if (resource.kind === 'OAuthProvider') return resource.spec.mode === 'mcp' ? 'discover-provider' : 'create-provider';
  return action === 'create' ? 'create-deployment' : 'patch-deployment';
}

export function buildJobData(
  resource: DesiredResource,
  operation: JobOperation,
  context: { origin: string; manifestDir?: string; deploymentId?: string; now?: Date },
): ReconcileJobData {
  const data: Record<string, unknown> & { key: string } = {
    version: 1,
    key: resourceKey(resource.kind, resource.name),
    operation,
    resource: jobResourcePayload(resource),
    origin: context.origin,
    enqueuedAt: (context.now ?? new Date()).toISOString(),
  };
  if (context.deploymentId && resource.kind === 'Deployment') data.deploymentId = context.deploymentId;
  if (hasLiteralSecrets(resource)) {
    if (!context.manifestDir) {
      throw new ConvergeError('E_ENQUEUE', `${data.key} has a literal secret value but no manifest directory was given to read it back from`);
    }
    data.manifestDir = context.manifestDir;
  }
  return ReconcileJobData.parse(data);
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
