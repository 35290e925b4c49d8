// Job payloads and enqueueing: one reconcile job per resource, deduplicated per resource, newest desired state wins.
import { randomBytes } from 'node:crypto';
import { Job, type JobsOptions, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ConvergeError } from '../core/errors.js';
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource } from '../core/model.js';
import { JobOperation, JobResource, ReconcileJobData } from './schema.js';

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

/**
 * The job form of a desired resource (its kind's payload): identical except that literal secret values are replaced by
 * a pointer to where the manifest holds them. The result is checked against the schema, which has no place for a value.
 */
export function toJobResource(resource: DesiredResource): JobResource {
  return JobResource.parse(kindOf(resource.kind).jobPayload(resource));
}

/** The operation a plan's create/update of a resource maps to (its kind's). */
export function operationFor(resource: DesiredResource, action: 'create' | 'update'): JobOperation {
  return JobOperation.parse(kindOf(resource.kind).operation(resource, action));
}

export function buildJobData(
  resource: DesiredResource,
  operation: JobOperation,
  context: { origin: string; deploymentId?: string; now?: Date },
): ReconcileJobData {
  const kind = kindOf(resource.kind);
  const data: Record<string, unknown> = {
    version: 1,
    key: resourceKey(resource.kind, resource.name),
    operation,
    resource: kind.jobPayload(resource),
    origin: context.origin,
    enqueuedAt: (context.now ?? new Date()).toISOString(),
  };
  if (context.deploymentId && kind.listed) data.deploymentId = context.deploymentId;
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

export interface Enqueued {
  key: string;
  /** The job that will carry this desired state: our new job, or an existing waiting job whose data was replaced. */
  jobId: string;
  how: 'added' | 'after-active' | 'replaced-waiting';
}

/**
 * BullMQ's deduplication keys of a resource (its internals; named here only): `current` holds the id of the job the
 * deduplication id points at, `next` (hash field `jid`) the job kept to start after the active one (keepLastIfActive).
 */
export function deduplicationKeys(queue: Queue, key: string): { current: string; next: string } {
  return { current: queue.toKey(`de:${key}`), next: queue.toKey(`dn:${key}`) };
}

const WAITING_STATES = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

/**
 * Adds the job for one resource so that the newest desired state wins:
 * - no job for the resource: ours is added;
 * - a job is running: BullMQ keeps ours (keepLastIfActive) and starts it when the running one ends;
 * - a job is waiting: its data is replaced by ours (BullMQ would otherwise drop ours), confirmed still waiting
 *   afterwards so a worker cannot have started it with the old data unnoticed;
 * - the deduplication key points at a job that is gone: the key is cleared and the add repeated.
 * `redis` is the producer connection the queue uses.
 */
export async function enqueueReconcile(queue: Queue, redis: Redis, data: ReconcileJobData, settings: JobSettings): Promise<Enqueued> {
  return settleEnqueue(queue, redis, data, settings, jobIdFor(data.key));
}

/** Jobs added per round trip by enqueueReconcileMany. */
export const ENQUEUE_BATCH = 100;

/**
 * enqueueReconcile for many resources (one each): added in batches of ENQUEUE_BATCH, one round trip a batch (a
 * socket write per job is the larger part of enqueueing). Resources whose add was deduplicated against an existing
 * job are then settled one by one exactly as enqueueReconcile does. Results in the order of `datas`.
 */
export async function enqueueReconcileMany(
  queue: Queue,
  redis: Redis,
  datas: readonly ReconcileJobData[],
  settings: JobSettings,
  /** Called for each resource as soon as its job is known (before the next batch), so no completion goes unseen. */
  onEnqueued?: (enqueued: Enqueued, index: number) => void,
): Promise<Enqueued[]> {
  const keys = new Set<string>();
  for (const data of datas) {
    if (keys.has(data.key)) throw new ConvergeError('E_ENQUEUE', `${data.key} is enqueued twice in one batch; give each resource once`);
    keys.add(data.key);
  }
  const out: Enqueued[] = [];
  for (let i = 0; i < datas.length; i += ENQUEUE_BATCH) {
    const batch = datas.slice(i, i + ENQUEUE_BATCH);
    const ids = batch.map((data) => jobIdFor(data.key));
    const jobs = await queue.addBulk(batch.map((data, k) => ({ name: data.operation, data, opts: jobOptions(settings, data.key, ids[k]!) })));
    const deduplicated: number[] = [];
    for (let k = 0; k < batch.length; k++) {
      if (jobs[k]!.id !== ids[k]) {
        deduplicated.push(k);
        continue;
      }
      out[i + k] = { key: batch[k]!.key, jobId: ids[k]!, how: 'added' };
      onEnqueued?.(out[i + k]!, i + k);
    }
    for (const k of deduplicated) {
      out[i + k] = await settleEnqueue(queue, redis, batch[k]!, settings, ids[k]!, jobs[k]!.id!);
      onEnqueued?.(out[i + k]!, i + k);
    }
  }
  return out;
}

/** The add loop of enqueueReconcile; `dedupedTo` is the job an add already sent was deduplicated against. */
async function settleEnqueue(queue: Queue, redis: Redis, data: ReconcileJobData, settings: JobSettings, jobId: string, dedupedTo?: string): Promise<Enqueued> {
  const key = data.key;
  for (let round = 0; round < 8; round++) {
    const job = round === 0 && dedupedTo !== undefined ? { id: dedupedTo } : await queue.add(data.operation, data, jobOptions(settings, key, jobId));
    if (job.id === jobId) return { key, jobId, how: 'added' };
    const existingId = job.id!;
    const state = await queue.getJobState(existingId);
    if (state === 'active') {
      const next = await redis.hget(deduplicationKeys(queue, key).next, 'jid');
      if (next === jobId) return { key, jobId, how: 'after-active' };
      continue;
    }
    if (WAITING_STATES.has(state)) {
      const existing = await Job.fromId(queue, existingId);
      if (!existing) continue;
      await existing.updateData(data);
      const after = await queue.getJobState(existingId);
      if (WAITING_STATES.has(after)) return { key, jobId: existingId, how: 'replaced-waiting' };
      continue;
    }
    // completed, failed or unknown: a stale deduplication key (normally removed when a job finishes).
    await redis.eval(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
      1,
      deduplicationKeys(queue, key).current,
      existingId,
    );
  }
  throw new ConvergeError('E_ENQUEUE', `could not enqueue ${key}: its job kept changing state; try again`);
}
