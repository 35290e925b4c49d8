// Apply through the queue: enqueue one job per change, run in-process workers, wait for every job, then for revisions.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ServiceClient } from '../service/client.js';
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource, type LiveDeployment, type PlanChange } from '../core/model.js';
import { AppliedStateStore } from './applied-state.js';
import { buildJobData, deduplicationKeys, ENQUEUE_BATCH, enqueueReconcileMany, operationFor, QUEUE_NAME } from './jobs.js';
import { checkPrefix, closeRedis, connectProducer, connectWorker, scanPrefix, type RedisSettings } from './redis.js';
import { claimPrefix, type ServiceTarget } from './target.js';
import { ReconcileJobResult } from './schema.js';
import { literalSecretsOf } from '../sync/job-resource.js';
import { startWorker, type QueueLogger, type ReconcileWorker, type StartWorkerOptions, type WorkerSettings } from './worker.js';

export type ResultStatus = 'done' | 'unchanged' | 'failed';

/** What became of one resource's job. */
export interface ResourceResult {
  kind: PlanChange['kind'];
  name: string;
  key: string;
  status: ResultStatus;
  outcome?: ReconcileJobResult['outcome'];
  new_revision: boolean;
  /** The service's message on failure, or a note (adoption). Never a secret. */
  message?: string;
  deploymentId?: string;
  latestRevisionId?: string | null;
  jobId: string;
  /** With --wait: whether the new revision became active (undefined when nothing was waited for). */
  revision?: 'active' | 'timeout';
}

/** A connected queue: producer connection, the BullMQ queue, the applied-state store. */
export interface QueueSession {
  redis: Redis;
  queue: Queue;
  store: AppliedStateStore;
  /** The prefix in use (embedded mode runs under a private one, removed on close). */
  prefix: string;
  close(): Promise<void>;
}

/**
 * Connects to Redis (failing fast with E_REDIS) and opens the queue. `private` (embedded emulator) runs under a
 * fresh sub-prefix whose keys are deleted on close: an in-memory service must not share jobs or applied state.
 */
export async function openQueueSession(
  settings: RedisSettings,
  options: { private?: boolean; target?: ServiceTarget } = {},
): Promise<QueueSession> {
  checkPrefix(settings.redisPrefix);
  const redis = await connectProducer(settings);
  const prefix = options.private ? `${settings.redisPrefix}:embedded-${randomBytes(6).toString('hex')}` : settings.redisPrefix;
  try {
    if (options.target && !options.private) await claimPrefix(redis, prefix, options.target);
  } catch (error) {
    await closeRedis(redis);
    throw error;
  }
  const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
  queue.on('error', () => undefined);
  return {
    redis,
    queue,
    store: new AppliedStateStore(redis, prefix),
    prefix,
    async close() {
      await queue.close();
      if (options.private) await deleteKeys(redis, prefix);
      await closeRedis(redis);
    },
  };
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of scanPrefix(redis, prefix)) await redis.del(...keys);
}

export interface ApplyChange {
  resource: DesiredResource;
  change: PlanChange;
  /** The live deployment's id, when it exists (the worker reads it by id). */
  deploymentId?: string;
}

/** Which planned changes become jobs: creates and updates, never noop, orphan, blocked or suspended ones. */
export function changesToApply(
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly LiveDeployment[] = [],
): ApplyChange[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: ApplyChange[] = [];
  for (const change of changes) {
    if ((change.action !== 'create' && change.action !== 'update') || change.suspended) continue;
    const resource = resources.get(resourceKey(change.kind, change.name));
    if (!resource || resource.suspend) continue;
    const found = kindOf(change.kind).listed ? byName.get(change.name) : undefined;
    out.push(found ? { resource, change, deploymentId: found.id } : { resource, change });
  }
  return out;
}

export interface RunApplyOptions {
  session: QueueSession;
  settings: WorkerSettings;
  client: ServiceClient;
  env: NodeJS.ProcessEnv;
  changes: readonly ApplyChange[];
  /** In-process workers (default true). Other worker processes on the same Redis may take jobs too. */
  startWorkers?: boolean;
  worker?: Partial<Omit<StartWorkerOptions, 'client' | 'env'>>;
  log?: QueueLogger;
  onProgress?: (finished: number, total: number, latest: ResourceResult) => void;
  /** How often unfinished jobs are looked up directly, in case an event was missed. */
  pollMs?: number;
}

interface Tracked {
  change: ApplyChange;
  key: string;
  jobId: string;
  result?: ResourceResult;
}

function resultFrom(t: Tracked, status: ResultStatus, extra: Partial<ResourceResult>): ResourceResult {
  return { kind: t.change.change.kind, name: t.change.change.name, key: t.key, status, new_revision: false, jobId: t.jobId, ...extra };
}

function completedResult(t: Tracked, value: unknown): ResourceResult {
  const parsed = ReconcileJobResult.safeParse(value);
  if (!parsed.success) return resultFrom(t, 'failed', { message: 'the job finished with a result this converge does not understand' });
  const r = parsed.data;
  const extra: Partial<ResourceResult> = { outcome: r.outcome, new_revision: r.new_revision };
  if (r.message) extra.message = r.message;
  if (r.deploymentId) extra.deploymentId = r.deploymentId;
  if (r.latestRevisionId !== undefined) extra.latestRevisionId = r.latestRevisionId;
  return resultFrom(t, r.outcome === 'unchanged' ? 'unchanged' : 'done', extra);
}

/**
 * The session queue's job events from now on (not its history): a dedicated blocking connection and a QueueEvents
 * reader starting after the newest event already in the stream.
 */
export async function openQueueEvents(session: QueueSession, redisUrl: string, name: string): Promise<{ events: QueueEvents; connection: Redis }> {
  const last = await session.redis.xrevrange(session.queue.toKey('events'), '+', '-', 'COUNT', 1);
  const connection = await connectWorker({ redisUrl, redisPrefix: session.prefix }, { name });
  const events = new QueueEvents(QUEUE_NAME, { connection, prefix: session.prefix, lastEventId: last[0]?.[0] ?? '0-0', blockingTimeout: 2_000 });
  return { events, connection };
}

/**
 * Jobs enqueued after the first ENQUEUE_BATCH: smaller batches, so that building and adding one holds the jobs
 * already running (their replies wait behind it) for a shorter time.
 */
const LATER_ENQUEUE_BATCH = 20;

/** Longest wait for the in-process worker to fill its slots before the rest is enqueued (other workers may take the jobs). */
const RAMP_WAIT_MS = 100;

/** Resolves once `worker` has started `slots` jobs (or `ms` passed); counts from the call. */
function slotsFilled(worker: ReconcileWorker, slots: number): { wait(ms: number): Promise<void>; stop(): void } {
  let started = 0;
  let done: (() => void) | undefined;
  const onActive = (): void => {
    started += 1;
    if (started >= slots) done?.();
  };
  worker.worker.on('active', onActive);
  return {
    async wait(ms) {
      if (started >= slots) return;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        done = resolve;
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
    },
    stop() {
      worker.worker.off('active', onActive);
    },
  };
}

/** Enqueues every change, runs workers, and resolves with one result per change (in the given order). */
export async function runApply(options: RunApplyOptions): Promise<ResourceResult[]> {
  const { session } = options;
  const total = options.changes.length;
  if (total === 0) return [];
  const { events, connection: eventsConnection } = await openQueueEvents(session, options.settings.redisUrl, 'converge-apply-events');
  events.on('error', () => undefined);
  let worker: ReconcileWorker | undefined;
  const byJob = new Map<string, Tracked>();
  const tracked: Tracked[] = [];
  let finished = 0;
  let wake: (() => void) | undefined;

  const settle = (t: Tracked, result: ResourceResult): void => {
    if (t.result) return;
    t.result = result;
    finished += 1;
    options.onProgress?.(finished, total, result);
    if (finished === total) wake?.();
  };
  events.on('completed', ({ jobId, returnvalue }) => {
    const t = byJob.get(jobId);
    if (t) settle(t, completedResult(t, returnvalue));
  });
  events.on('failed', ({ jobId, failedReason }) => {
    const t = byJob.get(jobId);
    if (t) settle(t, resultFrom(t, 'failed', { message: failedReason }));
  });

  // Literal secret values (--allow-literal-secrets) reach only these in-process workers, from the resources in memory.
  const literalSecrets = literalSecretsOf(options.changes.map((change) => change.resource));
  try {
    if (options.startWorkers !== false) {
      worker = await startWorker(
        { ...options.settings, redisPrefix: session.prefix },
        {
          client: options.client,
          env: options.env,
          ...(options.log ? { log: options.log } : {}),
          ...(literalSecrets ? { literalSecrets } : {}),
          ...options.worker,
        },
      );
    }
    // A batch at a time: the first jobs start while the payloads of the later ones are still being built.
    const fill = worker ? slotsFilled(worker, Math.min(Math.max(1, options.settings.concurrency), total)) : undefined;
    try {
      for (let from = 0; from < total; ) {
        // BullMQ fetches a worker's first jobs one round trip after another and starts none before all its slots
        // are filled: enqueue work between those round trips would leave every slot empty meanwhile.
        if (from === ENQUEUE_BATCH && fill) await fill.wait(RAMP_WAIT_MS);
        const size = from === 0 ? ENQUEUE_BATCH : LATER_ENQUEUE_BATCH;
        const datas = options.changes.slice(from, from + size).map((change) =>
          buildJobData(change.resource, operationFor(change.resource, change.change.action === 'create' ? 'create' : 'update'), {
            origin: 'apply',
            ...(change.deploymentId ? { deploymentId: change.deploymentId } : {}),
          }),
        );
        const at = from;
        await enqueueReconcileMany(session.queue, session.redis, datas, options.settings, (e, i) => {
          const t: Tracked = { change: options.changes[at + i]!, key: e.key, jobId: e.jobId };
          tracked[at + i] = t;
          byJob.set(e.jobId, t);
        });
        from += size;
      }
    } finally {
      fill?.stop();
    }
    const allDone = new Promise<void>((resolve) => {
      wake = resolve;
      if (finished === total) resolve();
    });
    const pollMs = options.pollMs ?? 5_000;
    while (finished < total) {
      // Unref'd: once every job is done, a poll timer still pending must not hold the process open for pollMs.
      await Promise.race([allDone, sleep(pollMs, undefined, { ref: false })]);
      if (finished < total) await pollUnfinished(session, tracked, byJob, settle);
    }
  } finally {
    await events.close();
    await closeRedis(eventsConnection);
    await worker?.close();
  }
  return tracked.map((t) => t.result!);
}

/** Looks up unfinished jobs directly; follows a resource to its newer job when another producer replaced ours. */
async function pollUnfinished(
  session: QueueSession,
  tracked: Tracked[],
  byJob: Map<string, Tracked>,
  settle: (t: Tracked, r: ResourceResult) => void,
): Promise<void> {
  const open = tracked.filter((t) => !t.result);
  for (let i = 0; i < open.length; i += 50) {
    await Promise.all(open.slice(i, i + 50).map((t) => pollOne(session, t, byJob, settle)));
  }
}

async function pollOne(session: QueueSession, t: Tracked, byJob: Map<string, Tracked>, settle: (t: Tracked, r: ResourceResult) => void): Promise<void> {
  const state = await session.queue.getJobState(t.jobId);
  if (state === 'completed' || state === 'failed') {
    const job = await Job.fromId(session.queue, t.jobId);
    if (!job) return;
    if (state === 'completed') settle(t, completedResult(t, job.returnvalue));
    else settle(t, resultFrom(t, 'failed', { message: job.failedReason ?? 'failed' }));
    return;
  }
  if (state !== 'unknown') return;
  // Not (or no longer) stored: still queued behind the running job of this resource, or replaced by a newer one.
  const keys = deduplicationKeys(session.queue, t.key);
  const next = await session.redis.hget(keys.next, 'jid');
  if (next === t.jobId) return;
  const current = await session.redis.get(keys.current);
  if (current === t.jobId) return;
  if (current) {
    byJob.delete(t.jobId);
    t.jobId = current;
    byJob.set(current, t);
    return;
  }
  // A last look: the job may have finished between the two reads above.
  if ((await session.queue.getJobState(t.jobId)) !== 'unknown') return;
  settle(t, resultFrom(t, 'failed', { message: 'the job left the queue without a result (removed by another process?)' }));
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
  onProgress?: (active: number, total: number) => void;
}

function revisionActive(d: LiveDeployment): boolean {
  return d.status === 'READY' && !!d.latest_revision_id && d.active_revision_id === d.latest_revision_id;
}

/**
 * apply --wait: polls the deployments whose job started a new revision until each is READY with
 * active_revision_id == latest_revision_id, or the timeout. Marks each result's `revision`.
 */
export async function waitForRevisions(client: ServiceClient, results: ResourceResult[], options: WaitOptions): Promise<void> {
  const waiting = results.filter((r) => r.status === 'done' && r.new_revision && r.deploymentId);
  if (waiting.length === 0) return;
  const deadline = Date.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? 2_000;
  const open = new Map(waiting.map((r) => [r.deploymentId!, r]));
  for (;;) {
    const ids = [...open.keys()];
    const live: LiveDeployment[] = [];
    for (let i = 0; i < ids.length; i += 50) live.push(...(await client.listDeployments({ deployment_ids: ids.slice(i, i + 50) })));
    for (const d of live) {
      const r = open.get(d.id);
      if (r && revisionActive(d)) {
        r.revision = 'active';
        open.delete(d.id);
      }
    }
    options.onProgress?.(waiting.length - open.size, waiting.length);
    if (open.size === 0) return;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
  }
  for (const r of open.values()) r.revision = 'timeout';
}
