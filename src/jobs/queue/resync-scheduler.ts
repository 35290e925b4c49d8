// Resync: a BullMQ Job Scheduler on its own queue; each cycle's job is taken by exactly one replica sharing the Redis.
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, connectWorker, type RedisSettings } from '../../store/redis.js';

export const RESYNC_QUEUE = 'converge-resync';
export const RESYNC_SCHEDULER_ID = 'converge-resync';

/** Each cycle starts up to this share of the interval late, so many daemons do not hit the service in step. */
export const RESYNC_JITTER = 0.1;

export interface ResyncOptions {
  redis: RedisSettings;
  /** Producer connection shared with the apply queue. */
  producer: Redis;
  everyMs: number;
  /** Runs one cycle's full reconcile; `cycle` is the scheduler job's id (unique per cycle). */
  run: (cycle: string) => Promise<void>;
  onError?: (error: Error) => void;
  random?: () => number;
  jitter?: number;
}

export interface Resync {
  /** Stops taking cycles; a cycle in progress is finished first (its jitter wait is cut short and skipped). */
  close(): Promise<void>;
  /** Drops its connection at once (a stop whose close did not end in time: Redis frozen, a cycle that does not end). */
  disconnect(): void;
}

/** How long one cycle's lock lasts without renewal; a replica that died mid-cycle hands it on after this. */
const CYCLE_LOCK_MS = 30_000;

/** The schedule is checked this often (and at every Redis reconnect), at most once per interval. */
const SCHEDULE_CHECK_MAX_MS = 60_000;

export async function startResync(options: ResyncOptions): Promise<Resync> {
  const queue = new Queue(RESYNC_QUEUE, { connection: options.producer, prefix: options.redis.redisPrefix });
  queue.on('error', (error) => options.onError?.(error));
  // Upserting is idempotent: every replica may do it at start, and one with the schedule's interval leaves its next
  // cycle where it is; the interval of the last one to start wins. BullMQ runs a new `every` schedule's first job at
  // once; `startDate` puts it one interval later, since the daemon's start (or a new leader's) has just reconciled in
  // full: a cycle at once would list the whole service again seconds after (docs/daemon.md, "Resync").
  const upsert = () =>
    queue.upsertJobScheduler(
      RESYNC_SCHEDULER_ID,
      { every: options.everyMs, startDate: Date.now() + options.everyMs },
      { name: 'resync', data: {}, opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } },
    );
  await upsert();
  const random = options.random ?? Math.random;
  const jitter = options.jitter ?? RESYNC_JITTER;
  const stopping = new AbortController();
  const connection = await connectWorker(options.redis, {
    name: 'converge-resync',
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const worker = new Worker(
    RESYNC_QUEUE,
    async (job: Job) => {
      const delay = Math.floor(random() * jitter * options.everyMs);
      if (delay > 0) {
        // The signal's listener goes when the wait ends either way (one left per cycle would pile up for ever).
        const waited = await sleep(delay, true, { signal: stopping.signal }).catch(() => false);
        if (!waited) return { skipped: 'shutdown' };
      }
      if (stopping.signal.aborted) return { skipped: 'shutdown' };
      await options.run(job.id!);
      return { ran: true };
    },
    {
      connection,
      prefix: options.redis.redisPrefix,
      concurrency: 1,
      lockDuration: CYCLE_LOCK_MS,
      stalledInterval: CYCLE_LOCK_MS,
    },
  );
  worker.on('error', (error) => options.onError?.(error));
  await worker.waitUntilReady();

  // The schedule lives in Redis: a Redis restarted without persistence (or flushed, or evicting keys) loses it, and
  // with it every later cycle. Put it back when it is missing, checked on every reconnect and on a timer.
  let checking = false;
  async function ensureSchedule(): Promise<void> {
    if (checking || stopping.signal.aborted) return;
    checking = true;
    try {
      if (await queue.getJobScheduler(RESYNC_SCHEDULER_ID)) return;
      await upsert();
      options.onError?.(
        new Error(
          'the resync schedule was missing from Redis (restarted without persistence, flushed or evicted); it was created again',
        ),
      );
    } catch {
      // Redis is away: the next reconnect or tick checks again.
    } finally {
      checking = false;
    }
  }
  const onReady = (): void => void ensureSchedule();
  options.producer.on('ready', onReady);
  const watchdog = setInterval(onReady, Math.max(1_000, Math.min(options.everyMs, SCHEDULE_CHECK_MAX_MS)));
  watchdog.unref();
  return {
    async close() {
      stopping.abort();
      clearInterval(watchdog);
      options.producer.off('ready', onReady);
      await worker.close();
      await queue.close();
      await closeRedis(connection);
    },
    disconnect() {
      stopping.abort();
      clearInterval(watchdog);
      options.producer.off('ready', onReady);
      void worker.close(true).catch(() => undefined);
      connection.disconnect();
    },
  };
}
