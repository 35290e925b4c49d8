// The door of the jobs folder: from settings, the enqueuer, the stores, job runners, job events and the resync scheduler.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppliedStateStore } from '../store/applied-state.js';
import { AppliedPlans } from '../store/applied-plans.js';
import { RedisDesiredMemory } from '../store/desired-memory.js';
import { RedisHoldStore } from '../store/holds-store.js';
import { EventLogStore } from '../store/event-log.js';
import { ResourceFolds } from '../store/resource-folds.js';
import { ReconcileRecordStore } from '../store/reconcile-record.js';
import { OperatorRequestStore } from '../store/operator-requests.js';
import { adoptLegacySequences, Enqueuer } from './queue/enqueuer.js';
import { FlapStore } from '../store/flap-store.js';
import { AppliedStateEpoch, readEvictionPolicy, type EvictionPolicy } from '../store/epoch.js';
import { watchJobEvents, type JobEventHandlers, type JobEventsFeed } from './queue/job-events.js';
import { QUEUE_NAME } from './queue/jobs.js';
import { fenceKey, Lease, leaseKey } from '../leader/lease.js';
import { SILENT_LOGGER, throttledErrors, type ErrorReporter, type QueueLogger } from './queue/log.js';
import { checkPrefix, closeRedis, connectProducer, scanPrefix, unreachable } from '../store/redis.js';
import { startResync, type Resync, type ResyncOptions } from './queue/resync-scheduler.js';
import { claimPrefix, type ServiceTarget } from '../store/target.js';
import { readClockSkew, redisNow, type ClockReading } from '../store/clock.js';
import { startJobRunner, type JobRunner, type StartRunnerOptions, type WorkerSettings } from './runner/worker.js';

export interface OpenJobsOptions {
  /** A fresh sub-prefix whose keys are deleted on close (the embedded emulator: an in-memory service must not share jobs or applied state). */
  private?: boolean;
  /** The service the jobs write to: the prefix must not serve another (see target.ts). Not checked for a private prefix. */
  target?: ServiceTarget;
  /** Where the error events of queues, workers and connections go (throttled), and the runners' job lines. */
  log?: QueueLogger;
}

/** The states of the reconcile queue that queueCounts() counts (BullMQ's names). */
export const QUEUE_STATES = ['wait', 'prioritized', 'delayed', 'active', 'failed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** The jobs of one Redis prefix, for apply and the daemon; no BullMQ or Redis handle leaves it. */
export interface Jobs {
  /** The prefix in use (a private one under the configured prefix when `private`). */
  readonly prefix: string;
  readonly enqueuer: Enqueuer;
  /** Applied state: plans read it, jobs write it. */
  readonly applied: AppliedStateStore;
  /** The saved plans applied on the prefix, by checksum (apply --plan claims its plan before it writes). */
  readonly plans: AppliedPlans;
  /** The daemon's fingerprints of desired states seen in sync. */
  readonly desired: RedisDesiredMemory;
  /** The daemon's holds (resources not written: their revision for this desired state failed). */
  readonly holds: RedisHoldStore;
  /** The flap guard's state: recent writes per resource and the conflicts standing (src/core/flap-guard.ts). */
  readonly flap: FlapStore;
  /** The resource event log, each resource's history and its projected state (src/store/event-log.ts). */
  readonly record: EventLogStore;
  /** The prefix's resource states, folded where each event happens (src/store/resource-folds.ts). */
  readonly folds: ResourceFolds;
  /** The leader's reconciles, its plan and orphans, fenced by its token (src/store/reconcile-record.ts). */
  readonly reconciles: ReconcileRecordStore;
  /** The operator's pending requests, kept until a reconcile served them (src/store/operator-requests.ts). */
  readonly requests: OperatorRequestStore;
  /**
   * Releases the flap guard's conflicts of these resource keys ("Deployment/name"; every conflict when undefined) and
   * forgets their recent writes, so their next job writes again. Returns the keys that held a conflict.
   */
  releaseConflicts(keys?: readonly string[]): Promise<string[]>;
  /** The prefix's applied-state epoch (a change or a vanishing means Redis lost converge's records). */
  readonly epoch: AppliedStateEpoch;
  /** Redis' maxmemory-policy, or why it could not be read. */
  evictionPolicy(): Promise<EvictionPolicy>;
  /** The one clock every replica times a "since" on (Redis' TIME, ms since the epoch: src/store/clock.ts). */
  now(): Promise<number>;
  /** How far this process's wall clock is from that one clock, read once. */
  clockSkew(): Promise<ClockReading>;
  /** The leader lease of the prefix as held (or waited for) by replica `holder`, lasting `ttlMs` unless renewed. */
  lease(holder: string, ttlMs: number): Lease;
  /** The reconcile queue's jobs by BullMQ state (every replica's jobs on the prefix); rejects when Redis does not answer. */
  queueCounts(): Promise<Record<QueueState, number>>;
  /** Resolves when Redis answers a PING; rejects otherwise. */
  /** Throws a RedisUnavailableError (E_REDIS: the URL, password redacted, and the fix) when Redis does not answer. */
  ping(): Promise<void>;
  /** Starts workers in this process on the queue (their own connections). */
  startRunner(options: Omit<StartRunnerOptions, 'onError' | 'target'>): Promise<JobRunner>;
  /** Follows the completions and failures of every process's jobs from now on. */
  watchEvents(handlers: JobEventHandlers, name: string): Promise<JobEventsFeed>;
  /** Starts the resync scheduler (one cycle per interval across every replica on the prefix). */
  startResync(options: Omit<ResyncOptions, 'redis' | 'producer' | 'onError'>): Promise<Resync>;
  /** Closes whatever is still open, then the queue and the connection; a private prefix's keys are deleted. */
  close(): Promise<void>;
  /** Drops every connection opened from here at once (a stop whose close did not end in time: Redis frozen). */
  disconnect(): void;
}

/**
 * The reconcile queue, once BullMQ's start-up of it (a version check) is finished, before anything can close it: on a
 * Redis Cluster, a queue closed while it still ran emitted an error nothing listened to any more, and the process
 * crashed. The connection is closed when it fails.
 */
async function readyQueue(redis: Redis, prefix: string, onError: ErrorReporter): Promise<Queue> {
  const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
  queue.on('error', (error) => onError('queue', error));
  try {
    await queue.waitUntilReady();
  } catch (error) {
    await queue.close().catch(() => undefined);
    await closeRedis(redis);
    throw error;
  }
  return queue;
}

/**
 * Handles opened from one Jobs: those whose close has not started (close() closes them), and those whose close has not
 * ended (disconnect() drops them); `track` registers one.
 */
function handleTracker() {
  const open = new Set<{ close(): Promise<void>; disconnect(): void }>();
  const unclosed = new Set<{ disconnect(): void }>();
  function track<T extends { close(): Promise<void>; disconnect(): void }>(handle: T): T {
    const close = handle.close.bind(handle);
    open.add(handle);
    unclosed.add(handle);
    handle.close = async (...args: unknown[]) => {
      open.delete(handle);
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- tsc needs it to pass the arguments on
      await (close as (...a: unknown[]) => Promise<void>)(...args);
      unclosed.delete(handle);
    };
    return handle;
  }
  return { open, unclosed, track };
}

/** The stores of converge's own keys under `prefix` (src/store), over one connection. */
function openStores(redis: Redis, prefix: string) {
  return {
    applied: new AppliedStateStore(redis, prefix),
    plans: new AppliedPlans(redis, prefix),
    desired: new RedisDesiredMemory(redis, prefix),
    holds: new RedisHoldStore(redis, prefix),
    flap: new FlapStore(redis, prefix),
    record: new EventLogStore(redis, prefix),
    folds: new ResourceFolds(redis, prefix, leaseKey(prefix)),
    reconciles: new ReconcileRecordStore(redis, prefix, fenceKey(prefix)),
    requests: new OperatorRequestStore(redis, prefix),
  };
}

/**
 * Connects to Redis (failing fast with E_REDIS), checks the prefix and claims it for the target, and opens the queue.
 * The error events of every queue, worker and connection opened from here are logged, one line per kind per 30 s.
 */
export async function openJobs(settings: WorkerSettings, options: OpenJobsOptions = {}): Promise<Jobs> {
  checkPrefix(settings.redisPrefix);
  const log = options.log ?? SILENT_LOGGER;
  const onError = throttledErrors(log);
  const redis = await connectProducer(settings, { onError: (e) => onError('redis connection', e) });
  const prefix = options.private
    ? `${settings.redisPrefix}:embedded-${randomBytes(6).toString('hex')}`
    : settings.redisPrefix;
  try {
    if (options.target && !options.private) await claimPrefix(redis, prefix, options.target);
    if (!options.private) await adoptLegacySequences(redis, prefix);
  } catch (error) {
    await closeRedis(redis);
    throw error;
  }
  const queue = await readyQueue(redis, prefix, onError);
  const scoped: WorkerSettings = { ...settings, redisPrefix: prefix };
  const { open, unclosed, track } = handleTracker();
  let closing: Promise<void> | undefined;
  const stores = openStores(redis, prefix);
  const { flap } = stores;
  return {
    prefix,
    enqueuer: new Enqueuer(queue, settings, { redis, prefix }),
    ...stores,
    releaseConflicts(keys) {
      return flap.release(keys, true);
    },
    epoch: new AppliedStateEpoch(redis, prefix),
    evictionPolicy() {
      return readEvictionPolicy(redis);
    },
    now() {
      return redisNow(redis);
    },
    clockSkew() {
      return readClockSkew(redis);
    },
    lease(holder, ttlMs) {
      return new Lease(redis, prefix, holder, ttlMs);
    },
    async queueCounts() {
      const counts = await queue.getJobCounts(...QUEUE_STATES);
      return Object.fromEntries(QUEUE_STATES.map((state) => [state, counts[state] ?? 0])) as Record<QueueState, number>;
    },
    async ping() {
      try {
        await redis.ping();
      } catch (error) {
        // One line naming the Redis URL (password redacted) and the fix, as the CLI says it; not ioredis' own words.
        throw unreachable(settings, error as Error);
      }
    },
    async startRunner(runnerOptions) {
      return track(await startJobRunner(scoped, { ...runnerOptions, log: runnerOptions.log ?? log, onError }));
    },
    async watchEvents(handlers, name) {
      return track(await watchJobEvents(scoped, redis, handlers, { name, onError }));
    },
    async startResync(resyncOptions) {
      return track(
        await startResync({ ...resyncOptions, redis: scoped, producer: redis, onError: (e) => onError('resync', e) }),
      );
    },
    close() {
      closing ??= (async () => {
        for (const handle of [...open].reverse()) await handle.close().catch((e: unknown) => onError('close', e));
        await queue.close().catch((e: unknown) => onError('queue', e));
        if (options.private) await deleteKeys(redis, prefix).catch((e: unknown) => onError('redis connection', e));
        await closeRedis(redis);
      })();
      return closing;
    },
    disconnect() {
      for (const handle of unclosed) handle.disconnect();
      open.clear();
      unclosed.clear();
      redis.disconnect();
    },
  };
}

/** Deletes every key under `prefix`. */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of scanPrefix(redis, prefix)) await redis.del(...keys);
}
