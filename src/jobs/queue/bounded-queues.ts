// Named BullMQ queues beside the reconcile jobs (the notification deliveries: src/notify/notify-queue.ts), each with its own worker slots and a bounded backlog that drops its oldest waiting jobs first.
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, connectProducer, connectWorker, type RedisSettings } from '../../store/redis.js';

/** One queue's own limits: jobs in flight at once, and jobs unfinished (waiting, between retries, in flight) at most. */
export interface QueueLimits {
  name: string;
  inFlight: number;
  backlog: number;
}

/** A job to add: its id (a job with the same id already added, on any replica, is left alone), its name and data. */
export interface NewJob {
  id: string;
  name: string;
  data: unknown;
}

/** How added jobs are retried and kept: attempts, the first retry delay (doubling), how long finished ones stay. */
export interface AddOptions {
  attempts: number;
  backoffMs: number;
  keepSeconds: number;
  keepCount: number;
}

/** A job dropped from a full backlog (never run): its id and data. */
export interface DroppedJob {
  id: string;
  data: unknown;
}

/** One attempt of a job, as the run function sees it. */
export interface Attempt {
  data: unknown;
  /** Whether no retry follows when this attempt fails. */
  last: boolean;
}

/** Runs one attempt of a job of `queue`: resolves when done, throws to retry (or noRetry's error to fail at once). */
export type RunAttempt = (queue: string, attempt: Attempt, stopped: AbortSignal) => Promise<unknown>;

export interface QueueWorkers {
  /** Stops taking jobs; those in flight get `graceMs`, then `stopped` aborts for them (their attempt ends). */
  close(graceMs?: number): Promise<void>;
}

export interface BoundedQueues {
  /**
   * Adds jobs to one queue within its backlog: room is made by dropping the oldest waiting jobs, then the first new ones.
   * Adds to a queue run one at a time (the room for each is made from the count after the last). Unknown queue: nothing.
   */
  add(queue: string, jobs: readonly NewJob[], options: AddOptions): Promise<DroppedJob[]>;
  /** Starts one worker per queue in this process, `inFlight` attempts at once each, on one shared connection. */
  startWorkers(run: RunAttempt): Promise<QueueWorkers>;
  /** Closes the workers started and the queues. */
  close(): Promise<void>;
}

/** The error that fails an attempt without a retry. */
export function noRetry(message: string): Error {
  return new UnrecoverableError(message);
}

/** The states a job waits in (queued, or between retries): those a full backlog drops. */
const WAITING = ['wait', 'delayed', 'prioritized', 'paused'] as const;
/** Every unfinished state: the backlog counts the jobs in flight too. */
const UNFINISHED = [...WAITING, 'active'] as const;

interface LimitedQueue {
  limits: QueueLimits;
  queue: Queue;
  adding: Promise<unknown>;
}

async function countOf(queue: Queue, states: readonly (typeof UNFINISHED)[number][]): Promise<number> {
  const counts = await queue.getJobCounts(...states);
  return states.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
}

/** Removes the `count` oldest waiting jobs (by when they were queued). One a worker took meanwhile is not removed: it runs. */
async function dropOldest(target: LimitedQueue, count: number): Promise<DroppedJob[]> {
  // The oldest `count` of each state, of which the oldest `count` overall go.
  const jobs = await target.queue.getJobs([...WAITING], 0, count - 1, true);
  const oldest = jobs
    .filter((job) => job?.id)
    .sort((a, b) => a.timestamp - b.timestamp)
    .slice(0, count);
  const dropped: DroppedJob[] = [];
  for (const job of oldest) {
    if (
      !(await job.remove().then(
        () => true,
        () => false,
      ))
    )
      continue;
    dropped.push({ id: job.id!, data: job.data as unknown });
  }
  return dropped;
}

async function addWithin(target: LimitedQueue, jobs: readonly NewJob[], options: AddOptions): Promise<DroppedJob[]> {
  const excess = (await countOf(target.queue, UNFINISHED)) + jobs.length - target.limits.backlog;
  const dropped = excess > 0 ? await dropOldest(target, excess) : [];
  const over = Math.max(0, excess - dropped.length);
  for (const job of jobs.slice(0, over)) dropped.push({ id: job.id, data: job.data });
  await target.queue.addBulk(
    jobs.slice(over).map((job) => ({
      name: job.name,
      data: job.data,
      opts: {
        jobId: job.id,
        attempts: options.attempts,
        backoff: { type: 'exponential', delay: options.backoffMs },
        removeOnComplete: { age: options.keepSeconds, count: options.keepCount },
        removeOnFail: { age: options.keepSeconds, count: options.keepCount },
      },
    })),
  );
  return dropped;
}

/** The attempt BullMQ runs: `stopped` aborts when the workers' close runs out of grace. */
function attemptOf(job: Job): Attempt {
  return { data: job.data as unknown, last: job.attemptsMade + 1 >= (job.opts.attempts ?? 1) };
}

async function startWorkers(
  settings: RedisSettings,
  label: string,
  queues: readonly LimitedQueue[],
  run: RunAttempt,
  onError: (source: string, error: unknown) => void,
): Promise<QueueWorkers> {
  const stopping = new AbortController();
  const connection: Redis = await connectWorker(settings, {
    name: `converge-${label}-worker`,
    onError: (e) => onError(`${label} connection`, e),
  });
  const workers = queues.map(({ limits, queue }) => {
    const worker = new Worker(queue.name, (job: Job) => run(limits.name, attemptOf(job), stopping.signal), {
      connection,
      prefix: settings.redisPrefix,
      concurrency: limits.inFlight,
    });
    worker.on('error', (error) => onError(`${label} worker`, error));
    return worker;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady())).catch(async (error: unknown) => {
    await Promise.all(workers.map((w) => w.close(true).catch(() => undefined)));
    await closeRedis(connection);
    throw error;
  });
  return {
    async close(graceMs = 0) {
      const timer = setTimeout(() => stopping.abort(), graceMs);
      await Promise.all(workers.map((w) => w.close().catch((e: unknown) => onError(`${label} worker`, e))));
      clearTimeout(timer);
      await closeRedis(connection);
    },
  };
}

/**
 * Opens one queue per entry of `limits`, named `converge-<label>-<name>` under the prefix (names are letters, digits,
 * '.', '_', '-'), on connections of their own: trouble of theirs never touches the reconcile jobs' connections.
 * Errors of queues, workers and connections go to `onError` with a source of `<label> queue|worker|connection`.
 */
export async function openBoundedQueues(
  settings: RedisSettings,
  label: string,
  limits: readonly QueueLimits[],
  onError: (source: string, error: unknown) => void,
): Promise<BoundedQueues> {
  const producer = await connectProducer(settings, {
    name: `converge-${label}`,
    onError: (e) => onError(`${label} connection`, e),
  });
  const queues = new Map<string, LimitedQueue>();
  for (const limit of limits) {
    const queue = new Queue(`converge-${label}-${limit.name}`, { connection: producer, prefix: settings.redisPrefix });
    queue.on('error', (error) => onError(`${label} queue`, error));
    queues.set(limit.name, { limits: limit, queue, adding: Promise.resolve() });
  }
  const closeQueues = async (): Promise<void> => {
    for (const { queue } of queues.values()) await queue.close().catch((e: unknown) => onError(`${label} queue`, e));
    await closeRedis(producer);
  };
  await Promise.all([...queues.values()].map(({ queue }) => queue.waitUntilReady())).catch(async (error: unknown) => {
    await closeQueues();
    throw error;
  });
  const started = new Set<QueueWorkers>();
  return {
    add(name, jobs, options) {
      const target = queues.get(name);
      if (!target || jobs.length === 0) return Promise.resolve([]);
      const added = target.adding.then(() => addWithin(target, jobs, options));
      target.adding = added.catch(() => undefined);
      return added;
    },
    async startWorkers(run) {
      const workers = await startWorkers(settings, label, [...queues.values()], run, onError);
      const handle: QueueWorkers = {
        async close(graceMs) {
          started.delete(handle);
          await workers.close(graceMs);
        },
      };
      started.add(handle);
      return handle;
    },
    async close() {
      for (const workers of [...started]) await workers.close();
      await closeQueues();
    },
  };
}
